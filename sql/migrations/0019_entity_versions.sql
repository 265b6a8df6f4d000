-- A version of each memory's entities, so a search can keep the entity matcher it built from them
-- (search.service) and know in one indexed read whether they changed; before, it fingerprinted
-- every entity row of the memory on each search. Every statement that inserts, updates or deletes
-- entities (import, promotion of recurring names, forget, a cascade) sets the memory's version to
-- a fresh value of one sequence, by the triggers below, so no writer can forget to. The values only
-- need to differ: a version never comes back, even after a memory is forgotten and filled again.
CREATE SEQUENCE entity_versions_seq;

CREATE TABLE entity_versions (
    memory   text   PRIMARY KEY,
    version  bigint NOT NULL
);

INSERT INTO entity_versions (memory, version)
SELECT memory, nextval('entity_versions_seq') FROM (SELECT DISTINCT memory FROM entities) m;

-- Statement-level: once per statement and memory, however many entity rows it wrote.
CREATE FUNCTION bump_entity_versions() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        INSERT INTO entity_versions (memory, version)
        SELECT memory, nextval('entity_versions_seq') FROM (SELECT DISTINCT memory FROM old_rows) m
        ON CONFLICT (memory) DO UPDATE SET version = EXCLUDED.version;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO entity_versions (memory, version)
        SELECT memory, nextval('entity_versions_seq') FROM (SELECT DISTINCT memory FROM new_rows) m
        ON CONFLICT (memory) DO UPDATE SET version = EXCLUDED.version;
    END IF;
    RETURN NULL;
END
$$;

-- A trigger with transition tables handles one event (PostgreSQL's rule): three of them.
CREATE TRIGGER entities_inserted AFTER INSERT ON entities
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bump_entity_versions();
CREATE TRIGGER entities_updated AFTER UPDATE ON entities
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bump_entity_versions();
CREATE TRIGGER entities_deleted AFTER DELETE ON entities
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION bump_entity_versions();
