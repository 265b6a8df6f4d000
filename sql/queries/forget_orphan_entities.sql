-- Extracted entities of the memory that no remaining episode mentions (an extracted entity exists
-- because its name recurred; with no mention left its name is all that remains of the text).
DELETE FROM entities e
WHERE e.memory = %(memory)s
  AND e.source = 'extracted'
  AND NOT EXISTS (SELECT 1 FROM entity_mentions m WHERE m.entity_id = e.id)
