"""Domain rules: no Dagster, no SQL, no network; a file only where a path is given to read."""
