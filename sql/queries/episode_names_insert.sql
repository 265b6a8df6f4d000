-- Name candidates of a page of episodes, in one statement: each episode's names travel as a JSON
-- array (a text[] per row cannot be unnested from one parameter) and are stored as a text[] in
-- their order; an episode's names are extracted once (its body never changes), so an episode
-- already named keeps its row. One statement instead of one per episode costs the linking worker
-- and its backend less per episode (`git show 93c90e6:benchmarks/README.md`, "Indexing CPU").
INSERT INTO episode_names (episode_id, memory, names)
SELECT t.episode_id, t.memory,
       ARRAY(SELECT n.name FROM jsonb_array_elements_text(t.names) WITH ORDINALITY AS n(name, ord) ORDER BY n.ord)
FROM unnest(%(episode_ids)s::bigint[], %(memories)s::text[], %(names)s::jsonb[]) AS t(episode_id, memory, names)
ON CONFLICT DO NOTHING
