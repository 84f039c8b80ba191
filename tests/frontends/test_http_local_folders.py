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
