-- Bulk load of vector rows (binary COPY).
COPY embeddings (profile_id, generation, memory, chunk_id, embedding, windows)
FROM STDIN WITH (FORMAT BINARY)
