-- Name candidates of one episode; an episode's names are extracted once (its body never changes).
INSERT INTO episode_names (episode_id, memory, names)
VALUES (%(episode_id)s, %(memory)s, %(names)s)
ON CONFLICT DO NOTHING
