-- BM25, defined once: the weight one query lexeme gives one document (a chunk, or a statement).
-- Every keyword query (keyword_bm25.sql, keyword_exact.sql, keyword_capped.sql,
-- observation_keyword.sql) sums it over the query's lexemes. k1 (term-frequency saturation) and
-- b (length normalisation) are passed by the caller from keyword_store.BM25, the one place they
-- are set, so a change of them needs no migration.
--   n: documents in the collection, df: those holding the lexeme, tf: its count in this one,
--   dl: this document's length in lexemes, avgdl: the collection's mean length.
-- LANGUAGE sql, IMMUTABLE, a single expression: PostgreSQL inlines it into each query as if
-- the expression were written there (no function call per row).
CREATE FUNCTION bm25_weight(n float8, df float8, tf float8, dl float8, avgdl float8, k1 float8, b float8)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT ln(1 + (n - df + 0.5) / (df + 0.5)) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
$$;
