-- The shared_buffers the server's configuration files give it (the last entry read wins); a
-- size waiting for a restart is listed with the error 'setting could not be applied'. Reading
-- pg_file_settings takes a superuser: the embedded server's (health_store.shared_buffers).
SELECT setting
FROM pg_file_settings
WHERE name = 'shared_buffers'
  AND (error IS NULL OR error = 'setting could not be applied')
ORDER BY seqno DESC
LIMIT 1
