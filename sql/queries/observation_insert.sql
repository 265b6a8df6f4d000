-- One observation or belief; observed_at defaults to now(); valid_from/valid_until (the
-- world's time) stay NULL unless given (migration 0034).
INSERT INTO observations (memory, kind, status, text, confidence, episode_ids, passages, author, revises,
                          observed_at, valid_from, valid_until)
VALUES (%(memory)s, %(kind)s, %(status)s, %(text)s, %(confidence)s, %(episode_ids)s, %(passages)s, %(author)s,
        %(revises)s, coalesce(%(observed_at)s::timestamptz, now()), %(valid_from)s, %(valid_until)s)
RETURNING id
