-- After a champion-list swap (migration 0027), outside any lock writers wait for: a batch of the
-- memory's rows of generations other than the current one and a registered build's (the one the
-- swap replaced, and any a build that did not finish left), deleted; the count. Rows a deleter's
-- cascade holds are skipped (SKIP LOCKED), not waited for: the deleter may be waiting for a row
-- this batch took, and PostgreSQL would abort one of the two. keyword_store.drop_old_generations
-- repeats it, then deletes the emptied lists (keyword_champion_lists_drop_old.sql).
DELETE FROM keyword_champions
WHERE ctid = ANY(ARRAY(
    SELECT k.ctid
    FROM keyword_champions k
    JOIN keyword_champion_state s ON s.memory = k.memory
    WHERE k.memory = %(memory)s AND k.generation <> s.generation
      AND k.generation <> coalesce((SELECT generation FROM keyword_champion_builds WHERE memory = %(memory)s), -1)
    LIMIT %(batch)s
    FOR UPDATE OF k SKIP LOCKED))
