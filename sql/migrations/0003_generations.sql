-- Safe model changes: one row per (profile, generation) with its canary, and the generation
-- being built by a reindex while search keeps serving the current one.
CREATE TABLE embedding_generations (
    profile_id     int  NOT NULL REFERENCES embedding_profiles (id),
    generation     int  NOT NULL,
    state          text NOT NULL DEFAULT 'building' CHECK (state IN ('building', 'ready', 'stale', 'retired')),
    stale_reason   text,
    canary_text    text,
    canary_vector  halfvec,
    started_at     timestamptz NOT NULL DEFAULT now(),
    ready_at       timestamptz,
    PRIMARY KEY (profile_id, generation)
);

-- The generation search serves stays in embedding_profiles.generation; this one is being built.
ALTER TABLE embedding_profiles ADD COLUMN building_generation int;

-- Profiles that exist already (serving generation 1) get their generation row.
INSERT INTO embedding_generations (profile_id, generation, state, ready_at)
SELECT id, generation, 'ready', now() FROM embedding_profiles;

-- Daily pipeline statistics (the pipeline_stats asset), one row per day it was computed.
CREATE TABLE pipeline_stats (
    stats_day      date PRIMARY KEY,
    computed_at    timestamptz NOT NULL DEFAULT now(),
    stats          jsonb NOT NULL
);
