-- Session settings for an HNSW build: its memory and parallel workers.
SELECT set_config('maintenance_work_mem', %s, false), set_config('max_parallel_maintenance_workers', %s, false)
