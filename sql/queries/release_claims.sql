-- Release the advisory locks claim_pending_episodes.sql took for these episode ids.
SELECT count(*) FILTER (WHERE pg_advisory_unlock(%(lock_class)s, mod(id, 2147483647)::int4))
FROM unnest(%(ids)s::bigint[]) AS t(id)
