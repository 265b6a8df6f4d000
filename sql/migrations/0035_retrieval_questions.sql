-- A memory's own labelled questions (`memory-pipeline questions`, issue 41): a question in the
-- user's words and what should answer it, exactly one of an episode, a source (every revision of
-- it: `episodes.source_key`) or a statement (an observation or belief). A question pointing at
-- an episode or a statement goes when that row is forgotten (the cascades); a whole memory's go
-- with it (storage/forget_store.py). One question text per memory: saving it again moves it.
CREATE TABLE retrieval_questions (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    memory         text        NOT NULL,
    question       text        NOT NULL CHECK (length(question) > 0),
    episode_id     bigint      REFERENCES episodes (id) ON DELETE CASCADE,
    source_key     text,
    observation_id bigint      REFERENCES observations (id) ON DELETE CASCADE,
    author         text        NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    CHECK (num_nonnulls(episode_id, source_key, observation_id) = 1),
    UNIQUE (memory, question)
);
CREATE INDEX retrieval_questions_episode_idx ON retrieval_questions (episode_id)
    WHERE episode_id IS NOT NULL;
CREATE INDEX retrieval_questions_observation_idx ON retrieval_questions (observation_id)
    WHERE observation_id IS NOT NULL;

-- Each scoring of a memory's questions (the `retrieval_quality` asset, `memory-pipeline
-- quality`, the reindex guard): the figures of the fused search and of each channel, under the
-- profile and generation that served it. `status` and the APIs read the latest per memory.
CREATE TABLE retrieval_quality (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    memory         text        NOT NULL,
    measured_at    timestamptz NOT NULL DEFAULT now(),
    profile        text,
    generation     int,
    questions      int         NOT NULL,
    figures        jsonb       NOT NULL   -- {"fused": {"first_at_1": ...}, "vector": {...}, ...}
);
CREATE INDEX retrieval_quality_memory_idx ON retrieval_quality (memory, measured_at DESC);
