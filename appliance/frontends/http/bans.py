"""Bans over HTTP: the bans in force that the caller may see, and lifting them. Admins
only. Which bans an admin sees (those earned guessing its organisation's usernames or
share links; the operator sees all) and in which words is the core's rule
(AuthService.bans_for / lift); every lift is written to the audit log."""

from __future__ import annotations

from datetime import UTC, datetime

from ...errors import NotFound
from ...models import to_iso
from .api import Resource, authenticate, json_api, page, paging, reply


class BansApi(Resource):
    app = json_api()

    @app.route("/", methods=["GET"])
    async def listing(self, request):
        """Bans in force for repeated failed sign-ins or link passwords that concern this organisation"""
        account = await authenticate(self.core, request, admin=True)
        bans = [
            {
                "address": ban.address,
                "until": to_iso(datetime.fromtimestamp(ban.until, UTC)),
                "offences": ban.offences,
                "kind": ban.kind,
                "why": ban.why,
                "usernames": list(ban.usernames),
            }
            for ban in self.core.auth.bans_for(account)
        ]
        limit, offset = paging(request, 50)
        return reply(request, page(request, bans[offset : offset + limit], len(bans), 50))

    @app.route("/<path:address>/", methods=["DELETE"])  # path: an IPv6 ban is a network ("2001:db8::/64")
    async def lift(self, request, address):
        """Lift the bans on an address (or an IPv6 network, or any address in it) that concern this organisation"""
        account = await authenticate(self.core, request, admin=True)
        if not await self.core.auth.lift(account, address):
            raise NotFound("No ban on that address concerns your organisation; refresh the list.")
        request.setResponseCode(204)
        return b""
