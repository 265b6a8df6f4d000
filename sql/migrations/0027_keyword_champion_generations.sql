-- Generations of a memory's keyword champion lists (migrations 0025, 0026), so a rebuild no
-- longer rewrites every list row while the memory's writers wait for it.
--
-- keyword_champion_state.generation is the memory's current generation: searches
-- (keyword_lexemes.sql, keyword_capped.sql) and writers (keyword_champions_record.sql) read and
-- grow only its lists and rows. A rebuild (keyword_store.refresh_champions) stages the lists from
-- one snapshot as before, loads them as a new generation (keyword_champion_builds.generation)
-- into keyword_champion_lists and keyword_champions beside the writers, then, under the memory's
-- keyword_memory_stats row lock, only weighs the episodes writers logged meanwhile into it and
-- makes it current (keyword_champions_flip.sql); the old generation's rows are deleted after that
-- commit, in batches. Chunk deletions cascade to the rows of every generation.
--
-- In place: the lists a database already has become generation 1 of their memories.
ALTER TABLE keyword_champion_state ADD COLUMN generation bigint NOT NULL DEFAULT 1;
ALTER TABLE keyword_champion_state ALTER COLUMN generation DROP DEFAULT;

ALTER TABLE keyword_champion_lists ADD COLUMN generation bigint NOT NULL DEFAULT 1;
ALTER TABLE keyword_champion_lists ALTER COLUMN generation DROP DEFAULT;
ALTER TABLE keyword_champions ADD COLUMN generation bigint NOT NULL DEFAULT 1;
ALTER TABLE keyword_champions ALTER COLUMN generation DROP DEFAULT;

-- A row no longer references its list: that foreign key's check was a quarter of loading a
-- generation (benchmarks/README.md), and nothing needs its cascade. The rows of a memory go with
-- its chunks (forgetting it whole), or are deleted before its lists and state
-- (keyword_champions_clear.sql, keyword_champions_drop_old.sql); every reader of a row comes
-- through its list or the current generation.
ALTER TABLE keyword_champions DROP CONSTRAINT keyword_champions_memory_lexeme_fkey;
ALTER TABLE keyword_champion_lists DROP CONSTRAINT keyword_champion_lists_pkey;
ALTER TABLE keyword_champion_lists ADD PRIMARY KEY (memory, generation, lexeme);

-- A list read best first, within its generation; the old generation's rows found by the prefix.
DROP INDEX keyword_champions_best_idx;
CREATE INDEX keyword_champions_best_idx ON keyword_champions (memory, generation, lexeme, weight DESC)
    INCLUDE (episode_id, ordinal);

-- The generation a registered build loads (null until keyword_champions_build_start.sql set it).
ALTER TABLE keyword_champion_builds ADD COLUMN generation bigint;
