-- As of a date (DESIGN.md "current / as of"): what the memory held as true at a moment.
--
-- episodes.current_from: when (the memory's own time) this revision of a source took its
-- predecessor's place; NULL for a source's first revision and an episode with no source, which
-- count from when they occurred. A revision is in force at a moment when it had occurred by
-- then, had taken its predecessor's place by then, and was not yet superseded
-- (episode_in_force below). Set by revisions_store.store_revision beside superseded_by.
ALTER TABLE episodes ADD COLUMN current_from timestamptz;

UPDATE episodes e
SET current_from = p.superseded_at
FROM episodes p
WHERE p.superseded_by = e.id AND p.superseded_at IS NOT NULL;

-- The one definition of "in force before `until`" (exclusive: a date as of which a search asks
-- is the end of that day), shared by every query a search with as_of runs. A single expression:
-- the planner inlines it, and with `until` NULL (every search without as_of) it folds to true.
CREATE OR REPLACE FUNCTION episode_in_force(
    occurred_at timestamptz, current_from timestamptz, superseded_at timestamptz,
    until timestamptz)
RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$
    SELECT until IS NULL
        OR (occurred_at < until
            AND (current_from IS NULL OR current_from < until)
            AND (superseded_at IS NULL OR superseded_at >= until))
$$;

-- Statements (observations, beliefs): validity in the world's time (valid_from, valid_until;
-- NULL: from when it was observed, until further notice) and the memory's own time: recorded
-- (created_at, already there) and superseded_at, when a revision took its place (the old row
-- stays, retired, as history; its successor names it in `revises`).
ALTER TABLE observations
    ADD COLUMN valid_from    timestamptz,
    ADD COLUMN valid_until   timestamptz,
    ADD COLUMN superseded_at timestamptz,
    ADD CONSTRAINT observations_validity_order
        CHECK (valid_from IS NULL OR valid_until IS NULL OR valid_from <= valid_until);

-- Statements revised before this migration: superseded when their successor was recorded.
UPDATE observations o
SET superseded_at = s.created_at
FROM observations s
WHERE s.revises = o.id AND o.status = 'retired';

-- A search's policy filter on one chunk's episode (its kinds, time window and as_of), for the
-- queries that test it per candidate chunk behind a guard that folds away without filters
-- (keyword_capped.sql: one definition instead of four copies, which kept the query within
-- psycopg's statement cache). Not inlined (it reads a row), evaluated only when filtering.
CREATE OR REPLACE FUNCTION episode_allowed(
    episode bigint, kinds text[], since timestamptz, until timestamptz)
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT EXISTS (
        SELECT 1 FROM episodes e
        WHERE e.id = episode
          AND (kinds IS NULL OR e.kind = ANY(kinds))
          AND (since IS NULL OR e.occurred_at >= since)
          AND episode_in_force(e.occurred_at, e.current_from, e.superseded_at, until))
$$;
