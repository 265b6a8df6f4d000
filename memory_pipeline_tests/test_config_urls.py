"""config.check_url: every malformed model-server URL is a ConfigurationError naming its variable,
including what only httpx (every client's transport) refuses, so none fails later in a client."""

from __future__ import annotations

import pytest

from memory_pipeline import config
from memory_pipeline.errors import ConfigurationError

REFUSED = {
    "http://[::1": "an IPv6 address must be whole and in brackets",
    "http://[v1.x]": "an IPv6 address must be whole and in brackets",
    "http://[::1]]": "an IPv6 address must be whole and in brackets",
    "http://[::1]x": "an IPv6 address must be whole and in brackets",
    "http://[::1]:": "the port must be a number from 1 to 65535",
    "http://127.0.0.1:0": "the port must be a number from 1 to 65535",
    "http://127.0.0.1:99999": "the port must be a number from 1 to 65535",
    "http://xn--:1": "Malformed A-label",
    "ftp://127.0.0.1": "not an http or https URL",
    "http://": "no host name",
}


@pytest.mark.parametrize("url", sorted(REFUSED))
def test_a_malformed_url_is_a_configuration_error_naming_its_variable(url):
    with pytest.raises(ConfigurationError) as refused:
        config.check_url("MEMORY_PIPELINE_EMBED_URL", url)
    assert str(refused.value).startswith(f"MEMORY_PIPELINE_EMBED_URL={url!r}: {REFUSED[url]}")


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:11434", "http://[::1]:8080/v1", "https://127.0.0.1", " http://[::1]:9 "],
)
def test_a_good_url_passes_as_given(url):
    assert config.check_url("MEMORY_PIPELINE_EMBED_URL", url) == url.strip()


def test_ollama_host_takes_a_bare_host_and_port_as_its_client_does():
    assert config.check_url("OLLAMA_HOST", "127.0.0.1:9", bare_host=True) == "127.0.0.1:9"
    with pytest.raises(ConfigurationError, match="OLLAMA_HOST='127.0.0.1:0': the port"):
        config.check_url("OLLAMA_HOST", "127.0.0.1:0", bare_host=True)
