"""Ray jobs for amem: sharded bulk ingestion (`ingest.run_ingest`) and the Ray Serve deployment (`serve`)."""
