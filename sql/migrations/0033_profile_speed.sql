-- The speed an embedding profile's index runs last reached on this installation: characters of
-- episode bodies indexed per second of a run's passes (runs of a few seconds are not counted:
-- start-up dominates them). NULL: never measured. `memory-pipeline index` and `status` estimate
-- the time a pending backlog takes from it (memory_pipeline/indexing/estimate.py).
ALTER TABLE embedding_profiles
    ADD COLUMN characters_per_second real,
    ADD COLUMN speed_measured_at timestamptz;
