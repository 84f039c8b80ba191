"""The `appliance` command as an admin runs it: clear one-line errors, no tracebacks."""

from __future__ import annotations

import os
import shlex
import socket
import sqlite3
import subprocess

import bcrypt
import pytest

from ..helpers import APPLIANCE, free_listeners, free_port, make_daemon, wait_for


def run(*args, input=None, cwd=None, env=None):
    return subprocess.run(
        APPLIANCE + list(args), input=input, text=True, capture_output=True, cwd=cwd, env=env, timeout=60
    )


def assert_one_line_error(result, expected: str):
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert expected in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_version_and_help():
    assert run("--version").stdout.startswith("appliance ")
    help_text = run("--help").stdout
    for command in ("setup", "serve", "check", "reset-password"):
        assert command in help_text


def test_setup_creates_the_data_dir(tmp_path):
    result = run(
        "setup",
        "--data-dir",
        str(tmp_path / "d"),
        "--org",
        "Acme Ltd",
        "--username",
        "admin",
        "--email",
        "admin@example.com",
        "--password-stdin",
        input="long-password-1\n",
    )
    assert result.returncode == 0, result.stderr
    data = tmp_path / "d"
    for key in (
        "ssh/ssh_host_ed25519_key",
        "ssh/ssh_host_ecdsa_key",
        "ssh/ssh_host_rsa_key",
        "token.key",
        "secrets.key",
    ):
        assert oct((data / key).stat().st_mode & 0o777) == "0o600", key
    conn = sqlite3.connect(data / "appliance.db")
    username, password_hash, is_admin, is_superuser, home = conn.execute(
        "SELECT username, password_hash, is_admin, is_superuser, home FROM profiles"
    ).fetchone()
    assert (username, is_admin, is_superuser, home) == ("admin", 1, 1, "/")
    assert bcrypt.checkpw(b"long-password-1", password_hash.encode())
    status, subdomain = conn.execute("SELECT status, subdomain FROM organisations").fetchone()
    assert (status, subdomain) == ("active", "acme-ltd")
    assert (data / "files" / "acme-ltd").is_dir()
    # keys survive a second start: nothing regenerated
    before = (data / "ssh/ssh_host_ed25519_key").read_bytes()
    assert run("check", "--data-dir", str(data), env=free_listeners()).returncode == 0
    assert (data / "ssh/ssh_host_ed25519_key").read_bytes() == before


def test_setup_twice_is_refused(tmp_path):
    args = [
        "setup",
        "--data-dir",
        str(tmp_path / "d"),
        "--org",
        "A",
        "--username",
        "admin",
        "--email",
        "a@example.com",
        "--password-stdin",
    ]
    assert run(*args, input="long-password-1\n").returncode == 0
    assert_one_line_error(run(*args, input="long-password-1\n"), "already set up")


@pytest.mark.parametrize(
    "args,password,message",
    [
        (["--username", "bad name"], "long-password-1", "username"),
        (["--email", "not-an-email"], "long-password-1", "not an email address"),
        ([], "short", "at least 12 characters"),
        ([], "password", "at least 12 characters"),
        ([], "Password2024!", "list of common passwords"),
    ],
)
def test_setup_refuses_bad_input(tmp_path, args, password, message):
    base = {"--org": "A", "--username": "admin", "--email": "a@example.com"}
    for flag, value in zip(args[::2], args[1::2], strict=True):
        base[flag] = value
    flat = [x for pair in base.items() for x in pair]
    result = run("setup", "--data-dir", str(tmp_path / "d"), *flat, "--password-stdin", input=password + "\n")
    assert_one_line_error(result, message)


def as_nobody() -> list[str]:
    """Run as an unprivileged user, so permissions bite even when the tests run as root."""
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []


def test_unwritable_data_dir(tmp_path):
    tmp_path.chmod(0o755)
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    result = subprocess.run(
        as_nobody()
        + APPLIANCE
        + [
            "setup",
            "--data-dir",
            str(locked / "d"),
            "--org",
            "A",
            "--username",
            "a",
            "--email",
            "a@example.com",
            "--password-stdin",
        ],
        input="long-password-1\n",
        text=True,
        capture_output=True,
        timeout=60,
    )
    assert_one_line_error(result, f"data dir {locked / 'd'}: cannot create it: Permission denied")


def test_data_dir_that_is_a_file(tmp_path):
    (tmp_path / "file").write_text("x")
    result = run(
        "setup",
        "--data-dir",
        str(tmp_path / "file" / "d"),
        "--org",
        "A",
        "--username",
        "a",
        "--email",
        "a@example.com",
        "--password-stdin",
        input="long-password-1\n",
    )
    assert_one_line_error(result, "cannot create it")


def test_bad_config_key(tmp_path):
    config = tmp_path / "appliance.toml"
    config.write_text("[server]\ndata_dir = 'x'\ntypo_key = 1\n")
    assert_one_line_error(run("serve", "--config", str(config)), f"{config}: [server] typo_key: unknown key")
    assert_one_line_error(run("check", "--config", str(config)), "typo_key")


@pytest.mark.parametrize("key", ["HOST", "USERNAME", "PASSWORD", "SENDER"])
def test_smtp_settings_with_control_characters_are_refused(tmp_path, key):
    env = {**os.environ, f"APPLIANCE_SMTP_{key}": "portal@example.com\r\nRCPT TO:<evil@evil.example>"}
    result = run("check", "--data-dir", str(tmp_path / "d"), env=env)
    assert_one_line_error(result, f"[smtp] {key.lower()}: holds a control character")


def test_bad_endpoint_string(tmp_path):
    result = run("serve", "--data-dir", str(tmp_path / "d"), "--sftp", "tcp:notaport")
    assert_one_line_error(result, "[listen] sftp: 'tcp:notaport' is not a valid endpoint string")
    assert not (tmp_path / "d").exists()  # refused before touching anything


def test_port_in_use(tmp_path):
    with socket.socket() as busy, socket.socket() as busy_too, socket.socket() as busy_ops:
        for s in (busy, busy_too, busy_ops):
            s.bind(("127.0.0.1", 0))
            s.listen()
        port, other, ops = (s.getsockname()[1] for s in (busy, busy_too, busy_ops))
        result = run(
            "serve",
            "--data-dir",
            str(tmp_path / "d"),
            "--http",
            f"tcp:{free_port()}:interface=127.0.0.1",
            "--sftp",
            f"tcp:{port}:interface=127.0.0.1",
            "--ftp",
            f"tcp:{other}:interface=127.0.0.1",
            "--ops",
            f"tcp:{ops}:interface=127.0.0.1",
        )
    assert result.returncode == 1
    # every busy port is named on a line of its own, with how to choose another, and nothing
    # else is printed as an error
    for what, busy_port in (("SFTP", port), ("FTP", other), ("ops", ops)):
        line = f"appliance: cannot listen for {what} on tcp:{busy_port}:interface=127.0.0.1: Address already in use"
        found = [text for text in result.stderr.splitlines() if text.startswith(line)]
        assert len(found) == 1, (what, result.stderr)
        key = what.lower()
        assert f"appliance serve --{key} tcp:PORT" in found[0] and f"APPLIANCE_LISTEN_{key.upper()}=" in found[0], found
    assert "Traceback" not in result.stderr + result.stdout
    assert "Unhandled error" not in result.stderr + result.stdout


def test_tls_endpoint_with_a_missing_certificate(tmp_path):
    missing = tmp_path / "nowhere.pem"
    result = run("serve", "--data-dir", str(tmp_path / "d"), "--http", f"ssl:{free_port()}:privateKey={missing}")
    assert result.returncode == 1
    assert "appliance: [listen] http: 'ssl:" in result.stderr
    assert f"No such file or directory: {missing}" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_check_reports_problems(tmp_path):
    result = run("check", "--data-dir", str(tmp_path / "nothing"))
    assert result.returncode == 1
    assert "does not exist" in result.stderr


def test_reset_password(tmp_path):
    daemon = make_daemon(tmp_path, start=False)
    result = run(
        "reset-password",
        "admin",
        "--data-dir",
        str(daemon.data_dir),
        "--password-stdin",
        input="brand-new-password\n",
        env=daemon.env,
    )
    assert result.returncode == 0, result.stderr
    password_hash = daemon.query("SELECT password_hash FROM profiles WHERE username='admin'")[0][0]
    assert bcrypt.checkpw(b"brand-new-password", password_hash.encode())
    assert daemon.logs("password_changed")
    missing = run(
        "reset-password",
        "nobody",
        "--data-dir",
        str(daemon.data_dir),
        "--password-stdin",
        input="brand-new-password\n",
        env=daemon.env,
    )
    assert_one_line_error(missing, "No profile is called 'nobody'")


def test_serve_starts_and_stops_cleanly(tmp_path):
    daemon = make_daemon(tmp_path)
    try:
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{daemon.http_port}/api/portal/initialized/") as reply:
            assert reply.read() == b'{"initialized": true}'
    finally:
        daemon.process.terminate()
        assert daemon.process.wait(10) == 0
    assert "Traceback" not in daemon.output()


def test_serve_names_the_console_address_and_the_first_run_when_up(tmp_path):
    fresh = make_daemon(tmp_path, start=False)
    fresh.data_dir = tmp_path / "empty"  # never set up: the first-run hint
    fresh.start()
    try:
        url = f"http://127.0.0.1:{fresh.http_port}/"
        wait_for(lambda: "Ready: open the console at" in fresh.output())
        assert f"Ready: open the console at {url} to set up the appliance" in fresh.output(), fresh.output()
    finally:
        fresh.stop()
    (tmp_path / "set-up").mkdir()
    set_up = make_daemon(tmp_path / "set-up")
    try:
        wait_for(lambda: "Ready: open the console at" in set_up.output())
        assert f"Ready: open the console at http://127.0.0.1:{set_up.http_port}/\n" in set_up.output()
    finally:
        set_up.stop()


def test_a_second_daemon_on_the_same_data_dir_is_refused(tmp_path):
    daemon = make_daemon(tmp_path)
    try:
        result = run(
            "serve",
            "--data-dir",
            str(daemon.data_dir),
            "--http",
            f"tcp:{free_port()}:interface=127.0.0.1",
            "--sftp",
            f"tcp:{free_port()}:interface=127.0.0.1",
            "--ftp",
            f"tcp:{free_port()}:interface=127.0.0.1",
            env=daemon.env,
        )
        assert_one_line_error(result, f"another appliance (pid {daemon.process.pid}) is serving it")
    finally:
        daemon.stop()


def test_backup_while_serving_and_restore_elsewhere(tmp_path):
    import tarfile

    (tmp_path / "a").mkdir()
    daemon = make_daemon(tmp_path / "a")
    try:
        daemon.add_profile("alice")
        archive = tmp_path / "backup.tar.gz"
        result = run("backup", str(archive), "--data-dir", str(daemon.data_dir), env=daemon.env)
        assert result.returncode == 0, result.stderr
        assert oct(archive.stat().st_mode & 0o777) == "0o600"
        with tarfile.open(archive) as contents:
            held = set(contents.getnames())
        # everything a restore needs to be the same appliance: its keys, host keys and TLS pair
        assert {"appliance.db", "secrets.key", "token.key", "tls/cert.pem", "tls/key.pem"} <= held, held
        assert "ssh/ssh_host_ed25519_key" in held
        # a running daemon's data dir cannot be restored over
        refused = run("restore", str(archive), "--data-dir", str(daemon.data_dir), "--force", env=daemon.env)
        assert_one_line_error(refused, "a daemon is serving it")
    finally:
        daemon.stop()
    target = tmp_path / "b" / "data"
    result = run("restore", str(archive), "--data-dir", str(target))
    assert result.returncode == 0, result.stderr
    for name in ("secrets.key", "token.key", "ssh/ssh_host_ed25519_key", "tls/cert.pem", "tls/key.pem"):
        assert (target / name).read_bytes() == (daemon.data_dir / name).read_bytes(), name
    assert (target / "tls").stat().st_mode & 0o777 == 0o700 and (target / "tls/key.pem").stat().st_mode & 0o777 == 0o600
    conn = sqlite3.connect(target / "appliance.db")
    assert {r[0] for r in conn.execute("SELECT username FROM profiles")} == {"admin", "alice"}
    assert run("check", "--data-dir", str(target), env=free_listeners()).returncode == 0
    again = run("restore", str(archive), "--data-dir", str(target))
    assert_one_line_error(again, "already has a database; add --force")

    # the next step it names is the whole command: the data dir and config it was given
    assert result.stdout.strip().endswith(f"Start the daemon with: appliance serve --data-dir {target}"), result.stdout
    config = tmp_path / "c" / "appliance.toml"
    config.parent.mkdir()
    config.write_text(f'[server]\ndata_dir = "{tmp_path / "c" / "data"}"\n')
    told = run("restore", str(archive), "--config", str(config)).stdout.strip()
    assert told.endswith(f"Start the daemon with: appliance serve --config {config}"), told
    next_step = shlex.split(told.partition("Start the daemon with: ")[2])
    assert next_step[:2] == ["appliance", "serve"]
    assert run("check", *next_step[2:], env=free_listeners()).returncode == 0  # it names the restored data dir


def test_restore_refuses_what_is_not_a_backup(tmp_path):
    import io
    import tarfile

    bogus = tmp_path / "evil.tar.gz"
    with tarfile.open(bogus, "w:gz") as archive:
        info = tarfile.TarInfo("../../escape.txt")
        info.size = 1
        archive.addfile(info, io.BytesIO(b"x"))
    result = run("restore", str(bogus), "--data-dir", str(tmp_path / "d"))
    assert_one_line_error(result, "not a backup made by `appliance backup`")
    assert not (tmp_path / "escape.txt").exists()
    (tmp_path / "junk.tar.gz").write_bytes(b"junk")
    assert_one_line_error(
        run("restore", str(tmp_path / "junk.tar.gz"), "--data-dir", str(tmp_path / "d")), "not a backup"
    )
