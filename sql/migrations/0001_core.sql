-- Episodes, chunks, embedding profiles and embeddings.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE episodes (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    memory         text        NOT NULL,
    kind           text        NOT NULL,
    title          text        NOT NULL,
    occurred_at    timestamptz NOT NULL,
    ingested_at    timestamptz NOT NULL DEFAULT now(),
    ingest_day     date        NOT NULL,
    salience       real        NOT NULL DEFAULT 0.5 CHECK (salience >= 0 AND salience <= 1),
    source         text        NOT NULL DEFAULT '',
    external_id    text,
    metadata       jsonb       NOT NULL DEFAULT '{}'::jsonb,
    body           text        NOT NULL CHECK (length(body) > 0),
    content_hash   text        NOT NULL,
    -- Ingest is idempotent: the same body in the same memory is stored once.
    CONSTRAINT episodes_memory_content_hash_key UNIQUE (memory, content_hash)
);
CREATE INDEX episodes_ingest_day_idx ON episodes (ingest_day);
CREATE INDEX episodes_memory_occurred_idx ON episodes (memory, occurred_at);

-- Chunks of one episode are disjoint and in order; (episode_id, ordinal) is the row identity,
-- chunk_id the content address (identical texts inside one episode share it).
CREATE TABLE chunks (
    episode_id     bigint NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
    ordinal        int    NOT NULL,
    memory         text   NOT NULL,
    chunk_id       text   NOT NULL,
    start_char     int    NOT NULL,
    end_char       int    NOT NULL,
    token_estimate int    NOT NULL,
    text           text   NOT NULL,
    PRIMARY KEY (episode_id, ordinal),
    CHECK (end_char > start_char)
);
CREATE INDEX chunks_memory_chunk_id_idx ON chunks (memory, chunk_id);

CREATE TABLE embedding_profiles (
    id             int GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name           text    NOT NULL UNIQUE,          -- provider/model@dim
    provider       text    NOT NULL,
    model          text    NOT NULL,
    dim            int     NOT NULL CHECK (dim > 0 AND dim <= 4000),  -- halfvec HNSW limit
    generation     int     NOT NULL DEFAULT 1,
    is_active      boolean NOT NULL DEFAULT false,
    created_at     timestamptz NOT NULL DEFAULT now()
);
-- Exactly one profile serves search at a time.
CREATE UNIQUE INDEX embedding_profiles_one_active ON embedding_profiles (is_active) WHERE is_active;

-- Vectors are kept per (profile, generation): switching profiles adds rows, never deletes.
-- The column has no fixed dimension so several profiles share the table; each profile's HNSW
-- index is an expression index over embedding::halfvec(dim) restricted to its rows.
CREATE TABLE embeddings (
    profile_id     int     NOT NULL REFERENCES embedding_profiles (id),
    generation     int     NOT NULL,
    memory         text    NOT NULL,
    chunk_id       text    NOT NULL,
    embedding      halfvec NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (profile_id, generation, memory, chunk_id)
);
