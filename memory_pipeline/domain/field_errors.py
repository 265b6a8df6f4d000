"""The one shape of a validation failure in the domain: which field broke which rule."""

from __future__ import annotations


class InvalidField(ValueError):
    """A field breaks a rule; ``field`` names it and ``str(error)`` is the plain reason, so a
    parser can say where (``FILE:LINE``, ``episodes[3]``) without knowing the rule."""

    def __init__(self, field: str, reason: str):
        super().__init__(reason)
        self.field = field
        self.reason = reason
