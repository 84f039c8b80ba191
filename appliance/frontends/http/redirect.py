"""Plain HTTP when HTTPS also listens: every page and API call is redirected to
HTTPS (308 keeps the method and body), so no password or token travels in clear.
The redirect names the public host name (`[server] public_hostname`, or the
operator's in the console), whatever Host the request says.
The public operations endpoints (/healthz, /readyz as ready or not) still answer,
for load balancers that probe plain HTTP on the host."""

from __future__ import annotations

from collections.abc import Callable

from twisted.web import resource

from .api import ApplianceRequest

OPERATIONS = {b"/healthz", b"/readyz", b"/metrics"}


def https_port(endpoint: str) -> int | None:
    """The port of a `tcp:`/`ssl:` endpoint string (None for socket activation and the like)."""
    kind, _, rest = endpoint.partition(":")
    if kind not in ("tcp", "tcp6", "ssl"):
        return None
    for part in rest.split(":"):
        name, equals, value = part.partition("=")
        if not equals and name.isdigit():
            return int(name)
        if equals and name == "port" and value.isdigit():
            return int(value)
    return None


class RedirectToHttps(resource.Resource):
    isLeaf = True

    def __init__(self, site_root: resource.Resource, port: int | None, public_host: Callable[[], str]):
        super().__init__()
        self._site_root = site_root
        self._port = port
        self._public_host = public_host  # asked at each request: the operator may change it

    def render(self, request: ApplianceRequest) -> bytes:
        if request.path in OPERATIONS:
            return self._site_root.render(request)
        host = self._public_host()  # never the client's Host header: that would let anyone steer the redirect
        port = "" if self._port in (None, 443) else f":{self._port}"
        target = request.uri.decode("ascii", "replace")
        if not target.startswith("/") or target.startswith("//"):
            target = "/"
        request.setResponseCode(308)
        request.setHeader(b"location", f"https://{host}{port}{target}".encode())
        request.setHeader(b"content-type", b"text/plain; charset=utf-8")
        request.setHeader(b"cache-control", b"no-store")
        return b"This appliance is served over HTTPS.\n"


def redirect_site(core):
    """The plain-HTTP site of a daemon that also listens for HTTPS."""
    from . import http_site

    https = core.settings.listen.https
    port = https_port(https[0]) if https else None
    return http_site(core, lambda root: RedirectToHttps(root, port, lambda: core.appliance_settings.public_host))
