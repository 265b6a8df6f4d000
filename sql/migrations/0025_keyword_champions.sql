-- Champion lists of common lexemes, so a query whose common part is one word (a one-word
-- lookup, or rare words plus one common one) reads that word's best chunks through a btree
-- instead of a bitmap over its whole GIN posting list (tens of thousands of entries in a large
-- memory) and a sample of them in table order (keyword_store's capped path).
--
-- keyword_champion_lists: per memory, the lexemes that have a list (those whose df exceeded the
-- threshold when the lists were last refreshed) and each one's floor. keyword_champions: the
-- list itself, every chunk row of the memory holding the lexeme with a term weight above the
-- floor. The weight is BM25's for that one lexeme without its idf (the same for every chunk of a
-- lexeme, so it orders a one-lexeme query's chunks exactly as BM25 does), with the memory's
-- avgdl and the k1 and b recorded at the refresh (keyword_champion_state).
--
-- The invariant every writer keeps: a list holds exactly the memory's chunk rows whose weight
-- exceeds its floor. keyword_store.refresh_champions rebuilds the lists (the nightly maintenance
-- job; the floor is the weight of the first chunk past the list's size), writing chunks adds the
-- new rows above a floor (keyword_champions_record.sql, from keyword_store.record_chunks) and
-- deleting chunks removes theirs (ON DELETE CASCADE). So the best `limit` chunks of the lexeme
-- are in its list whenever the list holds at least `limit` rows; a list shortened by deletions
-- or a lexeme that became common since the refresh only makes the capped path fall back to the
-- GIN index (keyword_capped.sql's fill tier), it never changes a score.
CREATE TABLE keyword_champion_state (
    memory        text   PRIMARY KEY,
    avgdl         float8 NOT NULL,
    k1            float8 NOT NULL,
    b             float8 NOT NULL,
    min_floor     float8 NOT NULL DEFAULT 0,  -- the lowest floor: a weight at or below it joins no list
    refreshed_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE keyword_champion_lists (
    memory  text   NOT NULL REFERENCES keyword_champion_state (memory) ON DELETE CASCADE,
    lexeme  text   NOT NULL,
    floor   float8 NOT NULL,
    PRIMARY KEY (memory, lexeme)
);

CREATE TABLE keyword_champions (
    memory      text    NOT NULL,
    lexeme      text    NOT NULL,
    weight      float8  NOT NULL,
    episode_id  bigint  NOT NULL,
    ordinal     integer NOT NULL,
    FOREIGN KEY (memory, lexeme) REFERENCES keyword_champion_lists (memory, lexeme) ON DELETE CASCADE,
    FOREIGN KEY (episode_id, ordinal) REFERENCES chunks (episode_id, ordinal) ON DELETE CASCADE
);
-- The search reads a list best first; the cascade from chunks finds a chunk's rows. No primary
-- key: a chunk row is written once (its lists' rows with it), a refresh starts from empty lists.
CREATE INDEX keyword_champions_best_idx ON keyword_champions (memory, lexeme, weight DESC) INCLUDE (episode_id, ordinal);
CREATE INDEX keyword_champions_chunk_idx ON keyword_champions (episode_id, ordinal);
