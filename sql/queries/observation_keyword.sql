-- Observation and belief channels, and "close existing ones" by words: BM25
-- (bm25_weight, migration 0017, as keyword_bm25.sql) over the statements of one memory of the given kinds and
-- statuses that match any query lexeme; N is the count of those statements.
WITH scope AS (
    SELECT o.id, o.tsv FROM observations o
    WHERE o.memory = %(memory)s
      AND o.kind = ANY(%(kinds)s::text[])
      AND o.status = ANY(%(statuses)s::text[])
),
cand AS (
    SELECT id, tsv, length(tsv)::float8 AS dl FROM scope WHERE tsv @@ %(tsquery)s::tsquery
),
tf AS (
    SELECT cand.id, u.lexeme, coalesce(array_length(u.positions, 1), 1)::float8 AS tf, cand.dl
    FROM cand, unnest(cand.tsv) AS u
    WHERE u.lexeme = ANY(%(lexemes)s::text[])
),
df AS (SELECT lexeme, count(*)::float8 AS df FROM tf GROUP BY lexeme),
corpus AS (
    SELECT (SELECT count(*) FROM scope)::float8 AS n, greatest((SELECT avg(dl) FROM cand), 1.0) AS avgdl
)
SELECT tf.id,
       sum(bm25_weight(corpus.n, df.df, tf.tf, tf.dl, corpus.avgdl, %(k1)s, %(b)s)) AS score
FROM tf JOIN df USING (lexeme) CROSS JOIN corpus
GROUP BY tf.id
ORDER BY score DESC, tf.id
LIMIT %(limit)s
