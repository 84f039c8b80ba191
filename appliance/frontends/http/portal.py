"""Sessions, first run, the dashboard, the organisation and its branding."""

from __future__ import annotations

from datetime import UTC, datetime

from ...core.accounts import RESET_SENT
from ...core.organisations import branding, describe, organisation_changes
from ...errors import Invalid, NotFound, PermissionDenied
from ...store import queries
from .api import NOT_ALLOWED, Resource, authenticate, client_address, json_api, query, read_json, reply, required


def user_fields(profile) -> dict:
    return {
        "id": profile.id,
        "username": profile.username,
        "email": profile.email,
        "is_admin": profile.is_admin,
        "is_superuser": profile.is_superuser,
    }


class PortalApi(Resource):
    """Routes under /api/portal/ that are not a collection of their own."""

    app = json_api()

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.core.reactor.seconds(), UTC)

    # -- sessions --------------------------------------------------------------------

    @app.route("/token/", methods=["POST"])
    async def token(self, request):
        fields = required(read_json(request), "username", "password")
        account = await self.core.auth.login(
            fields["username"], protocol="web", address=client_address(request), password=fields["password"]
        )
        tokens = await self.core.sessions.issue(account.profile.id)
        return reply(request, {**tokens, **user_fields(account.profile)})

    @app.route("/token/refresh/", methods=["POST"])
    async def refresh(self, request):
        token = read_json(request).get("refresh")
        if not isinstance(token, str) or not token:
            raise Invalid("A refresh token is required.", {"refresh": ["This field is required."]})
        return reply(request, await self.core.sessions.refresh(token))

    @app.route("/token/logout/", methods=["POST"])
    async def logout(self, request):
        token = read_json(request).get("refresh")
        if isinstance(token, str) and token:
            await self.core.sessions.revoke(token)
        return reply(request, {"detail": "Signed out."})

    # -- password reset and invitations ------------------------------------------------

    @app.route("/password/reset/", methods=["POST"])
    async def reset(self, request):
        await self.core.accounts.request_reset(read_json(request).get("email"))
        return reply(request, {"detail": RESET_SENT})  # the same answer whether the address exists or not

    @app.route("/password/reset/confirm/", methods=["POST"])
    async def reset_confirm(self, request):
        fields = required(read_json(request), "uid", "token", "new_password1", "new_password2")
        await self.core.accounts.confirm(
            fields["uid"], fields["token"], fields["new_password1"], fields["new_password2"]
        )
        return reply(request, {"detail": "Your password has been set. You can sign in now."})

    @app.route("/password/change/", methods=["POST"])
    async def change_password(self, request):
        account = await authenticate(self.core, request)
        fields = required(read_json(request), "old_password", "new_password1", "new_password2")
        await self.core.accounts.change_password(
            account, fields["old_password"], fields["new_password1"], fields["new_password2"]
        )
        tokens = await self.core.sessions.issue(account.profile.id)  # this session goes on; the others end
        return reply(request, {"detail": "Your password has been changed.", **tokens})

    # -- first run --------------------------------------------------------------------

    @app.route("/initialized/", methods=["GET"])
    async def initialized(self, request):
        return reply(request, {"initialized": await self.core.organisations.initialized()})

    @app.route("/setup/", methods=["POST"])
    async def setup(self, request):
        fields = required(read_json(request), "organisation", "username", "email", "password")
        if await self.core.organisations.initialized():
            raise PermissionDenied("The appliance is already set up.")
        created = await self.core.organisations.initialize(
            fields["organisation"], fields["username"], fields["email"], fields["password"]
        )
        profile = await self.core.store.run(queries.get_profile_by_id, created.profile_id)
        tokens = await self.core.sessions.issue(profile.id)
        return reply(request, {**tokens, **user_fields(profile)}, 201)

    # -- dashboard ----------------------------------------------------------------------

    @app.route("/dashboard/overview/", methods=["GET"])
    async def overview(self, request):
        account = await authenticate(self.core, request, admin=True)
        return reply(request, await self.core.dashboard.overview(account))

    @app.route("/dashboard/information/", methods=["GET"])
    async def information(self, request):
        account = await authenticate(self.core, request)
        return reply(request, self.core.dashboard.information(account))

    # -- organisation -----------------------------------------------------------------

    @app.route("/organisation/", methods=["GET"])
    async def organisation(self, request):
        account = await authenticate(self.core, request)
        return reply(request, [describe(account.organisation, self._now())])

    @app.route("/organisation/<int:org_id>/", methods=["GET", "PATCH"])
    async def organisation_item(self, request, org_id):
        account = await authenticate(self.core, request)
        if org_id != account.organisation.id:
            raise NotFound("No such organisation.")
        if request.method == b"PATCH":
            if not account.profile.is_admin:
                raise PermissionDenied(NOT_ALLOWED)
            changes = organisation_changes(read_json(request))
            if changes:
                await self.core.store.run(queries.update_organisation, org_id, changes)
                await self.core.audit.change(
                    account, "web", client_address(request), "organisation", "",
                    f"{account.profile.username} changed the organisation's {', '.join(sorted(changes))}",
                )  # fmt: skip
            organisation = await self.core.store.run(queries.get_organisation, org_id)
            return reply(request, describe(organisation, self._now()))
        return reply(request, describe(account.organisation, self._now()))

    @app.route("/branding/", methods=["GET"])
    async def branding(self, request):
        subdomain = query(request, "subdomain").strip().lower()
        organisation = await self.core.store.run(queries.organisation_by_subdomain, subdomain) if subdomain else None
        return reply(request, branding(organisation))

    @app.route("/", branch=True)
    def not_found(self, request):
        return reply(request, {"detail": "Not found."}, 404)
