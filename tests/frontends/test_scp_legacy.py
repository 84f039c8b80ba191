"""Legacy scp (the rcp protocol: `scp -O`, `pscp -scp`, old scripts) against the live
daemon: `scp -t` and `scp -f` are served over the same files service as SFTP (its
permissions, quota, atomic uploads, path rules and audit rows); any other command is
still refused."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import paramiko
import pytest

from appliance.frontends.sftp.scp import ScpRequest, scp_request

from ..helpers import upload_temp_files, wait_for
from ..integration.test_client_matrix import host_key_fingerprints
from .sftp_client import OPTIONS, auth_options, scp, sha256, ssh

pytestmark = pytest.mark.requires("scp", "sshpass")

PASSWORD = "user-password-1"
REFUSED = "This server offers SFTP only: commands cannot be run."


def legacy(daemon, source: str, target: str, cwd: Path, *extra: str) -> subprocess.CompletedProcess:
    """OpenSSH's scp in its legacy mode (-O: the rcp protocol over `scp -t` / `scp -f`)."""
    return scp(daemon, PASSWORD, source, target, cwd, "-O", *extra)


def random_file(path: Path, size: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(os.urandom(size))
    return path


def transfers(daemon, user: str) -> list[tuple]:
    rows = daemon.logs()
    return [(r["action"], r["path"], r["bytes"], r["protocol"]) for r in rows if r["username"] == user]


# -- the command line -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (b"scp -t .", ScpRequest(True, (".",))),
        (b"scp -v -r -p -d -t /dir", ScpRequest(True, ("/dir",), True, True, True)),
        (b"scp -rp -t -- -dash", ScpRequest(True, ("-dash",), True, True)),
        (
            b"scp -f 'name with spaces' \"it's\" back\\ slash",
            ScpRequest(False, ("name with spaces", "it's", "back slash")),
        ),
        (b"scp -f ~/docs/a.txt ~", ScpRequest(False, ("/docs/a.txt", "/"))),
        (b"scp -t 'a;b' \"x|y\"", ScpRequest(True, ("a;b", "x|y"))),  # quoted: names (two: ambiguous, said later)
    ],
)
def test_the_commands_scp_sends_are_understood(command, expected):
    assert scp_request(command) == expected


@pytest.mark.parametrize(
    "command",
    [
        b"ls /",
        b"scp",
        b"scp -t",
        b"scp x",
        b"scp -t -f x",
        b"scp -x -t x",
        b"scp -t x; rm -rf /",
        b"scp -t x | cat",
        b"scp -t x && id",
        b"scp -t x > y",
        b"scp -f *.txt",
        b"scp -f $(id)",
        b'scp -f "$HOME"',
        b"scp -f `id`",
        b"scp -f ~root/x",
        b"scp -t 'unterminated",
        b"scp -t x\nid",
        b"scp -t x #comment",
        b"/usr/bin/scp -t x",
        b"sh -c 'scp -t x'",
        b"scp -t \xff",
    ],
)
def test_anything_else_is_not_scp(command):
    assert scp_request(command) is None


def test_other_commands_are_refused_on_the_wire(daemon, tmp_path):
    """The exec request fails, with the message on stderr, and the connection goes on."""
    daemon.add_profile("scpexec")
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    client.connect("127.0.0.1", daemon.sftp_port, "scpexec", PASSWORD, allow_agent=False, look_for_keys=False)
    try:
        for command in ("scp -t -f x", "scp -z -t x", "scp -t x; touch /tmp/owned", "ls /"):
            channel = client.get_transport().open_session(timeout=30)
            with pytest.raises(paramiko.SSHException):
                channel.exec_command(command)
            # sent before the request's failure: here once exec_command has raised
            assert channel.recv_stderr(1000).decode().strip() == REFUSED
            channel.close()
        channel = client.get_transport().open_session(timeout=30)
        channel.exec_command("scp -f nothing.txt")  # scp's own command is taken: the protocol answers
        channel.sendall(b"\0")
        assert channel.makefile("rb").read() == b"\x01scp: No such file or folder: /nothing.txt\n"
        assert channel.recv_exit_status() == 1
        assert client.open_sftp().listdir(".") == []  # the connection still serves SFTP
    finally:
        client.close()
    result = ssh(daemon, "scpexec", PASSWORD, "scp -t /x; id", tmp_path)
    assert result.returncode != 0 and "exec request failed" in result.stderr
    assert not daemon.home("scpexec").joinpath("x").exists()


# -- OpenSSH's scp -O -----------------------------------------------------------------------


def test_upload_of_a_file_is_atomic_and_audited(daemon, tmp_path):
    daemon.add_profile("scpup")
    random_file(tmp_path / "data.bin", 5 * 1024 * 1024 + 17)  # more than the channel's window
    result = legacy(daemon, "data.bin", "scpup@127.0.0.1:'stored data.bin'", tmp_path)
    assert result.returncode == 0, result.stderr
    stored = daemon.home("scpup") / "stored data.bin"
    assert sha256(stored) == sha256(tmp_path / "data.bin")
    assert upload_temp_files(daemon.home("scpup")) == []
    assert ("upload", "/stored data.bin", 5 * 1024 * 1024 + 17, "sftp") in transfers(daemon, "scpup")


def test_recursive_upload_keeps_times_with_p(daemon, tmp_path):
    daemon.add_profile("scptree")
    tree = tmp_path / "tree"
    random_file(tree / "a.txt", 100)
    random_file(tree / "inner" / "b.bin", 300_000)
    random_file(tree / "inner" / "deeper" / "c.txt", 1)
    (tree / "empty").mkdir()
    os.utime(tree / "a.txt", (1_600_000_000, 1_600_000_000))
    os.utime(tree / "inner" / "b.bin", (1_500_000_000, 1_500_000_123))
    result = legacy(daemon, "tree", "scptree@127.0.0.1:", tmp_path, "-r", "-p")
    assert result.returncode == 0, result.stderr
    home = daemon.home("scptree")
    for name in ("a.txt", "inner/b.bin", "inner/deeper/c.txt"):
        assert sha256(home / "tree" / name) == sha256(tree / name), name
    assert (home / "tree" / "empty").is_dir()
    assert int((home / "tree" / "a.txt").stat().st_mtime) == 1_600_000_000
    assert int((home / "tree" / "inner" / "b.bin").stat().st_mtime) == 1_500_000_123
    rows = transfers(daemon, "scptree")
    assert {r[1] for r in rows if r[0] == "mkdir"} == {"/tree", "/tree/inner", "/tree/inner/deeper", "/tree/empty"}
    assert ("upload", "/tree/inner/b.bin", 300_000, "sftp") in rows


def test_several_files_need_an_existing_folder(daemon, tmp_path):
    """With more than one file scp sends -d: the target must be a folder."""
    daemon.add_profile("scpdir")
    random_file(tmp_path / "one.txt", 10)
    random_file(tmp_path / "two.txt", 20)
    refused = scp(daemon, PASSWORD, "two.txt", "scpdir@127.0.0.1:missing", tmp_path, "-O", "one.txt")
    assert refused.returncode != 0
    assert "/missing: Not a directory" in refused.stderr
    (daemon.home("scpdir") / "folder").mkdir(parents=True)
    done = scp(daemon, PASSWORD, "two.txt", "scpdir@127.0.0.1:folder", tmp_path, "-O", "one.txt")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (daemon.home("scpdir") / "folder").iterdir()) == ["one.txt", "two.txt"]


def test_download_of_a_file_and_a_tree(daemon, tmp_path):
    daemon.add_profile("scpdown")
    home = daemon.home("scpdown")
    random_file(home / "big.bin", 6 * 1024 * 1024 + 5)
    random_file(home / "tree" / "x.txt", 10)
    random_file(home / "tree" / "sub" / "y.bin", 200_000)
    os.utime(home / "tree" / "x.txt", (1_600_000_000, 1_600_000_000))
    result = legacy(daemon, "scpdown@127.0.0.1:big.bin", "copy.bin", tmp_path)
    assert result.returncode == 0, result.stderr
    assert sha256(tmp_path / "copy.bin") == sha256(home / "big.bin")
    inner = legacy(daemon, "scpdown@127.0.0.1:tree/sub/y.bin", ".", tmp_path)  # scp checks the name it gets
    assert inner.returncode == 0, inner.stderr
    assert sha256(tmp_path / "y.bin") == sha256(home / "tree" / "sub" / "y.bin")
    (tmp_path / "back").mkdir()
    result = legacy(daemon, "scpdown@127.0.0.1:tree", "back", tmp_path, "-r", "-p")
    assert result.returncode == 0, result.stderr
    for name in ("x.txt", "sub/y.bin"):
        assert sha256(tmp_path / "back" / "tree" / name) == sha256(home / "tree" / name), name
    assert int((tmp_path / "back" / "tree" / "x.txt").stat().st_mtime) == 1_600_000_000
    downloads = [r for r in transfers(daemon, "scpdown") if r[0] == "download"]
    assert downloads == [
        ("download", "/big.bin", 6 * 1024 * 1024 + 5, "sftp"),
        ("download", "/tree/sub/y.bin", 200_000, "sftp"),
        ("download", "/tree/sub/y.bin", 200_000, "sftp"),
        ("download", "/tree/x.txt", 10, "sftp"),
    ]
    (tmp_path / "whole").mkdir()
    result = legacy(daemon, "scpdown@127.0.0.1:/", "whole", tmp_path, "-r")  # the home goes by its name
    assert result.returncode == 0, result.stderr
    assert sha256(tmp_path / "whole" / "scpdown" / "tree" / "sub" / "y.bin") == sha256(home / "tree" / "sub" / "y.bin")


def test_missing_files_and_folders_without_r_are_said(daemon, tmp_path):
    daemon.add_profile("scpmiss")
    (daemon.home("scpmiss") / "folder").mkdir(parents=True)
    missing = legacy(daemon, "scpmiss@127.0.0.1:nothing.txt", ".", tmp_path)
    assert missing.returncode != 0 and "No such file" in missing.stderr and "/nothing.txt" in missing.stderr
    folder = legacy(daemon, "scpmiss@127.0.0.1:folder", ".", tmp_path)
    assert folder.returncode != 0 and "/folder: not a regular file" in folder.stderr


@pytest.mark.parametrize(
    ("user", "settings", "target", "size", "message"),
    [
        ("scpnoupload", {"permissions": ["list", "download"]}, "up.bin", 1000, "You may not upload files (/up.bin)"),
        ("scpquota", {"quota_bytes": 1024 * 1024}, "up.bin", 2 * 1024 * 1024, "Your storage quota of"),
        ("scpescape", {}, "../../outside.bin", 1000, "That path leads outside your home folder."),
    ],
)
def test_refused_uploads_say_why_and_leave_nothing(daemon, tmp_path, user, settings, target, size, message):
    daemon.add_profile(user, **settings)
    home = daemon.home(user)
    home.mkdir(parents=True, exist_ok=True)
    random_file(tmp_path / "up.bin", size)
    result = legacy(daemon, "up.bin", f"{user}@127.0.0.1:{target}", tmp_path)
    assert result.returncode != 0
    assert message in result.stderr
    assert list(home.iterdir()) == []
    assert not (home.parent / "outside.bin").exists()
    assert [r for r in transfers(daemon, user) if r[0] == "upload"] == []


def test_scp_needs_the_sftp_protocol(daemon, tmp_path):
    """SCP is SFTP's protocol for policy: a profile without it is refused at sign-in."""
    daemon.add_profile("scpwithsftp", protocols=["sftp"])
    daemon.add_profile("scpnosftp", protocols=["ftp", "web"])
    random_file(tmp_path / "up.bin", 10)
    allowed = legacy(daemon, "up.bin", "scpwithsftp@127.0.0.1:up.bin", tmp_path)
    assert allowed.returncode == 0, allowed.stderr
    refused = legacy(daemon, "up.bin", "scpnosftp@127.0.0.1:up.bin", tmp_path)
    assert refused.returncode != 0 and "Permission denied" in refused.stderr
    assert (daemon.home("scpwithsftp") / "up.bin").exists()
    assert not (daemon.home("scpnosftp") / "up.bin").exists()


def test_an_interrupted_upload_leaves_no_file(daemon, tmp_path):
    daemon.add_profile("scpcut")
    home = daemon.home("scpcut")
    random_file(tmp_path / "big.bin", 32 * 1024 * 1024)
    env = dict(os.environ, SSHPASS=PASSWORD)
    args = ["sshpass", "-e", "scp", "-O", *OPTIONS, *auth_options(None), "-P", str(daemon.sftp_port)]
    # at 16 Mbit/s the upload takes 16 seconds: it is still under way when it is cut, once the
    # first MiB is in the temporary file
    process = subprocess.Popen(
        [*args, "-l", "16000", "big.bin", "scpcut@127.0.0.1:big.bin"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for(lambda: any(p.stat().st_size > 0 for p in upload_temp_files(home)))
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    wait_for(lambda: not upload_temp_files(home))  # the upload was aborted (a commit would also end it...)
    assert not (home / "big.bin").exists()  # ... but it put nothing under the real name
    assert [r for r in transfers(daemon, "scpcut") if r[0] == "upload"] == []


# -- PuTTY's pscp -scp -----------------------------------------------------------------------


@pytest.mark.requires("pscp")
def test_pscp_in_scp_mode_both_ways(daemon, tmp_path):
    daemon.add_profile("pscpuser")
    keys = [arg for fingerprint in host_key_fingerprints(daemon) for arg in ("-hostkey", fingerprint)]
    base = ["pscp", "-scp", "-batch", "-P", str(daemon.sftp_port), "-pw", PASSWORD, *keys]
    random_file(tmp_path / "file.bin", 3 * 1024 * 1024)
    random_file(tmp_path / "tree" / "inner" / "a.txt", 50)

    def pscp(*args: str) -> None:
        result = subprocess.run(
            [*base, *args], cwd=tmp_path, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
        )
        assert result.returncode == 0, result.stderr

    refused = subprocess.run(
        [*base, "file.bin", "pscpuser@127.0.0.1:../outside.bin"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert refused.returncode != 0 and "That path leads outside your home folder." in refused.stderr
    pscp("file.bin", "pscpuser@127.0.0.1:/file.bin")
    pscp("-r", "tree", "pscpuser@127.0.0.1:/tree")
    home = daemon.home("pscpuser")
    assert sha256(home / "file.bin") == sha256(tmp_path / "file.bin")
    assert sha256(home / "tree" / "inner" / "a.txt") == sha256(tmp_path / "tree" / "inner" / "a.txt")
    (tmp_path / "back").mkdir()
    pscp("pscpuser@127.0.0.1:/file.bin", "back/file.bin")
    pscp("-r", "pscpuser@127.0.0.1:/tree", "back")
    assert sha256(tmp_path / "back" / "file.bin") == sha256(tmp_path / "file.bin")
    assert sha256(tmp_path / "back" / "tree" / "inner" / "a.txt") == sha256(tmp_path / "tree" / "inner" / "a.txt")
    assert [r for r in transfers(daemon, "pscpuser") if r[0] in ("upload", "download")] == [
        ("upload", "/file.bin", 3 * 1024 * 1024, "sftp"),
        ("upload", "/tree/inner/a.txt", 50, "sftp"),
        ("download", "/file.bin", 3 * 1024 * 1024, "sftp"),
        ("download", "/tree/inner/a.txt", 50, "sftp"),
    ]
