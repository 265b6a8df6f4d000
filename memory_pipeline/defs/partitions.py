"""The partitioning of the pipeline: one partition per UTC ingest day."""

import dagster as dg

# end_offset=1 makes today's partition exist while today is still running: episodes ingested
# now must be visible (and materializable) now, not tomorrow.
ingest_days = dg.DailyPartitionsDefinition(start_date="2025-01-01", end_offset=1, timezone="UTC")
