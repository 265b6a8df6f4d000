-- Stage one memory's champion lists (migrations 0025, 0026) from its chunks, the long read of a
-- rebuild, taking no lock a writer waits for: one statement, so one snapshot, is read for the
-- statistics and the postings. For every lexeme whose df exceeds %(min_df)s, the %(size)s chunk
-- rows with the highest term weight (bm25_weight without the lexeme's idf: n = 1, df = 0 make it
-- a constant factor), the floor being the weight of the next row (0 when the lexeme has no more
-- rows: then every row holding it is in the list). Rows that tie with the floor stay out, so a
-- list holds exactly the rows above its floor. avgdl from keyword_memory_stats, k1 and b passed
-- in; all three, the lowest floor and the chunk count are recorded on the build's row, which
-- keyword_champions_flip.sql turns into keyword_champion_state.
--
-- Ranking every posting of the common lexemes (millions in a large memory) would sort them all.
-- Instead a sample of the chunk rows (those whose (episode_id, ordinal) falls on one in
-- %(sample_every)s) gives each lexeme a threshold: the weight of its %(sample_rank)s-th best
-- sampled posting, which about %(sample_rank)s x %(sample_every)s postings of all reach. The full
-- pass keeps only the postings at or above their lexeme's threshold; when those are at least
-- %(size)s + 1, they hold the lexeme's best %(size)s + 1 and the list is exact. The few lexemes
-- whose threshold came out too high, and those with fewer sampled postings than the rank (no
-- threshold), are ranked from all their postings, as without the sample. Lexemes are grouped
-- and partitioned COLLATE "C" (bytes): only the grouping matters, and it sorts faster than the
-- database's collation.
WITH stats AS (
    SELECT greatest(m.total_lexemes::float8 / m.chunks, 1.0) AS avgdl, m.chunks
    FROM keyword_memory_stats m
    WHERE m.memory = %(memory)s
),
-- Every posting of the memory with its weight ((array[tsv])[1] detoasts a vector once per chunk
-- row); inlined where it is read, never stored whole.
posting AS NOT MATERIALIZED (
    SELECT u.lexeme, c.episode_id, c.ordinal,
           bm25_weight(1, 0, coalesce(array_length(u.positions, 1), 1)::float8, length(v.tsv)::float8,
                       stats.avgdl, %(k1)s, %(b)s) AS weight
    FROM stats, chunks c,
         LATERAL (SELECT (array[c.tsv])[1] AS tsv OFFSET 0) v,
         unnest(v.tsv) AS u
    WHERE c.memory = %(memory)s
),
-- The sampled rows' postings of common lexemes, stored as (lexeme, weight) only: inlined, the
-- sort below carried each posting's whole vector.
sampled AS MATERIALIZED (
    SELECT lexeme, weight
    FROM posting
    WHERE (episode_id * 31 + ordinal) %% %(sample_every)s = 0
      AND lexeme IN (SELECT lexeme FROM keyword_stats WHERE memory = %(memory)s AND df > %(min_df)s)
),
threshold AS MATERIALIZED (
    SELECT common.lexeme, t.weight AS t
    FROM keyword_stats common
    LEFT JOIN (SELECT lexeme COLLATE "C" AS lexeme, (array_agg(weight ORDER BY weight DESC))[%(sample_rank)s] AS weight
               FROM sampled GROUP BY 1) t ON t.lexeme = common.lexeme
    WHERE common.memory = %(memory)s AND common.df > %(min_df)s
),
kept AS MATERIALIZED (
    SELECT p.lexeme, p.episode_id, p.ordinal, p.weight
    FROM posting p JOIN threshold th ON th.lexeme = p.lexeme
    WHERE th.t IS NULL OR p.weight >= th.t
),
short AS MATERIALIZED (
    SELECT th.lexeme
    FROM threshold th
    LEFT JOIN (SELECT lexeme, count(*) AS n FROM kept GROUP BY lexeme) k USING (lexeme)
    WHERE th.t IS NOT NULL AND coalesce(k.n, 0) <= %(size)s
),
candidate AS (
    SELECT * FROM kept WHERE lexeme NOT IN (SELECT lexeme FROM short)
    UNION ALL
    SELECT p.* FROM posting p JOIN short USING (lexeme)
    WHERE EXISTS (SELECT 1 FROM short)
),
ranked AS MATERIALIZED (
    SELECT lexeme, episode_id, ordinal, weight
    FROM (SELECT candidate.*,
                 row_number() OVER (PARTITION BY lexeme COLLATE "C" ORDER BY weight DESC) AS rank
          FROM candidate) r
    WHERE rank <= %(size)s + 1
),
lists AS (
    INSERT INTO keyword_champion_staged_lists (memory, lexeme, floor)
    SELECT %(memory)s, lexeme, CASE WHEN count(*) > %(size)s THEN min(weight) ELSE 0 END
    FROM ranked
    GROUP BY lexeme
    RETURNING lexeme, floor
),
build AS (
    UPDATE keyword_champion_builds b
    SET avgdl = stats.avgdl, k1 = %(k1)s, b = %(b)s, chunks = stats.chunks,
        min_floor = (SELECT coalesce(min(floor), 0) FROM lists)
    FROM stats
    WHERE b.memory = %(memory)s
)
INSERT INTO keyword_champion_staged (memory, lexeme, weight, episode_id, ordinal)
SELECT %(memory)s, ranked.lexeme, ranked.weight, ranked.episode_id, ranked.ordinal
FROM ranked JOIN lists USING (lexeme)
WHERE ranked.weight > lists.floor
