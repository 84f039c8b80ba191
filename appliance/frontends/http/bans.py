"""Bans over HTTP: the addresses banned for repeated failed sign-ins that concern the
caller's organisation, and lifting one. Admins only. A ban is by address and the
throttle remembers which usernames were tried from it; an organisation sees a ban
when one of those usernames is its own, and only its own usernames in it, so one
organisation learns nothing of another's. Every lift is written to the audit log."""

from __future__ import annotations

from datetime import UTC, datetime

from ...errors import NotFound
from ...models import to_iso
from ...store import queries
from .api import Resource, authenticate, json_api, page, paging, reply


class BansApi(Resource):
    app = json_api()

    async def _visible(self, account) -> list[dict]:
        """The bans in force that tried this organisation's usernames, soonest to end first."""
        org_id = account.organisation.id
        owners: dict[str, int | None] = {}
        found = []
        for ban in self.core.auth.bans():
            names = []
            for name in ban.usernames:
                if name not in owners:
                    profile = await self.core.store.run(queries.profile_by_username, name)
                    owners[name] = profile.org_id if profile else None
                if owners[name] == org_id:
                    names.append(name)
            if names:
                found.append(
                    {
                        "address": ban.address,
                        "until": to_iso(datetime.fromtimestamp(ban.until, UTC)),
                        "offences": ban.offences,
                        "usernames": names,
                    }
                )
        return found

    @app.route("/", methods=["GET"])
    async def listing(self, request):
        """Addresses banned for repeated failed sign-ins on this organisation's usernames."""
        account = await authenticate(self.core, request, admin=True)
        bans = await self._visible(account)
        limit, offset = paging(request, 50)
        return reply(request, page(request, bans[offset : offset + limit], len(bans), 50))

    @app.route("/<address>/", methods=["DELETE"])
    async def lift(self, request, address):
        """Lift the ban on an address, so it may sign in again at once."""
        account = await authenticate(self.core, request, admin=True)
        if not any(ban["address"] == address for ban in await self._visible(account)):
            raise NotFound("No ban on that address concerns your organisation; refresh the list.")
        await self.core.auth.unban(address, account.profile.username, account.organisation.id)
        request.setResponseCode(204)
        return b""
