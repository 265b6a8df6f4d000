-- The latest scoring of each memory's labelled questions (retrieval_quality, migration 0035).
SELECT DISTINCT ON (memory) memory, measured_at, profile, generation, questions, figures
FROM retrieval_quality
WHERE %(memory)s::text IS NULL OR memory = %(memory)s
ORDER BY memory, measured_at DESC, id DESC
