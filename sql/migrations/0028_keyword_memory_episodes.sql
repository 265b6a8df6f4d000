-- Per memory, the episodes its chunk rows belong to (episodes that have chunks), beside the chunk
-- rows: the graph channel chooses its plan by how large a share of the memory's episodes mention
-- the names a query follows (search_store.graph_candidates), and counting a large memory's
-- episodes on every search that named a recurring name cost more than the rest of the channel.
-- Kept exactly as the other totals: keyword_stats_record.sql adds an indexed batch's episodes
-- (each is chunked once, in one transaction), keyword_stats_recompute_memories.sql recounts
-- after chunks are deleted.
ALTER TABLE keyword_memory_stats ADD COLUMN episodes int NOT NULL DEFAULT 0 CHECK (episodes >= 0);

UPDATE keyword_memory_stats m
SET episodes = (SELECT count(DISTINCT c.episode_id) FROM chunks c WHERE c.memory = m.memory);
