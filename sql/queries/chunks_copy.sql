-- Bulk load of chunk rows (binary COPY).
COPY chunks (episode_id, ordinal, memory, chunk_id, start_char, end_char, token_estimate, text, anchor)
FROM STDIN WITH (FORMAT BINARY)
