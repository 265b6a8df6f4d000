"""The ``memory-pipeline`` command: one module per sub-command group, ``main`` dispatches."""
