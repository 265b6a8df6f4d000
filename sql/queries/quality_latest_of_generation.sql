-- The latest figures of a memory scored under one profile and generation.
SELECT measured_at, figures FROM retrieval_quality
 WHERE memory = %s AND profile = %s AND generation = %s
 ORDER BY measured_at DESC, id DESC LIMIT 1
