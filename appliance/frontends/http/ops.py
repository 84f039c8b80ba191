"""Operations endpoints, without sign-in: /healthz (the process answers),
/readyz (database writable, sources usable) and /metrics (Prometheus)."""

from __future__ import annotations

import json

from klein import Klein

from ...core.health import readiness


class OpsApi:
    app = Klein()

    def __init__(self, core):
        self.core = core

    @app.route("/healthz", methods=["GET", "HEAD"])
    def healthz(self, request):
        request.setHeader(b"content-type", b"application/json")
        request.setHeader(b"cache-control", b"no-store")
        return b'{"status": "ok"}'

    @app.route("/readyz", methods=["GET", "HEAD"])
    async def readyz(self, request):
        ready, checks = await readiness(self.core.store, self.core.threads, self.core.files)
        request.setResponseCode(200 if ready else 503)
        request.setHeader(b"content-type", b"application/json")
        request.setHeader(b"cache-control", b"no-store")
        return json.dumps({"status": "ok" if ready else "failing", "checks": checks}).encode()

    @app.route("/metrics", methods=["GET"])
    def metrics(self, request):
        request.setHeader(b"content-type", b"text/plain; version=0.0.4; charset=utf-8")
        request.setHeader(b"cache-control", b"no-store")
        return self.core.metrics.render()
