"""Generated requests against a real ``memory-pipeline serve``: memory fields of any JSON type in
every writing body, sent with a token that may write to alice only, and foreign Host and Origin
names on every route. The invariants: no memory but alice ever gains or loses a row, and a
foreign name is refused (421, 403) before anything is read or written.
"""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline_tests.helpers import QWEN
from memory_pipeline_tests.server.test_tokens_isolation import create_token
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer
from memory_pipeline_tests.support.service import ServerProcess, service_env

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from hostile_requests import API_ROUTES, _rows_by_memory  # noqa: E402 - the benchmark's lists

pytestmark = pytest.mark.slow  # a server process

FUZZ_SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
MISSING = object()

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
memory_values = st.one_of(
    st.just(MISSING),
    st.sampled_from([None, "bob", "BOB", " bob", "*", "", "bob\x00", ["bob"], {"name": "bob"}]),
    json_values,
)
queries = st.sampled_from(["?memory=bob", "?memory=bob&memory=bob", "?kind=note&memory=bob", ""])


def _with(item: dict, value) -> dict:
    item = dict(item)
    if value is not MISSING:
        item["memory"] = value
    return item


EPISODE = {"kind": "note", "title": "sneak", "occurred_at": "2026-03-01", "body": "sneaked in"}


@st.composite
def scoped_requests(draw) -> tuple[str, str, object]:
    value, query = draw(memory_values), draw(queries)
    shape = draw(st.sampled_from(["item", "list", "wrapped", "observation", "patch"]))
    if shape == "observation":
        return "POST", "/v1/observations" + query, _with({"text": "Bob keeps bees"}, value)
    if shape == "patch":
        return "PATCH", "/v1/observations/1" + query, _with({"status": "retired"}, value)
    item = _with(EPISODE, value)
    body = {"item": item, "list": [item], "wrapped": {"episodes": [item]}}[shape]
    return "POST", "/v1/episodes" + query, body


foreign_names = st.builds(
    lambda label, domain: f"{label}.{domain}",
    st.from_regex(r"[a-z0-9-]{1,12}", fullmatch=True),
    st.sampled_from(["example", "evil.example", "127.0.0.1.nip.io", "localhost.evil"]),
)


@pytest.fixture
def server(db_url, tmp_path):
    with LoopbackEmbeddingServer(dim=512, models={QWEN}) as model:
        env = service_env(db_url, model.url, tmp_path / "home")
        process = ServerProcess(["serve", "--port", "0"], env)
        try:
            yield process, env
        finally:
            process.close()
        assert "Traceback" not in "".join(process.stderr)


def _seed(client: httpx.Client) -> None:
    for memory in ("alice", "bob"):
        answer = client.post(
            "/v1/episodes", json={**EPISODE, "memory": memory, "body": f"{memory} keeps bees"}
        )
        assert answer.status_code == 201, answer.text
        said = client.post(
            f"/v1/observations?memory={memory}", json={"text": f"{memory} likes tea"}
        )
        assert said.status_code in (200, 201), said.text


def test_any_memory_field_with_an_alice_token_changes_no_other_memory(server, db_url):
    process, env = server
    with httpx.Client(base_url=process.url, timeout=60) as client:
        _seed(client)
        token = create_token(env, "alice-writer", "--memory", "alice", "--write")
        auth = {"Authorization": f"Bearer {token}"}
        others = {m: n for m, n in _rows_by_memory(db_url).items() if m != "alice"}

        @FUZZ_SETTINGS
        @given(request=scoped_requests())
        def check(request):
            method, path, body = request
            answer = client.request(method, path, json=body, headers=auth)
            assert answer.status_code < 500, (request, answer.text)
            assert "Traceback" not in answer.text
            now = {m: n for m, n in _rows_by_memory(db_url).items() if m != "alice"}
            assert now == others, (request, answer.status_code, answer.text)

        check()


def test_foreign_names_are_refused_on_every_route(server, db_url):
    process, _ = server
    with httpx.Client(base_url=process.url, timeout=60) as client:
        _seed(client)
        before = _rows_by_memory(db_url)

        @FUZZ_SETTINGS
        @given(route=st.sampled_from(API_ROUTES), name=foreign_names, as_origin=st.booleans())
        def check(route, name, as_origin):
            method, path, body = route
            headers = {"Origin": f"http://{name}"} if as_origin else {"Host": name}
            kwargs = {"json": body} if body is not None else {}
            answer = client.request(method, path, headers=headers, **kwargs)
            assert answer.status_code == (403 if as_origin else 421), (route, name, answer.text)

        check()
        assert _rows_by_memory(db_url) == before
