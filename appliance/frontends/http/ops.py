"""Operations endpoints, without sign-in. On the ops listener (`[listen] ops`, loopback
by default): /healthz (the process answers), /readyz (database writable, sources
usable, each check named) and /metrics (Prometheus). On the public listeners only
what a load balancer needs: /healthz, and /readyz as ready or not, naming nothing
(no organisation, no source); /metrics is not there."""

from __future__ import annotations

import json

from klein import Klein
from twisted.web.server import Site

from .accesslog import access_log_line
from .api import ApplianceRequest, reply
from .gate import ApplianceChannel, Gate


class OpsApi:
    """The ops listener's site: every operations endpoint, in full."""

    app = Klein()

    def __init__(self, core):
        self.core = core

    @app.route("/healthz", methods=["GET", "HEAD"])
    def healthz(self, request):
        request.setHeader(b"content-type", b"application/json")
        request.setHeader(b"cache-control", b"no-store")
        return b'{"status": "ok"}'

    async def _readiness(self, request, detailed: bool) -> bytes:
        ready, checks = await self.core.health.readiness()
        request.setResponseCode(200 if ready else 503)
        request.setHeader(b"content-type", b"application/json")
        request.setHeader(b"cache-control", b"no-store")
        report = {"status": "ok" if ready else "failing"}
        if detailed:
            report["checks"] = checks
        return json.dumps(report).encode()

    @app.route("/readyz", methods=["GET", "HEAD"])
    async def readyz(self, request):
        return await self._readiness(request, detailed=True)

    async def public_readyz(self, request):
        """Ready or not, for anyone: which check failed is the ops listener's to say."""
        return await self._readiness(request, detailed=False)

    @app.route("/metrics", methods=["GET"])
    def metrics(self, request):
        request.setHeader(b"content-type", b"text/plain; version=0.0.4; charset=utf-8")
        request.setHeader(b"cache-control", b"no-store")
        return self.core.metrics.render()

    @app.route("/", branch=True)
    def not_found(self, request):
        return reply(request, {"detail": "Not found."}, 404)


def ops_site(core) -> Site:
    """The site of the ops listener (no request there has a body)."""
    site = Site(OpsApi(core).app.resource(), requestFactory=ApplianceRequest, logFormatter=access_log_line)
    site.displayTracebacks = False
    site.protocol = ApplianceChannel
    site.gate = Gate([])
    return site
