-- Contest, re-activate or retire one statement of a memory.
UPDATE observations SET status = %(status)s, updated_at = now()
WHERE id = %(id)s AND memory = %(memory)s
RETURNING id
