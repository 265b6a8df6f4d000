-- Register a rebuild of a memory's champion lists (migrations 0026, 0027), after
-- keyword_champions_build_start.sql, under the memory's keyword_memory_stats row lock. Its
-- generation is past every generation the memory has rows of (the current one, and any a build
-- that did not finish left behind), so loading it never meets an old row.
INSERT INTO keyword_champion_builds (memory, pid, generation)
SELECT %(memory)s, pg_backend_pid(),
       greatest((SELECT generation FROM keyword_champion_state WHERE memory = %(memory)s),
                (SELECT max(generation) FROM keyword_champion_lists WHERE memory = %(memory)s), 0) + 1
