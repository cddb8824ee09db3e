"""Durability: per-tenant store (write-ahead log + Parquet snapshots), store lock, file helpers, open-tenant pool."""
