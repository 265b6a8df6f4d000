-- Stage one memory's champion lists (migrations 0025, 0026) from its chunks, the long read of a
-- rebuild, taking no lock a writer waits for: one statement, so one snapshot, is read for the
-- statistics and the postings. For every lexeme whose df exceeds %(min_df)s, the %(size)s chunk
-- rows with the highest term weight (bm25_weight without the lexeme's idf: n = 1, df = 0 make it
-- a constant factor), the floor being the weight of the next row (0 when the lexeme has no more
-- rows: then every row holding it is in the list). Rows that tie with the floor stay out, so a
-- list holds exactly the rows above its floor. avgdl from keyword_memory_stats, k1 and b passed
-- in; all three, the lowest floor and the chunk count are recorded on the build's row, which
-- keyword_champions_install.sql turns into keyword_champion_state.
WITH stats AS (
    SELECT greatest(m.total_lexemes::float8 / m.chunks, 1.0) AS avgdl, m.chunks
    FROM keyword_memory_stats m
    WHERE m.memory = %(memory)s
),
common AS (
    SELECT lexeme FROM keyword_stats WHERE memory = %(memory)s AND df > %(min_df)s
),
posting AS (
    SELECT u.lexeme, c.episode_id, c.ordinal,
           bm25_weight(1, 0, coalesce(array_length(u.positions, 1), 1)::float8, length(v.tsv)::float8,
                       stats.avgdl, %(k1)s, %(b)s) AS weight
    FROM stats, chunks c,
         LATERAL (SELECT (array[c.tsv])[1] AS tsv OFFSET 0) v,
         unnest(v.tsv) AS u
    WHERE c.memory = %(memory)s
      AND u.lexeme IN (SELECT lexeme FROM common)
),
ranked AS MATERIALIZED (
    SELECT lexeme, episode_id, ordinal, weight
    FROM (SELECT posting.*, row_number() OVER (PARTITION BY lexeme ORDER BY weight DESC) AS rank FROM posting) r
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
