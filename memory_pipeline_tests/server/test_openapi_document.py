"""The OpenAPI document of a real ``memory-pipeline serve`` is one a client can use: every request
built from it alone (its parameters, its body schemas and examples, its security scheme) is
answered as the document says, in the shape it documents."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

METHODS = ("post", "patch", "get", "delete")  # writes first, so reads and deletes find data
# Path parameters name what an earlier answer made: where that answer says its id.
MADE_BY = {
    "episode_id": ("/v1/episodes", "post", lambda answer: answer["episodeIds"][0]),
    "observation_id": ("/v1/observations", "post", lambda answer: answer["id"]),
    "question_id": ("/v1/questions", "post", lambda answer: answer["questionIds"][0]),
}


def resolve(document: dict, schema: dict) -> dict:
    while "$ref" in schema:
        *_, name = schema["$ref"].split("/")
        schema = document["components"]["schemas"][name]
    return schema


def instance(document: dict, schema: dict) -> Any:
    """A value for ``schema`` built from it alone: its example, its default, else the smallest
    value of its type (an object's required properties, a number's minimum)."""
    schema = resolve(document, schema)
    if "examples" in schema:
        return schema["examples"][0]
    if "example" in schema:
        return schema["example"]
    if "default" in schema:
        return schema["default"]
    if "enum" in schema or "const" in schema:
        return schema.get("enum", [schema.get("const")])[0]
    for choice in ("anyOf", "oneOf"):
        if choice in schema:
            return instance(document, schema[choice][0])
    kind = schema.get("type", "object")
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: instance(document, properties[name]) for name in schema.get("required", ())}
    if kind == "array":
        return [instance(document, schema["items"]) for _ in range(schema.get("minItems", 0))]
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    return {"string": "x", "boolean": False, "null": None}[kind]


def validator(document: dict, schema: dict) -> Draft202012Validator:
    """A validator of ``schema`` whose ``#/components/...`` references reach the document's."""
    return Draft202012Validator({**schema, "components": document["components"]})


def operations(document: dict):
    found = [
        (path, method, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
    ]
    return sorted(found, key=lambda found: (METHODS.index(found[1]), found[0]))


def build(document: dict, path: str, operation: dict, made: dict, optional: bool) -> dict:
    """The request for ``operation``: its path parameters (ids an earlier answer made, else
    built), its required query parameters (with ``optional``, also those it has examples for)
    and its JSON body (the documented example, checked against the body's schema)."""
    query, url = {}, path
    for parameter in operation.get("parameters", ()):
        name, schema = parameter["name"], parameter["schema"]
        if parameter["in"] == "path":
            value = made.get(name, instance(document, schema))
            url = url.replace("{" + name + "}", str(value))
        elif parameter.get("required") or (optional and "examples" in schema):
            query[name] = instance(document, schema)
    request: dict = {"url": url, "params": query}
    if "requestBody" in operation:
        media = operation["requestBody"]["content"]["application/json"]
        body = media.get("example", instance(document, media["schema"]))
        problems = list(validator(document, media["schema"]).iter_errors(body))
        assert not problems, (path, body, problems[0].message)
        request["json"] = body
    return request


def check_answer(document: dict, operation: dict, answer) -> None:
    """The answer's status is documented, and its body is of the documented schema."""
    documented = operation["responses"].get(str(answer.status_code))
    assert documented is not None, (answer.request.url, answer.status_code, answer.text)
    schema = documented["content"]["application/json"]["schema"]
    problems = list(validator(document, schema).iter_errors(answer.json()))
    assert not problems, (answer.request.url, problems[0].message, answer.text[:2000])


@pytest.fixture
def token(local) -> str:
    token, _ = local.create_token("client", ["*"], "write")
    return token


def test_every_operation_answers_a_request_built_from_the_document(api, token):
    document = api.get("/openapi.json").json()
    auth = {"Authorization": f"Bearer {token}"}
    made: dict[str, Any] = {}
    answered = []
    for path, method, operation in operations(document):
        for optional in (False, True) if method == "get" else (True,):
            request = build(document, path, operation, made, optional)
            answer = api.request(method.upper(), headers=auth, **request)
            assert answer.status_code < 300, (method, request, answer.status_code, answer.text)
            check_answer(document, operation, answer)
            answered.append((method, path))
        for name, (by_path, by_method, take) in MADE_BY.items():
            if (by_path, by_method) == (path, method):
                made[name] = take(answer.json())
    # Every operation the document lists answered (13 when this was written).
    assert set(answered) == {(m, p) for p, m, _ in operations(document)}
    assert len(set(answered)) >= 13, answered
    # The token the document asks for is the one that counts: without it, the documented 401.
    search = document["paths"]["/v1/search"]["get"]
    refused = api.get("/v1/search", params={"memory": "me", "q": "bread"})
    assert refused.status_code == 401
    check_answer(document, search, refused)
    # The token is checked before the parameters: a caller without one learns nothing of them.
    assert api.get("/v1/episodes/nan", params={"page": "0"}).status_code == 401
    assert api.get("/v1/episodes/nan", headers=auth).status_code == 422


def test_the_document_declares_bodies_security_and_its_own_error_shape(api):
    document = api.get("/openapi.json").json()
    scheme = document["components"]["securitySchemes"]["bearer"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    error = {"$ref": "#/components/schemas/ErrorBody"}
    assert "HTTPValidationError" not in document["components"]["schemas"]
    for path, method, operation in operations(document):
        where = f"{method.upper()} {path}"
        assert {"bearer": []} in operation["security"], where
        assert operation.get("summary") and operation["responses"], where
        for parameter in operation.get("parameters", ()):
            assert parameter.get("description"), (where, parameter["name"])
        if method in ("post", "patch") and path != "/v1/index":
            body = operation["requestBody"]
            assert body["required"] and body["content"]["application/json"]["schema"], where
        for status in ("401", "403", "500", "503"):
            answer = operation["responses"][status]["content"]["application/json"]["schema"]
            assert answer == error, (where, status)
        invalid = operation["responses"].get("422")
        if invalid is not None:
            schema = invalid["content"]["application/json"]["schema"]
            assert schema == error or error in schema["anyOf"], where


def test_errors_are_the_documented_shape_and_the_root_points_to_the_docs(api):
    document = api.get("/openapi.json").json()
    search = document["paths"]["/v1/search"]["get"]
    for params in ({"memory": "me"}, {"memory": "me", "q": "x", "limit": "0"}):
        invalid = api.get("/v1/search", params=params)
        assert invalid.status_code == 422
        check_answer(document, search, invalid)
    episodes = document["paths"]["/v1/episodes"]["post"]
    for body in (b"{not json", b"[]" * 10):
        unreadable = api.post(
            "/v1/episodes", content=body, headers={"Content-Type": "application/json"}
        )
        assert unreadable.status_code == 400
        check_answer(document, episodes, unreadable)
    root = api.get("/", follow_redirects=False)
    assert root.status_code in (302, 307) and root.headers["location"] == "/docs"
    assert api.get("/", follow_redirects=True).text == api.get("/docs").text
