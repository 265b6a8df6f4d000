-- How many episodes mention each entity, kept as it changes, so the graph channel's rules (a name
-- in more than half of a memory's episodes is not followed; many mentions pick the recency walk)
-- read a few rows instead of counting a recurring name's mentions (tens of thousands of index
-- entries in a large memory) on every search that names it.
--
-- Statement-level triggers on entity_mentions append one row per entity a statement changed:
-- +n for the links it inserted, -n for those it deleted (forget, a cascade from a deleted
-- episode). Appending takes no row lock, so concurrent linkers never wait for or deadlock on each
-- other; an entity's count is the sum of its rows (search_store.mention_counts). Every statement
-- adds at most one row per entity and writes or deletes at least one link of it, so an entity
-- never has more rows than its mentions were written and deleted: summing them costs no more
-- than counting the mentions did, and far less for the page-at-a-time linking.
CREATE TABLE entity_mention_deltas (
    entity_id  bigint  NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    mentions   integer NOT NULL
);
CREATE INDEX entity_mention_deltas_entity_idx ON entity_mention_deltas (entity_id) INCLUDE (mentions);

-- Writers of links wait from here until the triggers exist, so none is counted twice or missed
-- (each statement below sees every link committed before it).
LOCK TABLE entity_mentions IN SHARE ROW EXCLUSIVE MODE;

INSERT INTO entity_mention_deltas (entity_id, mentions)
SELECT entity_id, count(*) FROM entity_mentions GROUP BY entity_id;

CREATE FUNCTION record_entity_mention_deltas() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO entity_mention_deltas (entity_id, mentions)
        SELECT entity_id, count(*) FROM new_rows GROUP BY entity_id;
    ELSE
        -- Links deleted because their entity was deleted need no row: the entity's rows go with it
        -- (ON DELETE CASCADE), and a row for it could not be written.
        INSERT INTO entity_mention_deltas (entity_id, mentions)
        SELECT o.entity_id, -count(*) FROM old_rows o
        WHERE EXISTS (SELECT 1 FROM entities e WHERE e.id = o.entity_id)
        GROUP BY o.entity_id;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER entity_mentions_inserted AFTER INSERT ON entity_mentions
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION record_entity_mention_deltas();
CREATE TRIGGER entity_mentions_deleted AFTER DELETE ON entity_mentions
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION record_entity_mention_deltas();
