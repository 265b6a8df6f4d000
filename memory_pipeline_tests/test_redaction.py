"""Passwords are masked out of any text, whatever the connection string's form."""

from __future__ import annotations

import pytest

from memory_pipeline.errors import ConfigurationError, DatabaseUnavailable
from memory_pipeline.redaction import mask_secrets


@pytest.mark.parametrize(
    "text, shown",
    [
        ("postgresql://bob:hunter2@db:5432/x", "postgresql://bob:***@db:5432/x"),
        ("postgresql://bob:hun@ter2@db/x", "postgresql://bob:***@db/x"),
        ("postgresql://bob:pa:ss@db/x", "postgresql://bob:***@db/x"),
        ("postgresql://bob@db/x", "postgresql://bob@db/x"),
        (
            "postgresql://db/x?user=bob&password=hunter2&sslmode=require",
            "postgresql://db/x?user=bob&password=***&sslmode=require",
        ),
        (
            "cannot connect to host=db user=bob password=hunter2 dbname=x",
            "cannot connect to host=db user=bob password=*** dbname=x",
        ),
        ("host=db password='hun ter\\'2' dbname=x", "host=db password=*** dbname=x"),
        ("PASSWORD = hunter2", "PASSWORD = ***"),
        ("no secrets here: a=b", "no secrets here: a=b"),
    ],
)
def test_passwords_are_masked_in_every_form(text, shown):
    assert mask_secrets(text) == shown


def test_every_expected_failure_message_is_masked_wherever_it_is_shown():
    assert "hunter2" not in str(DatabaseUnavailable("cannot connect to host=h password=hunter2"))
    assert "ter2" not in str(ConfigurationError("X='postgresql://a:hun@ter2@h/x': bad"))


def test_warnings_on_stderr_are_masked_too(capsys):
    from memory_pipeline.cli.common import err

    # e.g. Dagster's storage refusing a connection string it was given (an ingest warning).
    err(
        "memory-pipeline: warning: stored, but could not record the ingest in Dagster: "
        "could not connect to postgresql://bob:hunter2@db/dagster"
    )
    assert "hunter2" not in capsys.readouterr().err
