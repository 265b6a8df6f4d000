"""The channels of fused retrieval, one module each; ``run`` runs a policy's channels at once.

Every channel reads one search's ``base.ChannelQuery`` and returns one typed result
(``base.ChannelResult`` or a subclass carrying what only that channel knows), listing candidates
of this memory only, best first:

- ``vector``: chunks by the query's vector (HNSW), re-scored by their best paragraph window;
- ``keyword``: chunks by BM25 full text, a literal substring match as fallback;
- ``graph``: chunks mentioning the entities the query names;
- ``date``: chunks of the episodes that occurred on the days and months the query names;
- ``statements``: observations and beliefs, and the chunks they cite.
"""
