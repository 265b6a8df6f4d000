"""The argument types of the command options (argparse ``type=``): each refuses bad input with
a message naming it, which argparse prints with the usage (exit 2); and ``switch``, an on/off
option."""

from __future__ import annotations

import argparse
import datetime as dt


def iso_date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


def whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port must be between 1 and 65535, got {value}")
    return value


def port_or_zero(text: str) -> int:
    """A port, or 0: any free port (the server prints the one it got)."""
    return 0 if text.strip() == "0" else port(text)


def switch(parser: argparse.ArgumentParser, flag: str, help: str | None = None) -> None:
    """An option that is off unless given (``store_true``)."""
    parser.add_argument(flag, action="store_true", help=help)
