-- Fold each entity's rows of entity_mention_deltas (migration 0022: the triggers append one per
-- statement that linked or unlinked it) into one row holding their sum, none when it is 0; the
-- sums, and so every count read, stay what they were.
--
-- Beside writers: the DELETE takes only the rows this statement's snapshot sees, and the row it
-- writes is their sum, so a writer's row committed meanwhile (or still uncommitted) is left as
-- it is and still counts; a row another compaction deleted first is skipped (READ COMMITTED
-- re-checks it) and is not in RETURNING, so each row is summed once. The entities are locked
-- FOR KEY SHARE first, in id order, so none can be deleted before the folded row is committed
-- (its foreign key holds); SKIP LOCKED leaves out an entity being deleted right now
-- (its rows are folded next time), so a compaction never waits for a forget that may be
-- waiting for it. Writers take no row lock on this table and do not wait.
WITH folded AS (
    SELECT d.entity_id FROM entity_mention_deltas d GROUP BY d.entity_id HAVING count(*) > 1
),
locked AS (
    SELECT e.id FROM entities e JOIN folded ON folded.entity_id = e.id ORDER BY e.id FOR KEY SHARE OF e SKIP LOCKED
),
gone AS (
    DELETE FROM entity_mention_deltas d USING locked WHERE d.entity_id = locked.id
    RETURNING d.entity_id, d.mentions
)
INSERT INTO entity_mention_deltas (entity_id, mentions)
SELECT gone.entity_id, sum(gone.mentions)
FROM gone
GROUP BY gone.entity_id
HAVING sum(gone.mentions) <> 0
