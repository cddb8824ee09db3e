"""Stored models: notes, links, versions, hits, interactions, the ChangeSet a write produces, and their records."""
