-- A memory's episodes newest first by id: search reads its newest few to say which ones no
-- index pass has chunked yet (pending_in_memory.sql), without scanning the memory.
CREATE INDEX episodes_memory_id_idx ON episodes (memory, id);
