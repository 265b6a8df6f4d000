"""MEMORY_PIPELINE_EMBED_URL without a provider: the probe detects on the real wire whether the
endpoint speaks Ollama's /api/embed or OpenAI's /v1/embeddings; status shows it; a named
provider the endpoint does not speak is refused plainly, with its exit code."""

from __future__ import annotations

import pytest

from memory_pipeline.config import EmbedSettings
from memory_pipeline.embedders.factory import build_embedder, profile_of, resolved
from memory_pipeline.errors import ConfigurationError, EmbedderUnavailable, ExitCode, ModelRefused
from memory_pipeline_tests.cli.conftest import cli  # noqa: F401 - the fixture
from memory_pipeline_tests.helpers import QWEN, episode, write_jsonl
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer, unused_port_url

E5 = "multilingual-e5-small"


def only(wire_format: str, **options) -> LoopbackEmbeddingServer:
    return LoopbackEmbeddingServer(dim=1024, wire_formats={wire_format}, **options)


def detected(url: str, **env) -> EmbedSettings:
    return resolved(EmbedSettings.from_env({"MEMORY_PIPELINE_EMBED_URL": url, **env}))


def test_an_ollama_endpoint_is_detected_by_its_first_answer():
    with only("ollama") as server:
        settings = detected(server.url)
        assert (settings.provider, settings.model, settings.dim) == ("ollama", QWEN, 512)
        assert settings.chosen_by == "detected" and settings.url == server.url
        # Asked once, in Ollama's format: the OpenAI route was never needed.
        assert [r.path for r in server.requests] == ["/api/embed"] and server.unrouted == []
        assert build_embedder(settings).probe() == 1024


def test_an_openai_style_endpoint_is_detected_after_ollamas_route_is_missing():
    with only("openai", models={E5}) as server:
        settings = detected(server.url)
        assert (settings.provider, settings.model, settings.dim) == ("openai", E5, 384)
        assert server.unrouted == ["/api/embed"]
        assert [r.path for r in server.requests] == ["/v1/embeddings"]
        embedder = build_embedder(EmbedSettings.from_env({"MEMORY_PIPELINE_EMBED_URL": server.url}))
        assert embedder.probe() == 1024 and embedder.profile.name == f"openai/{E5}@384"


def test_a_v1_base_is_asked_in_openais_format_first():
    with LoopbackEmbeddingServer(dim=1024) as server:  # speaks both, as Ollama does
        assert detected(server.url + "/v1").provider == "openai"
        assert [r.path for r in server.requests] == ["/v1/embeddings"]
        server.clear()
        assert detected(server.url).provider == "ollama"  # Ollama's own API when both answer
        assert [r.path for r in server.requests] == ["/api/embed"]


def test_named_model_and_dimension_are_kept_and_the_profile_is_the_named_providers():
    with only("ollama") as server:
        settings = detected(
            server.url,
            MEMORY_PIPELINE_EMBED_MODEL="nomic-embed-text",
            MEMORY_PIPELINE_EMBED_DIM="256",
        )
        assert (settings.model, settings.dim) == ("nomic-embed-text", 256)
        named = EmbedSettings.from_env(
            {
                "MEMORY_PIPELINE_EMBED_PROVIDER": "ollama",
                "OLLAMA_HOST": server.url,
                "MEMORY_PIPELINE_EMBED_MODEL": "nomic-embed-text",
                "MEMORY_PIPELINE_EMBED_DIM": "256",
            }
        )
        assert profile_of(settings) == profile_of(named)  # the same vectors' stamp either way


def test_a_missing_model_still_tells_the_format_and_is_then_refused_by_name():
    with only("ollama", models={"other-model"}) as server:
        settings = detected(server.url)
        assert settings.provider == "ollama"
        with pytest.raises(ModelRefused, match="ollama pull qwen3-embedding"):
            build_embedder(settings).probe()


def test_an_endpoint_that_speaks_neither_or_cannot_be_reached_is_refused_plainly():
    with LoopbackEmbeddingServer(dim=1024, wire_formats=()) as server:
        with pytest.raises(ConfigurationError) as neither:
            detected(server.url)
    assert neither.value.exit_code == ExitCode.CONFIGURATION
    assert "speaks neither Ollama's /api/embed nor OpenAI's /v1/embeddings" in str(neither.value)
    assert "answered HTTP 404" in str(neither.value)
    with pytest.raises(EmbedderUnavailable) as down:
        detected(unused_port_url())
    assert down.value.exit_code == ExitCode.EMBEDDER_UNAVAILABLE
    assert "to detect its wire format" in str(down.value)
    with LoopbackEmbeddingServer(dim=1024, fail_after=0) as failing:
        with pytest.raises(EmbedderUnavailable, match="HTTP 500"):
            detected(failing.url)
    with pytest.raises(ConfigurationError, match="expected http"):
        detected("box:8000")


def _env(url: str, **more) -> dict:
    return {"MEMORY_PIPELINE_EMBED_URL": url, "OLLAMA_HOST": None, **more}


def test_index_and_status_through_the_cli(cli, tmp_path):  # noqa: F811
    assert cli("ingest", str(write_jsonl(tmp_path / "e.jsonl", [episode(1)]))).code == 0
    with only("openai", models={E5}) as server:
        status = cli("status", "--json", env=_env(server.url))
        assert status.code == 0, status.err
        assert status.json()["embedding"] == {
            "provider": "openai",
            "wireFormat": "openai",
            "url": server.url,
            "chosenBy": "detected",
            "problem": None,
        }
        assert status.json()["configuredProfile"] == f"openai/{E5}@384"
        human = cli("status", env=_env(server.url)).out
        assert (
            f"embedding:        OpenAI's /v1/embeddings at {server.url}, detected by the probe"
            in human
        )
        indexed = cli("index", "--json", env=_env(server.url))
        assert indexed.code == 0, indexed.err
        assert indexed.json()["profile"] == f"openai/{E5}@384"
        assert indexed.json()["episodes"] == 1
        named = cli("status", env=_env(server.url, MEMORY_PIPELINE_EMBED_PROVIDER="openai")).out
        assert "named by MEMORY_PIPELINE_EMBED_PROVIDER" in named

    down = unused_port_url()
    status = cli("status", "--json", env=_env(down))
    assert status.code == 0, status.err  # status still prints what it has
    assert status.json()["embedding"]["problem"].startswith(
        "the configured embedding service is unavailable (cannot connect to"
    )
    assert "wire format not detected" in cli("status", env=_env(down)).out
    failed = cli("index", env=_env(down))
    assert failed.code == ExitCode.EMBEDDER_UNAVAILABLE and "Traceback" not in failed.err


@pytest.mark.parametrize(
    "named, served, says",
    [
        (
            "ollama",
            "openai",
            "does not speak Ollama's /api/embed: it speaks OpenAI's /v1/embeddings",
        ),
        (
            "openai",
            "ollama",
            "does not speak OpenAI's /v1/embeddings: it speaks Ollama's /api/embed",
        ),
    ],
)
def test_a_forced_wrong_format_is_refused_with_its_exit_code(cli, tmp_path, named, served, says):  # noqa: F811
    assert cli("ingest", str(write_jsonl(tmp_path / "e.jsonl", [episode(1)]))).code == 0
    with only(served) as server:
        done = cli("index", env=_env(server.url, MEMORY_PIPELINE_EMBED_PROVIDER=named))
        assert done.code == ExitCode.CONFIGURATION, (done.code, done.err)
        assert says in done.err and f"MEMORY_PIPELINE_EMBED_PROVIDER={served}" in done.err
        assert "Traceback" not in done.err and "nothing was written" in done.err
        assert cli("status", "--json").json()["vectors"] == 0
        # Left to detect, the same endpoint indexes.
        assert cli("index", env=_env(server.url)).code == 0
