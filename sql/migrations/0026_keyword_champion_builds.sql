-- Rebuilding the keyword champion lists (migration 0025) beside the writers instead of in front
-- of them. keyword_store.refresh_champions registers a build (keyword_champion_builds), reads
-- every posting of the memory from one snapshot into the staging tables without any lock, then
-- swaps the staged lists in under the memory's keyword_memory_stats row lock, which only the
-- memory's chunk writers wait for, and only for the swap.
--
-- A chunk writer's keyword_champions_record.sql logs its episodes in keyword_champion_backlog
-- while a build of their memory is registered: the swap weighs those episodes' chunks again
-- through the new floors (the snapshot may predate them, or hold an older version of their
-- chunks that `backfill --rechunk` replaced), and keeps a staged row only while its chunk still
-- exists, so the lists' invariant (migration 0025) holds after the swap. The registration is
-- committed under the same row lock, so a writer that did not see it committed before the
-- snapshot was taken.
CREATE TABLE keyword_champion_builds (
    memory      text        PRIMARY KEY,
    pid         integer     NOT NULL,              -- the building backend: a build whose backend is gone is stale
    started_at  timestamptz NOT NULL DEFAULT now(),
    -- What the snapshot read, for keyword_champion_state (null until the staging statement ran).
    avgdl       float8,
    k1          float8,
    b           float8,
    min_floor   float8,
    chunks      integer
);

CREATE TABLE keyword_champion_backlog (
    memory      text   NOT NULL,
    episode_id  bigint NOT NULL,
    PRIMARY KEY (memory, episode_id)
);

-- Staging: rebuilt per build, emptied by the swap; UNLOGGED, as a crash only loses a build.
CREATE UNLOGGED TABLE keyword_champion_staged_lists (
    memory  text   NOT NULL,
    lexeme  text   NOT NULL,
    floor   float8 NOT NULL,
    PRIMARY KEY (memory, lexeme)
);

CREATE UNLOGGED TABLE keyword_champion_staged (
    memory      text    NOT NULL,
    lexeme      text    NOT NULL,
    weight      float8  NOT NULL,
    episode_id  bigint  NOT NULL,
    ordinal     integer NOT NULL
);
CREATE INDEX keyword_champion_staged_memory_idx ON keyword_champion_staged (memory, episode_id, ordinal);

-- The chunk rows the lists were built from: `memory-pipeline index` rebuilds lists that are
-- missing or whose memory grew or shrank by more than keyword_store.STALE_CHANGE since.
ALTER TABLE keyword_champion_state ADD COLUMN chunks integer;
