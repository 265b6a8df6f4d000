-- The statements behind search results or a listing, by id, within one memory.
SELECT id, memory, kind, status, text, confidence, episode_ids, passages, author, revises, observed_at,
       valid_from, valid_until, created_at, superseded_at
FROM observations
WHERE memory = %(memory)s AND id = ANY(%(ids)s::bigint[])
