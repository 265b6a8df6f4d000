-- Forgetting a whole memory forgets its observations and beliefs (vectors by ON DELETE CASCADE);
-- revisions point at each other, so they go in one statement.
DELETE FROM observations WHERE memory = %(memory)s
