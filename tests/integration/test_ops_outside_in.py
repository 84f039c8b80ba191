"""The daemon's life cycle and the `appliance` command as an ops person meets them:
signals during uploads, bad settings, `check`, backups. Each test pins a defect
found by trying these from outside."""

from __future__ import annotations

import ftplib
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ..helpers import (
    ADMIN_PASSWORD,
    APPLIANCE,
    daemon_with,
    free_listeners,
    free_port,
    make_daemon,
    upload_temp_files,
    wait_for,
)

# sftp -b turns BatchMode on, which forbids passwords: turn it back off
SSH_OPTIONS = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=no",
               "-o", "PubkeyAuthentication=no", "-o", "PreferredAuthentications=password"]  # fmt: skip


def run(*args, input=None, env=None, timeout=60):
    return subprocess.run(APPLIANCE + list(args), input=input, text=True, capture_output=True, env=env, timeout=timeout)


def assert_one_line_error(result, expected: str):
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert expected in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_sigterm_during_sftp_and_ftp_uploads_ends_within_the_grace_and_saves_nothing(tmp_path):
    """SIGTERM with a (spliced) FTP upload in flight used to wait for the client to
    send its last byte, past shutdown_grace (systemd then SIGKILLs), and then answer
    226 for an upload the drain had aborted: the client was told a file was saved
    that was not."""
    daemon = daemon_with(tmp_path, server__shutdown_grace=1)
    root = daemon.source_root()
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        f.truncate(400 * 1024 * 1024)  # sparse; at the rates below it takes minutes to send
    env = dict(os.environ, SSHPASS=ADMIN_PASSWORD)
    sftp = subprocess.Popen(
        ["sshpass", "-e", "sftp", *SSH_OPTIONS, "-l", "8000", "-b", "-", "-P", str(daemon.sftp_port),
         "admin@127.0.0.1"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip
    sftp.stdin.write(f"put {big} sftp.bin\n")
    sftp.stdin.close()
    ftp = subprocess.Popen(
        ["curl", "-sS", "--limit-rate", "1M", "-T", str(big),
         f"ftp://admin:{ADMIN_PASSWORD}@127.0.0.1:{daemon.ftp_port}/ftp.bin"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        wait_for(lambda: len(upload_temp_files(root)) == 2)
        time.sleep(0.5)
        daemon.process.send_signal(signal.SIGTERM)
        # a hang detector, not a timing: without the fix the daemon waits for curl (minutes)
        assert daemon.process.wait(30) == 0
        assert ftp.wait(30) != 0, "curl was told the aborted FTP upload was saved"
        assert sftp.wait(30) != 0, "sftp was told the aborted SFTP upload was saved"
    finally:
        for client in (ftp, sftp):
            if client.poll() is None:
                client.kill()
                client.wait()
            client.stdout.close()
        daemon.stop()
    assert not (root / "ftp.bin").exists() and not (root / "sftp.bin").exists()
    assert upload_temp_files(root) == []
    output = daemon.output()
    assert "shutdown aborted 2 unfinished uploads" in output
    assert "Traceback" not in output and "Unhandled" not in output, output
    conn = sqlite3.connect(daemon.data_dir / "appliance.db")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def test_the_daemon_log_names_each_listener_once_and_no_data_ports(tmp_path):
    """Every passive FTP transfer opens and closes a port, and Twisted logged both
    ("DataChannelFactory starting on N", "(TCP Port N Closed)"): two lines of noise per
    transfer in the ops log, besides "Starting factory <...FTPFactory object at 0x...>"
    and a second line for each listener the service already names."""
    daemon = make_daemon(tmp_path)
    url = f"ftp://admin:{ADMIN_PASSWORD}@127.0.0.1:{daemon.ftp_port}/note.txt"
    (tmp_path / "note.txt").write_text("one line")
    try:
        for _ in range(2):
            sent = subprocess.run(["curl", "-sS", "--ftp-pasv", "-T", str(tmp_path / "note.txt"), url],
                                  capture_output=True, text=True, timeout=60)  # fmt: skip
            assert sent.returncode == 0, sent.stderr
        fetched = subprocess.run(["curl", "-sS", "--ftp-pasv", url], capture_output=True, text=True, timeout=60)
        assert fetched.stdout == "one line", fetched.stderr
    finally:
        daemon.stop()
    output = daemon.output()
    assert output.count("uploaded /note.txt") == 2 and "downloaded /note.txt" in output, output
    for listener in ("HTTP", "SFTP", "FTP"):
        assert output.count(f"] {listener} listening on ") == 1, output
    for chatter in (" starting on ", " Closed)", "Starting factory", "Stopping factory"):
        assert chatter not in output, output


def serve_args(data_dir: Path) -> list[str]:
    return ["serve", "--data-dir", str(data_dir)] + [
        arg
        for what in ("http", "sftp", "ftp", "ops")
        for arg in (f"--{what}", f"tcp:{free_port()}:interface=127.0.0.1")
    ]


@pytest.fixture(scope="module")
def set_up(tmp_path_factory) -> Path:
    """A set-up data dir to copy (never served)."""
    return make_daemon(tmp_path_factory.mktemp("set-up"), start=False).data_dir


def damaged(set_up: Path, tmp_path: Path, name: str, data: bytes) -> Path:
    data_dir = tmp_path / "data"
    shutil.copytree(set_up, data_dir)
    (data_dir / name).write_bytes(data)
    return data_dir


@pytest.mark.parametrize(
    "name,data,message",
    [
        ("appliance.db", b"not a database at all" * 100, "appliance.db: cannot open the database"),
        ("secrets.key", b"junk\n", "secrets.key: not a key this appliance made"),
        ("token.key", b"", "token.key: empty or too short"),
        ("ssh/ssh_host_ed25519_key", b"junk\n", "ssh_host_ed25519_key: not an SSH private key"),
    ],
)
def test_serve_with_a_damaged_data_dir_says_so_in_one_line_and_exits(set_up, tmp_path, name, data, message):
    """It used to print the error and then hang (thread pools left running), so
    systemd saw neither READY nor an exit; a damaged key printed a traceback."""
    data_dir = damaged(set_up, tmp_path, name, data)
    result = run(*serve_args(data_dir), timeout=30)  # a hang (or serving) raises TimeoutExpired
    assert result.returncode == 1
    assert_one_line_error(result, message)
    assert run("check", "--data-dir", str(data_dir)).returncode == 1


def test_check_finds_what_serve_would_refuse_in_the_database(set_up, tmp_path):
    """`check` said ok for a database that is damaged, truncated or from a newer release."""
    truncated = damaged(set_up, tmp_path / "a", "appliance.db", (set_up / "appliance.db").read_bytes()[:20000])
    result = run("check", "--data-dir", str(truncated))
    assert result.returncode == 1 and "appliance.db" in result.stderr, result.stderr
    newer = damaged(set_up, tmp_path / "b", "appliance.db", (set_up / "appliance.db").read_bytes())
    conn = sqlite3.connect(newer / "appliance.db")
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    result = run("check", "--data-dir", str(newer))
    assert result.returncode == 1
    assert "schema version 999" in result.stderr and "Traceback" not in result.stderr
    assert run("check", "--data-dir", str(set_up), env=free_listeners()).returncode == 0


def test_a_config_file_that_is_not_utf8_is_one_line(tmp_path):
    """A config saved in Latin-1 (or a binary file given by mistake) printed a traceback."""
    config = tmp_path / "appliance.toml"
    config.write_bytes(b'[server]\npublic_hostname = "caf\xe9.example.com"\n')
    for command in ("serve", "check"):
        assert_one_line_error(run(command, "--config", str(config)), f"{config}: not valid TOML: not UTF-8")


@pytest.mark.parametrize(
    "variable,value,message",
    [
        ("APPLIANCE_SERVER_SHUTDOWN_GRACE", "-5", "[server] shutdown_grace: must be at least 0, got -5"),
        ("APPLIANCE_SERVER_TRIAL_DAYS", "-1", "[server] trial_days: must be at least 0, got -1"),
        ("APPLIANCE_SECURITY_BCRYPT_ROUNDS", "20", "[security] bcrypt_rounds: must be from 4 to 16, got 20"),
        ("APPLIANCE_SMTP_PORT", "70000", "[smtp] port: must be from 1 to 65535, got 70000"),
        ("APPLIANCE_SFTP_MAX_OPEN_HANDLES", "0", "[sftp] max_open_handles: must be at least 1, got 0"),
        ("APPLIANCE_FTP_IDLE_TIMEOUT", "0", "[ftp] idle_timeout: must be at least 1, got 0"),
        ("APPLIANCE_FTP_MASQUERADE_ADDRESS", "files.example.com", "is not an IPv4 address"),
    ],
)
def test_numbers_out_of_range_are_refused_by_check_and_serve(tmp_path, variable, value, message):
    """`check` said ok to a negative grace or trial, a port past 65535, zero handles or
    timeouts; the masquerade address was refused only by serve."""
    env = dict(os.environ, **{variable: value})
    assert_one_line_error(run("check", "--data-dir", str(tmp_path / "d"), env=env), message)
    assert_one_line_error(run(*serve_args(tmp_path / "d"), env=env, timeout=30), message)
    assert not (tmp_path / "d").exists()


def test_check_names_a_port_in_use(set_up, tmp_path):
    """README: `appliance check` says what is wrong, "a port in use" among them; it
    only parsed the endpoint strings."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = dict(os.environ, APPLIANCE_LISTEN_SFTP=f"tcp:{port}:interface=127.0.0.1")
        result = run("check", "--data-dir", str(set_up), env=env)
    assert result.returncode == 1
    assert f"cannot listen for SFTP on tcp:{port}:interface=127.0.0.1: Address already in use" in result.stderr
    assert "Traceback" not in result.stderr
    assert run("check", "--data-dir", str(set_up), env=free_listeners()).returncode == 0


def test_setup_prints_a_serve_command_that_can_be_pasted(tmp_path):
    """With a data dir whose path has a space, the printed command split it in two."""
    data_dir = tmp_path / "with space" / "data"
    result = run(
        "setup", "--data-dir", str(data_dir), "--org", "A", "--username", "admin", "--email", "a@example.com",
        "--password-stdin", input="long-password-1\n",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"appliance serve --data-dir '{data_dir}'" in result.stdout


def test_backup_to_a_bad_place_is_one_line_and_an_old_file_is_replaced_privately(set_up, tmp_path):
    """A missing folder or a directory as FILE printed a traceback; an existing file kept
    its mode (0644: the keys readable by everyone) and was truncated before the copy."""
    for target, message in (
        (tmp_path / "missing" / "b.tar.gz", "No such file or directory"),
        (tmp_path, "Is a directory"),
    ):
        result = run("backup", str(target), "--data-dir", str(set_up))
        assert_one_line_error(result, f"{target}: cannot write the backup: {message}")
    old = tmp_path / "backup.tar.gz"
    old.write_text("last week's backup")
    old.chmod(0o644)
    result = run("backup", str(old), "--data-dir", str(set_up))
    assert result.returncode == 0, result.stderr
    assert oct(old.stat().st_mode & 0o777) == "0o600"
    assert [p.name for p in tmp_path.iterdir()] == ["backup.tar.gz"]  # no temporary left


def test_restore_of_a_backup_cut_short_is_one_line_and_restores_nothing(set_up, tmp_path):
    """A truncated archive (a copy stopped half-way) printed an EOFError traceback."""
    archive = tmp_path / "backup.tar.gz"
    assert run("backup", str(archive), "--data-dir", str(set_up)).returncode == 0
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(archive.read_bytes()[:3000])
    result = run("restore", str(cut), "--data-dir", str(tmp_path / "target"))
    assert_one_line_error(result, f"{cut}: damaged or cut short, nothing was restored")
    assert not (tmp_path / "target").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to hand the data dir to another user")
def test_a_database_the_daemon_cannot_write_is_refused_at_start(set_up, tmp_path):
    """A database left owned by root (a restore or a copy run as root) was served read
    only: tracebacks in the log and every write failing. check said ok."""
    home = tempfile.mkdtemp(dir="/tmp")  # pytest's own folders are closed to other users
    os.chmod(home, 0o755)
    data_dir = Path(home) / "data"
    shutil.copytree(set_up, data_dir)
    for path in [data_dir, *data_dir.rglob("*")]:
        os.chown(path, 65534, 65534)
    os.chown(data_dir / "appliance.db", 0, 0)
    (data_dir / "appliance.db").chmod(0o644)
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    env = free_listeners()
    for command in (["check", "--data-dir", str(data_dir)], serve_args(data_dir)):
        result = subprocess.run(
            as_nobody + APPLIANCE + command, capture_output=True, text=True, env=env, timeout=30
        )  # a daemon that serves anyway raises TimeoutExpired
        assert result.returncode == 1
        assert f"{data_dir / 'appliance.db'}: not writable by this user" in result.stderr
        assert "Traceback" not in result.stderr + result.stdout
    shutil.rmtree(home)
    # a data dir this user cannot even reach: check said so with a PermissionError traceback
    result = subprocess.run(
        as_nobody + APPLIANCE + ["check", "--data-dir", str(set_up)], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 1
    assert f"data dir {set_up}: cannot reach it: Permission denied" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_full_data_disk_shows_in_readyz_and_sign_ins_say_why(tmp_path):
    """With the data dir's disk full SQLite cannot commit, so every sign-in failed: FTP
    answered 451 with a generic message (530 "wrong password" once the store said
    Unavailable), each failure logged a 40-line traceback, and /readyz still said ok."""
    disk = tmp_path / "data"  # make_daemon's data dir; its log goes beside, off the small disk
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.decode().strip()}")
    daemon = None
    try:
        daemon = make_daemon(tmp_path)
        ready = f"http://127.0.0.1:{daemon.ops_port}/readyz"
        assert urllib.request.urlopen(ready).status == 200
        with open(disk / "filler", "wb") as f:
            try:
                while True:
                    f.write(b"\0" * (1 << 20))
                    f.flush()
            except OSError:
                pass
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(ready)
        assert refused.value.code == 503
        assert json.loads(refused.value.read())["checks"]["data disk"].startswith("full")
        ftp = ftplib.FTP()
        ftp.connect("127.0.0.1", daemon.ftp_port, timeout=30)
        with pytest.raises(ftplib.error_temp, match="421 The appliance's data disk is full"):
            ftp.login("admin", ADMIN_PASSWORD)  # not 530: the password is right
        ftp.close()
        sftp = subprocess.run(
            ["sshpass", "-e", "sftp", *SSH_OPTIONS, "-b", "-", "-P", str(daemon.sftp_port), "admin@127.0.0.1"],
            input="ls\n", capture_output=True, text=True, timeout=30, env=dict(os.environ, SSHPASS=ADMIN_PASSWORD),
        )  # fmt: skip
        assert sftp.returncode != 0
        assert "data disk is full" in sftp.stderr, sftp.stderr  # OpenSSH prints the DISCONNECT's reason
        (disk / "filler").unlink()
        assert urllib.request.urlopen(ready).status == 200
        daemon.stop()
        output = daemon.output()
        assert "data disk is full" in output
        assert "Traceback" not in output, output
    finally:
        if daemon is not None:
            daemon.stop()
        subprocess.run(["umount", "-l", str(disk)], check=True)


def test_a_retired_key_is_read_and_named_not_refused(tmp_path):
    """[server] idle_spin_us and thread_wait_us tuned a reactor that is Twisted's own again:
    a config from before still starts the daemon (an upgrade must not stop it), and check
    and the daemon's log say the key does nothing and what to do instead."""
    daemon = daemon_with(tmp_path, server__idle_spin_us=200)  # started: it serves
    try:
        assert "[server] idle_spin_us is retired and does nothing" in daemon.output()
        config = tmp_path / "appliance.toml"
        config.write_text("[server]\nidle_spin_us = 200\n")
        env = dict(os.environ, **daemon.env)
        del env["APPLIANCE_SERVER_IDLE_SPIN_US"]
        env["APPLIANCE_SERVER_THREAD_WAIT_US"] = "500"
        result = run("check", "--config", str(config), "--data-dir", str(daemon.data_dir), env=env)
        assert result.returncode == 0, result.stderr
        assert f"warning: {config}: [server] idle_spin_us is retired and does nothing" in result.stderr
        assert "warning: environment variable APPLIANCE_SERVER_THREAD_WAIT_US: [server] thread_wait_us is " in (
            result.stderr
        )
    finally:
        daemon.stop()
