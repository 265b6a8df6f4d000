-- An index's validity and size, by name.
SELECT i.indisvalid, pg_relation_size(c.oid)
FROM pg_class c
JOIN pg_index i ON i.indexrelid = c.oid
WHERE c.relname = %s
