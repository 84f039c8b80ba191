"""The audit log tells what a change changed, and only that: each field by its
label, each value as a person reads it (times, sizes, names), nothing for a save
that changed nothing. Driven through the API as the console does it: the whole form
is sent back with one field changed."""

from __future__ import annotations

from ..api_client import signed_in
from ..helpers import ADMIN_PASSWORD


def _messages(daemon, action: str, since: int) -> list[str]:
    return [row["message"] for row in daemon.logs(action) if row["id"] > since]


def _last_log(daemon) -> int:
    return daemon.query("SELECT coalesce(max(id), 0) FROM logs")[0][0]


def test_changing_only_a_profiles_source_logs_only_the_source(daemon):
    admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
    archive = admin.post("sources/", {"name": "Archive", "config": {"path": "archive"}})
    assert archive.status == 201, archive.body
    daemon.add_profile("sourced")
    profile = next(p for p in admin.get("profiles/?search=sourced").body["results"] if p["username"] == "sourced")
    start = _last_log(daemon)

    form = {key: value for key, value in profile.items() if key not in ("id", "last_login", "created_at")}
    assert admin.patch(f"profiles/{profile['id']}/", {**form, "source": archive.body["id"]}).status == 200
    assert _messages(daemon, "profile", start) == ["admin changed sourced: source from Default to Archive"]

    start = _last_log(daemon)  # the same form saved again: nothing changed, nothing told
    assert admin.patch(f"profiles/{profile['id']}/", {**form, "source": archive.body["id"]}).status == 200
    assert _messages(daemon, "profile", start) == []

    changes = {"expires_at": "2030-01-03T10:00:00Z", "quota_bytes": 1_500_000_000, "password": "a-new-password-9"}
    assert admin.patch(f"profiles/{profile['id']}/", changes).status == 200
    assert _messages(daemon, "profile", start) == [
        "admin changed sourced: password changed, quota from no limit to 1.5 GB, "
        "expiry from never to 2030-01-03 10:00 UTC"
    ]


def test_an_organisations_status_change_does_not_claim_the_trial_end_changed(daemon):
    other = daemon.add_organisation("Status Corp", status="trial", trial_ends_at="2099-01-01T00:00:00.000000Z")
    operator = signed_in(daemon, "admin", ADMIN_PASSWORD)
    start = _last_log(daemon)
    # the console's dialog sends both fields back, the trial end as it was
    reply = operator.patch(
        f"god/organisations/{other}/", {"status": "payment_missing", "trial_ends_at": "2099-01-01T00:00:00Z"}
    )
    assert reply.status == 200 and reply.body["status"] == "payment_missing"
    assert _messages(daemon, "organisation", start) == [
        "The operator admin changed status from trial to payment missing"
    ]
    start = _last_log(daemon)
    operator.patch(f"god/organisations/{other}/", {"trial_ends_at": "2099-02-01T12:30:00Z"})
    assert _messages(daemon, "organisation", start) == [
        "The operator admin changed trial end from 2099-01-01 00:00 UTC to 2099-02-01 12:30 UTC"
    ]


def test_a_source_change_names_what_changed(daemon):
    admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
    made = admin.post("sources/", {"name": "Projects", "config": {"path": "projects"}})
    assert made.status == 201, made.body
    start = _last_log(daemon)
    form = {"name": "Projects 2026", "read_only": False, "config": made.body["config"]}
    assert admin.patch(f"sources/{made.body['id']}/", form).status == 200
    assert _messages(daemon, "source", start) == [
        "admin changed the source Projects: name from Projects to Projects 2026"
    ]
    start = _last_log(daemon)
    assert admin.patch(f"sources/{made.body['id']}/", {**form, "read_only": True}).status == 200
    assert _messages(daemon, "source", start) == ["admin changed the source Projects 2026: read-only from no to yes"]
