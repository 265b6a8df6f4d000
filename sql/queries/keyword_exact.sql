-- Keyword channel, exact path (the query's lexemes match few chunks of the memory): the same
-- BM25 as keyword_bm25.sql (bm25_weight, migration 0017; every chunk matching a query lexeme is a
-- candidate, so df and avgdl over the candidates), with N from keyword_memory_stats (passed in:
-- equal to the count of the memory's chunk rows) and term frequencies read for the query
-- lexemes only: setweight marks them 'A' (stored vectors carry weight D only), ts_filter keeps
-- them, instead of unnesting every lexeme of every candidate.
WITH cand AS (
    SELECT DISTINCT ON (c.chunk_id) c.chunk_id, c.tsv, length(c.tsv)::float8 AS dl
    FROM chunks c
    JOIN episodes e ON e.id = c.episode_id
    WHERE c.memory = %(memory)s
      AND c.tsv @@ %(tsquery)s::tsquery
      AND (%(kinds)s::text[] IS NULL OR e.kind = ANY(%(kinds)s::text[]))
      AND (%(since)s::timestamptz IS NULL OR e.occurred_at >= %(since)s::timestamptz)
      AND episode_in_force(e.occurred_at, e.current_from, e.superseded_at, %(until)s::timestamptz)
    ORDER BY c.chunk_id
),
tf AS (
    SELECT cand.chunk_id, u.lexeme, coalesce(array_length(u.positions, 1), 1)::float8 AS tf, cand.dl
    FROM cand, unnest(ts_filter(setweight(cand.tsv, 'A', %(lexemes)s::text[]), '{a}')) AS u
),
df AS (SELECT lexeme, count(*)::float8 AS df FROM tf GROUP BY lexeme),
corpus AS (
    SELECT %(n)s::float8 AS n, greatest((SELECT avg(dl) FROM cand), 1.0) AS avgdl
)
SELECT tf.chunk_id,
       sum(bm25_weight(corpus.n, df.df, tf.tf, tf.dl, corpus.avgdl, %(k1)s, %(b)s)) AS score
FROM tf JOIN df USING (lexeme) CROSS JOIN corpus
GROUP BY tf.chunk_id
ORDER BY score DESC, tf.chunk_id
LIMIT %(limit)s
