-- One episode with its counts of chunks and mentions.
SELECT e.id, e.memory, e.kind, e.title, e.occurred_at, e.ingested_at, e.ingest_day, e.salience,
       e.source, e.external_id, e.metadata, e.body,
       (SELECT count(*) FROM chunks c WHERE c.episode_id = e.id)
FROM episodes e WHERE e.id = %s
