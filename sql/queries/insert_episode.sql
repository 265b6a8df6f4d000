-- Idempotent on (memory, content_hash): a body already stored in this memory is skipped.
INSERT INTO episodes (memory, kind, title, occurred_at, ingest_day, salience, source,
                      external_id, metadata, body, content_hash)
VALUES (%(memory)s, %(kind)s, %(title)s, %(occurred_at)s, %(ingest_day)s, %(salience)s,
        %(source)s, %(external_id)s, %(metadata)s, %(body)s, %(content_hash)s)
ON CONFLICT (memory, content_hash) DO NOTHING
RETURNING id
