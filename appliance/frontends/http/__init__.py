"""The HTTP front end: the JSON API under /api/portal/ and the web console."""

from __future__ import annotations

from klein import Klein
from twisted.web.server import Site

from .accesslog import access_log_line
from .admin import LogsApi, MailboxesApi, ProfilesApi, SourcesApi, TokensApi
from .api import ApplianceRequest, reply
from .bans import BansApi
from .console import ConsoleResource
from .files import FilesApi
from .gate import ApplianceChannel, Gate
from .openapi import document
from .operator import OperatorApi
from .ops import OpsApi, ops_site
from .portal import PortalApi
from .shares import SharedApi, SharesApi
from .tus import TusApi

__all__ = ["http_site", "ops_site"]


class RootApi:
    """The site: the public operations endpoints, the API (each resource group a Klein app of
    its own, mounted here), and the console for every other path."""

    app = Klein()

    def __init__(self, core):
        self.core = core
        self.console = ConsoleResource()
        self.ops_api = OpsApi(core)
        self.portal_api = PortalApi(core)
        self.files_api = FilesApi(core)
        self.mailboxes_api = MailboxesApi(core)
        self.profiles_api = ProfilesApi(core)
        self.logs_api = LogsApi(core)
        self.tokens_api = TokensApi(core)
        self.bans_api = BansApi(core)
        self.sources_api = SourcesApi(core)
        self.operator_api = OperatorApi(core)
        self.shares_api = SharesApi(core)
        self.shared_api = SharedApi(core)
        self.tus_api = TusApi(core)

    @app.route("/healthz", methods=["GET", "HEAD"])
    def healthz(self, request):
        return self.ops_api.healthz(request)

    @app.route("/readyz", methods=["GET", "HEAD"])
    def readyz(self, request):
        return self.ops_api.public_readyz(request)

    @app.route("/metrics", methods=["GET", "HEAD"])
    def metrics(self, request):
        """Served on the ops listener only ([listen] ops)."""
        return reply(request, {"detail": "Not found."}, 404)

    @app.route("/api/portal/files/tus/", branch=True)
    def tus(self, request):
        return self.tus_api.app.resource()

    @app.route("/api/portal/files/", branch=True)
    def files(self, request):
        return self.files_api.app.resource()

    @app.route("/api/portal/mailboxes/", branch=True)
    def mailboxes(self, request):
        return self.mailboxes_api.app.resource()

    @app.route("/api/portal/profiles/", branch=True)
    def profiles(self, request):
        return self.profiles_api.app.resource()

    @app.route("/api/portal/logs/", branch=True)
    def logs(self, request):
        return self.logs_api.app.resource()

    @app.route("/api/portal/tokens/", branch=True)
    def tokens(self, request):
        return self.tokens_api.app.resource()

    @app.route("/api/portal/bans/", branch=True)
    def bans(self, request):
        return self.bans_api.app.resource()

    @app.route("/api/portal/sources/", branch=True)
    def sources(self, request):
        return self.sources_api.app.resource()

    @app.route("/api/portal/shares/", branch=True)
    def shares(self, request):
        return self.shares_api.app.resource()

    @app.route("/api/portal/shared/", branch=True)
    def shared(self, request):
        return self.shared_api.app.resource()

    @app.route("/api/portal/god/", branch=True)
    def operator(self, request):
        return self.operator_api.app.resource()

    @app.route("/api/portal/openapi.json", methods=["GET"])
    def openapi(self, request):
        return reply(request, document(self.mounts()))

    def mounts(self) -> list:
        return [
            ("/files/tus", self.tus_api),
            ("/files", self.files_api),
            ("/mailboxes", self.mailboxes_api),
            ("/profiles", self.profiles_api),
            ("/logs", self.logs_api),
            ("/tokens", self.tokens_api),
            ("/bans", self.bans_api),
            ("/sources", self.sources_api),
            ("/shares", self.shares_api),
            ("/shared", self.shared_api),
            ("/god", self.operator_api),
            ("", self.portal_api),
        ]

    @app.route("/api/portal/", branch=True)
    def portal(self, request):
        return self.portal_api.app.resource()

    @app.route("/api/", branch=True)
    def api_not_found(self, request):
        return reply(request, {"detail": "Not found."}, 404)

    @app.route("/", branch=True)
    def console_files(self, request):
        return self.console


def http_site(core, wrap=None) -> Site:
    """The site; `wrap` may put a resource in front of the API and console (see redirect.py)."""
    root = RootApi(core)
    # parsePOSTFormSubmission=False: Twisted would otherwise read every multipart body whole
    # into memory (request.args) before any handler runs; uploads stream it themselves
    site = Site(
        wrap(root.app.resource()) if wrap else root.app.resource(),
        requestFactory=ApplianceRequest,
        logFormatter=access_log_line,
        parsePOSTFormSubmission=False,
    )
    site.displayTracebacks = False
    site.protocol = ApplianceChannel  # HTTP/1.1 only, every request through the gate
    site.gate = Gate([("/api/portal" + prefix, api) for prefix, api in root.mounts()])
    site.keep_partial_body = root.tus_api.keep_partial_body  # see ApplianceRequest
    return site
