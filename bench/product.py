"""The product under test: `appliance` from the project's venv, set up in a
fresh data dir inside the workspace and serving SFTP, FTP and HTTP on loopback
high ports."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
from pathlib import Path

from clients import Endpoint, Login
from support import LOOPBACK, REPO_ROOT, BenchError, Child, Ports, Workspace, run_checked

APPLIANCE = REPO_ROOT / ".venv" / "bin" / "appliance"
USERNAME = "bench"
PASSIVE_PORTS = 20
# every client of the benchmark comes from 127.0.0.1, and the concurrency case holds
# 1,000 sessions at once: the per-address limits meant for the internet (50
# connections, 10 still signing in; 100 signing in in all) would refuse them
LIMITS = {
    "APPLIANCE_SECURITY_MAX_CONNECTIONS_PER_ADDRESS": "5000",
    "APPLIANCE_SECURITY_MAX_UNAUTHENTICATED": "5000",
    "APPLIANCE_SECURITY_MAX_UNAUTHENTICATED_PER_ADDRESS": "5000",
}


class Product(contextlib.AbstractContextManager):
    """`appliance setup` (one organisation, its admin `bench` with a random
    password) then `appliance serve`; `start()` returns the SFTP and FTP
    endpoints (and SFTP again as "logins") once both ports accept connections;
    leaving the context stops the daemon."""

    def __init__(self, workspace: Workspace, ports: Ports, executable: Path = APPLIANCE):
        self.executable = executable
        self.ports = ports
        self.folder = workspace.folder("product")
        self.data_dir = self.folder / "data"
        self.child: Child | None = None
        self.http_port: int | None = None
        self.password: str | None = None

    def __exit__(self, *exc) -> None:
        if self.child is not None:
            self.child.stop()

    def start(self) -> dict[str, Endpoint]:
        if not os.access(self.executable, os.X_OK):
            raise BenchError(f"{self.executable} does not exist (run `make build` first)")
        env = self._environment()
        software = f"appliance {self._version(env)}"
        password = secrets.token_urlsafe(18)
        run_checked(
            [
                str(self.executable), "setup", "--data-dir", str(self.data_dir), "--org", "Bench",
                "--username", USERNAME, "--email", "bench@example.com", "--password-stdin",
            ],
            "appliance setup failed",
            stdin_text=password + "\n",
            env=env,
        )  # fmt: skip
        http, sftp, ftp, ops = self.ports.one(), self.ports.one(), self.ports.one(), self.ports.one()
        self.http_port, self.password = http, password
        passive_low, passive_high = self.ports.span(PASSIVE_PORTS)
        env["APPLIANCE_FTP_PASSIVE_PORTS"] = f"{passive_low}-{passive_high}"
        env.update(LIMITS)
        argv = [str(self.executable), "serve", "--data-dir", str(self.data_dir)]
        # every listener on a port of its own: the ops one too (its default, 9180, may be
        # taken by a daemon of the machine's own or a test's)
        for flag, port in (("--http", http), ("--sftp", sftp), ("--ftp", ftp), ("--ops", ops)):
            argv += [flag, f"tcp:{port}:interface={LOOPBACK}"]
        # SIGTERM drains (a grace for uploads): give it time before SIGKILL
        self.child = Child("appliance serve", argv, self.folder / "appliance.log", env=env, stop_grace=15)
        self.child.wait_for_ports([sftp, ftp, http], timeout=30)
        # ftps: the same FTP port with AUTH TLS (the data dir's self-signed certificate);
        # logins: the sign-in rate, over SFTP
        login = {"sftp": sftp, "ftp": ftp, "ftps": ftp, "logins": sftp}
        return {
            protocol: Endpoint(
                "product", protocol, software, Login(port, USERNAME, password), self.stored_path, lambda: self.pid
            )
            for protocol, port in login.items()
        }

    @property
    def pid(self) -> int | None:
        """The daemon's process id while it runs."""
        return self.child.pid if self.child is not None else None

    def stored_path(self, name: str) -> Path | None:
        """Where an upload named `name` landed: the product decides where the
        admin's home is, so look for it among the data dir's local sources."""
        found = [path for path in (self.data_dir / "files").rglob(name) if path.is_file()]
        return found[0] if len(found) == 1 else None

    def log_tail(self, lines: int = 15) -> str:
        """The daemon's last lines of output."""
        return self.child.log_tail(lines) if self.child is not None else ""

    def _environment(self) -> dict:
        """Ours without APPLIANCE_* settings and systemd's notify socket, so
        nothing from the caller's shell reconfigures the daemon; PYTHONPATH is this
        checkout when its own build is measured, so the daemon runs its code (a worktree's .venv may be another
        checkout's, whose editable install would be measured under this one's commit)."""
        env = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith("APPLIANCE_") and name not in ("NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID")
        }
        if self.executable == APPLIANCE:  # another build (--appliance) runs its own code
            env["PYTHONPATH"] = str(REPO_ROOT)
        return env

    def _version(self, env: dict) -> str:
        """`appliance --version` and the repository's commit (+dirty), for the record."""
        version = run_checked([str(self.executable), "--version"], "appliance --version", env=env).strip()
        version = version.removeprefix("appliance").strip() or "?"
        git = ["git", "-C", str(REPO_ROOT)]
        commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True).stdout
        return f"{version} ({commit or 'no commit'}{'+dirty' if dirty else ''})"
