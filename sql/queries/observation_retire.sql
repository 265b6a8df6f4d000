-- A revision keeps the old version as history: retired, superseded now (the memory's own time,
-- migration 0034), still pointed at by its successor.
UPDATE observations SET status = 'retired', updated_at = now(), superseded_at = now()
WHERE id = %(id)s AND memory = %(memory)s AND status <> 'retired'
RETURNING id
