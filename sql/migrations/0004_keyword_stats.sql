-- Keyword channel statistics, so BM25 needs neither a count over the memory's chunks nor every
-- matching chunk to know how rare a query word is.
--
-- keyword_stats.df: the number of chunk ROWS of the memory whose tsv holds the lexeme. Rows, not
-- distinct chunk ids: the few identical chunk texts inside one episode (same chunk_id) count once
-- each, exactly as keyword_memory_stats.chunks counts rows (the N of BM25, as the keyword query
-- always counted it). Maintained by memory_pipeline/storage/keyword_store.py: record_chunks in
-- the transaction that writes an episode's chunks (index_store.write_episodes), recompute where
-- chunks are deleted (backfill --rechunk). fillfactor 80 leaves room on each page, so the df
-- increments of lexemes that already exist are HOT updates (no index write).
CREATE TABLE keyword_stats (
    memory  text NOT NULL,
    lexeme  text NOT NULL,
    df      int  NOT NULL CHECK (df > 0),
    PRIMARY KEY (memory, lexeme)
) WITH (fillfactor = 80);

-- Per memory: chunk rows (BM25's N) and the sum of their tsv lengths (distinct lexemes per chunk,
-- BM25's document length), so avgdl = total_lexemes / chunks.
CREATE TABLE keyword_memory_stats (
    memory         text   PRIMARY KEY,
    chunks         int    NOT NULL CHECK (chunks > 0),
    total_lexemes  bigint NOT NULL
) WITH (fillfactor = 80);

-- Backfill from the chunks already stored.
INSERT INTO keyword_memory_stats (memory, chunks, total_lexemes)
SELECT memory, count(*), sum(length(tsv)) FROM chunks GROUP BY memory;

INSERT INTO keyword_stats (memory, lexeme, df)
SELECT c.memory, u.lexeme, count(*)
FROM chunks c, unnest(tsvector_to_array(c.tsv)) AS u(lexeme)
GROUP BY 1, 2;
