-- Idempotent on (memory, content_hash): a body already stored in this memory is skipped. So is a
-- source that gained a current revision since the caller looked (the partial unique index of
-- migration 0031): DO NOTHING without a target covers both, and the caller tells them apart.
INSERT INTO episodes (memory, kind, title, occurred_at, ingest_day, salience, source,
                      external_id, metadata, body, content_hash, source_key)
VALUES (%(memory)s, %(kind)s, %(title)s, %(occurred_at)s, %(ingest_day)s, %(salience)s,
        %(source)s, %(external_id)s, %(metadata)s, %(body)s, %(content_hash)s, %(source_key)s)
ON CONFLICT DO NOTHING
RETURNING id
