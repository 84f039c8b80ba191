"""The HTTP front end: the JSON API under /api/portal/ and the web console."""

from __future__ import annotations

import json

from klein import Klein
from twisted.web.server import Site

from .console import ConsoleResource
from .ops import OpsApi


def json_reply(request, body, status: int = 200) -> bytes:
    request.setResponseCode(status)
    request.setHeader(b"content-type", b"application/json")
    return json.dumps(body).encode()


class PortalApi:
    """The API; each resource group is a Klein app of its own, mounted here."""

    app = Klein()

    def __init__(self, core):
        self.core = core
        self.console = ConsoleResource()
        self.ops_api = OpsApi(core)

    @app.route("/healthz", methods=["GET", "HEAD"])
    def healthz(self, request):
        return self.ops_api.healthz(request)

    @app.route("/readyz", methods=["GET", "HEAD"])
    def readyz(self, request):
        return self.ops_api.readyz(request)

    @app.route("/metrics", methods=["GET"])
    def metrics(self, request):
        return self.ops_api.metrics(request)

    @app.route("/api/portal/initialized/", methods=["GET"])
    async def initialized(self, request):
        return json_reply(request, {"initialized": await self.core.organisations.initialized()})

    @app.route("/api/", branch=True)
    def api_not_found(self, request):
        return json_reply(request, {"detail": "Not found."}, 404)

    @app.route("/", branch=True)
    def console_files(self, request):
        return self.console


def http_site(core) -> Site:
    site = Site(PortalApi(core).app.resource())
    site.displayTracebacks = False
    return site
