"""The operator's list reports each organisation's storage (bytes and files under its
local sources' folders), measured in the background, never by the list call itself."""

from __future__ import annotations

import json
import os
import time

from ..api_client import signed_in
from ..helpers import ADMIN_PASSWORD, now_iso

PASSWORD = "user-password-1"


def add_source(daemon, org_id: int, name: str, path: str, kind: str = "local") -> None:
    daemon.execute(
        "INSERT INTO sources (org_id, name, type, config, created_at) VALUES (?,?,?,?,?)",
        org_id, name, kind, json.dumps({"path": path}), now_iso(),
    )  # fmt: skip


def row_of(api, name: str) -> dict:
    reply = api.get(f"god/organisations/?search={name.replace(' ', '%20')}")
    assert reply.status == 200, reply.body
    return next(o for o in reply.body["results"] if o["name"] == name)


def test_storage_is_measured_per_organisation_and_the_list_reads_the_last_figures(daemon):
    operator = signed_in(daemon, "admin", ADMIN_PASSWORD)
    org = daemon.add_organisation("Storage Co")
    root = daemon.source_root(org)
    (root / "alice" / "deep" / "er").mkdir(parents=True)
    (root / "alice" / "a.bin").write_bytes(os.urandom(1000))
    (root / "alice" / "deep" / "er" / "b.bin").write_bytes(os.urandom(2345))
    (root / "bob.txt").write_bytes(b"x" * 10)
    (root / "alice" / ".~upload-123").write_bytes(b"u" * 5000)  # an upload in progress: not counted
    os.symlink("/etc", root / "alice" / "etc-link")  # links are not followed
    os.symlink(root / "alice" / "a.bin", root / "alias.bin")
    extra = daemon.data_dir / "files" / "storage-co-extra"
    extra.mkdir(parents=True)
    (extra / "c.bin").write_bytes(b"c" * 100)
    add_source(daemon, org, "Extra", "files/storage-co-extra")
    add_source(daemon, org, "Inside", "files/storage-co/alice")  # inside the default one: counted once
    add_source(daemon, org, "Remote", "", kind="s3")  # not local: not counted
    add_source(daemon, org, "Missing", "files/storage-co-missing")  # no folder: nothing

    measured = operator.post(f"god/organisations/{org}/storage/")
    assert measured.status == 200, measured.body
    assert measured.body["storage_bytes"] == 1000 + 2345 + 10 + 100
    assert measured.body["storage_files"] == 4
    assert measured.body["storage_measured_at"] >= now_iso()[:16]
    assert measured.body["name"] == "Storage Co"
    listed = row_of(operator, "Storage Co")
    assert (listed["storage_bytes"], listed["storage_files"]) == (3455, 4)
    assert listed["storage_measured_at"] == measured.body["storage_measured_at"]
    assert operator.get(f"god/organisations/{org}/").body["storage_bytes"] == 3455

    # the list reads the last figures: new files show after the next measurement only
    (root / "new.bin").write_bytes(b"n" * 45)
    assert row_of(operator, "Storage Co")["storage_bytes"] == 3455
    again = operator.post(f"god/organisations/{org}/storage/").body
    assert (again["storage_bytes"], again["storage_files"]) == (3500, 5)
    assert row_of(operator, "Storage Co")["storage_bytes"] == 3500


def test_an_organisation_never_measured_is_measured_in_the_background(daemon):
    operator = signed_in(daemon, "admin", ADMIN_PASSWORD)
    org = daemon.add_organisation("Late Comer")
    (daemon.source_root(org) / "f.bin").write_bytes(b"f" * 77)
    first = row_of(operator, "Late Comer")  # made after the daemon's first round
    assert set(first) >= {"storage_bytes", "storage_files", "storage_measured_at"}
    deadline = time.monotonic() + 20
    while row_of(operator, "Late Comer")["storage_bytes"] is None and time.monotonic() < deadline:
        time.sleep(0.1)
    later = row_of(operator, "Late Comer")
    assert (later["storage_bytes"], later["storage_files"]) == (77, 1) and later["storage_measured_at"]


def test_only_the_operator_measures_storage(daemon):
    org = daemon.add_organisation("Other Tenant")
    daemon.add_profile("tenantadmin", org_id=org, is_admin=True)
    tenant = signed_in(daemon, "tenantadmin", PASSWORD)
    assert tenant.post(f"god/organisations/{org}/storage/").status == 403
    assert tenant.get("god/organisations/").status == 403
    operator = signed_in(daemon, "admin", ADMIN_PASSWORD)
    assert operator.post("god/organisations/999999/storage/").status == 404
