"""Search over the materialized tables (fused retrieval lives here)."""
