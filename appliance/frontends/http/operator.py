"""The operator's endpoints (superusers only): every organisation, its status,
trial, storage used and logs; which organisation owns each local folder; outbound
mail and the appliance's settings the console keeps."""

from __future__ import annotations

from .admin import log_query
from .api import Resource, authenticate, field_named, json_api, page, paging, query, read_json, reply


class OperatorApi(Resource):
    app = json_api()

    async def _operator(self, request):
        account = await authenticate(self.core, request, admin=True)
        self.core.organisations.require_operator(account)
        return account

    @app.route("/organisations/", methods=["GET"])
    async def listing(self, request):
        account = await self._operator(request)
        limit, offset = paging(request)
        count, results = await self.core.organisations.listing(account, query(request, "search"), limit, offset)
        return reply(request, page(request, results, count))

    @app.route("/organisations/", methods=["POST"])
    async def create(self, request):
        account = await self._operator(request)
        body = read_json(request)
        admin = body.get("admin") if isinstance(body.get("admin"), dict) else {}
        with field_named("organisation name", "name"):
            created = await self.core.organisations.add(
                account,
                str(body.get("name", "")),
                body.get("subdomain") or None,
                str(admin.get("username", "")),
                str(admin.get("email", "")),
                admin.get("password") or None,
            )
        return reply(request, created, 201)

    @app.route("/organisations/<int:org_id>/", methods=["GET"])
    async def item(self, request, org_id):
        account = await self._operator(request)
        return reply(request, await self.core.organisations.item(account, org_id))

    @app.route("/organisations/<int:org_id>/storage/", methods=["POST"])
    async def measure_storage(self, request, org_id):
        """Measure an organisation's storage now (bytes and files under its local sources)"""
        account = await self._operator(request)
        return reply(request, await self.core.organisations.measure_storage(account, org_id))

    @app.route("/folders/", methods=["GET"])
    async def folders(self, request):
        """Every local folder and the organisation that owns it (and any other organisation whose folder overlaps it)"""
        account = await self._operator(request)
        limit, offset = paging(request)
        rows = await self.core.local_folders.listing(account)
        return reply(request, page(request, rows[offset : offset + limit], len(rows)))

    @app.route("/folders/reserved/<int:reserved_id>/", methods=["DELETE"])
    async def release_folder(self, request, reserved_id):
        """Release a folder kept for an organisation after its source was deleted: any organisation may use it then"""
        account = await self._operator(request)
        await self.core.local_folders.release(account, reserved_id)
        request.setResponseCode(204)
        return b""

    @app.route("/organisations/<int:org_id>/", methods=["PATCH"])
    async def change(self, request, org_id):
        account = await self._operator(request)
        return reply(request, await self.core.organisations.change(account, org_id, read_json(request)))

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

    @app.route("/settings/", methods=["GET"])
    async def appliance_settings(self, request):
        """The settings the console may keep (public host name, outbound mail): each one's value (never the password's), where it comes from, whether it may be changed here, and what is still to set"""
        account = await self._operator(request)
        return reply(request, self.core.appliance_settings.view(account))

    @app.route("/settings/", methods=["PATCH"])
    async def change_appliance_settings(self, request):
        """Change settings the config file does not set, at once (null: back to the default; an empty password keeps it)"""
        account = await self._operator(request)
        return reply(request, await self.core.appliance_settings.change(account, read_json(request)))

    @app.route("/organisations/<int:org_id>/logs/", methods=["GET"])
    async def logs(self, request, org_id):
        account = await self._operator(request)
        limit, offset = paging(request, 50)
        count, rows = await self.core.audit.search(account, log_query(request), limit, offset, org_id=org_id)
        return reply(request, page(request, rows, count, 50))
