-- Store a new API token (its hash only).
INSERT INTO api_tokens (name, token_hash, memories, access)
VALUES (%s, %s, %s, %s)
RETURNING name, memories, access, created_at
