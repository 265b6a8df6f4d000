"""Dagster helpers that define nothing: the instance, its storage, the resource, settings, metadata."""
