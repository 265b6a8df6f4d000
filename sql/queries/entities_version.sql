-- A cheap fingerprint of a memory's entities, so a search can keep the matcher it built from
-- them: an insert raises the count or the largest id, a delete lowers the count, and an update
-- (an import adding aliases) gives the row a new xmin, which changes the sum.
SELECT count(*), coalesce(max(id), 0), coalesce(sum(xmin::text::bigint), 0)
FROM entities
WHERE memory = %(memory)s
