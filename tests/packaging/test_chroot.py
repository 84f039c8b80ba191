"""The .deb installed with dpkg into a fresh Debian 12 (debootstrap minbase, with the
package's dependencies python3.11 and systemd): its maintainer scripts make the user and
the data dir, the appliance user sets up and serves the console from the packaged config
on sockets passed in by name, and remove/purge leave the data.

The base system comes from conftest.base_tarball (debootstrap once, then a cached tarball).
test_as_shipped.py boots the same root with systemd as PID 1."""

from __future__ import annotations

import os
import sqlite3
import ssl
import subprocess
import urllib.request

import pytest

from appliance.store.migrations import MIGRATIONS

from ..helpers import ADMIN_PASSWORD, free_listeners, free_port, ops_listener, wait_for_port
from .conftest import AS_APPLIANCE, installed_root

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="installing into a chroot needs root"),
    pytest.mark.requires("debootstrap"),
]


@pytest.fixture(scope="module")
def chroot(deb, tmp_path_factory):
    return installed_root(deb, tmp_path_factory.mktemp("chroot"))


def test_dpkg_installs_the_user_the_data_dir_and_the_command(chroot):
    assert "appliance" in chroot("id", "appliance").stdout
    assert chroot("stat", "-c", "%a %U %G", "/var/lib/appliance").stdout.split() == ["750", "appliance", "appliance"]
    assert chroot("appliance", "--version").stdout.strip().startswith("appliance ")
    assert chroot("dpkg-query", "-W", "-f", "${Status}", "appliance").stdout == "install ok installed"
    # the wheel's C module, built by another Python 3.11, loads into Debian's
    probe = "from appliance.storage.local import tree; print(tree.lstat_files)"
    assert "built-in function lstat_files" in chroot("/opt/appliance/venv/bin/python", "-c", probe).stdout


def test_the_appliance_user_serves_the_console(chroot):
    config = "/etc/appliance/appliance.toml"
    env = ["env", "APPLIANCE_SECURITY_BCRYPT_ROUNDS=4"]
    # systemd-socket-activate passes the daemon only the variables named with --setenv
    ops = [f"--setenv={name}={value}" for name, value in ops_listener().items()]
    chroot(*env, *AS_APPLIANCE, "appliance", "setup", "--config", config, "--org", "Acme",
           "--username", "admin", "--email", "admin@example.com", "--password-stdin",
           input=ADMIN_PASSWORD + "\n", timeout=120)  # fmt: skip
    ports = {name: free_port() for name in ("http", "https", "sftp", "ftp")}
    listen = [arg for port in ports.values() for arg in ("--listen", str(port))]
    log = open(chroot.root.parent / "chroot-daemon.log", "wb")
    manager = subprocess.Popen(
        ["chroot", str(chroot.root), *env, "systemd-socket-activate", *listen, *ops, "--fdname=" + ":".join(ports), "--"]
        + [*AS_APPLIANCE, "appliance", "serve", "--config", config],
        stdout=log, stderr=subprocess.STDOUT, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"},
    )  # fmt: skip
    try:
        wait_for_port(ports["https"], manager)
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE
        with urllib.request.urlopen(f"https://127.0.0.1:{ports['https']}/", context=insecure, timeout=60) as response:
            assert "<title>" in response.read().decode()
    finally:
        manager.terminate()
        try:
            manager.wait(15)
        except subprocess.TimeoutExpired:
            manager.kill()
            manager.wait()
        log.close()
    owners = chroot("find", "/var/lib/appliance", "!", "-user", "appliance").stdout.split()
    assert owners == [], owners


def test_an_upgrade_backs_up_and_migrates_the_database(chroot):
    """dpkg installing over the installed package takes the upgrade path of the
    maintainer scripts (prerm upgrade, postinst configure OLD-VERSION). The database
    is first put back to the previous release's schema (version 4: no daily count
    tables, no source sign-ins, no session ids, no reserved folders, no console settings), as an older package would have left it; the new code then copies it
    aside and migrates it. The data, the edited conffile and the checks survive."""
    config = chroot.root / "etc/appliance/appliance.toml"
    config.write_text(config.read_text() + "\n# edited by the admin\n")
    database = chroot.root / "var/lib/appliance/appliance.db"
    old = sqlite3.connect(database)
    with old:
        for (name,) in old.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND sql LIKE '%log_daily%'"):
            old.execute(f"DROP TRIGGER {name}")
        old.execute("DROP TABLE log_daily")
        old.execute("DROP TABLE transfer_daily")
        old.execute("DROP TABLE source_sign_ins")  # migration 6's
        old.execute("DROP TABLE ended_sessions")  # migration 7's
        old.execute("DROP INDEX refresh_tokens_session")
        old.execute("ALTER TABLE refresh_tokens DROP COLUMN session_id")
        old.execute("DROP TABLE reserved_folders")  # migration 8's
        old.execute("DROP TABLE appliance_settings")  # migration 9's
    old.execute("PRAGMA user_version = 4")
    sign_ins = old.execute("SELECT count(*) FROM logs").fetchone()[0]
    old.close()
    owner = database.stat()
    for path in database.parent.glob("appliance.db*"):  # a -wal or -shm made here must stay the appliance's
        os.chown(path, owner.st_uid, owner.st_gid)

    deb = next((chroot.root / "tmp").glob("appliance_*.deb"))
    chroot("dpkg", "--force-confold", "--install", f"/tmp/{deb.name}", timeout=300)
    assert "# edited by the admin" in config.read_text()
    chroot("env", "APPLIANCE_SECURITY_BCRYPT_ROUNDS=4", *AS_APPLIANCE, "appliance", "reset-password", "admin",
           "--config", "/etc/appliance/appliance.toml", "--password-stdin",
           input=ADMIN_PASSWORD + "\n", timeout=120)  # fmt: skip

    saved = sqlite3.connect(database.with_name("appliance.db.v4.bak"))
    assert saved.execute("PRAGMA user_version").fetchone()[0] == 4
    assert saved.execute("SELECT count(*) FROM logs").fetchone()[0] == sign_ins
    saved.close()
    upgraded = sqlite3.connect(database)
    assert upgraded.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)  # every later one too
    assert upgraded.execute("SELECT sum(n) FROM log_daily").fetchone()[0] >= sign_ins  # backfilled, then counting
    assert upgraded.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    upgraded.close()
    listeners = [f"{k}={v}" for k, v in free_listeners().items() if k.startswith("APPLIANCE_LISTEN_")]
    checked = chroot("env", *listeners, *AS_APPLIANCE, "appliance", "check", "--config", "/etc/appliance/appliance.toml",
                     timeout=120)  # fmt: skip
    assert checked.returncode == 0


def test_remove_and_purge_keep_the_data(chroot):
    chroot("dpkg", "--remove", "appliance", timeout=120)
    assert not (chroot.root / "opt/appliance").exists()
    assert not (chroot.root / "usr/bin/appliance").exists()
    assert (chroot.root / "etc/appliance/appliance.toml").exists()  # a conffile stays until purge
    chroot("dpkg", "--purge", "appliance", timeout=120)
    assert not (chroot.root / "etc/appliance/appliance.toml").exists()
    assert (chroot.root / "var/lib/appliance").is_dir()
