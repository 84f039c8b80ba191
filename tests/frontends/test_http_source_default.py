"""The organisation's default source over HTTP: shown on each source, chosen by an admin,
never deleted; a source that profiles use is not deleted either. Also what the console
reads to shape its screens: the signed-in user's permissions and the log actions."""

from __future__ import annotations

from ..api_client import signed_in
from ..helpers import ADMIN_PASSWORD

PASSWORD = "user-password-1"


def test_an_admin_chooses_the_default_source_and_cannot_delete_it(daemon):
    org = daemon.add_organisation("Defaults Ltd")
    daemon.add_profile("defboss", org_id=org, is_admin=True)
    admin = signed_in(daemon, "defboss", PASSWORD)
    (daemon.data_dir / "files" / "defaults-ltd" / "second").mkdir()
    first = next(s for s in admin.get("sources/").body["results"] if s["name"] == "Default")
    assert first["default"] is True
    second = admin.post("sources/", {"name": "Second", "config": {"path": "second"}})
    assert second.status == 201 and second.body["default"] is False, second.body
    second_id = second.body["id"]

    refused = admin.delete(f"sources/{first['id']}/")
    assert refused.status == 400
    assert refused.body == {
        "detail": "This is the organisation's default source: new profiles get it. Make another source the default first."
    }
    assert admin.get(f"sources/{first['id']}/").body["default"] is True  # still there, still the default
    unset = admin.patch(f"sources/{first['id']}/", {"default": False})
    assert unset.status == 400 and "make another source the default" in unset.body["default"][0]
    assert admin.patch(f"sources/{second_id}/", {"default": "yes"}).status == 400

    made = admin.patch(f"sources/{second_id}/", {"default": True})
    assert made.status == 200 and made.body["default"] is True, made.body
    assert {s["name"]: s["default"] for s in admin.get("sources/").body["results"]} == {
        "Default": False,
        "Second": True,
    }
    assert admin.get(f"sources/{first['id']}/").body["default"] is False
    assert any("made Second the organisation's default source" in r["message"] for r in daemon.logs("source"))
    # a new profile gets the new default
    created = admin.post("profiles/", {"username": "newcomer", "email": "n@example.com", "password": "newcomer-pass-1"})
    assert created.status == 201 and created.body["source"] == second_id, created.body
    # the old default is used by defboss: refused, saying how many, and nothing changes
    in_use = admin.delete(f"sources/{first['id']}/")
    assert in_use.status == 400 and in_use.body["detail"].startswith("1 profile uses this source."), in_use.body
    assert admin.get(f"sources/{first['id']}/").status == 200
    me = next(p for p in admin.get("profiles/?search=defboss").body["results"])
    assert admin.patch(f"profiles/{me['id']}/", {"source": second_id}).status == 200
    assert admin.delete(f"sources/{first['id']}/").status == 204
    assert admin.get(f"sources/{first['id']}/").status == 404
    # a source created as the default becomes it
    (daemon.data_dir / "files" / "defaults-ltd" / "third").mkdir()
    third = admin.post("sources/", {"name": "Third", "config": {"path": "third"}, "default": True})
    assert third.status == 201 and third.body["default"] is True
    assert admin.get(f"sources/{second_id}/").body["default"] is False


def test_a_source_that_profiles_and_mailboxes_use_is_not_deleted(daemon):
    org = daemon.add_organisation("Busy Ltd")
    daemon.add_profile("busyboss", org_id=org, is_admin=True)
    admin = signed_in(daemon, "busyboss", PASSWORD)
    (daemon.data_dir / "files" / "busy-ltd" / "shared").mkdir()
    shared = admin.post("sources/", {"name": "Shared", "config": {"path": "shared"}}).body["id"]
    for name in ("busy1", "busy2"):
        made = admin.post("profiles/", {"username": name, "email": f"{name}@example.com", "password": "busy-pass-12",
                                        "source": shared})  # fmt: skip
        assert made.status == 201 and made.body["source"] == shared, made.body
    daemon.execute(
        "INSERT INTO mailboxes (org_id, name, host, port, username, source_id, created_at)"
        " VALUES (?, 'Inbox', 'mail.example.com', 993, 'u', ?, '2024-01-01T00:00:00+00:00')",
        org,
        shared,
    )
    refused = admin.delete(f"sources/{shared}/")
    assert refused.status == 400
    assert refused.body["detail"].startswith("2 profiles and 1 mailbox use this source. Give them another source")
    assert daemon.query("SELECT count(*) FROM profiles WHERE source_id = ?", shared)[0][0] == 2


def test_the_information_call_tells_the_user_what_they_may_do(daemon):
    daemon.add_profile("looker", permissions=["list", "download"])
    info = signed_in(daemon, "looker", PASSWORD).get("dashboard/information/").body
    assert info["permissions"] == ["list", "download"] and info["read_only"] is False
    admin = signed_in(daemon, "admin", ADMIN_PASSWORD).get("dashboard/information/").body
    assert {"upload", "rename", "delete", "mkdir"} <= set(admin["permissions"])


def test_the_log_actions_list_holds_every_action_written(daemon):
    """organisation_created (written when the operator makes an organisation) was missing from the filter."""
    admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
    created = admin.post("god/organisations/", {"name": "Listed Ltd", "subdomain": "listed",
                                                "admin": {"username": "listedboss", "email": "l@example.com",
                                                          "password": "listed-pass-12"}})  # fmt: skip
    assert created.status == 201, created.body
    actions = admin.get("logs/actions/")
    assert actions.status == 200
    written = {row["action"] for row in daemon.query("SELECT DISTINCT action FROM logs")}
    assert "organisation_created" in written
    assert written <= set(actions.body["actions"]), written - set(actions.body["actions"])
    daemon.add_profile("notadmin")
    assert signed_in(daemon, "notadmin", PASSWORD).get("logs/actions/").status == 403
