"""Admin resources: mailboxes (with runs), profiles, logs. Admins only; every
query is scoped to the caller's organisation, so another organisation's ids
answer 404."""

from __future__ import annotations

from klein import Klein

from ...store import mailboxes as mailbox_queries
from .api import authenticate, client_address, error_reply, page, paging, query, read_json, reply


class MailboxesApi:
    app = Klein()

    def __init__(self, core):
        self.core = core
        self.admin = core.mailbox_admin

    @app.handle_errors(Exception)
    def errors(self, request, failure):
        return error_reply(request, failure)

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
        if values:
            await self.core.store.run(mailbox_queries.update_mailbox, account.organisation.id, mailbox_id, values)
            changed = ", ".join(sorted(k.replace("_encrypted", "") for k in values))
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
