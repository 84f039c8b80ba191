"""SFTP with the clients people use: OpenSSH's sftp, scp and ssh, over loopback
against the live daemon."""

from __future__ import annotations

import os
import re
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path

import pytest

from ..helpers import ADMIN_PASSWORD
from .sftp_client import scp, sftp, sha256, ssh

PASSWORD = "user-password-1"


def temp_files(folder: Path) -> list[str]:
    return [n for _, _, names in os.walk(folder) for n in names if n.startswith(".~upload-")]


@pytest.fixture
def work(tmp_path) -> Path:
    return tmp_path


def random_file(path: Path, size: int) -> Path:
    with open(path, "wb") as f:
        remaining = size
        while remaining:
            chunk = os.urandom(min(remaining, 1 << 20))
            f.write(chunk)
            remaining -= len(chunk)
    return path


def test_round_trip_of_a_multi_mib_file_with_audit_rows(daemon, work):
    daemon.add_profile("rt")
    random_file(work / "data.bin", 7 * 1024 * 1024 + 123)
    result = sftp(daemon, "rt", PASSWORD, "put data.bin\nget data.bin back.bin", work)
    assert result.returncode == 0, result.stderr
    assert sha256(work / "back.bin") == sha256(work / "data.bin") == sha256(daemon.home("rt") / "data.bin")
    rows = [r for r in daemon.logs() if r["username"] == "rt" and r["action"] in ("upload", "download")]
    assert [(r["action"], r["path"], r["bytes"], r["protocol"]) for r in rows] == [
        ("upload", "/data.bin", 7 * 1024 * 1024 + 123, "sftp"),
        ("download", "/data.bin", 7 * 1024 * 1024 + 123, "sftp"),
    ]


def test_scp_both_ways_keeping_times(daemon, work):
    daemon.add_profile("scpuser")
    random_file(work / "report.pdf", 3 * 1024 * 1024)
    os.utime(work / "report.pdf", (1_700_000_000, 1_700_000_000))
    up = scp(daemon, PASSWORD, "report.pdf", "scpuser@127.0.0.1:/report.pdf", work, "-p")
    assert up.returncode == 0, up.stderr
    stored = daemon.home("scpuser") / "report.pdf"
    assert sha256(stored) == sha256(work / "report.pdf")
    assert int(stored.stat().st_mtime) == 1_700_000_000
    for attempt in range(5):  # scp truncates at the first out-of-order reply: try it a few times
        (work / "copy.pdf").unlink(missing_ok=True)
        down = scp(daemon, PASSWORD, "scpuser@127.0.0.1:/report.pdf", "copy.pdf", work)
        assert down.returncode == 0, down.stderr
        assert sha256(work / "copy.pdf") == sha256(work / "report.pdf"), attempt


def test_folders_listing_renames_and_removal(daemon, work):
    daemon.add_profile("tree")
    (work / "a.txt").write_text("a")
    (work / "b.txt").write_text("b")
    result = sftp(
        daemon,
        "tree",
        PASSWORD,
        """
        mkdir docs
        put a.txt docs/a.txt
        put b.txt docs/b.txt
        ls -l docs
        rename docs/a.txt docs/renamed.txt
        rename docs/b.txt docs/renamed.txt
        ls docs
        -rmdir docs
        rm docs/renamed.txt
        rmdir docs
        ls
        """,
        work,
    )
    assert result.returncode == 0, result.stderr
    listing = result.stdout
    assert re.search(r"-rw-r----- +1 owner +group +1 .* a.txt", listing)
    home = daemon.home("tree")
    assert not (home / "docs").exists()
    # rmdir of the non-empty folder failed (OpenSSH's sftp prints the status, not the server's text)
    assert 'remote rmdir "/docs": Failure' in result.stderr


def test_posix_rename_replaces_the_target(daemon, work):
    daemon.add_profile("pr")
    (work / "old.txt").write_text("old")
    (work / "new.txt").write_text("new")
    result = sftp(
        daemon, "pr", PASSWORD, "put old.txt target.txt\nput new.txt source.txt\nrename source.txt target.txt", work
    )
    assert result.returncode == 0, result.stderr
    assert (daemon.home("pr") / "target.txt").read_text() == "new"
    assert not (daemon.home("pr") / "source.txt").exists()


def test_reput_and_reget_continue_from_offsets(daemon, work):
    daemon.add_profile("resume")
    data = os.urandom(3 * 1024 * 1024)
    (work / "half.bin").write_bytes(data[: len(data) // 2])
    (work / "full.bin").write_bytes(data)
    result = sftp(daemon, "resume", PASSWORD, "put half.bin big.bin\nreput full.bin big.bin", work)
    assert result.returncode == 0, result.stderr
    assert (daemon.home("resume") / "big.bin").read_bytes() == data
    (work / "local.bin").write_bytes(data[:1_000_000])
    result = sftp(daemon, "resume", PASSWORD, "reget big.bin local.bin", work)
    assert result.returncode == 0, result.stderr
    assert (work / "local.bin").read_bytes() == data


def test_df_reports_the_quota(daemon, work):
    daemon.add_profile("quotadf", quota_bytes=50_000_000)
    (work / "one.bin").write_bytes(os.urandom(10_000_000))
    result = sftp(daemon, "quotadf", PASSWORD, "put one.bin\ndf", work)
    assert result.returncode == 0, result.stderr
    size, used, avail = [int(v) for v in result.stdout.strip().splitlines()[-1].split()[:3]]
    # df prints KiB: the quota is the size, the upload is used
    assert abs(size * 1024 - 50_000_000) < 8192
    assert abs(used * 1024 - 10_000_000) < 8192
    assert abs(avail * 1024 - 40_000_000) < 8192


def test_escapes_are_refused(daemon, work, tmp_path):
    daemon.add_profile("escaper")
    daemon.add_profile("neighbour")
    (daemon.home("neighbour")).mkdir(parents=True, exist_ok=True)
    (daemon.home("neighbour") / "secret.txt").write_text("neighbour's")
    home = daemon.home("escaper")
    home.mkdir(parents=True, exist_ok=True)
    os.symlink("/etc", home / "etc-link")
    os.symlink("../neighbour", home / "sibling")
    for command in (
        "cd ..",
        "get ../../etc/passwd",
        "get ../neighbour/secret.txt",
        "get /etc/passwd",
        "get etc-link/passwd",
        "cd etc-link",
        "get sibling/secret.txt",
        "cd sibling",
        "ln -s /etc/passwd mine",
        "symlink /etc mine2",
    ):
        result = sftp(daemon, "escaper", PASSWORD, command, work)
        assert result.returncode != 0, command
        assert not (work / "passwd").exists() and not (work / "secret.txt").exists(), command
    # listing the links shows the links themselves, never what lies behind them
    listing = sftp(daemon, "escaper", PASSWORD, "ls -l etc-link\nls -l sibling", work)
    assert "passwd" not in listing.stdout and "secret.txt" not in listing.stdout
    assert not (home / "mine").exists() and not (home / "mine2").exists()
    # refused as permission errors (the server's sentence goes with the status, for clients that show it)
    result = sftp(daemon, "escaper", PASSWORD, "get sibling/secret.txt", work)
    assert "not found" in result.stderr or "Permission denied" in result.stderr
    result = sftp(daemon, "escaper", PASSWORD, "ln -s x y", work)
    assert "Permission denied" in result.stderr


@pytest.mark.parametrize(
    "missing,command,message",
    [
        ("delete", "rm keep.txt", "Permission denied"),
        ("upload", "put new.txt", "Permission denied"),
        ("download", "get keep.txt", "Permission denied"),
        ("mkdir", "mkdir folder", "Permission denied"),
        ("overwrite", "put new.txt keep.txt", "Permission denied"),
    ],
)
def test_permissions_are_enforced(daemon, work, missing, command, message):
    name = f"perm-{missing}"
    permissions = [p for p in ("list", "download", "upload", "overwrite", "delete", "rename", "mkdir") if p != missing]
    daemon.add_profile(name, permissions=permissions)
    daemon.home(name).mkdir(parents=True, exist_ok=True)
    (daemon.home(name) / "keep.txt").write_text("keep")
    (work / "new.txt").write_text("new")
    result = sftp(daemon, name, PASSWORD, command, work)
    assert result.returncode != 0
    assert message in result.stderr
    assert (daemon.home(name) / "keep.txt").read_text() == "keep"
    assert not (daemon.home(name) / "new.txt").exists() and not (daemon.home(name) / "folder").exists()


def test_quota_refusal_leaves_nothing(daemon, work):
    daemon.add_profile("small", quota_bytes=1_000_000)
    random_file(work / "big.bin", 3_000_000)
    result = sftp(daemon, "small", PASSWORD, "put big.bin", work)
    assert result.returncode != 0
    assert "Permission denied" in result.stderr
    home = daemon.home("small")
    assert list(home.iterdir()) == [] and temp_files(home) == []


def test_an_interrupted_upload_leaves_no_file(daemon, work):
    daemon.add_profile("cut")
    source = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else work
    big = random_file(source / f"cut-{os.getpid()}.bin", 200 * 1024 * 1024)
    try:
        batch = work / "batch.txt"
        batch.write_text(f"put {big} big.bin\n")
        env = dict(os.environ, SSHPASS=PASSWORD)
        client = subprocess.Popen(
            ["sshpass", "-e", "sftp", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
             "-o", "BatchMode=no", "-o", "PubkeyAuthentication=no", "-P", str(daemon.sftp_port), "-b", str(batch),
             "cut@127.0.0.1"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        home = daemon.home("cut")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # wait until the upload is under way
            temps = temp_files(home) if home.exists() else []
            if temps and (home / temps[0]).stat().st_size > 5_000_000:
                break
            time.sleep(0.02)
        else:
            pytest.fail("the upload never started")
        os.killpg(client.pid, signal.SIGKILL)
        client.wait(10)
        deadline = time.monotonic() + 10
        while temp_files(home) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not (home / "big.bin").exists()
        assert temp_files(home) == []
    finally:
        big.unlink()


def test_wrong_password_is_refused_and_logged(daemon, work):
    daemon.add_profile("guarded")
    result = sftp(daemon, "guarded", "not-the-password", "ls", work)
    assert result.returncode != 0
    assert "Permission denied" in result.stderr
    failures = [r for r in daemon.logs("login_failed") if r["username"] == "guarded" and r["protocol"] == "sftp"]
    assert failures and failures[-1]["remote_address"] == "127.0.0.1"


def test_a_payment_missing_organisation_is_refused_with_that_message(daemon, work):
    org = daemon.add_organisation("Late Payers", status="payment_missing")
    daemon.add_profile("late", org_id=org)
    result = sftp(daemon, "late", PASSWORD, "ls", work)
    assert result.returncode != 0
    assert "Organisation payment missing" in result.stderr


def test_a_profile_without_sftp_is_refused(daemon, work):
    daemon.add_profile("ftponly", protocols=["ftp"])
    result = sftp(daemon, "ftponly", PASSWORD, "ls", work)
    assert result.returncode != 0 and "SFTP access is not enabled" in result.stderr


def test_no_source_assigned_says_so(daemon, work):
    daemon.add_profile("homeless")
    daemon.execute("UPDATE profiles SET source_id = NULL WHERE username = 'homeless'")
    result = sftp(daemon, "homeless", PASSWORD, "ls", work)
    assert result.returncode != 0 and "No source is assigned" in result.stderr


def test_key_authentication(daemon, work):
    key = work / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    public = (work / "id_ed25519.pub").read_text().strip()
    daemon.add_profile("keyed", ssh_keys=[public])
    (work / "k.txt").write_text("by key")
    result = sftp(daemon, "keyed", None, "put k.txt", work, key=key)
    assert result.returncode == 0, result.stderr
    assert (daemon.home("keyed") / "k.txt").read_text() == "by key"
    other = work / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    assert sftp(daemon, "keyed", None, "ls", work, key=other).returncode != 0
    assert any("(key)" in r["message"] for r in daemon.logs("login") if r["username"] == "keyed")


def test_shell_and_exec_are_refused_cleanly(daemon, work):
    # legacy scp's `scp -t` / `scp -f` are served (test_scp_legacy.py); nothing else runs
    for command in ("ls /", "scp -t x; ls /", "scp -f *"):
        result = ssh(daemon, "admin", ADMIN_PASSWORD, command, work)
        assert result.returncode != 0
        assert "exec request failed" in result.stderr or "SFTP only" in result.stderr
    # the daemon is unharmed
    assert sftp(daemon, "admin", ADMIN_PASSWORD, "ls", work).returncode == 0


def _server_kexinit(port: int) -> dict[str, list[str]]:
    """Read the algorithm lists the server offers, from its KEXINIT packet."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"SSH-2.0-probe\r\n")
        data = b""
        while b"\n" not in data:
            data += sock.recv(1024)
        data = data.split(b"\n", 1)[1]
        while len(data) < 5 or len(data) < 4 + struct.unpack("!L", data[:4])[0]:
            data += sock.recv(4096)
    payload = data[5 : 4 + struct.unpack("!L", data[:4])[0]]
    assert payload[0] == 20  # SSH_MSG_KEXINIT
    offset = 17
    names = ["kex", "hostkey", "cipher_cs", "cipher_sc", "mac_cs", "mac_sc", "comp_cs", "comp_sc"]
    lists = {}
    for name in names:
        (length,) = struct.unpack("!L", payload[offset : offset + 4])
        lists[name] = payload[offset + 4 : offset + 4 + length].decode().split(",")
        offset += 4 + length
    return lists


def test_only_modern_algorithms_are_offered(daemon, work):
    offered = _server_kexinit(daemon.sftp_port)
    everything = ",".join(",".join(v) for v in offered.values())
    for weak in ("sha1", "3des", "md5", "dss", "cbc", "zlib", "nistp", "group14", "ssh-rsa,"):
        assert weak not in everything + ",", weak
    assert "curve25519-sha256" in offered["kex"]
    assert offered["hostkey"] == ["ssh-ed25519", "rsa-sha2-512", "rsa-sha2-256"]
    assert offered["comp_cs"] == ["none"]
    # a client insisting on a weak algorithm cannot connect
    for option in ("Ciphers=aes128-cbc", "MACs=hmac-sha1", "KexAlgorithms=diffie-hellman-group14-sha1"):
        batch = work / "b.txt"
        batch.write_text("ls\n")
        result = subprocess.run(
            ["sshpass", "-e", "sftp", "-o", option, "-o", "StrictHostKeyChecking=no", "-o",
             "UserKnownHostsFile=/dev/null", "-o", "BatchMode=no", "-P", str(daemon.sftp_port), "-b", str(batch),
             "admin@127.0.0.1"],
            env=dict(os.environ, SSHPASS=ADMIN_PASSWORD), capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert result.returncode != 0 and "no matching" in result.stderr, option


def test_oversized_and_malformed_sftp_packets():
    """A huge announced packet closes the session instead of being buffered; a
    malformed one gets an error status, and the session goes on."""
    from twisted.internet.testing import StringTransport

    from appliance.frontends.sftp.server import MAX_PACKET, FilesServer, SftpProtocol

    protocol = SftpProtocol(FilesServer(session=None, max_open_handles=4))
    transport = StringTransport()
    protocol.makeConnection(transport)
    # FXP_WRITE (6), request 7, with a body too short to hold a handle
    protocol.dataReceived(struct.pack("!LBL", 6, 6, 7) + b"\x00")
    reply = transport.value()
    assert reply[4] == 101 and struct.unpack("!L", reply[5:9])[0] == 7  # FXP_STATUS for request 7
    assert struct.unpack("!L", reply[9:13])[0] == 5  # SSH_FX_BAD_MESSAGE
    assert not transport.disconnecting
    protocol.dataReceived(struct.pack("!LB", MAX_PACKET + 1, 6) + b"x" * 1000)
    assert transport.disconnecting


def test_rclone_copies_a_tree_both_ways(daemon, work):
    """rclone pipelines many writes of 70 KB to 1 MiB files (it broke conch's stock framing)."""
    daemon.add_profile("rcl")
    tree = work / "tree"
    (tree / "sub").mkdir(parents=True)
    for i in range(1, 13):
        random_file(tree / f"f{i}.bin", 70_000 + i * 80_000)
    random_file(tree / "sub" / "mib.bin", 1 << 20)
    obscured = subprocess.run(["rclone", "obscure", PASSWORD], capture_output=True, text=True, check=True).stdout
    env = dict(
        os.environ,
        RCLONE_CONFIG_APP_TYPE="sftp",
        RCLONE_CONFIG_APP_HOST="127.0.0.1",
        RCLONE_CONFIG_APP_PORT=str(daemon.sftp_port),
        RCLONE_CONFIG_APP_USER="rcl",
        RCLONE_CONFIG_APP_PASS=obscured.strip(),
        RCLONE_CONFIG="/dev/null",
    )  # no shell_type: rclone probes with exec, which the server refuses cleanly
    for args in (["copy", str(tree), "app:tree"], ["copy", "app:tree", str(work / "back")]):
        result = subprocess.run(["rclone", *args], env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
    for path in tree.rglob("*.bin"):
        relative = path.relative_to(tree)
        assert sha256(daemon.home("rcl") / "tree" / relative) == sha256(path) == sha256(work / "back" / relative)
