-- One day's search telemetry: count, latency median and p95, and how many searches were empty.
SELECT count(*),
       percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms),
       percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms),
       count(*) FILTER (WHERE reranker LIKE 'fallback%%'),
       count(*) FILTER (WHERE vector_status LIKE 'unavailable%%')
FROM search_telemetry WHERE searched_at >= %s
