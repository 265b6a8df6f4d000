-- Heading anchors (domain/anchors.py): the headings a chunk sits under, "Title > Section > ...".
-- Chunks written before this migration, and chunks of bodies without headings, have ''.
ALTER TABLE chunks ADD COLUMN anchor text NOT NULL DEFAULT '';

-- The keyword channel indexes the anchor with the text, so a question that names the section
-- ("the Kestrel's reset button") finds a chunk whose text never repeats the section's name.
-- A generated column's expression cannot be altered in place before PostgreSQL 17, so the
-- column and its index are rebuilt. For every existing row the anchor is '' and the vector
-- holds exactly the lexemes it held before, so keyword_stats stay correct.
ALTER TABLE chunks DROP COLUMN tsv;
ALTER TABLE chunks
    ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', anchor || E'\n\n' || text)) STORED;
CREATE INDEX chunks_tsv_idx ON chunks USING gin (tsv);
