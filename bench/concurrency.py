"""Many SFTP sessions at once, with OpenSSH's `sftp` as the client: a fleet of
`sftp -b -` processes (one per session, reading its batch from a pipe), so the
benchmark decides when each command goes out and reads the echo of each
command, timestamped, as it arrives.

- `downloads`: N sessions connect and sign in (at most CONNECTING at a time,
  so the servers' limits on connections still signing in are not what is
  measured), then all get the same file at once; the aggregate MB/s is what
  they downloaded over the time from the release to the last one's end.
- `idle`: N sessions connect and sign in and then sit there; the daemon's
  memory is read with them held; then each must still answer a `pwd`.

Also here: the daemon's memory from /proc/PID/status, and a thread that
times one API call again and again (the console's dashboard) meanwhile."""

from __future__ import annotations

import concurrent.futures
import http.client
import json
import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from clients import Login, _client_env
from support import LOOPBACK, BenchError, sha256_file

CONNECTING = 32  # sessions signing in at once at most
READY_TIMEOUT = 300  # seconds for a whole fleet to connect and sign in
ECHO = "sftp> "


class Session:
    """One `sftp -b -` process signed in with a key; its stdout lines, timestamped, on a thread."""

    def __init__(self, index: int, login: Login, folder: Path):
        self.index = index
        self.lines: list[tuple[float, str]] = []
        self.ready = threading.Event()  # the echo of the first `pwd`: connected, signed in, subsystem up
        self.done = threading.Event()  # stdout closed
        self.started = time.monotonic()
        self.stderr_path = folder / f"s{index}.stderr"
        argv = ["sftp", "-F", "/dev/null", "-P", str(login.port), "-i", str(login.key_file)]
        for option in (
            "StrictHostKeyChecking=no",
            "UserKnownHostsFile=/dev/null",
            "IdentitiesOnly=yes",
            "IdentityAgent=none",
            "PreferredAuthentications=publickey",
            "LogLevel=ERROR",
        ):
            argv += ["-o", option]
        argv += ["-b", "-", f"{login.username}@{LOOPBACK}"]
        with open(self.stderr_path, "wb") as stderr:
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=_client_env(),
                text=True,
                bufsize=1,
                start_new_session=True,
            )
        self.send("pwd")
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            at = time.monotonic()
            self.lines.append((at, line.rstrip("\n")))
            if line.startswith(ECHO + "pwd"):
                self.ready.set()
        self.done.set()
        self.ready.set()  # an exit before the prompt: wake the waiter, who sees it is not signed in

    def send(self, *commands: str) -> bool:
        try:
            self.process.stdin.write("".join(f"{c}\n" for c in commands))
            self.process.stdin.flush()
            return True
        except (BrokenPipeError, OSError):
            return False

    @property
    def signed_in(self) -> bool:
        return any(text.startswith(ECHO + "pwd") for _, text in self.lines)

    def echoed(self, command: str) -> float | None:
        """When the batch echoed `command` (the last time)."""
        found = [at for at, text in self.lines if text.startswith(ECHO + command)]
        return found[-1] if found else None

    def count(self, prefix: str) -> int:
        return sum(1 for _, text in self.lines if text.startswith(prefix))

    def finish(self, timeout: float) -> int | None:
        """Wait for the process to end; its exit status, None if it had to be killed."""
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        try:
            os.killpg(self.process.pid, 9)
        except ProcessLookupError:
            pass
        self.process.wait()

    def error(self) -> str:
        try:
            text = self.stderr_path.read_text(errors="replace").strip()
        except OSError:
            text = ""
        return f"session {self.index}: exit {self.process.returncode}: {text[-300:] or 'no message'}"


def open_fleet(count: int, login: Login, folder: Path, failures: list[str]) -> tuple[list[Session], float]:
    """Start `count` sessions, at most CONNECTING signing in at a time; returns the
    signed-in ones (the others are killed and their errors added to `failures`) and
    the seconds it took."""
    started = time.monotonic()
    deadline = started + READY_TIMEOUT
    sessions: list[Session] = []
    pending: list[Session] = []
    for index in range(count):
        while len(pending) >= CONNECTING:
            pending[0].ready.wait(max(0.0, deadline - time.monotonic()))
            pending = [s for s in pending if not s.ready.is_set()]
            if time.monotonic() > deadline:
                break
        if time.monotonic() > deadline:
            break
        session = Session(index, login, folder)
        sessions.append(session)
        pending.append(session)
    for session in pending:
        session.ready.wait(max(0.0, deadline - time.monotonic()))
    good = []
    for session in sessions:
        if session.signed_in and session.process.poll() is None:
            good.append(session)
        else:
            session.kill()
            failures.append("did not sign in: " + session.error())
    failures.extend(f"session {i}: not started (out of time)" for i in range(len(sessions), count))
    return good, time.monotonic() - started


def close_fleet(sessions: list[Session]) -> None:
    for session in sessions:
        if session.process.poll() is None:
            session.send("bye")
            try:
                session.process.stdin.close()
            except OSError:
                pass
    for session in sessions:
        session.finish(30)


# ---- the daemon's memory ---------------------------------------------------


def status_kib(pid: int, field_name: str) -> int | None:
    """VmRSS, VmHWM... of a process, in KiB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def reset_peak(pid: int) -> bool:
    """Start VmHWM again from the current RSS (Linux >= 4.0; the process's owner or root)."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


class MemorySampler:
    """VmRSS of one process every `interval` seconds on a thread; `peak_kib` the highest seen."""

    def __init__(self, pid: int | None, interval: float = 0.25):
        self.pid, self.interval = pid, interval
        self.peak_kib = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> MemorySampler:
        if self.pid is not None:
            self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join()

    def _run(self) -> None:
        while not self.stop.is_set():
            rss = status_kib(self.pid, "VmRSS")
            if rss is not None:
                self.peak_kib = max(self.peak_kib, rss)
            self.stop.wait(self.interval)


# ---- the API ---------------------------------------------------------------


class Api:
    """The product's HTTP API signed in as a user (Bearer token). The product's access
    tokens last 15 minutes and a whole run takes longer: `sign_in()` before each part
    that uses the API, and a token older than TOKEN_AGE is renewed before a call."""

    TOKEN_AGE = 600.0

    def __init__(self, port: int, username: str, password: str):
        self.port = port
        self._credentials = {"username": username, "password": password}
        self.token: str | None = None
        self._signed_in_at = 0.0
        self.sign_in()

    def sign_in(self) -> None:
        self.token = None
        status, body = self.call("POST", "token/", self._credentials)
        if status != 200:
            raise BenchError(f"the API sign-in failed: {status} {body}")
        self.token, self._signed_in_at = body["access"], time.monotonic()
        self.profile_id = body["id"]

    def current_token(self) -> str:
        if time.monotonic() - self._signed_in_at > self.TOKEN_AGE:
            self.sign_in()
        return self.token

    def call(self, method: str, path: str, body=None, connection=None) -> tuple[int, object]:
        conn = connection or http.client.HTTPConnection(LOOPBACK, self.port, timeout=60)
        try:
            headers = {"content-type": "application/json"}
            if self.token is not None:
                headers["authorization"] = f"Bearer {self.current_token()}"
            url = path if path.startswith("/") else "/api/portal/" + path  # "/healthz": the ops endpoints
            conn.request(method, url, json.dumps(body) if body is not None else None, headers)
            response = conn.getresponse()
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
        finally:
            if connection is None:
                conn.close()

    def add_ssh_key(self, public_key: str) -> None:
        status, body = self.call("PATCH", f"profiles/{self.profile_id}/", {"ssh_keys": [public_key.strip()]})
        if status != 200:
            raise BenchError(f"could not give the bench admin an SSH key: {status} {body}")


class LatencyProbe:
    """Times `GET /api/portal/PATH` on a thread, one call after another on one
    keep-alive connection (as the console's browser would) with `pause` seconds
    between calls, until stopped."""

    def __init__(self, api: Api, path: str, pause: float = 0.05):
        self.api, self.path, self.pause = api, path, pause
        self.seconds: list[float] = []
        self.timeline: list[tuple[float, float]] = []  # (seconds since the start, seconds the call took)
        self.failures: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.started = time.perf_counter()

    def __enter__(self) -> LatencyProbe:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()

    def _run(self) -> None:
        conn = http.client.HTTPConnection(LOOPBACK, self.api.port, timeout=60)
        while not self.stop.is_set():
            started = time.perf_counter()
            try:
                status, _ = self.api.call("GET", self.path, connection=conn)
            except (OSError, http.client.HTTPException, ValueError) as e:
                self.failures.append(repr(e))
                conn.close()
                conn = http.client.HTTPConnection(LOOPBACK, self.api.port, timeout=60)
                continue
            if status == 200:
                self.seconds.append(time.perf_counter() - started)
                self.timeline.append((round(started - self.started, 3), round(self.seconds[-1], 4)))
            else:
                self.failures.append(f"status {status}")
            self.stop.wait(self.pause)
        conn.close()

    def figures(self) -> dict:
        return {
            "path": self.path if self.path.startswith("/") else "/api/portal/" + self.path,
            "calls": len(self.seconds),
            "failed": len(self.failures),
            "p50_ms": _ms(percentile(self.seconds, 0.50)),
            "p99_ms": _ms(percentile(self.seconds, 0.99)),
            "max_ms": _ms(max(self.seconds) if self.seconds else None),
            "errors": self.failures[:10],
            "timeline": self.timeline,
        }


def percentile(values: list[float], fraction: float) -> float | None:
    """The nearest-rank percentile."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(fraction * len(ordered))) - 1))]


def _ms(seconds: float | None) -> float | None:
    return round(seconds * 1000, 1) if seconds is not None else None


# ---- the two measurements --------------------------------------------------


@dataclass
class DownloadsResult:
    role: str
    software: str
    sessions: int
    size: int
    ok: int = 0
    failures: list[str] = field(default_factory=list)
    connect_seconds: float | None = None  # to sign all sessions in, CONNECTING at a time
    seconds: float | None = None  # from the release to the last download's end
    mb_per_s: float | None = None  # aggregate: bytes of the good downloads / seconds
    session_mb_per_s_median: float | None = None
    peak_rss_kib: int | None = None  # the daemon's (product): sampled VmRSS and VmHWM, the higher
    rss_before_kib: int | None = None
    api: dict | None = None  # the dashboard call's latency meanwhile (product)
    health: dict | None = None  # GET /healthz's meanwhile: no sign-in, no database, the reactor alone
    load_average: list[float] | None = None


def downloads(
    role: str,
    software: str,
    login: Login,
    remote: str,
    sha256: str,
    size: int,
    sessions: int,
    folder: Path,
    pid: int | None = None,
    api: Api | None = None,
    timeout: float = 600,
) -> DownloadsResult:
    """`sessions` sftp sessions signed in, then all `get remote` at once; every copy checked."""
    result = DownloadsResult(role, software, sessions, size)
    if pid is not None:
        result.rss_before_kib = status_kib(pid, "VmRSS")
        reset_peak(pid)
    fleet, result.connect_seconds = open_fleet(sessions, login, folder, result.failures)
    probe = LatencyProbe(api, "dashboard/information/") if api is not None else None
    health = LatencyProbe(api, "/healthz") if api is not None else None
    with MemorySampler(pid) as memory:
        if probe is not None:
            probe.__enter__()
            health.__enter__()
        try:
            released = time.monotonic()
            for session in fleet:
                local = folder / f"d{session.index}.bin"
                if not session.send(f'get "{remote}" "{local}"', "bye"):
                    result.failures.append(f"session {session.index}: its sftp is gone")
            deadline = released + timeout
            for session in fleet:
                session.done.wait(max(0.0, deadline - time.monotonic()))
            ends = [s.echoed("bye") for s in fleet]
            last = max((end for end in ends if end is not None), default=None)
        finally:
            if probe is not None:
                probe.__exit__(None, None, None)
                health.__exit__(None, None, None)
        result.load_average = list(os.getloadavg())
    if pid is not None:
        peak = max(memory.peak_kib, status_kib(pid, "VmHWM") or 0)
        result.peak_rss_kib = peak or None
    good, per_session = [], []
    for session, end in zip(fleet, ends, strict=True):
        status = session.finish(30)
        if status != 0 or end is None:
            result.failures.append(session.error())
            continue
        good.append(session)
        start = session.echoed("get")
        if start is not None and end > start:
            per_session.append(size / 1e6 / (end - start))

    def check(session: Session) -> str | None:
        local = folder / f"d{session.index}.bin"
        try:
            got_size, digest = local.stat().st_size, sha256_file(local)
        except OSError as e:
            return f"session {session.index}: {e}"
        finally:
            local.unlink(missing_ok=True)
        if digest != sha256:
            return f"session {session.index}: CHECKSUM MISMATCH ({got_size} bytes, sha256 {digest[:16]}...)"
        return None

    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # hashlib lets go of the GIL
        for error in pool.map(check, good):
            if error:
                result.failures.append(error)
            else:
                result.ok += 1
    for leftover in folder.glob("d*.bin"):
        leftover.unlink()
    if last is not None:
        result.seconds = last - released
        result.mb_per_s = result.ok * size / 1e6 / result.seconds
    if per_session:
        per_session.sort()
        result.session_mb_per_s_median = per_session[len(per_session) // 2]
    if probe is not None:
        result.api = probe.figures()
        result.health = health.figures()
    return result


@dataclass
class IdleResult:
    sessions: int
    signed_in: int = 0
    answered: int = 0
    failures: list[str] = field(default_factory=list)
    connect_seconds: float | None = None
    rss_before_kib: int | None = None
    rss_held_kib: int | None = None  # VmRSS with every session held, after a settle
    peak_rss_kib: int | None = None  # VmHWM over the phase
    load_average: list[float] | None = None


def idle(login: Login, sessions: int, folder: Path, pid: int, settle: float = 3.0) -> IdleResult:
    """`sessions` sessions signed in and held; the daemon's memory; then each must answer `pwd`."""
    result = IdleResult(sessions)
    result.rss_before_kib = status_kib(pid, "VmRSS")
    reset_peak(pid)
    fleet, result.connect_seconds = open_fleet(sessions, login, folder, result.failures)
    result.signed_in = len(fleet)
    time.sleep(settle)
    result.rss_held_kib = status_kib(pid, "VmRSS")
    result.peak_rss_kib = status_kib(pid, "VmHWM")
    result.load_average = list(os.getloadavg())
    for session in fleet:
        if not session.send("pwd", "bye"):
            result.failures.append(f"session {session.index}: its sftp is gone")
    for session in fleet:
        try:
            session.process.stdin.close()
        except OSError:
            pass
    for session in fleet:
        status = session.finish(120)
        # two pwd echoes and two answers: the one at sign-in and the one after the wait
        if status == 0 and session.count("Remote working directory") >= 2:
            result.answered += 1
        else:
            result.failures.append("did not answer after the wait: " + session.error())
    return result
