"""Tests for the embedding providers, the local model and the factory."""
