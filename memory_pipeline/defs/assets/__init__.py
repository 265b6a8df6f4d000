"""The assets: episodes, chunks, embeddings and entity mentions per ingest day; global upkeep
(statement vectors among it)."""
