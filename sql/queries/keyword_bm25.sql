-- Keyword channel: BM25 (bm25_weight, migration 0017) over the chunks of one memory that match any
-- query lexeme (GIN). Every chunk containing a query term is a candidate, so document
-- frequencies counted over the candidates equal those over the whole memory.
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
    FROM cand, unnest(cand.tsv) AS u
    WHERE u.lexeme = ANY(%(lexemes)s::text[])
),
df AS (SELECT lexeme, count(*)::float8 AS df FROM tf GROUP BY lexeme),
corpus AS (
    SELECT (SELECT count(*) FROM chunks WHERE memory = %(memory)s)::float8 AS n,
           greatest((SELECT avg(dl) FROM cand), 1.0) AS avgdl
)
SELECT tf.chunk_id,
       sum(bm25_weight(corpus.n, df.df, tf.tf, tf.dl, corpus.avgdl, %(k1)s, %(b)s)) AS score
FROM tf JOIN df USING (lexeme) CROSS JOIN corpus
GROUP BY tf.chunk_id
ORDER BY score DESC, tf.chunk_id
LIMIT %(limit)s
