-- Forgetting episodes of a memory: a statement whose every cited episode is forgotten goes (its
-- vectors by ON DELETE CASCADE); one that also cites a kept episode stays, without the forgotten
-- ids and passages. A kept revision that pointed at a deleted statement loses that link, so the
-- history never names a forgotten statement. One statement: the foreign key is checked at its end.
-- Returns (statements deleted, their vectors, statements kept without the forgotten citations).
WITH doomed AS (
    SELECT id FROM observations
    WHERE memory = %(memory)s
      AND episode_ids <> '{}'
      AND episode_ids <@ %(episode_ids)s::bigint[]
), kept AS (
    UPDATE observations o SET
        episode_ids = ARRAY(SELECT x FROM unnest(o.episode_ids) x WHERE x <> ALL (%(episode_ids)s::bigint[])),
        passages    = ARRAY(SELECT p FROM unnest(o.passages) p WHERE p <> ALL (%(chunk_ids)s::text[])),
        revises     = CASE WHEN o.revises IN (SELECT id FROM doomed) THEN NULL ELSE o.revises END,
        updated_at  = now()
    WHERE o.memory = %(memory)s
      AND o.id NOT IN (SELECT id FROM doomed)
      AND (o.episode_ids && %(episode_ids)s::bigint[] OR o.revises IN (SELECT id FROM doomed))
    RETURNING o.id
), gone AS (
    DELETE FROM observations WHERE id IN (SELECT id FROM doomed) RETURNING id
)
-- The count of vectors reads the snapshot from before this statement: the ones the cascade takes.
SELECT (SELECT count(*) FROM gone),
       (SELECT count(*) FROM observation_embeddings WHERE observation_id IN (SELECT id FROM doomed)),
       (SELECT count(*) FROM kept)
