-- A memory's chunk statistics counted from its chunks: chunks, lexemes, episodes.
SELECT count(*), sum(length(tsv)), count(DISTINCT episode_id)
FROM chunks
WHERE memory = %s
HAVING count(*) > 0
