"""Embedding providers behind one interface (``base.Embedder``); ``factory.build_embedder`` picks one
(``detect`` finds which a URL given without a provider speaks)."""
