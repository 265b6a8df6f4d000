"""The HTTP API's documentation: its OpenAPI document and the pages (``/docs``: Swagger UI,
``/redoc``: ReDoc) that show it, served offline; ``/`` points to ``/docs``.

FastAPI's own pages load their assets from a CDN; these are built by FastAPI's functions over the
``fastapi-offline`` package's files (``/docs/static``), so no page names another host. The
document adds what FastAPI cannot see because the routes read their own bodies and token: the
request bodies' schemas, the query parameters a route requires, and that a loopback server with
no token needs none.
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from pydantic.json_schema import models_json_schema

from memory_pipeline.server.http_models import REQUEST_MODELS

DOCS_URL = "/docs"
REDOC_URL = "/redoc"
STATIC_URL = "/docs/static"
# Marks a query parameter the route requires (it checks it itself, in its own words):
# ``Query(None, json_schema_extra=REQUIRED)``; the document says ``required`` instead.
REQUIRED_MARK = "x-required-by-route"
REQUIRED = {REQUIRED_MARK: True}


def assets_folder() -> str:
    """The folder of Swagger UI's and ReDoc's bundles inside the installed ``fastapi_offline``."""
    return str(files("fastapi_offline") / "static")


def add_api_docs(app: FastAPI) -> None:
    """``/docs``, its OAuth2 redirect page, ``/redoc`` and their assets on ``app``, which must be
    made with ``docs_url=None, redoc_url=None`` (FastAPI's CDN pages off)."""
    openapi_url = app.openapi_url or "/openapi.json"
    redirect_url = app.swagger_ui_oauth2_redirect_url or f"{DOCS_URL}/oauth2-redirect"
    app.mount(STATIC_URL, StaticFiles(directory=assets_folder()), name="api-docs-assets")

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse(DOCS_URL)

    @app.get(DOCS_URL, include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{app.title} {app.version}: API",
            swagger_js_url=f"{STATIC_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{STATIC_URL}/swagger-ui.css",
            swagger_favicon_url=f"{STATIC_URL}/favicon.png",
            oauth2_redirect_url=redirect_url,
            # Swagger UI would otherwise ask validator.swagger.io to check the document.
            swagger_ui_parameters={"validatorUrl": None},
        )

    @app.get(redirect_url, include_in_schema=False)
    def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(REDOC_URL, include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=openapi_url,
            title=f"{app.title} {app.version}: API",
            redoc_js_url=f"{STATIC_URL}/redoc.standalone.js",
            redoc_favicon_url=f"{STATIC_URL}/favicon.png",
            with_google_fonts=False,
        )


def add_openapi(app: FastAPI) -> None:
    """``app.openapi`` (``/openapi.json``) completed as the module docstring says."""
    made_by_fastapi = app.openapi

    def openapi() -> dict:
        if app.openapi_schema is None:
            complete(made_by_fastapi())  # FastAPI keeps the document it made; completed once
        assert app.openapi_schema is not None
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def complete(document: dict) -> None:
    _, schemas = models_json_schema(
        [(model, "validation") for model in REQUEST_MODELS],
        ref_template="#/components/schemas/{model}",
    )
    document.setdefault("components", {}).setdefault("schemas", {}).update(schemas["$defs"])
    for operations in document["paths"].values():
        for operation in operations.values():
            for parameter in operation.get("parameters", ()):
                _mark_required(parameter)
            if operation.get("security"):
                # A loopback server answers without a token while none exists.
                operation["security"] = [*operation["security"], {}]


def _mark_required(parameter: dict) -> None:
    schema = parameter["schema"]
    if not schema.pop(REQUIRED_MARK, False):
        return
    parameter["required"] = True
    kinds = [kind for kind in schema.pop("anyOf", ()) if kind.get("type") != "null"]
    if len(kinds) == 1:
        schema.update(kinds[0])
    elif kinds:
        schema["anyOf"] = kinds
    schema.pop("default", None)
