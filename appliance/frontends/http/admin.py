"""Admin resources: mailboxes (with runs), profiles, logs. Admins only; every
query is scoped to the caller's organisation, so another organisation's ids
answer 404."""

from __future__ import annotations

import csv
import io
import re

from ...core import validation
from ...core.profile_admin import view as profile_view
from ...core.source_admin import view as source_view
from ...models import ACTIONS, to_iso
from ...store import api_tokens as token_queries
from ...store import logs as log_queries
from ...store import mailboxes as mailbox_queries
from ...store import profiles as profile_queries
from ...store import sources as source_queries
from .api import Resource, authenticate, client_address, json_api, page, paging, query, read_json, reply


class MailboxesApi(Resource):
    app = json_api()

    def __init__(self, core):
        super().__init__(core)
        self.admin = core.mailbox_admin

    async def _audit(self, account, request, message: str) -> None:
        await self.core.audit.change(account, "web", client_address(request), "mailbox", "", message)

    @app.route("/", methods=["GET"])
    async def listing(self, request):
        account = await authenticate(self.core, request, admin=True)
        limit, offset = paging(request)
        count, mailboxes = await self.core.store.run(
            mailbox_queries.list_mailboxes, account.organisation.id, query(request, "search"), limit, offset
        )
        return reply(request, page(request, [await self.admin.show(account, m) for m in mailboxes], count))

    @app.route("/", methods=["POST"])
    async def create(self, request):
        account = await authenticate(self.core, request, admin=True)
        values = await self.admin.values(account, read_json(request))
        mailbox_id = await self.core.store.run(mailbox_queries.insert_mailbox, values)
        mailbox = await self.admin.get(account, mailbox_id)
        await self._audit(account, request, f"{account.profile.username} created the mailbox {mailbox.name}")
        return reply(request, await self.admin.show(account, mailbox), 201)

    @app.route("/<int:mailbox_id>/", methods=["GET"])
    async def item(self, request, mailbox_id):
        account = await authenticate(self.core, request, admin=True)
        return reply(request, await self.admin.show(account, await self.admin.get(account, mailbox_id)))

    @app.route("/<int:mailbox_id>/", methods=["PATCH", "PUT"])
    async def change(self, request, mailbox_id):
        account = await authenticate(self.core, request, admin=True)
        existing = await self.admin.get(account, mailbox_id)
        values = await self.admin.values(account, read_json(request), existing)
        changed = await self.admin.describe_change(account, existing, values)
        if changed:  # only what really changed is written and told
            await self.core.store.run(mailbox_queries.update_mailbox, account.organisation.id, mailbox_id, values)
            await self._audit(
                account, request, f"{account.profile.username} changed the mailbox {existing.name}: {changed}"
            )
        return reply(request, await self.admin.show(account, await self.admin.get(account, mailbox_id)))

    @app.route("/<int:mailbox_id>/", methods=["DELETE"])
    async def delete(self, request, mailbox_id):
        account = await authenticate(self.core, request, admin=True)
        existing = await self.admin.get(account, mailbox_id)
        await self.core.store.run(mailbox_queries.delete_mailbox, account.organisation.id, mailbox_id)
        await self._audit(account, request, f"{account.profile.username} deleted the mailbox {existing.name}")
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
        await self.admin.get(account, mailbox_id)
        limit, offset = paging(request)
        org_id = account.organisation.id
        rows = await self.core.store.run(mailbox_queries.runs, org_id, mailbox_id, limit, offset)
        count = await self.core.store.run(mailbox_queries.count_runs, org_id, mailbox_id)
        return reply(request, page(request, rows, count))


class ProfilesApi(Resource):
    app = json_api()

    def __init__(self, core):
        super().__init__(core)
        self.admin = core.profile_admin

    async def _audit(self, account, request, message: str) -> None:
        await self.core.audit.change(account, "web", client_address(request), "profile", "", message)

    @app.route("/", methods=["GET"])
    async def listing(self, request):
        account = await authenticate(self.core, request, admin=True)
        limit, offset = paging(request)
        count, profiles = await self.core.store.run(
            profile_queries.list_profiles,
            account.organisation.id,
            query(request, "search"),
            query(request, "ordering", "username"),
            limit,
            offset,
        )
        return reply(request, page(request, [profile_view(p) for p in profiles], count))

    @app.route("/", methods=["POST"])
    async def create(self, request):
        account = await authenticate(self.core, request, admin=True)
        body = read_json(request)
        if not body.get("password"):  # an invitation will be mailed: refused before the profile is made
            self.core.accounts.check_invite(account, body.get("email"))
        profile = await self.admin.create(account, body)
        await self._audit(account, request, f"{account.profile.username} created the profile {profile.username}")
        if body.get("password"):
            return reply(request, profile_view(profile), 201)
        # no password given: the person chooses one from an invitation; whether it was mailed
        # (and, when not, its link) goes back to this admin, who may change the profile
        invitation = await self.core.accounts.invite(account, profile)
        if not invitation.mailed:
            await self._audit(account, request, _not_mailed(account, profile, invitation))
        return reply(request, {**profile_view(profile), "invitation": invitation.reply()}, 201)

    @app.route("/<int:profile_id>/", methods=["GET"])
    async def item(self, request, profile_id):
        account = await authenticate(self.core, request, admin=True)
        return reply(request, profile_view(await self.admin.get(account, profile_id)))

    @app.route("/<int:profile_id>/", methods=["PATCH", "PUT"])
    async def change(self, request, profile_id):
        account = await authenticate(self.core, request, admin=True)
        existing = await self.admin.get(account, profile_id)
        values = await self.admin.values(account, read_json(request), existing)
        changed = await self.admin.describe_change(account, existing, values)
        if changed:  # only what really changed is written and told
            await self.admin.update(account, existing, values)
            await self._audit(account, request, f"{account.profile.username} changed {existing.username}: {changed}")
        return reply(request, profile_view(await self.admin.get(account, profile_id)))

    @app.route("/<int:profile_id>/invite/", methods=["POST"])
    async def invite(self, request, profile_id):
        account = await authenticate(self.core, request, admin=True)
        profile = await self.admin.get(account, profile_id)
        invitation = await self.core.accounts.invite(account, profile)
        await self._audit(account, request, f"{account.profile.username} invited {profile.username}")
        if not invitation.mailed:
            await self._audit(account, request, _not_mailed(account, profile, invitation))
        return reply(request, invitation.reply(), 202)

    @app.route("/<int:profile_id>/", methods=["DELETE"])
    async def delete(self, request, profile_id):
        account = await authenticate(self.core, request, admin=True)
        existing = await self.admin.get(account, profile_id)
        await self.admin.delete(account, existing)
        await self._audit(account, request, f"{account.profile.username} deleted the profile {existing.username}")
        request.setResponseCode(204)
        return b""


def _not_mailed(account, profile, invitation) -> str:
    return (
        f"The invitation of {profile.username} could not be mailed to {profile.email} ({invitation.error}); "
        f"its link was shown to {account.profile.username}"
    )


class LogsApi(Resource):
    app = json_api()

    @app.route("/", methods=["GET"])
    async def listing(self, request):
        account = await authenticate(self.core, request, admin=True)
        limit, offset = paging(request, 50)
        count, rows = await self.core.store.run(
            log_queries.search_logs, account.organisation.id, log_filters(request), limit, offset
        )
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
        filters = log_filters(request)
        request.setHeader(b"content-type", b"text/csv; charset=utf-8")
        request.setHeader(b"content-disposition", b'attachment; filename="audit-log.csv"')
        request.setHeader(b"cache-control", b"no-store")
        request.write(_csv([COLUMN_NAMES]))
        before = None
        while True:
            rows = await self.core.store.run(log_queries.export_logs, account.organisation.id, filters, before, 5000)
            if not rows:
                break
            request.write(_csv(rows))
            before = rows[-1][0]
        return b""


FILTERS = ("search", "action", "protocol", "username", "date_from", "date_to")


def log_filters(request) -> dict:
    """A log listing's filters from the query string (an organisation's, or the operator's view of one)."""
    filters = {name: query(request, name).strip() for name in FILTERS}
    for name in ("date_from", "date_to"):  # compared as stored text: the stored format, in UTC
        if filters[name]:
            filters[name] = to_iso(validation.moment(filters[name], name))
    return filters


COLUMN_NAMES = ("id", "created_at", "username", "protocol", "action", "path", "bytes", "remote_address", "message")


def _csv(rows) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    for row in rows:
        # a leading =, +, - or @ would run as a formula in a spreadsheet
        writer.writerow(["'" + v if isinstance(v, str) and v.startswith(("=", "+", "-", "@")) else v for v in row])
    return buffer.getvalue().encode()


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
        created = await self.core.api_tokens.create(account, read_json(request))
        await self.core.audit.change(
            account, "web", client_address(request), "token", "",
            f"{account.profile.username} created the API token {created['name']} ({created['prefix']})",
        )  # fmt: skip
        return reply(request, created, 201)  # the only time the secret is shown

    @app.route("/<int:token_id>/", methods=["GET"])
    async def item(self, request, token_id):
        account = await authenticate(self.core, request, admin=True)
        return reply(request, await self.core.api_tokens.get(account, token_id))

    @app.route("/<int:token_id>/", methods=["DELETE"])
    async def revoke(self, request, token_id):
        account = await authenticate(self.core, request, admin=True)
        token = await self.core.api_tokens.get(account, token_id)
        await self.core.store.run(token_queries.revoke_token, account.organisation.id, token_id)
        await self.core.audit.change(
            account, "web", client_address(request), "token", "",
            f"{account.profile.username} revoked the API token {token['name']} ({token['prefix']})",
        )  # fmt: skip
        request.setResponseCode(204)
        return b""


class SourcesApi(Resource):
    app = json_api()

    def __init__(self, core):
        super().__init__(core)
        self.admin = core.source_admin

    async def _audit(self, account, request, message: str) -> None:
        await self.core.audit.change(account, "web", client_address(request), "source", "", message)

    @app.route("/", methods=["GET"])
    async def listing(self, request):
        account = await authenticate(self.core, request, admin=True)
        limit, offset = paging(request)
        count, sources = await self.core.store.run(
            source_queries.list_sources, account.organisation.id, query(request, "search"), limit, offset
        )
        default = account.organisation.default_source_id
        return reply(request, page(request, [source_view(s, default) for s in sources], count))

    async def _make_default(self, account, request, source) -> int:
        await self.admin.make_default(account, source)
        await self._audit(
            account, request, f"{account.profile.username} made {source.name} the organisation's default source"
        )
        return source.id

    @app.route("/", methods=["POST"])
    async def create(self, request):
        account = await authenticate(self.core, request, admin=True)
        source_id, make_default = await self.admin.create(account, read_json(request))
        source = await self.admin.check_saved(account, source_id)
        await self._audit(account, request, f"{account.profile.username} created the source {source.name}")
        default = account.organisation.default_source_id
        if make_default:
            default = await self._make_default(account, request, source)
        return reply(request, source_view(source, default), 201)

    @app.route("/<int:source_id>/", methods=["GET"])
    async def item(self, request, source_id):
        account = await authenticate(self.core, request, admin=True)
        return reply(
            request, source_view(await self.admin.get(account, source_id), account.organisation.default_source_id)
        )

    @app.route("/<int:source_id>/", methods=["PATCH", "PUT"])
    async def change(self, request, source_id):
        """Change a source; {"default": true} makes it the organisation's default source"""
        account = await authenticate(self.core, request, admin=True)
        existing = await self.admin.get(account, source_id)
        make_default, changed = await self.admin.change(account, existing, read_json(request))
        default = account.organisation.default_source_id
        if make_default and existing.id != default:
            default = await self._make_default(account, request, existing)
        if changed:
            await self._audit(
                account, request, f"{account.profile.username} changed the source {existing.name}: {changed}"
            )
        checked = await self.admin.check_saved(account, source_id, existing)
        return reply(request, source_view(checked, default))

    @app.route("/<int:source_id>/", methods=["DELETE"])
    async def delete(self, request, source_id):
        """Delete a source: refused for the organisation's default and while profiles or mailboxes use it"""
        account = await authenticate(self.core, request, admin=True)
        existing = await self.admin.get(account, source_id)
        await self.admin.delete(account, existing)
        await self._audit(account, request, f"{account.profile.username} deleted the source {existing.name}")
        request.setResponseCode(204)
        return b""

    @app.route("/<int:source_id>/check/", methods=["POST"])
    async def check(self, request, source_id):
        account = await authenticate(self.core, request, admin=True)
        checked = await self.admin.check(account, await self.admin.get(account, source_id))
        return reply(request, source_view(checked, account.organisation.default_source_id))

    @app.route("/<int:source_id>/authorize/", methods=["POST"])
    async def authorize(self, request, source_id):
        """Start signing a source in with its OAuth2 provider: the URL to send the browser to"""
        account = await authenticate(self.core, request, admin=True)
        source = await self.admin.get(account, source_id)
        redirect_uri = console_origin(self.core, request) + "/admin/sources/callback"
        url = await self.admin.authorize(account, source, redirect_uri)
        return reply(request, {"url": url, "redirect_uri": redirect_uri})

    @app.route("/callback/", methods=["POST"])
    async def callback(self, request):
        """Finish a source's sign-in: the code and state (or error) the provider sent back"""
        account = await authenticate(self.core, request, admin=True)
        source = await self.admin.finish_sign_in(account, read_json(request))
        await self._audit(
            account, request, f"{account.profile.username} signed the source {source.name} in with its provider"
        )
        return reply(request, source_view(source, account.organisation.default_source_id))


_HOST = re.compile(r"(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")


def console_origin(core, request) -> str:
    """The console's origin as the admin's browser reached it (scheme and Host): where a
    provider sends the browser back, signed in there. A Host that is not host[:port]
    falls back to the configured public_hostname."""
    host = (request.getHeader(b"host") or b"").decode("latin-1")
    if _HOST.fullmatch(host):
        return f"{'https' if request.isSecure() else 'http'}://{host}"
    return core.accounts.console_url()
