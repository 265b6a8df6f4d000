-- Observations and beliefs: short statements about the person or the world, written by a person
-- or an agent, with the episodes (and passages) they came from. A revision is a new row that
-- names the one it replaces (kept, retired), so the history stays readable.
CREATE TABLE observations (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    memory       text        NOT NULL,
    kind         text        NOT NULL CHECK (kind IN ('observation', 'belief')),
    status       text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'contested', 'retired')),
    text         text        NOT NULL CHECK (length(text) > 0),
    confidence   real        NOT NULL DEFAULT 1 CHECK (confidence >= 0 AND confidence <= 1),
    episode_ids  bigint[]    NOT NULL DEFAULT '{}',
    passages     text[]      NOT NULL DEFAULT '{}',   -- chunk ids or the writer's own references
    author       text        NOT NULL DEFAULT '',
    revises      bigint      REFERENCES observations (id),
    observed_at  timestamptz NOT NULL DEFAULT now(),
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    -- The same configuration as chunks.tsv: one keyword behaviour for every searched text.
    tsv          tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED
);
CREATE INDEX observations_tsv_idx ON observations USING gin (tsv);
CREATE INDEX observations_memory_idx ON observations (memory, kind, status);

-- Vectors of observations per (profile, generation), like chunk vectors in embeddings; each
-- (profile, generation) gets its own partial HNSW index (storage/observations_store.py).
CREATE TABLE observation_embeddings (
    profile_id      int     NOT NULL REFERENCES embedding_profiles (id),
    generation      int     NOT NULL,
    observation_id  bigint  NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    memory          text    NOT NULL,
    embedding       halfvec NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (profile_id, generation, observation_id)
);
