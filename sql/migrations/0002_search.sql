-- Fused retrieval: full-text search over chunks, entities and their mentions, search telemetry.

-- The keyword channel ranks with BM25 over this vector. 'english' stems English words and
-- lower-cases every other script as-is (Cyrillic included), so non-English text is still
-- matched word for word; a literal substring fallback covers what the parser drops.
ALTER TABLE chunks
    ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED;
CREATE INDEX chunks_tsv_idx ON chunks USING gin (tsv);
CREATE INDEX chunks_memory_idx ON chunks (memory);

-- Entities: a name with aliases inside one memory (imported, or extracted because it recurs).
CREATE TABLE entities (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    memory      text   NOT NULL,
    name        text   NOT NULL CHECK (length(name) > 0),
    aliases     text[] NOT NULL DEFAULT '{}',
    source      text   NOT NULL CHECK (source IN ('import', 'extracted')),
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX entities_memory_name_key ON entities (memory, lower(name));

-- Proper-name candidates per episode, extracted once (episodes are immutable), so deciding
-- which names recur in a memory is one GROUP BY instead of re-reading every body.
CREATE TABLE episode_names (
    episode_id  bigint PRIMARY KEY REFERENCES episodes (id) ON DELETE CASCADE,
    memory      text   NOT NULL,
    names       text[] NOT NULL
);
CREATE INDEX episode_names_memory_idx ON episode_names (memory);

CREATE TABLE entity_mentions (
    entity_id   bigint NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    episode_id  bigint NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
    memory      text   NOT NULL,
    PRIMARY KEY (entity_id, episode_id)
);
CREATE INDEX entity_mentions_episode_idx ON entity_mentions (episode_id);

-- One row per search: what each channel proposed, what fusion and the reranker decided.
CREATE TABLE search_telemetry (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    searched_at    timestamptz NOT NULL DEFAULT now(),
    memory         text    NOT NULL,
    query          text    NOT NULL,
    policy         text    NOT NULL,
    result_limit   int     NOT NULL,
    channels       text[]  NOT NULL,
    latency_ms     real    NOT NULL,
    vector_status  text    NOT NULL,   -- 'ok', 'off', or 'unavailable: <reason>'
    reranker       text    NOT NULL,   -- 'off', 'not needed', 'ran', or 'fallback: <reason>'
    candidates     jsonb   NOT NULL,   -- {"vector": [{"chunk_id", "rank", "score"}], ...}
    results        jsonb   NOT NULL    -- [{"chunk_id", "rank", "score"}]
);
CREATE INDEX search_telemetry_searched_at_idx ON search_telemetry (searched_at);
