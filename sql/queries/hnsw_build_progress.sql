-- A running CREATE INDEX of the HNSW index %(name)s (hnsw_store.build_progress): its phase and,
-- while pgvector loads the vectors into the graph, how many it has loaded of how many; with the
-- seconds since the command began. A concurrent build shows its index once the catalog entry is
-- made (the index exists, not valid, from its first phase on).
SELECT p.phase, p.tuples_done, p.tuples_total,
       extract(epoch FROM clock_timestamp() - a.query_start)
FROM pg_stat_progress_create_index p
JOIN pg_class c ON c.oid = p.index_relid
LEFT JOIN pg_stat_activity a ON a.pid = p.pid
WHERE c.relname = %(name)s
LIMIT 1
