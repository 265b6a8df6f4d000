"""Masking secrets (passwords in connection strings) out of any text a user or a log may see."""

from __future__ import annotations

import re

MASK = "***"

# scheme://user:PASSWORD@host: the password runs to the LAST '@' of the token, so an unencoded
# '@' or ':' inside it ("bob:hun@ter2@db") is masked whole rather than in part.
_URL_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^:@/\s]*):(?P<password>\S*)@")
# key=value connection strings and URL query parameters: password=hunter2, password='a b',
# ?password=hunter2&...
_KEY_PASSWORD = re.compile(
    r"(?P<head>\b(?:password|passwd|pgpassword)\s*=\s*)(?P<password>'(?:[^'\\]|\\.)*'?|[^\s&'\"]+)",
    re.IGNORECASE,
)


def mask_secrets(text: str) -> str:
    """``text`` with every password in a connection URL or key=value string replaced by ***."""
    if not text or ("=" not in text and "@" not in text):
        return text
    # Even an empty password is shown as ***: whether one is set is not the reader's business.
    text = _URL_PASSWORD.sub(lambda m: f"{m.group('head')}:{MASK}@", text)
    return _KEY_PASSWORD.sub(lambda m: m.group("head") + MASK, text)
