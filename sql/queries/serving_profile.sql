-- The active profile with its serving generation's state, stale reason and calibration, in one
-- round trip: every search reads it (the vector channel, the statement channels); with
-- %(memory)s, also that memory's chunk-row count (keyword_memory_stats, kept exact by the
-- writers; NULL without statistics), by which the vector channel picks an exact scan.
SELECT p.id, p.name, p.provider, p.model, p.dim, p.generation, p.is_active, p.building_generation,
       g.state, g.stale_reason, g.calibration,
       (SELECT m.chunks FROM keyword_memory_stats m WHERE m.memory = %(memory)s::text)
FROM embedding_profiles p
LEFT JOIN LATERAL (
    SELECT state, stale_reason, calibration
    FROM embedding_generations
    WHERE profile_id = p.id AND generation = p.generation
) g ON true
WHERE p.is_active
