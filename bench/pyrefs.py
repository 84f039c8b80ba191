"""The Python reference servers: asyncssh's SFTP server and pyftpdlib's FTP server,
measured with the same clients as OpenSSH and vsftpd, next to the product.

They run from `.venv-bench` (bench/requirements.txt, exact pins), a venv of their
own that `bench/run` makes when it is missing or out of date: never the product's
venv nor its dependencies. Each is `pyservers.py` on a free loopback port, in its
own process. Their endpoints take the server's name as role ("asyncssh",
"pyftpdlib"), so the main table (product against OpenSSH and vsftpd) stays as it
is and these get a table of their own."""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from clients import DOWNLOAD, UPLOAD, Endpoint, Login
from support import LOOPBACK, REPO_ROOT, BenchError, Child, Ports, Workspace, format_size, run_checked

VENV = REPO_ROOT / ".venv-bench"
PYTHON = VENV / "bin" / "python"
REQUIREMENTS = Path(__file__).resolve().parent / "requirements.txt"
SERVERS_SCRIPT = Path(__file__).resolve().parent / "pyservers.py"
STAMP = VENV / ".installed"  # a copy of the requirements it was made from
PROTOCOL_OF = {"asyncssh": "sftp", "pyftpdlib": "ftp"}
PASSIVE_PORTS = 20
FTP_USER = "bench"


def parse_refs(text: str) -> list[str]:
    """'asyncssh,pyftpdlib' -> the names; 'none' -> []."""
    names = [] if text.strip() in ("", "none") else [name.strip() for name in text.split(",")]
    unknown = [name for name in names if name not in PROTOCOL_OF]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown: {', '.join(unknown)} (asyncssh, pyftpdlib or none)")
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--refs",
        default="asyncssh,pyftpdlib",
        type=parse_refs,
        metavar="NAMES",
        help="Python reference servers measured too, for the protocols of the run: asyncssh (SFTP), "
        "pyftpdlib (FTP), comma-separated, or none (default: both; they run from .venv-bench)",
    )


def chosen(args: argparse.Namespace) -> list[str]:
    """The Python servers this run measures: asked for, their protocol in the run, references not skipped."""
    if "reference" not in args.roles:
        return []
    return [name for name in args.refs if PROTOCOL_OF[name] in args.protocols]


def ensure_venv() -> None:
    """Make .venv-bench from bench/requirements.txt unless it already is."""
    # the product's interpreter (its .venv's: Debian's python3.11, see the Makefile), so that
    # the two Python servers and the product run on the same one
    product_python = REPO_ROOT / ".venv" / "bin" / "python"
    interpreter = str(product_python.resolve()) if product_python.exists() else sys.executable
    wanted = f"{interpreter}\n{REQUIREMENTS.read_text()}"
    if PYTHON.exists() and STAMP.exists() and STAMP.read_text() == wanted:
        return
    print(f"installing the Python reference servers into {VENV.relative_to(REPO_ROOT)} ...", flush=True)
    if PYTHON.exists() and PYTHON.resolve() != Path(interpreter):
        shutil.rmtree(VENV)  # made by another interpreter
    if not PYTHON.exists():
        run_checked([interpreter, "-m", "venv", str(VENV)], "python -m venv")
    run_checked(
        [str(PYTHON), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r", str(REQUIREMENTS)],
        "pip install -r bench/requirements.txt",
    )
    STAMP.write_text(wanted)


def _version(module: str, attribute: str) -> str:
    try:
        return run_checked([str(PYTHON), "-c", f"import {module}; print({module}.{attribute})"], module).strip()
    except BenchError:
        return "?"


class PythonServer(contextlib.AbstractContextManager):
    """One of pyservers.py's servers in a workspace folder; leaving the context stops it."""

    name: str

    def __init__(self, workspace: Workspace, ports: Ports):
        self.workspace = workspace
        self.ports = ports
        self.folder = workspace.folder(f"ref-{self.name}")  # keys, log
        self.files = workspace.folder(f"ref-{self.name}-files", 0o755)  # what clients see
        self.child: Child | None = None

    def __exit__(self, *exc) -> None:
        if self.child is not None:
            self.child.stop()

    def stored_path(self, name: str) -> Path:
        return self.files / name

    def event_loop_pid(self) -> int | None:
        return self.child.pid if self.child is not None else None

    def _start(self, argv: list[str], port: int, env: dict | None = None) -> None:
        command = [str(PYTHON), "-u", str(SERVERS_SCRIPT), self.name, "--host", LOOPBACK, "--port", str(port)]
        self.child = Child(self.name, [*command, "--folder", str(self.files), *argv], self.folder / "log", env=env)
        self.child.wait_for_ports([port])


class AsyncsshServer(PythonServer):
    """asyncssh's SFTP server with its default algorithms; the client signs in with a generated key."""

    name = "asyncssh"

    def start(self) -> Endpoint:
        host_key, client_key = self.folder / "host_key", self.folder / "client_key"
        for key in (host_key, client_key):
            run_checked(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "bench", "-f", str(key)], "ssh-keygen")
        port = self.ports.one()
        self._start(
            ["--host-key", str(host_key), "--authorized-keys", str(client_key.with_suffix(".pub"))], port
        )  # fmt: skip
        software = f"asyncssh {_version('asyncssh', '__version__')} SFTP"
        login = Login(port, "bench", key_file=client_key)
        return Endpoint(self.name, "sftp", software, login, self.stored_path, self.event_loop_pid)


class PyftpdlibServer(PythonServer):
    """pyftpdlib's FTPHandler (plain FTP) for one user with a random password, passive ports in a free range."""

    name = "pyftpdlib"

    def start(self) -> Endpoint:
        password = secrets.token_urlsafe(18)
        port = self.ports.one()
        low, high = self.ports.span(PASSIVE_PORTS)
        env = dict(os.environ, PYFTPDLIB_PASSWORD=password)
        self._start(["--user", FTP_USER, "--passive-low", str(low), "--passive-high", str(high)], port, env)
        software = f"pyftpdlib {_version('pyftpdlib', '__ver__')}"
        return Endpoint(
            self.name, "ftp", software, Login(port, FTP_USER, password), self.stored_path, self.event_loop_pid
        )


SERVERS = {"asyncssh": AsyncsshServer, "pyftpdlib": PyftpdlibServer}


def start(args, workspace: Workspace, ports: Ports, servers: contextlib.ExitStack, cannot_measure) -> dict:
    """Start the chosen Python servers: {(name, protocol): endpoint}; what cannot start goes to cannot_measure."""
    started = start_named(chosen(args), workspace, ports, servers, cannot_measure)
    return {(name, PROTOCOL_OF[name]): endpoint for name, (_, endpoint) in started.items()}


def start_named(
    names: list[str], workspace: Workspace, ports: Ports, servers: contextlib.ExitStack, cannot_measure
) -> dict[str, tuple[PythonServer, Endpoint]]:
    """Start the Python servers `names`: {name: (server, endpoint)}, the server for its
    folder on disk (bench/smallfiles.py checks trees there); what cannot start goes to
    cannot_measure, and the run goes on without it."""
    if not names:
        return {}
    try:
        ensure_venv()
    except (BenchError, OSError) as e:
        for name in names:
            cannot_measure(f"reference {name}", str(e))
        return {}
    started = {}
    for name in names:
        server = servers.enter_context(SERVERS[name](workspace, ports))
        try:
            started[name] = server, server.start()
        except (BenchError, subprocess.SubprocessError) as e:
            cannot_measure(f"reference {name}", str(e))
    return started


def summary(measurements: list, args: argparse.Namespace) -> list[dict]:
    """Per Python server, direction and size: its median MB/s, the product's, and their
    ratio; and for each side the median CPU time its process spent per transfer (all
    threads, ms) and how often its main thread (the event loop) went to sleep."""
    rows = []
    names = sorted({m.role for m in measurements if m.role in PROTOCOL_OF})
    for name in names:
        protocol = PROTOCOL_OF[name]
        for direction in (UPLOAD, DOWNLOAD):
            for size in args.sizes:
                row = {"server": name, "protocol": protocol, "direction": direction, "size": size}
                for role, key in ((name, "reference"), ("product", "product")):
                    figures = [
                        m.mb_per_s
                        for m in measurements
                        if m.ok and (m.role, m.protocol, m.direction, m.size) == (role, protocol, direction, size)
                    ]
                    row[f"{key}_mb_per_s"] = statistics.median(figures) if figures else None
                    row[f"{key}_runs"] = len(figures)
                    spent = [
                        m.details["server_scheduler"]
                        for m in measurements
                        if m.ok
                        and (m.role, m.protocol, m.direction, m.size) == (role, protocol, direction, size)
                        and (m.details or {}).get("server_scheduler")
                    ]
                    row[f"{key}_cpu_ms"] = (
                        statistics.median(t["all_threads"]["cpu_ms"] for t in spent) if spent else None
                    )
                    row[f"{key}_loop_sleeps"] = (
                        statistics.median(t["main_thread"]["sleeps"] for t in spent) if spent else None
                    )
                product, reference = row["product_mb_per_s"], row["reference_mb_per_s"]
                row["ratio"] = product / reference if product and reference else None
                rows.append(row)
    return rows


def print_table(measurements: list, args: argparse.Namespace) -> None:
    rows = summary(measurements, args)
    if not rows:
        return

    def figure(value: float | None, width: int) -> str:
        return f"{value:{width}.1f}" if value is not None else f"{'-':>{width}}"

    print(
        f"\nAgainst the Python servers (same clients, same runs; medians of uploads {args.repeat} x "
        f"{args.timed_uploads}, downloads {args.repeat} x {args.timed_downloads}; MB = 10^6 bytes):\n"
    )
    header = (
        f"{'server':9}  {'protocol':8}  {'direction':9}  {'size':>8}  {'product MB/s':>12}  {'server MB/s':>11}  "
        f"{'ratio':>5}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        ratio = f"{row['ratio']:5.2f}" if row["ratio"] is not None else f"{'-':>5}"
        print(
            f"{row['server']:9}  {row['protocol']:8}  {row['direction']:9}  {format_size(row['size']):>8}  "
            f"{figure(row['product_mb_per_s'], 12)}  {figure(row['reference_mb_per_s'], 11)}  {ratio}"
        )
    if any(row["product_cpu_ms"] is not None or row["reference_cpu_ms"] is not None for row in rows):
        print("\nWhat each server's process spent per transfer (median; CPU: all its threads, ms; sleeps: its main")
        print("thread's, the event loop going to sleep; see bench/README.md, \"Reading the servers' own figures\"):\n")
        header = f"{'server':9}  {'protocol':8}  {'direction':9}  {'size':>8}  {'product CPU / sleeps':>20}  {'server CPU / sleeps':>19}"
        print(header)
        print("-" * len(header))
        for row in rows:
            print(
                f"{row['server']:9}  {row['protocol']:8}  {row['direction']:9}  {format_size(row['size']):>8}  "
                f"{_spent(row, 'product'):>20}  {_spent(row, 'reference'):>19}"
            )


def _spent(row: dict, side: str) -> str:
    cpu, sleeps = row[f"{side}_cpu_ms"], row[f"{side}_loop_sleeps"]
    return f"{cpu:.0f} / {sleeps:.0f}" if cpu is not None and sleeps is not None else "-"
