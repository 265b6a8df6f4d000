-- Record an embedding profile's measured speed.
UPDATE embedding_profiles SET characters_per_second = %s, speed_measured_at = now() WHERE id = %s
