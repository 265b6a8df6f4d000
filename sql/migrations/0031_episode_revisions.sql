-- Revisions (DESIGN.md): an episode's source identity, and when (the memory's own time) it
-- stopped being current and which revision took its place.
--
-- source_key: "id:<id>" for a JSONL line's, Python/HTTP/MCP item's "id"; "file:<path>" for a
-- file (its path within the folder it was ingested from, starting with that folder's name; a
-- file or document given alone: its name). NULL: the episode is a source of its own.
-- Ingest of a changed body of a source inserts a new row and sets superseded_at/superseded_by
-- on the current one (episodes_store.store_episodes); rows are never otherwise edited.
-- superseded_by has no foreign key: forgetting deletes every revision of a source together, and
-- a reference checked on every deleted row would cost a scan per row of a forgotten memory.
ALTER TABLE episodes
    ADD COLUMN source_key    text,
    ADD COLUMN superseded_at timestamptz,
    ADD COLUMN superseded_by bigint;

-- Existing episodes: the JSONL id is the identity where one was given. A file's episode keeps
-- NULL (its stored `source` is the path as typed, relative to wherever ingest ran, not to the
-- folder); the first ingest of its unchanged body adopts the new identity (store_episodes).
UPDATE episodes SET source_key = 'id:' || external_id WHERE external_id IS NOT NULL;

-- Bodies of one id ingested more than once were stored as separate episodes: the newest is
-- current, each older one superseded by the next.
WITH chain AS (
    SELECT id, lead(id) OVER w AS next_id, lead(ingested_at) OVER w AS next_at
    FROM episodes
    WHERE source_key IS NOT NULL
    WINDOW w AS (PARTITION BY memory, source_key ORDER BY id)
)
UPDATE episodes e
SET superseded_at = chain.next_at, superseded_by = chain.next_id
FROM chain
WHERE chain.id = e.id AND chain.next_id IS NOT NULL;

-- At most one current revision per source of a memory; ingest finds it through this index.
CREATE UNIQUE INDEX episodes_current_source_idx ON episodes (memory, source_key)
    WHERE superseded_at IS NULL AND source_key IS NOT NULL;
-- A source's history (every revision, newest first) and the listing's revision counts.
CREATE INDEX episodes_source_idx ON episodes (memory, source_key, id)
    WHERE source_key IS NOT NULL;
-- Search with history: superseded revisions are out of the chunk index (their chunks are
-- deleted when superseded), so `--history` matches their words here instead. Partial: current
-- episodes, the hot path's rows, never pay for it. The body is cut where to_tsvector's 1 MB
-- limit cannot be reached.
CREATE INDEX episodes_superseded_text_idx ON episodes
    USING gin (to_tsvector('english', title || ' ' || left(body, 200000)))
    WHERE superseded_at IS NOT NULL;

-- Superseded revisions are never pending (DESIGN.md): the index pass does not chunk them again.
CREATE OR REPLACE FUNCTION pending_episodes(for_profile int, for_generation int)
RETURNS SETOF episodes
LANGUAGE sql STABLE
AS $$
    SELECT e.*
    FROM episodes e
    WHERE e.superseded_at IS NULL
      AND (NOT EXISTS (SELECT 1 FROM chunks c WHERE c.episode_id = e.id)
           OR EXISTS (
                SELECT 1 FROM chunks c
                WHERE c.episode_id = e.id
                  AND NOT EXISTS (
                        SELECT 1 FROM embeddings v
                        WHERE v.profile_id = for_profile AND v.generation = for_generation
                          AND v.memory = c.memory AND v.chunk_id = c.chunk_id)))
$$;

-- The legacy revisions just superseded leave the index as every superseded revision does:
-- their chunks (champion rows by cascade), entity mentions, unshared vectors; the memories'
-- keyword statistics are recounted (as keyword_stats_recompute_*.sql do).
CREATE TEMP TABLE revisions_dropped ON COMMIT DROP AS
SELECT DISTINCT c.memory, c.chunk_id
FROM chunks c JOIN episodes e ON e.id = c.episode_id
WHERE e.superseded_at IS NOT NULL;

DELETE FROM entity_mentions m USING episodes e
WHERE e.id = m.episode_id AND e.superseded_at IS NOT NULL;
DELETE FROM episode_names n USING episodes e
WHERE e.id = n.episode_id AND e.superseded_at IS NOT NULL;
DELETE FROM chunks c USING episodes e
WHERE e.id = c.episode_id AND e.superseded_at IS NOT NULL;
DELETE FROM embeddings v USING revisions_dropped d
WHERE v.memory = d.memory AND v.chunk_id = d.chunk_id
  AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.memory = v.memory AND c.chunk_id = v.chunk_id);

DELETE FROM keyword_stats s
WHERE s.memory IN (SELECT memory FROM revisions_dropped);
INSERT INTO keyword_stats (memory, lexeme, df)
SELECT c.memory, u.lexeme, count(*)::int
FROM chunks c, unnest(tsvector_to_array(c.tsv)) AS u(lexeme)
WHERE c.memory IN (SELECT memory FROM revisions_dropped)
GROUP BY c.memory, u.lexeme;
DELETE FROM keyword_memory_stats m
WHERE m.memory IN (SELECT memory FROM revisions_dropped);
INSERT INTO keyword_memory_stats (memory, chunks, total_lexemes, episodes)
SELECT memory, count(*)::int, sum(length(tsv))::bigint, count(DISTINCT episode_id)::int
FROM chunks
WHERE memory IN (SELECT memory FROM revisions_dropped)
GROUP BY memory;
