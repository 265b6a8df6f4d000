-- Pending episodes (the pending_episodes function, migration 0012) per ingest day for a
-- profile and generation: how many, the newest one's id (sensor run keys), and the oldest
-- ingest time (backlog check).
SELECT e.ingest_day, count(*) AS pending, max(e.id) AS newest_id, min(e.ingested_at) AS oldest_ingested_at
FROM pending_episodes(%(profile_id)s, %(generation)s) e
GROUP BY e.ingest_day
ORDER BY e.ingest_day
