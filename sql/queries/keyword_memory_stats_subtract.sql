-- Subtract removed chunks from a memory's keyword statistics row.
UPDATE keyword_memory_stats
SET chunks = chunks - %(chunks)s, total_lexemes = total_lexemes - %(lexemes)s, episodes = greatest(episodes - %(episodes)s, 0)
WHERE memory = %(memory)s
