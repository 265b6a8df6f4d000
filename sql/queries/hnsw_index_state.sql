-- An index's validity, size and options, by name.
SELECT i.indisvalid, pg_relation_size(c.oid), coalesce(c.reloptions, '{}')
FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
WHERE c.relname = %s
