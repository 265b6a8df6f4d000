-- Keyword channel, capped path (the query's lexemes together match many chunks of the memory).
-- Candidates, at most %(cap)s, through the GIN index and never sorted before the cut (only as
-- many heap rows are read as are kept), in three tiers chosen in keyword_store.py from
-- keyword_stats (a NULL tsquery skips its tier): every chunk holding one of the rare query
-- lexemes (%(gate)s: their summed df is within the cap), then chunks holding at least m of the
-- common ones (any of the tsqueries %(common)s, each led by a lexeme its matches all hold, so
-- each GIN search skips through the longer posting lists; at most %(common_limit)s: the cap less
-- the rare lexemes' summed df)
-- or, when the common part is one lexeme with a champion list (%(champion)s, migration 0025),
-- the best %(common_limit)s of its list in the memory's current generation (migration 0027)
-- through a btree, then, only when those are fewer than
-- %(limit)s, up to that many chunks holding the rarest of them and m - 2 others (%(fill)s: a
-- lexeme every match holds lets GIN skip through the other posting lists). Which chunks of an
-- over-full GIN tier are kept follows the table's physical order: stable for a given table, not
-- otherwise meaningful. Episodes are looked up only when the search filters by kind, date or
-- as_of (episode_allowed, migration 0034).
-- Each candidate is scored with BM25 (bm25_weight, migration 0017) over ALL query lexemes, df from
-- keyword_stats and N and avgdl from keyword_memory_stats (the whole memory; passed in). Term
-- frequencies are read for the query lexemes only (setweight/ts_filter, as in keyword_exact.sql).
-- The other tiers are read only when they can change the answer: when the rare tier has fewer
-- than %(limit)s chunks, or its %(limit)s-th best score is below %(common_bound)s, the most a
-- chunk holding no rare lexeme can score (each other lexeme's idf x (k1 + 1), BM25's ceiling
-- as its term frequency grows; keyword_store.Plan). Words most chunks hold have an idf near 0,
-- so a query mixing them with rare words is answered from the rare words' postings alone.
WITH q AS (
  SELECT lexeme, df FROM unnest(%(lexemes)s::text[], %(dfs)s::float8[]) AS q(lexeme, df)
),
rare AS MATERIALIZED (
  SELECT c.chunk_id, c.tsv
  FROM chunks c
  WHERE %(gate)s::tsquery IS NOT NULL
   AND c.memory = %(memory)s
   AND c.tsv @@ %(gate)s::tsquery
   AND (%(kinds)s::text[] IS NULL AND %(since)s::timestamptz IS NULL AND %(until)s::timestamptz IS NULL
     OR episode_allowed(c.episode_id, %(kinds)s, %(since)s, %(until)s))
  LIMIT %(cap)s
),
settled AS MATERIALIZED (
  SELECT count(*) >= %(limit)s AND min(score) >= %(common_bound)s::float8 AS enough
  FROM (SELECT sum(bm25_weight(%(n)s::float8, q.df,
                coalesce(array_length(u.positions, 1), 1)::float8,
                length(v.tsv)::float8, %(avgdl)s::float8, %(k1)s, %(b)s)) AS score
     FROM rare r,
       LATERAL (SELECT (array[r.tsv])[1] AS tsv OFFSET 0) v,
       unnest(ts_filter(setweight(v.tsv, 'A', %(lexemes)s::text[]), '{a}')) AS u
     JOIN q ON q.lexeme = u.lexeme
     GROUP BY r.chunk_id
     ORDER BY score DESC
     LIMIT %(limit)s) best
),
preferred AS (
  (SELECT chunk_id, tsv, 1 AS tier FROM rare)
  UNION ALL
  (SELECT c.chunk_id, c.tsv, 2 AS tier
  FROM chunks c
  WHERE %(common)s::tsquery[] IS NOT NULL
   AND NOT (SELECT enough FROM settled)
   AND c.memory = %(memory)s
   AND c.tsv @@ ANY(%(common)s::tsquery[])
   AND (%(kinds)s::text[] IS NULL AND %(since)s::timestamptz IS NULL AND %(until)s::timestamptz IS NULL
     OR episode_allowed(c.episode_id, %(kinds)s, %(since)s, %(until)s))
  LIMIT %(common_limit)s)
  UNION ALL
  (SELECT c.chunk_id, c.tsv, 2 AS tier
  FROM (SELECT k.episode_id, k.ordinal
     FROM keyword_champions k
     WHERE %(champion)s::text IS NOT NULL
      AND NOT (SELECT enough FROM settled)
      AND k.memory = %(memory)s
      AND k.generation = (SELECT generation FROM keyword_champion_state WHERE memory = %(memory)s)
      AND k.lexeme = %(champion)s::text
     ORDER BY k.weight DESC
     LIMIT %(common_limit)s) k
  JOIN chunks c ON c.episode_id = k.episode_id AND c.ordinal = k.ordinal
  WHERE (%(kinds)s::text[] IS NULL AND %(since)s::timestamptz IS NULL AND %(until)s::timestamptz IS NULL
    OR episode_allowed(c.episode_id, %(kinds)s, %(since)s, %(until)s)))
),
hits AS (
  SELECT * FROM preferred
  UNION ALL
  (SELECT c.chunk_id, c.tsv, 3 AS tier
  FROM chunks c
  WHERE %(fill)s::tsquery IS NOT NULL
   AND (SELECT count(*) FROM preferred) < %(limit)s
   AND c.memory = %(memory)s
   AND c.tsv @@ %(fill)s::tsquery
   AND (%(kinds)s::text[] IS NULL AND %(since)s::timestamptz IS NULL AND %(until)s::timestamptz IS NULL
     OR episode_allowed(c.episode_id, %(kinds)s, %(since)s, %(until)s))
  LIMIT %(limit)s)
),
kept AS (
  SELECT chunk_id, tsv
  FROM (SELECT DISTINCT ON (chunk_id) chunk_id, tsv, tier FROM hits ORDER BY chunk_id, tier) d
  ORDER BY tier, chunk_id
  LIMIT %(cap)s
),
-- (array[tsv])[1] fetches and decompresses each kept vector once (an array holds no TOAST
-- pointers); length() and ts_filter() below would otherwise each do it again.
cand AS (
  SELECT kept.chunk_id, v.tsv, length(v.tsv)::float8 AS dl
  FROM kept, LATERAL (SELECT (array[kept.tsv])[1] AS tsv OFFSET 0) v
),
tf AS (
  SELECT cand.chunk_id, u.lexeme, coalesce(array_length(u.positions, 1), 1)::float8 AS tf, cand.dl
  FROM cand, unnest(ts_filter(setweight(cand.tsv, 'A', %(lexemes)s::text[]), '{a}')) AS u
)
SELECT tf.chunk_id,
   sum(bm25_weight(%(n)s::float8, q.df, tf.tf, tf.dl, %(avgdl)s::float8, %(k1)s, %(b)s)) AS score
FROM tf JOIN q USING (lexeme)
GROUP BY tf.chunk_id
ORDER BY score DESC, tf.chunk_id
LIMIT %(limit)s
