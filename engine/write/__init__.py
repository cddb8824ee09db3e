"""The write path: validate interactions, run the batched pipeline, decide links/evolution/merges, explicit edits."""
