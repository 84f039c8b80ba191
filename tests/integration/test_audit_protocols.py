"""An admin change's audit row names the door its maker signed in by: "api" for a
change made with an API token, "web" for one made in a console session, whatever
the resource or the change (#42: the protocol comes from the sign-in, not from each service)."""

from __future__ import annotations

from ..api_client import Api, signed_in
from ..helpers import ADMIN_PASSWORD


def rows(console: Api, action: str) -> list[dict]:
    """The audit rows of `action`, read through the API."""
    reply = console.get(f"logs/?action={action}")
    assert reply.status == 200, reply.body
    return reply.body["results"]


def protocols(console: Api, action: str) -> dict[str, str]:
    """The protocol of each audit row of `action`, by its message."""
    return {row["message"]: row["protocol"] for row in rows(console, action)}


def test_admin_changes_are_audited_by_the_door_their_maker_signed_in_by(daemon):
    console = signed_in(daemon, "admin", ADMIN_PASSWORD)
    made = console.post("tokens/", {"name": "automation", "scopes": ["files", "admin"]})
    assert made.status == 201, made.body
    token = Api(daemon, made.body["token"])
    org_id = daemon.default_org()

    for api, who in ((token, "scripted"), (console, "clicked")):
        body = {"username": f"{who}-user", "email": f"{who}@example.com", "password": f"{who}-password-1"}
        created = api.post("profiles/", body)
        assert created.status == 201, created.body
        folder = daemon.source_root() / f"{who}-drive"
        folder.mkdir()
        created = api.post("sources/", {"name": f"{who} drive", "config": {"path": str(folder)}})
        assert created.status == 201, created.body
        changed = api.patch(f"organisation/{org_id}/", {"name": f"Acme {who}"})
        assert changed.status == 200, changed.body
        (daemon.home("admin") / f"{who}.txt").write_text(who)
        shared = api.post("shares/", {"path": f"/{who}.txt"})
        assert shared.status == 201, shared.body
        assert api.patch(f"shares/{shared.body['id']}/", {"max_downloads": 3}).status == 200
        assert api.delete(f"shares/{shared.body['id']}/").status == 204

    assert protocols(console, "token") == {f"admin created the API token automation ({made.body['prefix']})": "web"}
    assert protocols(console, "profile") == {
        "admin created the profile scripted-user": "api",
        "admin created the profile clicked-user": "web",
    }
    assert protocols(console, "source") == {
        "admin created the source scripted drive": "api",
        "admin created the source clicked drive": "web",
    }
    assert protocols(console, "organisation") == {
        "admin changed the organisation: name from Acme to Acme scripted": "api",
        "admin changed the organisation: name from Acme scripted to Acme clicked": "web",
    }
    shares = rows(console, "share")  # each link made, changed and revoked: three rows
    assert [row["protocol"] for row in shares if row["path"] == "/scripted.txt"] == ["api"] * 3
    assert [row["protocol"] for row in shares if row["path"] == "/clicked.txt"] == ["web"] * 3
