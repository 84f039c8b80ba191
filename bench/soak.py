#!/usr/bin/env python3
"""Soak: many SFTP, FTP and HTTP API sessions against one daemon at once, on
loopback, for a bounded time. Every transfer is checksummed (uploaded, read
back, compared); the report counts failures and corruption, the daemon's peak
RSS (VmHWM) and the API's p50/p99 latency.

    bench/soak.py                       # 200 SFTP + 100 FTP sessions and API traffic, 10 minutes
    bench/soak.py --duration 20 --sftp 20 --ftp 10 --json out.json

SFTP sessions are OpenSSH `sftp` processes (via sshpass), each running batches
of put/get pairs and starting again until time is up; FTP sessions are ftplib
connections in threads, each signed in once for the whole run; the API is
driven with http.client by --http threads. Exit status 0 when nothing failed,
1 when a transfer failed or came back different, 2 when the daemon did not start.
"""

from __future__ import annotations

import argparse
import ftplib
import hashlib
import http.client
import json
import os
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from support import LOOPBACK, REPO_ROOT, BenchError, Child, Ports, Workspace, run_checked  # noqa: E402

APPLIANCE = REPO_ROOT / ".venv" / "bin" / "appliance"
USERS = 10  # sessions share these profiles round robin
SIZES = (4 * 1024, 64 * 1024, 512 * 1024)  # bytes per file, cycled


class Tally:
    """Counts from every worker thread."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {f"{p}_{k}": 0 for p in ("sftp", "ftp", "http") for k in ("ok", "failed", "corrupt")}
        self.sftp_sessions = 0
        self.latencies: list[float] = []
        self.errors: list[str] = []

    def add(self, protocol: str, kind: str, n: int = 1, error: str | None = None) -> None:
        with self.lock:
            self.counts[f"{protocol}_{kind}"] += n
            if error and len(self.errors) < 50:
                self.errors.append(f"{protocol}: {error}")


def _payload(size: int) -> tuple[bytes, str]:
    data = os.urandom(size)
    return data, hashlib.sha256(data).hexdigest()


# ---- the daemon -----------------------------------------------------------


def start_daemon(folder: Path, ports: Ports, sessions: int) -> tuple[Child, dict]:
    data_dir = folder / "data"
    env = {n: v for n, v in os.environ.items() if not n.startswith("APPLIANCE_") and n not in ("NOTIFY_SOCKET",)}
    password = secrets.token_urlsafe(18)
    run_checked(
        [str(APPLIANCE), "setup", "--data-dir", str(data_dir), "--org", "Soak", "--username", "soakadmin",
         "--email", "soak@example.com", "--password-stdin"],
        "appliance setup failed", stdin_text=password + "\n", env=env,
    )  # fmt: skip
    http_port, sftp_port, ftp_port, ops_port = ports.one(), ports.one(), ports.one(), ports.one()
    passive_low, passive_high = ports.span(min(2000, max(50, 2 * sessions)))
    env["APPLIANCE_FTP_PASSIVE_PORTS"] = f"{passive_low}-{passive_high}"
    # everything comes from 127.0.0.1: lift the per-address limits meant for the internet
    env["APPLIANCE_SECURITY_MAX_CONNECTIONS_PER_ADDRESS"] = str(sessions * 2 + 100)
    env["APPLIANCE_SECURITY_MAX_UNAUTHENTICATED"] = str(sessions * 2 + 100)
    env["APPLIANCE_SECURITY_MAX_UNAUTHENTICATED_PER_ADDRESS"] = str(sessions * 2 + 100)
    argv = [str(APPLIANCE), "serve", "--data-dir", str(data_dir)]
    # the ops listener too: its default (9180) may be taken (see product.py)
    for flag, port in (("--http", http_port), ("--sftp", sftp_port), ("--ftp", ftp_port), ("--ops", ops_port)):
        argv += [flag, f"tcp:{port}:interface={LOOPBACK}"]
    child = Child("appliance serve", argv, folder / "appliance.log", env=env, stop_grace=15)
    child.wait_for_ports([http_port, sftp_port, ftp_port], timeout=60)
    return child, {"http": http_port, "sftp": sftp_port, "ftp": ftp_port, "password": password}


def api_call(port: int, method: str, path: str, body=None, token: str | None = None) -> tuple[int, object]:
    conn = http.client.HTTPConnection(LOOPBACK, port, timeout=60)
    try:
        headers = {"content-type": "application/json"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        conn.request(method, "/api/portal/" + path, json.dumps(body) if body is not None else None, headers)
        response = conn.getresponse()
        raw = response.read()
        return response.status, json.loads(raw) if raw else None
    finally:
        conn.close()


def make_users(port: int, admin_password: str) -> tuple[str, list[tuple[str, str]]]:
    status, body = api_call(port, "POST", "token/", {"username": "soakadmin", "password": admin_password})
    if status != 200:
        raise BenchError(f"the admin could not sign in: {status} {body}")
    token = body["access"]
    users = []
    for n in range(USERS):
        name, password = f"soak{n}", secrets.token_urlsafe(12)
        status, body = api_call(
            port, "POST", "profiles/",
            {"username": name, "email": f"{name}@example.com", "password": password,
             "protocols": ["sftp", "ftp", "web"]},
            token,
        )  # fmt: skip
        if status != 201:
            raise BenchError(f"could not create {name}: {status} {body}")
        users.append((name, password))
    return token, users


# ---- the sessions ---------------------------------------------------------


def sftp_session(index: int, port: int, user: tuple[str, str], scratch: Path, deadline: float, tally: Tally,
                 rounds: int) -> None:  # fmt: skip
    folder = scratch / f"sftp{index}"
    folder.mkdir()
    batch = folder / "batch"
    env = {n: v for n, v in os.environ.items() if n not in ("SSH_AUTH_SOCK",)}
    env["SSHPASS"] = user[1]
    argv = ["sshpass", "-e", "sftp", "-F", "/dev/null", "-P", str(port), "-o", "StrictHostKeyChecking=no",
            "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=no", "-o", "PubkeyAuthentication=no",
            "-o", "PreferredAuthentications=password", "-o", "LogLevel=ERROR",
            "-b", str(batch), f"{user[0]}@{LOOPBACK}"]  # fmt: skip
    run = 0
    while time.monotonic() < deadline:
        files, lines = [], [f"-mkdir s{index}"]
        for r in range(rounds):
            data, digest = _payload(SIZES[(run + r) % len(SIZES)])
            up, down = folder / f"up{r}", folder / f"down{r}"
            up.write_bytes(data)
            down.unlink(missing_ok=True)
            remote = f"s{index}/f{r}"
            lines += [f'put "{up}" {remote}', f'get {remote} "{down}"', f"rm {remote}"]
            files.append((down, digest))
        batch.write_text("\n".join(lines) + "\n")
        run += 1
        try:
            done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            tally.add("sftp", "failed", len(files), "sftp timed out after 300 s")
            continue
        with tally.lock:
            tally.sftp_sessions += 1
        for down, digest in files:
            if not down.exists():
                tally.add("sftp", "failed", 1, f"exit {done.returncode}: {done.stderr.strip()[-300:]}")
            elif hashlib.sha256(down.read_bytes()).hexdigest() != digest:
                tally.add("sftp", "corrupt", 1, f"{down.name} came back different")
            else:
                tally.add("sftp", "ok")


def ftp_session(index: int, port: int, user: tuple[str, str], deadline: float, tally: Tally) -> None:
    ftp = None
    run = 0
    while time.monotonic() < deadline:
        try:
            if ftp is None:
                ftp = ftplib.FTP()
                ftp.connect(LOOPBACK, port, timeout=120)
                ftp.login(*user)
            data, digest = _payload(SIZES[run % len(SIZES)])
            name = f"ftp{index}-{run}"
            run += 1
            ftp.storbinary(f"STOR {name}", _Reader(data))
            back = bytearray()
            ftp.retrbinary(f"RETR {name}", back.extend)
            ftp.delete(name)
            if hashlib.sha256(back).hexdigest() != digest:
                tally.add("ftp", "corrupt", 1, f"{name} came back different ({len(back)} of {len(data)} bytes)")
            else:
                tally.add("ftp", "ok")
        except (*ftplib.all_errors, EOFError) as error:
            tally.add("ftp", "failed", 1, repr(error))
            try:
                if ftp is not None:
                    ftp.close()
            finally:
                ftp = None
    if ftp is not None:
        try:
            ftp.quit()
        except (*ftplib.all_errors, EOFError):
            ftp.close()


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def read(self, size: int) -> bytes:
        chunk = self.data[self.at : self.at + size]
        self.at += len(chunk)
        return chunk


def http_session(port: int, token: str, deadline: float, tally: Tally) -> None:
    paths = ("files/?path=/", "profiles/", "logs/?page_size=20", "bans/", "organisation/")
    n = 0
    while time.monotonic() < deadline:
        path = paths[n % len(paths)]
        n += 1
        started = time.perf_counter()
        try:
            status, _ = api_call(port, "GET", path, token=token)
        except (OSError, http.client.HTTPException, ValueError) as error:
            tally.add("http", "failed", 1, f"GET {path}: {error!r}")
            continue
        elapsed = time.perf_counter() - started
        if status == 200:
            with tally.lock:
                tally.latencies.append(elapsed)
            tally.add("http", "ok")
        else:
            tally.add("http", "failed", 1, f"GET {path}: {status}")


def vm_hwm_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def percentile(values: list[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=600, help="seconds of load (default 600)")
    parser.add_argument("--sftp", type=int, default=200, help="concurrent SFTP sessions (default 200)")
    parser.add_argument("--ftp", type=int, default=100, help="concurrent FTP sessions (default 100)")
    parser.add_argument("--http", type=int, default=4, help="threads calling the API (default 4)")
    parser.add_argument("--rounds", type=int, default=5, help="put/get pairs per sftp process (default 5)")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--keep-workdir", action="store_true")
    args = parser.parse_args(argv)

    tally = Tally()
    with Workspace(needed=(args.sftp + args.ftp) * 4 * max(SIZES) + 200_000_000, keep=args.keep_workdir) as space:
        try:
            child, info = start_daemon(space.folder("product"), Ports(), args.sftp + args.ftp)
        except BenchError as error:
            print(f"the daemon did not start: {error}", file=sys.stderr)
            return 2
        try:
            token, users = make_users(info["http"], info["password"])
            scratch = space.folder("clients")
            started = time.monotonic()
            deadline = started + args.duration
            threads = [
                threading.Thread(
                    target=sftp_session,
                    args=(i, info["sftp"], users[i % USERS], scratch, deadline, tally, args.rounds),
                )
                for i in range(args.sftp)
            ]
            threads += [
                threading.Thread(target=ftp_session, args=(i, info["ftp"], users[i % USERS], deadline, tally))
                for i in range(args.ftp)
            ]
            threads += [
                threading.Thread(target=http_session, args=(info["http"], token, deadline, tally))
                for _ in range(args.http)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed = time.monotonic() - started
            alive = child.process.poll() is None
            peak = vm_hwm_kib(child.process.pid)
        finally:
            log_tail = child.log_tail(20)
            child.stop()

    p50, p99 = percentile(tally.latencies, 0.50), percentile(tally.latencies, 0.99)
    figures = {
        "duration_s": round(elapsed, 1),
        "sessions": {"sftp": args.sftp, "ftp": args.ftp, "http_threads": args.http},
        **tally.counts,
        "sftp_processes": tally.sftp_sessions,
        "daemon_alive_at_end": alive,
        "peak_rss_kib": peak,
        "api_p50_ms": round(p50 * 1000, 1) if p50 is not None else None,
        "api_p99_ms": round(p99 * 1000, 1) if p99 is not None else None,
        "errors": tally.errors,
    }
    for key, value in figures.items():
        if key != "errors":
            print(f"{key:22} {value}")
    for error in tally.errors[:10]:
        print("error:", error)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    bad = sum(v for k, v in tally.counts.items() if k.endswith(("failed", "corrupt")))
    if bad or not alive:
        print("daemon log tail:\n" + log_tail, file=sys.stderr)
    return 1 if bad or not alive else 0


if __name__ == "__main__":
    sys.exit(main())
