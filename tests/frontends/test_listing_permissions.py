"""What a listing says a profile may do comes from the files service once: the web
listing's permissions and FTP's MLSD perm facts (RFC 3659) agree, and a read-only
source leaves only listing and downloading in both."""

from __future__ import annotations

import ftplib

import pytest

from ..api_client import signed_in

PASSWORD = "user-password-1"
EVERYTHING = ["delete", "download", "list", "mkdir", "overwrite", "rename", "upload"]


def mlsd_perms(daemon, username: str) -> dict[str, str]:
    ftp = ftplib.FTP()
    ftp.connect("127.0.0.1", daemon.ftp_port, timeout=60)
    try:
        ftp.login(username, PASSWORD)
        return {name: facts["perm"] for name, facts in ftp.mlsd("/", facts=["type", "perm"])}
    finally:
        ftp.close()


@pytest.mark.parametrize(
    ("read_only", "permissions", "web", "folder", "file"),
    [
        (False, EVERYTHING, EVERYTHING, "elcmdfp", "rwadf"),
        (False, ["list", "download", "upload"], ["download", "list", "upload"], "elc", "r"),
        (True, EVERYTHING, ["download", "list"], "el", "r"),
    ],
)
def test_the_web_listing_and_mlsd_say_the_same_permissions(daemon, read_only, permissions, web, folder, file):
    org = daemon.add_organisation(f"Perms {len(permissions)} {read_only}")
    daemon.execute("UPDATE sources SET read_only=? WHERE org_id=?", int(read_only), org)
    username = f"perms-{len(permissions)}-{int(read_only)}"
    daemon.add_profile(username, org_id=org, permissions=permissions)
    subdomain = daemon.query("SELECT subdomain FROM organisations WHERE id=?", org)[0][0]
    home = daemon.data_dir / "files" / subdomain / username
    (home / "reports").mkdir(parents=True)
    (home / "q3.csv").write_text("a,b\n")

    listing = signed_in(daemon, username, PASSWORD).get("files/?path=/")
    assert listing.status == 200, listing.body
    assert listing.body["permissions"] == web
    assert sorted(e["name"] for e in listing.body["entries"]) == ["q3.csv", "reports"]
    assert mlsd_perms(daemon, username) == {"reports": folder, "q3.csv": file}
