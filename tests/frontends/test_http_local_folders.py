"""Local sources of different organisations never overlap: with [sources] local_roots
set, one organisation's admin cannot point a source at another's folder, a folder
inside it, one holding it, a '..' path or a link into it, at create or at change;
the operator sees which organisation owns each folder."""

from __future__ import annotations

import json
import os
import urllib.parse

import pytest

from ..api_client import signed_in
from ..helpers import ADMIN_PASSWORD, daemon_with, now_iso

PASSWORD = "tenant-password-1"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("folders")
    daemon = daemon_with(tmp, sources__local_roots=tmp)  # the data dir is under it too
    operator = signed_in(daemon, "admin", ADMIN_PASSWORD)
    admins = {}
    for name, sub, boss in (("Alpha Org", "alpha-org", "alphaboss"), ("Beta Org", "beta-org", "betaboss")):
        made = operator.post("god/organisations/", {"name": name, "subdomain": sub,
                                                     "admin": {"username": boss, "email": f"{boss}@example.com",
                                                               "password": PASSWORD}})  # fmt: skip
        assert made.status == 201, made.body
        admins[sub] = signed_in(daemon, boss, PASSWORD)
    roots = tmp / "roots"
    roots.mkdir()
    yield daemon, operator, admins["alpha-org"], admins["beta-org"], roots
    daemon.stop()


def refused(reply) -> None:
    """A 400 on config that names no other organisation."""
    assert reply.status == 400, (reply.status, reply.body)
    assert "config" in reply.body, reply.body
    text = json.dumps(reply.body).lower()
    assert "alpha" not in text and "another organisation" in text, reply.body


def test_a_tenant_cannot_point_a_local_source_into_another_tenants_folder(world):
    daemon, operator, alpha, beta, roots = world
    theirs = roots / "one"
    made = alpha.post("sources/", {"name": "Shared drive", "config": {"path": str(theirs)}})
    assert made.status == 201 and made.body["status"] == "ok", made.body
    (theirs / "inner").mkdir()
    (theirs / "inner" / "secret.txt").write_text("alpha's secret")
    # sources of one organisation may overlap
    assert alpha.post("sources/", {"name": "Inner", "config": {"path": str(theirs / "inner")}}).status == 201
    os.symlink(theirs / "inner", roots / "link-in")
    os.symlink(roots, roots / "up-link")
    attempts = [
        str(theirs),  # the folder itself
        str(theirs / "inner"),  # inside it
        str(roots),  # holding it
        f"{roots}/two/../one/inner",  # '..' into it
        str(roots / "link-in"),  # a link into it
        str(roots / "link-in" / "deeper"),  # below a link into it
        str(roots / "up-link" / "one"),  # through a link above it
        str(theirs) + "/",
    ]
    for path in attempts:
        refused(beta.post("sources/", {"name": "Grab", "config": {"path": path}}))
    own = beta.post("sources/", {"name": "Beta drive", "config": {"path": str(roots / "two")}})
    assert own.status == 201 and own.body["config"]["path"] == str(roots / "two"), own.body
    for path in attempts:
        refused(beta.patch(f"sources/{own.body['id']}/", {"config": {"path": path}}))
    kept = beta.get(f"sources/{own.body['id']}/").body
    assert kept["config"]["path"] == str(roots / "two")
    assert {s["name"] for s in beta.get("sources/").body["results"]} == {"Default", "Beta drive"}
    # Beta's admin on its own source sees only its own files
    me = beta.get("profiles/?search=betaboss").body["results"][0]
    assert beta.patch(f"profiles/{me['id']}/", {"source": own.body["id"], "home": "/"}).status == 200
    assert beta.get("files/?path=/").status == 200
    for path in ("/inner/secret.txt", "/../one/inner/secret.txt", "/secret.txt"):
        reply = beta.get("files/download/?path=" + urllib.parse.quote(path))
        assert reply.status in (400, 403, 404) and b"alpha's secret" not in reply.raw, (path, reply.status)
    # renaming the organisation's own folder to the other organisation's is refused as well
    refused(beta.patch(f"sources/{own.body['id']}/", {"config": {"path": "../alpha-org"}}))


def test_the_data_dir_is_never_a_local_source(world):
    daemon, operator, alpha, beta, roots = world
    for path in (str(daemon.data_dir), str(daemon.data_dir / "keys"), str(daemon.data_dir.parent)):
        reply = beta.post("sources/", {"name": "Data", "config": {"path": path}})
        assert reply.status == 400 and "config" in reply.body, (path, reply.body)
    assert beta.post("sources/", {"name": "Mine", "config": {"path": "projects"}}).status == 201


def test_the_operator_sees_which_organisation_owns_each_local_folder(world):
    daemon, operator, alpha, beta, roots = world
    folder = roots / "three"
    made = alpha.post("sources/", {"name": "Listed", "config": {"path": str(folder)}})
    assert made.status == 201, made.body
    assert beta.get("god/folders/").status == 403
    listing = operator.get("god/folders/?page_size=200")
    assert listing.status == 200, listing.body
    rows = listing.body["results"]
    assert listing.body["count"] == len(rows)
    row = next(r for r in rows if r["path"] == os.path.realpath(folder))
    assert row["organisation"]["name"] == "Alpha Org" and row["source"] == {"id": made.body["id"], "name": "Listed"}
    assert row["shared_with"] == []
    beta_default = next(r for r in rows if r["path"] == os.path.realpath(daemon.data_dir / "files" / "beta-org"))
    assert beta_default["organisation"]["subdomain"] == "beta-org" and beta_default["source"]["name"] == "Default"
    # an overlap made before this rule (or by hand in the database) is shown to the operator
    beta_org = beta_default["organisation"]["id"]
    daemon.execute(
        "INSERT INTO sources (org_id, name, type, config, created_at) VALUES (?,?,?,?,?)",
        beta_org, "Legacy", "local", json.dumps({"path": str(folder / "x")}), now_iso(),
    )  # fmt: skip
    rows = operator.get("god/folders/?page_size=200").body["results"]
    row = next(r for r in rows if r["path"] == os.path.realpath(folder))
    assert row["shared_with"] == [beta_org]


def test_a_new_organisations_folder_may_not_overlap_another_organisations_source(world):
    daemon, operator, alpha, beta, roots = world
    alpha_org = next(o for o in operator.get("god/organisations/?search=Alpha").body["results"])["id"]
    daemon.execute(
        "INSERT INTO sources (org_id, name, type, config, created_at) VALUES (?,?,?,?,?)",
        alpha_org, "Old", "local", json.dumps({"path": "files/gamma-org"}), now_iso(),
    )  # fmt: skip
    reply = operator.post("god/organisations/", {"name": "Gamma Org", "subdomain": "gamma-org",
                                                 "admin": {"username": "gammaboss", "email": "g@example.com",
                                                           "password": PASSWORD}})  # fmt: skip
    assert reply.status == 400 and "subdomain" in reply.body, reply.body
    assert operator.get("god/organisations/?search=Gamma").body["count"] == 0


def claim(admin, path) -> object:
    return admin.post("sources/", {"name": f"Claim {os.path.basename(path)}", "config": {"path": str(path)}})


def folder_row(operator, path) -> dict:
    rows = operator.get("god/folders/?page_size=200").body["results"]
    return next(r for r in rows if r["path"] == os.path.realpath(path) and r["source"] is None)


def test_a_deleted_sources_folder_stays_its_organisations_until_the_operator_releases_it(world):
    daemon, operator, alpha, beta, roots = world
    folder = roots / "four"
    made = alpha.post("sources/", {"name": "Archive", "config": {"path": str(folder)}})
    assert made.status == 201, made.body
    (folder / "deep").mkdir()
    (folder / "deep" / "payroll.csv").write_text("alpha's payroll")
    assert alpha.delete(f"sources/{made.body['id']}/").status == 204  # the files are kept by default
    assert (folder / "deep" / "payroll.csv").read_text() == "alpha's payroll"
    for path in (folder, folder / "deep", roots / "four" / ".." / "four"):
        refused(claim(beta, path))
    row = folder_row(operator, folder)
    assert row["organisation"]["name"] == "Alpha Org" and row["reserved"]["source"] == "Archive", row
    logged = alpha.get("logs/?action=source").body["results"][0]["message"]
    assert "deleted the source Archive" in logged and "kept for the organisation" in logged, logged
    # the organisation itself may use its folder again
    again = alpha.post("sources/", {"name": "Archive again", "config": {"path": str(folder)}})
    assert again.status == 201, again.body
    assert alpha.delete(f"sources/{again.body['id']}/").status == 204
    # the operator releases it (each reservation): then it is anybody's
    for _ in range(2):
        kept = folder_row(operator, folder)["reserved"]["id"]
        assert beta.delete(f"god/folders/reserved/{kept}/").status == 403
        assert operator.delete(f"god/folders/reserved/{kept}/").status == 204
    assert operator.delete(f"god/folders/reserved/{kept}/").status == 404
    taken = claim(beta, folder)
    assert taken.status == 201, taken.body
    released = alpha.get("logs/?action=source").body["results"][0]["message"]
    assert "released the folder" in released and "Archive" in released, released


def test_a_deleted_organisations_folders_stay_its_own(world):
    daemon, operator, alpha, beta, roots = world
    made = operator.post("god/organisations/", {"name": "Delta Org", "subdomain": "delta-org",
                                                "admin": {"username": "deltaboss", "email": "d@example.com",
                                                          "password": PASSWORD}})  # fmt: skip
    assert made.status == 201, made.body
    delta = signed_in(daemon, "deltaboss", PASSWORD)
    folder = roots / "five"
    assert delta.post("sources/", {"name": "Delta drive", "config": {"path": str(folder)}}).status == 201
    (folder / "ledger.txt").write_text("delta's ledger")
    assert operator.patch(f"god/organisations/{made.body['id']}/", {"status": "deleted"}).status == 200
    refused(claim(beta, folder))
    refused(claim(beta, folder / "sub"))


def test_deleting_a_source_with_its_files_removes_them_and_frees_the_folder(world, tmp_path):
    daemon, operator, alpha, beta, roots = world
    folder = roots / "six"
    made = alpha.post("sources/", {"name": "Scratch", "config": {"path": str(folder)}})
    assert made.status == 201, made.body
    (folder / "a" / "b").mkdir(parents=True)
    (folder / "a" / "b" / "one.bin").write_bytes(b"x" * 1000)
    (folder / "two.txt").write_text("two")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the source's")
    os.symlink(outside, folder / "a" / "link-out")  # a link is removed as a link, never followed
    reply = alpha.delete(f"sources/{made.body['id']}/?files=bogus")
    assert reply.status == 400 and "files" in reply.body, reply.body
    assert alpha.get(f"sources/{made.body['id']}/").status == 200
    assert alpha.delete(f"sources/{made.body['id']}/?files=delete").status == 204
    assert not folder.exists()
    assert (outside / "keep.txt").read_text() == "not the source's"
    logged = alpha.get("logs/?action=source").body["results"][0]["message"]
    assert "deleted the source Scratch and its files (2 files, 1003 bytes)" in logged, logged
    rows = operator.get("god/folders/?page_size=200").body["results"]
    assert not [r for r in rows if r["path"] == os.path.realpath(folder)]
    assert claim(beta, folder).status == 201


def test_files_are_not_removed_where_they_are_not_only_the_sources(world):
    daemon, operator, alpha, beta, roots = world
    outer = roots / "seven"
    made = alpha.post("sources/", {"name": "Outer", "config": {"path": str(outer)}})
    inner = alpha.post("sources/", {"name": "Inner seven", "config": {"path": str(outer / "inner")}})
    frozen = alpha.post("sources/", {"name": "Frozen", "read_only": True, "config": {"path": str(roots / "eight")}})
    assert made.status == inner.status == frozen.status == 201, (made.body, inner.body, frozen.body)
    (outer / "inner" / "shared.txt").write_text("inner's file")
    reply = alpha.delete(f"sources/{made.body['id']}/?files=delete")
    assert reply.status == 400 and "Inner seven" in reply.body["detail"], reply.body
    reply = alpha.delete(f"sources/{frozen.body['id']}/?files=delete")
    assert reply.status == 400 and "read-only" in reply.body["detail"], reply.body
    assert (outer / "inner" / "shared.txt").read_text() == "inner's file"
    names = {s["name"] for s in alpha.get("sources/?page_size=200").body["results"]}
    assert {"Outer", "Inner seven", "Frozen"} <= names
    # inside the organisation's own folder: removed, the rest of that folder untouched
    own = daemon.data_dir / "files" / "alpha-org"
    (own / "keep.txt").write_text("the default source's")
    team = alpha.post("sources/", {"name": "Team", "config": {"path": "team"}})
    assert team.status == 201, team.body
    (own / "team" / "plan.txt").write_text("team plan")
    assert alpha.delete(f"sources/{team.body['id']}/?files=delete").status == 204
    assert not (own / "team").exists() and (own / "keep.txt").read_text() == "the default source's"
