-- One imported entity (entities_store.import_entities): a new name is inserted; an existing one
-- (case-insensitively) gains the new aliases, sorted, without repeats, and becomes an import.
-- Returns whether the row was inserted (xmax = 0) rather than updated.
INSERT INTO entities (memory, name, aliases, source)
VALUES (%(memory)s, %(name)s, %(aliases)s, 'import')
ON CONFLICT (memory, lower(name)) DO UPDATE
SET aliases = ARRAY(SELECT DISTINCT a FROM unnest(entities.aliases || EXCLUDED.aliases) a ORDER BY a),
    source = 'import'
RETURNING (xmax = 0)
