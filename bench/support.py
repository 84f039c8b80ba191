"""Plumbing shared by the benchmark: the system packages it drives, the
temporary workspace, loopback ports, the server processes it starts, test
files and their checksums."""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
LOOPBACK = "127.0.0.1"
MIB = 1024 * 1024

# what the benchmark runs -> the Debian package that has it
SYSTEM_TOOLS = {
    "/usr/sbin/sshd": "openssh-server",
    "sftp": "openssh-client",
    "ssh-keygen": "openssh-client",
    "sshpass": "sshpass",
    "lftp": "lftp",
    "/usr/sbin/vsftpd": "vsftpd",
    "curl": "curl",
    "openssl": "openssl",  # vsftpd's certificate for FTPS
}


class BenchError(Exception):
    """Something the benchmark needs could not be set up; the message says why."""


def run_checked(argv: list[str], what: str, stdin_text: str | None = None, env: dict | None = None) -> str:
    """Run a short command to completion; its stdout, or BenchError with its output."""
    try:
        done = subprocess.run(argv, input=stdin_text, capture_output=True, text=True, env=env, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BenchError(f"{what}: {e}") from None
    if done.returncode != 0:
        output = (done.stdout + done.stderr).strip()
        raise BenchError(f"{what}: `{' '.join(argv)}` exited with {done.returncode}\n{output}")
    return done.stdout


def _tool_present(tool: str) -> bool:
    return os.access(tool, os.X_OK) if tool.startswith("/") else shutil.which(tool) is not None


def ensure_system_packages() -> None:
    """Install the Debian packages of any missing tool (as root); nothing when all are there."""
    missing = sorted({package for tool, package in SYSTEM_TOOLS.items() if not _tool_present(tool)})
    if not missing:
        return
    if os.geteuid() != 0:
        raise BenchError(f"missing system packages: {' '.join(missing)} (run as root to install them)")
    print(f"installing: {' '.join(missing)}", flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run_checked(["apt-get", "update", "-qq"], "apt-get update", env=env)
    run_checked(["apt-get", "install", "-y", "-qq", *missing], "apt-get install", env=env)


def package_version(package: str) -> str | None:
    """The installed Debian version of a package, or None."""
    try:
        return run_checked(["dpkg-query", "-W", "-f", "${Version}", package], "dpkg-query").strip() or None
    except BenchError:
        return None


@contextlib.contextmanager
def one_run_at_a_time():
    """Wait for any other bench/run on this machine to end: two at once share the CPUs
    (so each measures the other) and reset each other's system users' passwords."""
    folder = "/run/lock" if os.path.isdir("/run/lock") and os.access("/run/lock", os.W_OK) else tempfile.gettempdir()
    with open(os.path.join(folder, "appliance-bench.lock"), "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print("waiting for another bench/run on this machine to finish ...", flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


# ---- sizes and files ------------------------------------------------------

_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]?)(?:i?B)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "K": 1024, "M": MIB, "G": 1024 * MIB}


def parse_size(text: str) -> int:
    """'256M' -> 268435456 (K, M and G are binary multiples)."""
    match = _SIZE.match(text)
    if not match or int(match.group(1)) == 0:
        raise ValueError(f"not a size: {text!r} (examples: 64M, 256M, 1G)")
    return int(match.group(1)) * _UNITS[match.group(2).upper()]


def format_size(size: int) -> str:
    """268435456 -> '256 MiB'."""
    for unit, factor in (("GiB", 1024 * MIB), ("MiB", MIB), ("KiB", 1024)):
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} B"


def sha256_file(path: Path) -> str:
    """The hex SHA-256 of a file's content."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(4 * MIB):
            digest.update(chunk)
    return digest.hexdigest()


def write_random_file(path: Path, size: int) -> str:
    """Fill `path` with `size` random (incompressible) bytes; return their SHA-256."""
    digest = hashlib.sha256()
    with open(path, "wb") as f:
        remaining = size
        while remaining:
            chunk = os.urandom(min(4 * MIB, remaining))
            digest.update(chunk)
            f.write(chunk)
            remaining -= len(chunk)
    return digest.hexdigest()


# ---- the workspace --------------------------------------------------------


class Workspace:
    """A temporary directory for everything one run creates, in /dev/shm when it
    has room for `needed` bytes (transfers then measure the servers, not a
    disk), else in the system's temporary directory. Removed on exit."""

    def __init__(self, needed: int, keep: bool = False):
        self.needed = needed
        self.keep = keep
        self.path: Path | None = None

    def __enter__(self) -> Workspace:
        parent = "/dev/shm"
        if not os.path.isdir(parent) or shutil.disk_usage(parent).free < self.needed:
            parent = tempfile.gettempdir()
            if shutil.disk_usage(parent).free < self.needed:
                print(f"warning: {parent} has less than the {format_size(self.needed)} this run needs", flush=True)
        self.path = Path(tempfile.mkdtemp(prefix="appliance-bench-", dir=parent))
        # other users' servers (vsftpd's benchftp) must pass through to their own folders
        self.path.chmod(0o711)
        return self

    def __exit__(self, *exc) -> None:
        if self.keep:
            print(f"kept the workspace: {self.path}")
        else:
            shutil.rmtree(self.path, ignore_errors=True)

    @property
    def on_tmpfs(self) -> bool:
        return str(self.path).startswith("/dev/shm/")

    def folder(self, name: str, mode: int = 0o700) -> Path:
        """A new folder inside the workspace."""
        folder = self.path / name
        folder.mkdir(mode=mode)
        folder.chmod(mode)  # the umask narrows mkdir's mode
        return folder


# ---- ports ----------------------------------------------------------------


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


class Ports:
    """Hands out free loopback ports, never the same one twice in a run."""

    # passive FTP ranges sit below the kernel's ephemeral range so that no
    # outgoing connection can take one between our check and the server's bind
    RANGE_FLOOR, RANGE_CEILING = 20000, 32000

    def __init__(self):
        self._given: set[int] = set()

    def one(self) -> int:
        """A free high port."""
        while True:
            with socket.socket() as s:
                s.bind((LOOPBACK, 0))
                port = s.getsockname()[1]
            if port not in self._given:
                self._given.add(port)
                return port

    def span(self, count: int) -> tuple[int, int]:
        """`count` consecutive free ports, as (first, last)."""
        for _ in range(200):
            first = random.randrange(self.RANGE_FLOOR, self.RANGE_CEILING - count)
            ports = range(first, first + count)
            if not self._given.intersection(ports) and all(_bindable(p) for p in ports):
                self._given.update(ports)
                return first, first + count - 1
        raise BenchError(f"found no {count} consecutive free ports in {self.RANGE_FLOOR}-{self.RANGE_CEILING}")


def accepts_connections(port: int) -> bool:
    """Does something listen on this loopback port?"""
    try:
        with socket.create_connection((LOOPBACK, port), timeout=1):
            return True
    except OSError:
        return False


# ---- the server processes -------------------------------------------------

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM if the benchmark itself is killed."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def scheduler_times(pid: int) -> dict | None:
    """The scheduler's running totals for process `pid` (None when it is gone):
    its main thread's, and its threads' together ("all_threads": a thread that ends
    takes its share with it). For each, the CPU time, the time spent runnable but
    waiting for a CPU (on a VM this includes waiting for the host to run the vCPU
    it was woken on), the times it went to sleep, was preempted, and moved to
    another CPU."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    total = dict.fromkeys(("cpu_ms", "wait_ms", "sleeps", "preempted", "migrations"), 0)
    main = None
    for task in tasks:
        times = _task_times(f"/proc/{pid}/task/{task}")
        if times is None:
            if task == str(pid):
                return None
            continue  # a thread that ended meanwhile
        for name, value in times.items():
            total[name] += value
        if task == str(pid):
            main = times
    return {"main_thread": main, "all_threads": total} if main is not None else None


def _task_times(folder: str) -> dict | None:
    try:
        run_ns, wait_ns, _slices = map(int, Path(folder, "schedstat").read_text().split())
        fields = {}
        for line in Path(folder, "sched").read_text().splitlines():
            name, colon, value = line.partition(":")
            if colon:
                fields[name.strip()] = value.strip()
        return {
            "cpu_ms": run_ns / 1e6,
            "wait_ms": wait_ns / 1e6,
            "sleeps": int(fields["nr_voluntary_switches"]),
            "preempted": int(fields["nr_involuntary_switches"]),
            "migrations": int(fields["se.nr_migrations"]),
        }
    except (OSError, ValueError, KeyError):
        return None


def times_between(before: dict | None, after: dict | None) -> dict | None:
    """What `scheduler_times` counted between two readings."""
    if before is None or after is None:
        return None
    return {part: {name: round(after[part][name] - before[part][name], 3) for name in before[part]} for part in before}


class Child:
    """A server process the benchmark started: its own process group (so Ctrl-C
    reaches the benchmark, which then stops it and its forks), its output in a
    log file, terminated by `stop()` or when the benchmark dies."""

    def __init__(self, name: str, argv: list[str], log_path: Path, env: dict | None = None, stop_grace: float = 5):
        self.name = name
        self.log_path = log_path
        self.stop_grace = stop_grace
        with open(log_path, "wb") as log:
            try:
                self.process = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                    preexec_fn=_die_with_parent,
                )
            except OSError as e:
                raise BenchError(f"{name}: cannot start {argv[0]}: {e}") from None

    @property
    def pid(self) -> int | None:
        """The process id while it runs."""
        return self.process.pid if self.process.poll() is None else None

    def log_tail(self, lines: int = 40) -> str:
        """The last lines the process wrote."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def wait_for_ports(self, ports: list[int], timeout: float = 30) -> None:
        """Return once every port accepts TCP connections; BenchError if the process dies or time runs out."""
        deadline = time.monotonic() + timeout
        waiting = list(ports)
        while waiting:
            if self._exited():
                self.stop()
                raise BenchError(
                    f"{self.name} exited with status {self.process.returncode} before listening; its output:\n"
                    + self.log_tail()
                )
            if time.monotonic() > deadline:
                raise BenchError(
                    f"{self.name} did not listen on port(s) {', '.join(map(str, waiting))} within {timeout:.0f} s; "
                    "its output:\n" + self.log_tail()
                )
            waiting = [port for port in waiting if not accepts_connections(port)]
            if waiting:
                time.sleep(0.1)

    def stop(self) -> None:
        """SIGTERM the process group, SIGKILL what is left after the grace period."""
        if not self._exited():
            self._signal_group(signal.SIGTERM)
            deadline = time.monotonic() + self.stop_grace
            while not self._exited() and time.monotonic() < deadline:
                time.sleep(0.05)
            if not self._exited():
                print(f"{self.name} did not stop within {self.stop_grace:.0f} s: killing it", flush=True)
        if self.process.returncode is None:
            # not reaped yet, so the group id is still ours: kill its forks too
            self._signal_group(signal.SIGKILL)
        self.process.wait()

    def _exited(self) -> bool:
        """Has the process ended? Leaves it unreaped, so that its group id cannot be reused."""
        if self.process.returncode is not None:
            return True
        return os.waitid(os.P_PID, self.process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None

    def _signal_group(self, signum: int) -> None:
        try:
            os.killpg(self.process.pid, signum)
        except ProcessLookupError:
            pass
