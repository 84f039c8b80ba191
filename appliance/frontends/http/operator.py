"""The operator's endpoints (superusers only): every organisation, its status,
trial, storage used and logs; which organisation owns each local folder."""

from __future__ import annotations

from datetime import UTC, datetime

from ...core import validation
from ...core.organisations import describe, describe_organisation_change
from ...errors import Invalid, NotFound, PermissionDenied
from ...models import ORG_STATUSES, LogEntry, to_iso
from ...store import logs as log_queries
from ...store import operator as operator_queries
from ...store import queries
from .admin import log_filters
from .api import (
    NOT_ALLOWED,
    Resource,
    authenticate,
    field_named,
    json_api,
    page,
    paging,
    query,
    read_json,
    reply,
)


class OperatorApi(Resource):
    app = json_api()

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.core.reactor.seconds(), UTC)

    async def _operator(self, request):
        account = await authenticate(self.core, request, admin=True)
        if not account.profile.is_superuser:
            raise PermissionDenied(NOT_ALLOWED)
        return account

    async def _organisation(self, org_id: int):
        organisation = await self.core.store.run(queries.get_organisation, org_id)
        if organisation is None:
            raise NotFound("No such organisation.")
        return organisation

    @app.route("/organisations/", methods=["GET"])
    async def listing(self, request):
        await self._operator(request)
        limit, offset = paging(request)
        count, rows = await self.core.store.run(
            operator_queries.list_organisations, query(request, "search"), limit, offset
        )
        now = self._now()
        storage = self.core.storage  # figures measured in the background: a list never walks a tree
        results = [dict(describe(o, now), users=users, **storage.current(o.id)) for o, users in rows]
        return reply(request, page(request, results, count))

    @app.route("/organisations/", methods=["POST"])
    async def create(self, request):
        account = await self._operator(request)
        body = read_json(request)
        admin = body.get("admin") if isinstance(body.get("admin"), dict) else {}
        with field_named("organisation name", "name"):
            created = await self.core.organisations.create(
                str(body.get("name", "")),
                body.get("subdomain") or None,
                str(admin.get("username", "")),
                str(admin.get("email", "")),
                admin.get("password") or None,
                status="trial",
                trial_days=self.core.settings.server.trial_days,
            )
        await self._record(account, created.org_id, f"{account.profile.username} created the organisation")
        return reply(request, describe(await self._organisation(created.org_id), self._now()), 201)

    @app.route("/organisations/<int:org_id>/", methods=["GET"])
    async def item(self, request, org_id):
        await self._operator(request)
        organisation = await self._organisation(org_id)
        return reply(request, dict(describe(organisation, self._now()), **self.core.storage.current(org_id)))

    @app.route("/organisations/<int:org_id>/storage/", methods=["POST"])
    async def measure_storage(self, request, org_id):
        """Measure an organisation's storage now (bytes and files under its local sources)"""
        await self._operator(request)
        organisation = await self._organisation(org_id)
        await self.core.storage.measure(org_id)
        return reply(request, dict(describe(organisation, self._now()), **self.core.storage.current(org_id)))

    @app.route("/folders/", methods=["GET"])
    async def folders(self, request):
        """Every local folder and the organisation that owns it (and any other organisation whose folder overlaps it)"""
        await self._operator(request)
        limit, offset = paging(request)
        rows = await self.core.local_folders.listing()
        return reply(request, page(request, rows[offset : offset + limit], len(rows)))

    @app.route("/organisations/<int:org_id>/", methods=["PATCH"])
    async def change(self, request, org_id):
        account = await self._operator(request)
        existing = await self._organisation(org_id)
        body = read_json(request)
        changes, errors = {}, {}
        if "status" in body:
            if body["status"] not in ORG_STATUSES:
                errors["status"] = [f"Choose one of: {', '.join(ORG_STATUSES)}."]
            elif org_id == account.organisation.id and body["status"] in ("deleted", "payment_missing"):
                errors["status"] = ["The operator's own organisation must stay usable."]
            else:
                changes["status"] = body["status"]
        if "trial_ends_at" in body:
            try:
                value = body["trial_ends_at"]
                changes["trial_ends_at"] = to_iso(validation.moment(value, "trial_ends_at")) if value else None
            except Invalid as e:
                errors.update(e.fields)
        if errors:
            raise Invalid("Some fields are not valid.", errors)
        changed = describe_organisation_change(existing, changes)
        if changed:  # only what really changed is written and told
            await self.core.store.run(queries.update_organisation, org_id, changes)
            await self._record(account, org_id, f"The operator {account.profile.username} changed {changed}")
            await self.core.open_sessions.check(org_id=org_id)  # a deleted or unpaid one: its sessions end
        return reply(request, describe(await self._organisation(org_id), self._now()))

    @app.route("/mail/", methods=["GET"])
    async def mail(self, request):
        """The state of outbound mail: where it goes, the last delivery and the last error"""
        account = await self._operator(request)
        return reply(request, self.core.accounts.mail_status(account))

    @app.route("/mail/test/", methods=["POST"])
    async def mail_test(self, request):
        """Send a test mail (to the operator's own address unless `to` is given) and say how it went"""
        account = await self._operator(request)
        return reply(request, await self.core.accounts.send_test_mail(account, read_json(request).get("to")))

    @app.route("/organisations/<int:org_id>/logs/", methods=["GET"])
    async def logs(self, request, org_id):
        await self._operator(request)
        await self._organisation(org_id)
        limit, offset = paging(request, 50)
        count, rows = await self.core.store.run(log_queries.search_logs, org_id, log_filters(request), limit, offset)
        return reply(request, page(request, rows, count, 50))

    async def _record(self, account, org_id: int, message: str) -> None:
        await self.core.audit.record(
            LogEntry(
                org_id=org_id,
                profile_id=account.profile.id,
                username=account.profile.username,
                protocol="web",
                action="organisation",
                message=message,
            )  # fmt: skip
        )
