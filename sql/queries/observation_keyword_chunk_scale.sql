-- Statements that cite no passage, scored by BM25 as if each were one more chunk of its memory:
-- n + 1 documents, df + 1 for each lexeme it holds, avgdl from the memory's chunk statistics
-- (keyword_memory_stats, keyword_stats; migration 0004), not the statements', so the scores sit
-- on the keyword channel's scale (its capped path's statistics; its exact path counts df over the
-- chunks a policy's kinds and time window allow) and a statement can be placed among that
-- channel's chunks (domain.observations.join_chunk_channel). No statistics row (a memory without
-- chunks): no rows.
WITH q AS (
    SELECT DISTINCT u.lexeme FROM unnest(to_tsvector('english', %(text)s)) AS u
),
m AS (
    SELECT chunks::float8 AS n, greatest(total_lexemes::float8 / greatest(chunks, 1), 1.0) AS avgdl
    FROM keyword_memory_stats WHERE memory = %(memory)s AND chunks > 0
),
tf AS (
    SELECT o.id, u.lexeme, coalesce(array_length(u.positions, 1), 1)::float8 AS tf, length(o.tsv)::float8 AS dl
    FROM observations o, unnest(o.tsv) AS u
    WHERE o.memory = %(memory)s AND o.id = ANY(%(ids)s::bigint[]) AND u.lexeme IN (SELECT lexeme FROM q)
)
SELECT tf.id,
       sum(bm25_weight(m.n + 1, coalesce(s.df, 0) + 1, tf.tf, tf.dl, m.avgdl, %(k1)s, %(b)s)) AS score
FROM tf CROSS JOIN m
LEFT JOIN keyword_stats s ON s.memory = %(memory)s AND s.lexeme = tf.lexeme
GROUP BY tf.id
ORDER BY score DESC, tf.id
