"""Embedding providers behind one interface (``base.Embedder``); ``factory.build_embedder`` picks one."""
