-- Transaction settings for an HNSW search: ef_search and the relaxed iterative scan.
SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', 'relaxed_order', true)
