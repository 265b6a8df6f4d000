"""Tests of memory_pipeline.indexing: index passes, their models, lists, links and serving."""
