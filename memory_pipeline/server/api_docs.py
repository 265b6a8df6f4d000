"""The HTTP API's documentation pages (``/docs``: Swagger UI, ``/redoc``: ReDoc), served offline.

FastAPI's own pages load Swagger UI and ReDoc from a CDN, so a local-first server showed a
blank page with no network. The same pages are built here by FastAPI's own functions, pointed
at the asset files of the ``fastapi-offline`` package (a dependency: Swagger UI's and ReDoc's
distribution bundles), served from ``/docs/static``. Nothing on either page names another host:
no fonts, no favicon and no validator badge from outside.
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

DOCS_URL = "/docs"
REDOC_URL = "/redoc"
STATIC_URL = "/docs/static"


def assets_folder() -> str:
    """The folder of Swagger UI's and ReDoc's bundles inside the installed ``fastapi_offline``."""
    return str(files("fastapi_offline") / "static")


def add_api_docs(app: FastAPI) -> None:
    """``/docs``, its OAuth2 redirect page, ``/redoc`` and their assets on ``app``, which must be
    made with ``docs_url=None, redoc_url=None`` (FastAPI's CDN pages off)."""
    openapi_url = app.openapi_url or "/openapi.json"
    redirect_url = app.swagger_ui_oauth2_redirect_url or f"{DOCS_URL}/oauth2-redirect"
    app.mount(STATIC_URL, StaticFiles(directory=assets_folder()), name="api-docs-assets")

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
