-- An embedding generation's calibration (memory_pipeline/domain/calibration.py): the model's
-- cosines on the built-in probe set, measured once by the first index pass that writes the
-- generation, and the similarity cut-offs derived from them (the close-statement and
-- near-duplicate cut-offs, fusion's vector anchors). NULL: not measured yet, the defaults hold.
ALTER TABLE embedding_generations ADD COLUMN calibration jsonb;
