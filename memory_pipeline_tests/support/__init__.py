"""Test support shared by the suites: a loopback embedding server and its deterministic vectors."""
