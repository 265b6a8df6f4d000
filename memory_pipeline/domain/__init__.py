"""Pure domain code: no Dagster, no SQL, no network."""
