-- Record one search in the telemetry.
INSERT INTO search_telemetry (memory, query, policy, result_limit, channels, latency_ms,
                              vector_status, reranker, candidates, results)
VALUES (%(memory)s, %(query)s, %(policy)s, %(result_limit)s, %(channels)s, %(latency_ms)s,
        %(vector_status)s, %(reranker)s, %(candidates)s, %(results)s)
