"""Admin resources: mailboxes (with runs), profiles, logs, API tokens, sources. Admins
only. Each route parses the request and calls the resource's core service, which
validates, writes, audits and keeps every query to the caller's organisation (so
another organisation's ids answer 404)."""

from __future__ import annotations

import re

from ...core.audit import FILTERS
from ...models import ACTIONS
from .api import Resource, authenticate, client_address, json_api, page, paging, query, read_json, reply


class MailboxesApi(Resource):
    app = json_api()

    def __init__(self, core):
        super().__init__(core)
        self.admin = core.mailbox_admin

    @app.route("/", methods=["GET"])
    async def listing(self, request):
        account = await authenticate(self.core, request, admin=True)
        limit, offset = paging(request)
        count, mailboxes = await self.admin.listing(account, query(request, "search"), limit, offset)
        return reply(request, page(request, mailboxes, count))

    @app.route("/", methods=["POST"])
    async def create(self, request):
        account = await authenticate(self.core, request, admin=True)
        return reply(request, await self.admin.create(account, read_json(request), client_address(request)), 201)

    @app.route("/<int:mailbox_id>/", methods=["GET"])
    async def item(self, request, mailbox_id):
        account = await authenticate(self.core, request, admin=True)
        return reply(request, await self.admin.item(account, mailbox_id))

    @app.route("/<int:mailbox_id>/", methods=["PATCH", "PUT"])
    async def change(self, request, mailbox_id):
        account = await authenticate(self.core, request, admin=True)
        return reply(request, await self.admin.change(account, mailbox_id, read_json(request), client_address(request)))

    @app.route("/<int:mailbox_id>/", methods=["DELETE"])
    async def delete(self, request, mailbox_id):
        account = await authenticate(self.core, request, admin=True)
        await self.admin.delete(account, mailbox_id, client_address(request))
        request.setResponseCode(204)
        return b""

    @app.route("/<int:mailbox_id>/run/", methods=["POST"])
    async def run(self, request, mailbox_id):
        account = await authenticate(self.core, request, admin=True)
        run_id = await self.core.mailboxes.run_now(account.organisation.id, mailbox_id)
        return reply(request, {"run": run_id, "detail": "The mailbox is being checked now."}, 202)

    @app.route("/<int:mailbox_id>/runs/", methods=["GET"])
    async def runs(self, request, mailbox_id):
        account = await authenticate(self.core, request, admin=True)
        limit, offset = paging(request)
        count, rows = await self.admin.runs(account, mailbox_id, limit, offset)
        return reply(request, page(request, rows, count))


class ProfilesApi(Resource):
    app = json_api()

    def __init__(self, core):
        super().__init__(core)
        self.admin = core.profile_admin

    @app.route("/", methods=["GET"])
    async def listing(self, request):
        account = await authenticate(self.core, request, admin=True)
        limit, offset = paging(request)
        count, profiles = await self.admin.listing(
            account, query(request, "search"), query(request, "ordering", "username"), limit, offset
        )
        return reply(request, page(request, profiles, count))

    @app.route("/", methods=["POST"])
    async def create(self, request):
        account = await authenticate(self.core, request, admin=True)
        return reply(request, await self.admin.create(account, read_json(request), client_address(request)), 201)

    @app.route("/<int:profile_id>/", methods=["GET"])
    async def item(self, request, profile_id):
        account = await authenticate(self.core, request, admin=True)
        return reply(request, await self.admin.item(account, profile_id))

    @app.route("/<int:profile_id>/", methods=["PATCH", "PUT"])
    async def change(self, request, profile_id):
        account = await authenticate(self.core, request, admin=True)
        return reply(request, await self.admin.change(account, profile_id, read_json(request), client_address(request)))

    @app.route("/<int:profile_id>/invite/", methods=["POST"])
    async def invite(self, request, profile_id):
        account = await authenticate(self.core, request, admin=True)
        return reply(request, await self.admin.invite(account, profile_id, client_address(request)), 202)

    @app.route("/<int:profile_id>/", methods=["DELETE"])
    async def delete(self, request, profile_id):
        account = await authenticate(self.core, request, admin=True)
        await self.admin.remove(account, profile_id, client_address(request))
        request.setResponseCode(204)
        return b""


def log_query(request) -> dict:
    """A log listing's filters as the query string gives them (the core checks them)."""
    return {name: query(request, name) for name in FILTERS}


class LogsApi(Resource):
    app = json_api()

    @app.route("/", methods=["GET"])
    async def listing(self, request):
        account = await authenticate(self.core, request, admin=True)
        limit, offset = paging(request, 50)
        count, rows = await self.core.audit.search(account, log_query(request), limit, offset)
        return reply(request, page(request, rows, count, 50))

    @app.route("/actions/", methods=["GET"])
    async def actions(self, request):
        """Every action a log row may carry: the choices of the action filter"""
        await authenticate(self.core, request, admin=True)
        return reply(request, {"actions": list(ACTIONS)})

    @app.route("/export/", methods=["GET"])
    async def export(self, request):
        """Every matching row as CSV, written in batches as the client reads."""
        account = await authenticate(self.core, request, admin=True)
        chunks = await self.core.audit.export(account, log_query(request))
        request.setHeader(b"content-type", b"text/csv; charset=utf-8")
        request.setHeader(b"content-disposition", b'attachment; filename="audit-log.csv"')
        request.setHeader(b"cache-control", b"no-store")
        async for chunk in chunks:
            request.write(chunk)
        return b""


class TokensApi(Resource):
    app = json_api()

    @app.route("/", methods=["GET"])
    async def listing(self, request):
        account = await authenticate(self.core, request, admin=True)
        limit, offset = paging(request)
        count, rows = await self.core.api_tokens.list(account, query(request, "search"), limit, offset)
        return reply(request, page(request, rows, count))

    @app.route("/", methods=["POST"])
    async def create(self, request):
        account = await authenticate(self.core, request, admin=True)
        created = await self.core.api_tokens.create(account, read_json(request), client_address(request))
        return reply(request, created, 201)  # the only time the secret is shown

    @app.route("/<int:token_id>/", methods=["GET"])
    async def item(self, request, token_id):
        account = await authenticate(self.core, request, admin=True)
        return reply(request, await self.core.api_tokens.get(account, token_id))

    @app.route("/<int:token_id>/", methods=["DELETE"])
    async def revoke(self, request, token_id):
        account = await authenticate(self.core, request, admin=True)
        await self.core.api_tokens.revoke(account, token_id, client_address(request))
        request.setResponseCode(204)
        return b""


class SourcesApi(Resource):
    app = json_api()

    def __init__(self, core):
        super().__init__(core)
        self.admin = core.source_admin

    @app.route("/", methods=["GET"])
    async def listing(self, request):
        account = await authenticate(self.core, request, admin=True)
        limit, offset = paging(request)
        count, sources = await self.admin.listing(account, query(request, "search"), limit, offset)
        return reply(request, page(request, sources, count))

    @app.route("/", methods=["POST"])
    async def create(self, request):
        account = await authenticate(self.core, request, admin=True)
        return reply(request, await self.admin.create(account, read_json(request), client_address(request)), 201)

    @app.route("/<int:source_id>/", methods=["GET"])
    async def item(self, request, source_id):
        account = await authenticate(self.core, request, admin=True)
        return reply(request, await self.admin.item(account, source_id))

    @app.route("/<int:source_id>/", methods=["PATCH", "PUT"])
    async def change(self, request, source_id):
        """Change a source; {"default": true} makes it the organisation's default source"""
        account = await authenticate(self.core, request, admin=True)
        return reply(request, await self.admin.change(account, source_id, read_json(request), client_address(request)))

    @app.route("/<int:source_id>/", methods=["DELETE"])
    async def delete(self, request, source_id):
        """Delete a source: refused for the organisation's default and while profiles or mailboxes use it.
        A local source's files are kept (its folder stays the organisation's) unless ?files=delete"""
        account = await authenticate(self.core, request, admin=True)
        await self.admin.delete(account, source_id, client_address(request), query(request, "files", "keep"))
        request.setResponseCode(204)
        return b""

    @app.route("/<int:source_id>/check/", methods=["POST"])
    async def check(self, request, source_id):
        account = await authenticate(self.core, request, admin=True)
        return reply(request, await self.admin.check(account, source_id))

    @app.route("/<int:source_id>/authorize/", methods=["POST"])
    async def authorize(self, request, source_id):
        """Start signing a source in with its OAuth2 provider: the URL to send the browser to"""
        account = await authenticate(self.core, request, admin=True)
        redirect_uri = console_origin(self.core, request) + "/admin/sources/callback"
        url = await self.admin.authorize(account, source_id, redirect_uri)
        return reply(request, {"url": url, "redirect_uri": redirect_uri})

    @app.route("/callback/", methods=["POST"])
    async def callback(self, request):
        """Finish a source's sign-in: the code and state (or error) the provider sent back"""
        account = await authenticate(self.core, request, admin=True)
        return reply(request, await self.admin.finish_sign_in(account, read_json(request), client_address(request)))


_HOST = re.compile(r"(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")


def console_origin(core, request) -> str:
    """The console's origin as the admin's browser reached it (scheme and Host): where a
    provider sends the browser back, signed in there. A Host that is not host[:port]
    falls back to the configured public_hostname."""
    host = (request.getHeader(b"host") or b"").decode("latin-1")
    if _HOST.fullmatch(host):
        return f"{'https' if request.isSecure() else 'http'}://{host}"
    return core.accounts.console_url()
