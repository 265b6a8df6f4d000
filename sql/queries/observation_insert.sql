-- One observation or belief; observed_at defaults to now().
INSERT INTO observations (memory, kind, status, text, confidence, episode_ids, passages, author, revises, observed_at)
VALUES (%(memory)s, %(kind)s, %(status)s, %(text)s, %(confidence)s, %(episode_ids)s, %(passages)s, %(author)s,
        %(revises)s, coalesce(%(observed_at)s::timestamptz, now()))
RETURNING id
