"""`tokens/?search=` finds an organisation's API tokens by name or prefix, and only its own."""

from __future__ import annotations

from ..api_client import signed_in
from ..helpers import ADMIN_PASSWORD

PASSWORD = "user-password-1"


def names(api, search: str) -> list[str]:
    from urllib.parse import quote

    reply = api.get(f"tokens/?search={quote(search)}")
    assert reply.status == 200, reply.body
    assert reply.body["count"] == len(reply.body["results"])
    return sorted(t["name"] for t in reply.body["results"])


def test_tokens_are_found_by_name_or_prefix(daemon):
    admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
    made = {}
    for name in ("Nightly backup", "backup_100%", "CI deploy", "Reporting"):
        reply = admin.post("tokens/", {"name": name, "scopes": ["files"]})
        assert reply.status == 201
        made[name] = reply.body
    assert names(admin, "backup") == ["Nightly backup", "backup_100%"]  # any part of the name, any case
    assert names(admin, "BACKUP") == ["Nightly backup", "backup_100%"]
    assert names(admin, "p_1") == ["backup_100%"]  # _ and % are literal, not wildcards
    assert names(admin, "100%") == ["backup_100%"]
    assert names(admin, "ly%") == []
    prefix = made["CI deploy"]["prefix"]
    assert names(admin, prefix) == ["CI deploy"]
    assert "CI deploy" in names(admin, prefix[:5])
    assert names(admin, f"apl_{prefix}") == ["CI deploy"]
    assert names(admin, made["CI deploy"]["token"]) == ["CI deploy"]  # a pasted token: which one is it?
    assert "CI deploy" not in names(admin, prefix[2:])  # a prefix matches from its start
    assert names(admin, "no such token") == []
    everything = admin.get("tokens/").body
    assert {"Nightly backup", "backup_100%", "CI deploy", "Reporting"} <= {t["name"] for t in everything["results"]}
    paged = admin.get("tokens/?search=backup&page_size=1")
    assert paged.body["count"] == 2 and len(paged.body["results"]) == 1


def test_another_organisations_tokens_are_never_found(daemon):
    org = daemon.add_organisation("Token Rivals")
    daemon.add_profile("rivaladmin", org_id=org, is_admin=True)
    rival = signed_in(daemon, "rivaladmin", PASSWORD)
    assert rival.post("tokens/", {"name": "Rival backup"}).status == 201
    admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
    assert "Rival backup" not in names(admin, "Rival")
    assert names(rival, "backup") == ["Rival backup"]
