"""One tenant's in-memory state: vector index, lexical index, notes and graph, version history."""
