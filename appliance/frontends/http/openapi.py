"""The OpenAPI 3.1 document of the portal API, built from the routes themselves
(so it cannot drift from them): every mounted resource's paths, methods and the
first line of each handler's docstring or name."""

from __future__ import annotations

import re

from ... import __version__

PUBLIC = {"/token/", "/token/refresh/", "/token/logout/", "/initialized/", "/setup/", "/branding/",
          "/password/reset/", "/password/reset/confirm/"}  # fmt: skip


def _openapi_path(prefix: str, rule: str) -> tuple[str, list[dict]]:
    parameters = []

    def convert(match: re.Match) -> str:
        converter, name = (match.group(1) or "string"), match.group(2)
        parameters.append(
            {
                "name": name,
                "in": "path",
                "required": True,
                "schema": {"type": "integer" if converter == "int" else "string"},
            }
        )
        return "{" + name + "}"

    path = re.sub(r"<(?:(\w+):)?(\w+)>", convert, prefix.rstrip("/") + rule)
    return path, parameters


def document(mounts: list[tuple[str, object]]) -> dict:
    """mounts: (prefix under /api/portal, resource instance) in routing order."""
    paths: dict[str, dict] = {}
    for prefix, resource in mounts:
        app = type(resource).app
        for rule in app.url_map.iter_rules():
            if rule.rule == "/" and prefix == "" or rule.endpoint == "not_found":
                continue
            path, parameters = _openapi_path(prefix, rule.rule)
            handler = getattr(type(resource), rule.endpoint, None)
            summary = ((handler.__doc__ or "").strip().splitlines() or [rule.endpoint.replace("_", " ")])[0]
            for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
                operation = {
                    "operationId": f"{type(resource).__name__}.{rule.endpoint}.{method.lower()}",
                    "summary": summary,
                    "responses": {
                        "200": {"description": "OK"},
                        "400": {"description": "Invalid input: {field: [messages]} or {detail}"},
                        "401": {"description": "Not signed in, or token_not_valid"},
                        "403": {
                            "description": "Not allowed, or the organisation's payment is missing or it is deleted"
                        },
                        "404": {"description": "Not found in the caller's organisation"},
                    },
                }
                if parameters:
                    operation["parameters"] = parameters
                if prefix + rule.rule not in PUBLIC:
                    operation["security"] = [{"bearer": []}]
                paths.setdefault("/api/portal" + path, {})[method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {"title": "File-transfer portal appliance API", "version": __version__},
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": dict(sorted(paths.items())),
    }
