"""Chat-log readers (JSONL, LoCoMo) with file:line:field errors, and bulk ingest."""
