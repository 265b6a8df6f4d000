-- The memories with questions that got episodes or questions after a moment (NULL: all).
SELECT DISTINCT q.memory FROM retrieval_questions q
 WHERE %(since)s::timestamptz IS NULL OR q.created_at > %(since)s
    OR EXISTS (SELECT 1 FROM episodes e WHERE e.memory = q.memory AND e.ingested_at > %(since)s)
 ORDER BY 1
