"""Test helpers: a real daemon in a subprocess, and direct set-up of rows.

Rows are written with sqlite3 and bcrypt directly (the daemon reads them on the
next sign-in), so tests can arrange organisations, limits and permissions that
the API of a later issue will manage.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import json
import os
import random
import shutil
import socket
import sqlite3
import ssl
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import bcrypt
import pytest

ROOT = Path(__file__).resolve().parent.parent
APPLIANCE = [sys.executable, "-m", "appliance"]
ALL_PERMISSIONS = ["list", "download", "upload", "overwrite", "delete", "rename", "mkdir"]
ALL_PROTOCOLS = ["sftp", "ftp", "web"]
ADMIN_PASSWORD = "admin-password-1"


# Ports handed out in this process: a port is free until the process it was
# chosen for binds it, so two picks in a row can return the same one (a test
# once gave the daemon's FTP port to systemd-socket-activate too).
_HANDED_OUT: set[int] = set()
# Listening ports come from below the kernel's ephemeral range (ip_local_port_range,
# 32768-60999 by default), where clients' connections take theirs: a run leaves
# thousands of those in TIME-WAIT, and the kernel's own pick (bind to port 0) kept
# returning ports handed out before until "no free port" (seen in a whole run).
PORTS = range(10000, 32768)
_pick = random.Random()


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A port free right now and not handed out before in this test run."""
    return free_port_range(1)[0]


def free_port_range(count: int = 20) -> tuple[int, int]:
    """A run of `count` ports that are free right now, none handed out before."""
    for _ in range(2000):
        low = _pick.randrange(PORTS.start, PORTS.stop - count + 1)
        ports = range(low, low + count)
        if _HANDED_OUT.intersection(ports):
            continue
        if all(_bindable(port) for port in ports):
            _HANDED_OUT.update(ports)
            return low, low + count - 1
    raise RuntimeError(f"no free run of {count} ports in {PORTS.start}-{PORTS.stop - 1}")


def free_listeners() -> dict[str, str]:
    """The environment with APPLIANCE_LISTEN_* variables on free ports: `appliance check`
    tries to listen on the configured ports, and the defaults (8000, 2222, 2121, the ops
    9180) may be taken here (by `make run`, a bench run's daemon)."""
    env = dict(os.environ)
    env.update(ops_listener())
    for what in ("HTTP", "SFTP", "FTP"):
        env[f"APPLIANCE_LISTEN_{what}"] = f"tcp:{free_port()}:interface=127.0.0.1"
    return env


def ops_listener() -> dict[str, str]:
    """APPLIANCE_LISTEN_OPS on a free port, for a daemon whose other listeners are given."""
    return {"APPLIANCE_LISTEN_OPS": f"tcp:{free_port()}:interface=127.0.0.1"}


@functools.cache
def key_material() -> Path:
    """A data dir's keys (SSH host keys, the TLS pair, the token and sealing keys), made
    once per test run by the product's own first start (DataDir.prepare)."""
    from appliance.core.datadir import DataDir

    folder = Path(tempfile.mkdtemp(prefix="appliance-keys-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    DataDir(folder / "data").prepare("127.0.0.1")
    return folder / "data"


def seed_keys(data_dir: Path) -> Path:
    """`data_dir` made (as DataDir.prepare makes it) with the run's key material in it, so
    its first start finds its keys instead of generating an RSA-3072 host key (a second or
    more each). The product's own generation keeps its test (test_cli's
    test_setup_creates_the_data_dir); these are the files a backup restores (SECRET_FILES)."""
    from appliance.core.backup import SECRET_FILES

    data_dir.mkdir(mode=0o750, parents=True, exist_ok=True)
    for folder in ("ssh", "tls"):
        (data_dir / folder).mkdir(mode=0o700, exist_ok=True)
    for name in SECRET_FILES:
        shutil.copy2(key_material() / name, data_dir / name)
    return data_dir


def file_sizes(paths: Iterable[Path]) -> Iterator[tuple[Path, int]]:
    """(path, size) of each regular file among `paths`, skipping any the daemon
    removes between the listing and the stat (an aborted upload's temporary)."""
    for path in paths:
        try:
            st = path.stat()
        except FileNotFoundError:
            continue
        if stat.S_ISREG(st.st_mode):
            yield path, st.st_size


def missing(reason: str):
    """A test cannot run without something it needs: skipped on a developer's machine,
    failed in CI (the CI variable is set: `CI=true bash .ci/run`), where `make test`
    installs everything and a skip would hide that a client was never exercised."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason}: CI must have it (make system-deps)", pytrace=False)
    pytest.skip(reason)


def require(*tools: str) -> None:
    """Each of `tools` (a program on PATH, or an absolute path) is there, or missing()."""
    absent = [tool for tool in tools if not (os.path.exists(tool) if os.path.isabs(tool) else shutil.which(tool))]
    if absent:
        missing(f"{', '.join(absent)} {'is' if len(absent) == 1 else 'are'} not installed (make system-deps)")


def require_module(name: str):
    """The Python module `name` (as pytest.importorskip), or missing()."""
    try:
        return importlib.import_module(name)
    except ImportError:
        missing(f"the Python module {name} is not installed (make build)")


def wait_for_port(
    port: int, process: subprocess.Popen | None = None, timeout: float = 30, host: str = "127.0.0.1"
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"daemon exited with {process.returncode}")
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"port {port} did not open")


def insecure_tls() -> ssl.SSLContext:
    """A client context that accepts the appliance's self-signed certificate."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def loopback_connection() -> tuple[socket.socket, socket.socket]:
    """(the server's side, the client's side) of a new loopback TCP connection."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        client = socket.create_connection(listener.getsockname())
        server, _ = listener.accept()
    return server, client


def recv_exactly(conn, size: int) -> bytes:
    """`size` bytes from a socket or an SSH channel (its own timeout applies); the
    connection's end before them fails the test, naming what had come."""
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        assert chunk, f"the connection ended after {len(data)} of {size} bytes: {data[-200:]!r}"
        data += chunk
    return data


def wait_for(condition, timeout: float = 30) -> None:
    """Poll `condition` until it holds; TimeoutError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise TimeoutError("condition not met")


def upload_temp_files(root: Path) -> list[Path]:
    """The temporary files of uploads under way (or left by a crash) below `root`."""
    return [Path(d) / n for d, _, names in os.walk(root) for n in names if n.startswith(".~upload-")]


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def now_iso(delta: timedelta = timedelta()) -> str:
    return iso(datetime.now(UTC) + delta)


@dataclass
class Daemon:
    """A running `appliance serve` with its data dir and first admin."""

    data_dir: Path
    http_port: int
    sftp_port: int
    ftp_port: int
    passive: tuple[int, int]
    process: subprocess.Popen | None = None
    log_path: Path | None = None
    env: dict = field(default_factory=dict)
    extra_args: list = field(default_factory=list)  # more `serve` flags, e.g. --https
    ops_port: int = field(default_factory=free_port)  # the ops listener: /readyz and /metrics in full
    https_port: int | None = None  # an HTTPS listener too when set (daemon_with(..., https=True))

    # -- the database, for arranging tests --------------------------------------

    def db(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.data_dir / "appliance.db", timeout=30)
        conn.row_factory = sqlite3.Row
        return conn

    def query(self, sql: str, *params) -> list[sqlite3.Row]:
        with self.db() as conn:
            return conn.execute(sql, params).fetchall()

    def execute(self, sql: str, *params) -> None:
        conn = self.db()
        try:
            with conn:
                conn.execute(sql, params)
        finally:
            conn.close()

    def seal(self, secret: str) -> str:
        """`secret` encrypted as the daemon stores source and mailbox passwords (with the
        data dir's secrets.key), for planting rows the API would refuse."""
        from cryptography.fernet import Fernet

        return Fernet((self.data_dir / "secrets.key").read_bytes().strip()).encrypt(secret.encode()).decode()

    def default_org(self) -> int:
        return self.query("SELECT id FROM organisations ORDER BY id LIMIT 1")[0]["id"]

    def add_organisation(self, name: str, status: str = "active", trial_ends_at: str | None = None) -> int:
        """An organisation with a default local source in the data dir."""
        subdomain = name.lower().replace(" ", "-")
        (self.data_dir / "files" / subdomain).mkdir(parents=True, exist_ok=True)
        conn = self.db()
        try:
            with conn:
                cur = conn.execute(
                    "INSERT INTO organisations (name, subdomain, status, trial_ends_at, created_at) VALUES (?,?,?,?,?)",
                    (name, subdomain, status, trial_ends_at, now_iso()),
                )
                org_id = cur.lastrowid
                cur = conn.execute(
                    "INSERT INTO sources (org_id, name, type, config, created_at) VALUES (?,?,?,?,?)",
                    (org_id, "Default", "local", json.dumps({"path": f"files/{subdomain}"}), now_iso()),
                )
                conn.execute("UPDATE organisations SET default_source_id=? WHERE id=?", (cur.lastrowid, org_id))
        finally:
            conn.close()
        return org_id

    def add_profile(
        self,
        username: str,
        password: str = "user-password-1",
        *,
        org_id: int | None = None,
        home: str | None = None,
        permissions: list[str] | None = None,
        protocols: list[str] | None = None,
        ssh_keys: list[str] | None = None,
        ip_allow: list[str] | None = None,
        quota_bytes: int | None = None,
        quota_files: int | None = None,
        active: bool = True,
        expires_at: str | None = None,
        is_admin: bool = False,
    ) -> int:
        """A profile on its organisation's default source, home /<username> by default."""
        org_id = org_id or self.default_org()
        source_id = self.query("SELECT default_source_id FROM organisations WHERE id=?", org_id)[0][0]
        password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt(4)).decode()
        conn = self.db()
        try:
            with conn:
                cur = conn.execute(
                    "INSERT INTO profiles (org_id, username, email, password_hash, is_admin, active, source_id, home,"
                    " permissions, protocols, ssh_keys, ip_allow, quota_bytes, quota_files, expires_at, created_at)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        org_id,
                        username,
                        f"{username}@example.com",
                        password_hash,
                        is_admin,
                        active,
                        source_id,
                        home if home is not None else f"/{username}",
                        json.dumps(ALL_PERMISSIONS if permissions is None else permissions),
                        json.dumps(ALL_PROTOCOLS if protocols is None else protocols),
                        json.dumps(ssh_keys or []),
                        json.dumps(ip_allow or []),
                        quota_bytes,
                        quota_files,
                        expires_at,
                        now_iso(),
                    ),
                )
                return cur.lastrowid
        finally:
            conn.close()

    def source_root(self, org_id: int | None = None) -> Path:
        """The folder of an organisation's default source on disk."""
        org_id = org_id or self.default_org()
        row = self.query(
            "SELECT s.config FROM sources s JOIN organisations o ON o.default_source_id = s.id WHERE o.id=?", org_id
        )[0]
        path = Path(json.loads(row[0])["path"])
        return path if path.is_absolute() else self.data_dir / path

    def home(self, username: str) -> Path:
        row = self.query("SELECT org_id, home FROM profiles WHERE username=?", username)[0]
        return self.source_root(row["org_id"]) / row["home"].strip("/")

    def logs(self, action: str | None = None) -> list[sqlite3.Row]:
        if action:
            return self.query("SELECT * FROM logs WHERE action=? ORDER BY id", action)
        return self.query("SELECT * FROM logs ORDER BY id")

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path and self.log_path.exists() else ""

    # -- lifecycle ------------------------------------------------------------------

    def start(self) -> None:
        self.log_path = self.data_dir.parent / "daemon.log"
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            APPLIANCE
            + [
                "serve",
                "--data-dir",
                str(self.data_dir),
                "--http",
                f"tcp:{self.http_port}:interface=127.0.0.1",
                "--sftp",
                f"tcp:{self.sftp_port}:interface=127.0.0.1",
                "--ftp",
                f"tcp:{self.ftp_port}:interface=127.0.0.1",
                "--ops",
                f"tcp:{self.ops_port}:interface=127.0.0.1",
                *self.extra_args,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
            cwd=self.data_dir.parent,
        )
        log.close()  # the daemon writes to its own copy
        for port in (self.http_port, self.sftp_port, self.ftp_port, self.ops_port):
            try:
                # generous: a loaded CI machine can take long to import everything
                wait_for_port(port, self.process, timeout=90)
            except Exception:
                self.stop()
                raise RuntimeError(f"daemon did not start:\n{self.output()}") from None

    def stop(self, kill: bool = False) -> None:
        if self.process and self.process.poll() is None:
            if kill:
                self.process.kill()
            else:
                self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


def make_daemon(tmp: Path, start: bool = True) -> Daemon:
    """A set-up data dir (org 'Acme', admin 'admin') and, with `start`, a running daemon."""
    data_dir = seed_keys(tmp / "data")
    low, high = free_port_range(20)
    env = dict(os.environ)
    env.update(
        {
            "APPLIANCE_SECURITY_BCRYPT_ROUNDS": "4",
            "APPLIANCE_FTP_PASSIVE_PORTS": f"{low}-{high}",
            "APPLIANCE_SERVER_PUBLIC_HOSTNAME": "127.0.0.1",
        }
    )
    subprocess.run(
        APPLIANCE
        + [
            "setup",
            "--data-dir",
            str(data_dir),
            "--org",
            "Acme",
            "--username",
            "admin",
            "--email",
            "admin@example.com",
            "--password-stdin",
        ],
        input=ADMIN_PASSWORD + "\n",
        text=True,
        check=True,
        env=env,
        capture_output=True,
        cwd=tmp,
    )
    daemon = Daemon(data_dir, free_port(), free_port(), free_port(), (low, high), env=env)
    if start:
        daemon.start()
    return daemon


def setting_variables(settings: dict) -> dict[str, str]:
    """APPLIANCE_<SECTION>_<KEY> variables for `section__key=value` settings (booleans as true/false)."""
    variables = {}
    for name, value in settings.items():
        section, separator, key = name.partition("__")
        if not separator or not section or not key:
            raise ValueError(f"{name}: a setting is named section__key, e.g. smtp__port")
        if isinstance(value, bool):
            value = "true" if value else "false"
        variables[f"APPLIANCE_{section}_{key}".upper()] = str(value)
    return variables


def daemon_with(
    tmp, *, start: bool = True, https: bool = False, env: dict[str, str] | None = None, **settings
) -> Daemon:
    """A daemon as make_daemon sets it up, with settings by section and key:
    `daemon_with(tmp_path, security__max_connections_per_address=1, sftp__legacy_ciphers=False)`
    sets APPLIANCE_SECURITY_MAX_CONNECTIONS_PER_ADDRESS and APPLIANCE_SFTP_LEGACY_CIPHERS.
    `tmp`: a test's tmp_path, or tmp_path_factory (a folder of its own is made in it).
    `https`: an HTTPS listener too, on `daemon.https_port`. `env`: other environment
    variables of the daemon (TMPDIR, NOTIFY_SOCKET)."""
    if hasattr(tmp, "mktemp"):
        tmp = tmp.mktemp("daemon")
    daemon = make_daemon(tmp, start=False)
    daemon.env.update(setting_variables(settings))
    daemon.env.update(env or {})
    if https:
        daemon.https_port = free_port()
        daemon.extra_args.append("--https")
        daemon.extra_args.append(f"tcp:{daemon.https_port}:interface=127.0.0.1")
    if start:
        daemon.start()
    return daemon
