-- One episode without its body (a page reader must not fetch 2,000,000 characters to learn the
-- title): its fields, its length in characters, its content hash and its chunk count.
SELECT e.id, e.memory, e.kind, e.title, e.occurred_at, e.ingested_at, e.ingest_day, e.salience,
       e.source, e.external_id, e.metadata, length(e.body) AS characters, e.content_hash,
       (SELECT count(*) FROM chunks c WHERE c.episode_id = e.id) AS chunks
FROM episodes e
WHERE e.id = %(id)s
