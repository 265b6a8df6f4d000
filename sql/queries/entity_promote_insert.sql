-- A recurring name promoted to an entity (entities_store.promote_recurring); a name the memory
-- already has (case-insensitively) is left as it is.
INSERT INTO entities (memory, name, source)
VALUES (%(memory)s, %(name)s, 'extracted')
ON CONFLICT (memory, lower(name)) DO NOTHING
