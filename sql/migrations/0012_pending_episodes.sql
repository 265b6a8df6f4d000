-- Pending episodes (DESIGN.md), defined once: an episode is pending for a profile's generation
-- when it has no chunk yet, or a chunk without a vector in that generation. The index pass's
-- list (pending_episode_ids.sql), its claims (claim_episodes.sql), the backlog per ingest day
-- (pending_by_day.sql) and pending_episodes.sql all select from this function.
-- LANGUAGE sql, STABLE, one SELECT and no BEGIN ATOMIC: PostgreSQL inlines it into each query
-- as if its SELECT were written there (a day filter or an id join still reaches the episodes
-- scan), and re-reads `e.*` at run time, so columns added to episodes later come along.
CREATE FUNCTION pending_episodes(for_profile int, for_generation int) RETURNS SETOF episodes
LANGUAGE sql STABLE
AS $$
    SELECT e.*
    FROM episodes e
    WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.episode_id = e.id)
       OR EXISTS (
            SELECT 1 FROM chunks c
            WHERE c.episode_id = e.id
              AND NOT EXISTS (
                    SELECT 1 FROM embeddings v
                    WHERE v.profile_id = for_profile AND v.generation = for_generation
                      AND v.memory = c.memory AND v.chunk_id = c.chunk_id))
$$;
