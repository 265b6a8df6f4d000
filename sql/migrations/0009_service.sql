-- The service (memory_pipeline/server): bearer tokens, and what forgetting a memory looks up.

-- A token is shown once when created; only its SHA-256 is kept (a random 256-bit token needs no
-- slow hash: nothing can be guessed from the digest). Each token reads, or reads and writes,
-- the memories listed ('*': every memory).
CREATE TABLE api_tokens (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name          text   NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 100),
    token_hash    text   NOT NULL UNIQUE,
    memories      text[] NOT NULL CHECK (cardinality(memories) > 0),
    access        text   NOT NULL CHECK (access IN ('read', 'write')),
    created_at    timestamptz NOT NULL DEFAULT now()
);

-- Forgetting a memory deletes its telemetry rows; searches of one memory are found by it.
CREATE INDEX search_telemetry_memory_idx ON search_telemetry (memory);
