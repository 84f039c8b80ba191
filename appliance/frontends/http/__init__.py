"""The HTTP front end: the JSON API under /api/portal/ and the web console."""

from __future__ import annotations

from klein import Klein
from twisted.web.server import Site

from .admin import LogsApi, MailboxesApi, ProfilesApi, SourcesApi, TokensApi
from .api import ApplianceRequest, reply
from .console import ConsoleResource
from .files import FilesApi
from .openapi import document
from .operator import OperatorApi
from .ops import OpsApi
from .portal import PortalApi


class RootApi:
    """The site: operations endpoints, the API (each resource group a Klein app of
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
        self.sources_api = SourcesApi(core)
        self.operator_api = OperatorApi(core)

    @app.route("/healthz", methods=["GET", "HEAD"])
    def healthz(self, request):
        return self.ops_api.healthz(request)

    @app.route("/readyz", methods=["GET", "HEAD"])
    def readyz(self, request):
        return self.ops_api.readyz(request)

    @app.route("/metrics", methods=["GET"])
    def metrics(self, request):
        return self.ops_api.metrics(request)

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

    @app.route("/api/portal/sources/", branch=True)
    def sources(self, request):
        return self.sources_api.app.resource()

    @app.route("/api/portal/god/", branch=True)
    def operator(self, request):
        return self.operator_api.app.resource()

    @app.route("/api/portal/openapi.json", methods=["GET"])
    def openapi(self, request):
        return reply(request, document(self.mounts()))

    def mounts(self) -> list:
        return [
            ("/files", self.files_api),
            ("/mailboxes", self.mailboxes_api),
            ("/profiles", self.profiles_api),
            ("/logs", self.logs_api),
            ("/tokens", self.tokens_api),
            ("/sources", self.sources_api),
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


def http_site(core) -> Site:
    site = Site(RootApi(core).app.resource(), requestFactory=ApplianceRequest)
    site.displayTracebacks = False
    return site
