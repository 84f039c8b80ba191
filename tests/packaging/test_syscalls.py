"""Every system call the daemon makes is one its unit's filter allows.

The daemon (this checkout's, on Debian's python3.11 as the .deb runs it) serves a round
of SFTP, FTPS and HTTPS under strace, from start to stop; the calls it made are compared
with what systemd/appliance.service's SystemCallFilter= lines allow, expanded by
systemd-analyze. A call the filter would answer with EPERM either fails the daemon
(test_as_shipped.py sees that) or silently does nothing: this test says which, before
it ships. The calls the daemon makes knowing the filter may refuse them are listed in
HANDLED, with what happens then."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from ..helpers import ADMIN_PASSWORD, APPLIANCE, ROOT, daemon_with, wait_for, wait_for_port

pytestmark = [pytest.mark.slow, pytest.mark.requires("strace", "systemd-analyze", "sftp", "sshpass", "curl")]

# Calls outside the shipped filter that the daemon makes on purpose, and what a refusal does.
HANDLED: dict[str, str] = {}
# Calls made here only because the test runs as root (CI does), never as the unit's user.
AS_ROOT_ONLY = {
    "fchown": "SQLite gives its -wal and -shm files the database's owner when geteuid() is 0 "
    "(robust_fchown); the unit runs the daemon as the appliance user, where it does not call it",
}
SSH_OPTIONS = [
    "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=no",
    "-o", "PubkeyAuthentication=no", "-o", "PreferredAuthentications=password",
]  # fmt: skip


def expand(group: str, seen: set[str] | None = None) -> set[str]:
    """The system calls of a filter entry: a name, or a @group (nested groups expanded)."""
    if not group.startswith("@"):
        return {group}
    seen = seen if seen is not None else set()
    if group in seen:
        return set()
    seen.add(group)
    listed = subprocess.run(["systemd-analyze", "syscall-filter", "--no-pager", group],
                            capture_output=True, text=True, check=True, timeout=30).stdout  # fmt: skip
    calls: set[str] = set()
    for line in listed.splitlines()[1:]:
        word = line.strip()
        if word and not word.startswith("#"):
            calls |= expand(word, seen)
    return calls


def allowed_by(unit: Path) -> set[str]:
    """What the unit's SystemCallFilter= lines allow, in systemd's order: the first
    allow-list sets it, `~` lines take out, later plain lines put back."""
    allowed: set[str] | None = None
    for line in unit.read_text().splitlines():
        if not line.startswith("SystemCallFilter="):
            continue
        value = line.partition("=")[2].strip()
        deny = value.startswith("~")
        names = set().union(*(expand(word) for word in value.lstrip("~").split()))
        if allowed is None:
            assert not deny, "the unit's filter is an allow-list (its first line names what is allowed)"
            allowed = names
        elif deny:
            allowed -= names
        else:
            allowed |= names
    assert allowed, f"{unit}: no SystemCallFilter="
    return allowed


def test_every_system_call_the_daemon_makes_is_allowed_by_its_unit(tmp_path):
    allowed = allowed_by(ROOT / "systemd" / "appliance.service")
    trace = tmp_path / "trace"
    daemon = daemon_with(tmp_path, start=False, https=True)  # pin_reactor and the rest as shipped
    daemon.log_path = tmp_path / "daemon.log"
    argv = APPLIANCE + [
        "serve", "--data-dir", str(daemon.data_dir), "--http", f"tcp:{daemon.http_port}:interface=127.0.0.1",
        "--sftp", f"tcp:{daemon.sftp_port}:interface=127.0.0.1", "--ftp", f"tcp:{daemon.ftp_port}:interface=127.0.0.1",
        "--ops", f"tcp:{daemon.ops_port}:interface=127.0.0.1", *daemon.extra_args,
    ]  # fmt: skip
    with daemon.log_path.open("wb") as log:
        tracer = subprocess.Popen(
            ["strace", "-f", "-qq", "-e", "signal=none", "-o", str(trace), *argv],
            stdout=log, stderr=subprocess.STDOUT, env=daemon.env, cwd=tmp_path,
        )  # fmt: skip
    try:
        for port in (daemon.https_port, daemon.sftp_port, daemon.ftp_port):
            wait_for_port(port, tracer, timeout=120)
        sent = tmp_path / "sent.bin"
        sent.write_bytes(os.urandom(100_000))
        result = subprocess.run(
            ["sshpass", "-e", "sftp", *SSH_OPTIONS, "-b", "-", "-P", str(daemon.sftp_port), "admin@127.0.0.1"],
            input=f"put {sent} /a.bin\nget /a.bin {tmp_path / 'a.back'}\nrename /a.bin /b.bin\nls -l\n",
            capture_output=True, text=True, timeout=120, env=dict(os.environ, SSHPASS=ADMIN_PASSWORD),
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        curl = ["curl", "-sS", "--ssl-reqd", "--insecure", "--user", f"admin:{ADMIN_PASSWORD}", "--max-time", "60"]
        url = f"ftp://127.0.0.1:{daemon.ftp_port}/c.bin"
        subprocess.run([*curl, "-T", str(sent), url], check=True, capture_output=True, timeout=90)
        assert subprocess.run([*curl, url], check=True, capture_output=True, timeout=90).stdout == sent.read_bytes()
        big = tmp_path / "big.bin"  # plain FTP past 1 MiB: the splice(2) and sendfile(2) paths
        big.write_bytes(os.urandom(3 << 20))
        plain = ["curl", "-sS", "--user", f"admin:{ADMIN_PASSWORD}", "--max-time", "60"]
        subprocess.run([*plain, "-T", str(big), url + ".big"], check=True, capture_output=True, timeout=90)
        assert (
            subprocess.run([*plain, url + ".big"], check=True, capture_output=True, timeout=90).stdout
            == big.read_bytes()
        )
        wrong = subprocess.run([*curl[:-4], "--user", "admin:wrong", url], capture_output=True, timeout=90)
        assert wrong.returncode != 0
        base = f"https://127.0.0.1:{daemon.https_port}/api/portal"
        token = subprocess.run(
            ["curl", "-sS", "--insecure", "-H", "Content-Type: application/json", "--data",
             json.dumps({"username": "admin", "password": ADMIN_PASSWORD}), f"{base}/token/"],
            check=True, capture_output=True, text=True, timeout=60,
        ).stdout  # fmt: skip
        bearer = ["-H", f"Authorization: Bearer {json.loads(token)['access']}"]
        fetched = subprocess.run(["curl", "-sS", "--insecure", *bearer, f"{base}/files/download/?path=/c.bin"],
                                 check=True, capture_output=True, timeout=60).stdout  # fmt: skip
        assert fetched == sent.read_bytes()
        subprocess.run(["curl", "-sS", "--insecure", *bearer, "-F", f"file=@{sent};filename=d.bin",
                        f"{base}/files/upload/?path=/"], check=True, capture_output=True, timeout=60)  # fmt: skip
        with urllib.request.urlopen(f"http://127.0.0.1:{daemon.ops_port}/metrics", timeout=30) as response:
            assert b"appliance_" in response.read()
        os.kill(_child(tracer.pid), signal.SIGHUP)  # systemctl reload: the TLS certificate read again
        wait_for(lambda: "reloaded the TLS certificate" in daemon.output(), timeout=30)
    finally:
        daemon_pid = _child(tracer.pid)
        if daemon_pid:
            os.kill(daemon_pid, signal.SIGTERM)  # the daemon's own stop, traced to its end
        try:
            tracer.wait(60)
        except subprocess.TimeoutExpired:
            tracer.kill()
            tracer.wait()
    made = set(re.findall(r"^\d+\s+(?:<\.\.\. )?([a-z_0-9]+)[( ]", trace.read_text(), re.M))
    assert {"openat", "accept4", "sched_setaffinity", "splice", "sendfile", "exit_group"} <= made, sorted(made)
    denied = sorted(made - allowed - set(HANDLED) - (set(AS_ROOT_ONLY) if os.geteuid() == 0 else set()))
    assert denied == [], f"the shipped unit's filter refuses {denied} (EPERM): handle each or allow it in the unit"


def _child(pid: int) -> int | None:
    """strace's child: the daemon."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            return None
        if children:
            return int(children[0])
        time.sleep(0.05)
    return None


def test_the_filter_is_read_as_systemd_reads_it():
    """The expansion this test relies on: the shipped filter denies @privileged and the rest
    of @resources, and lets sched_setaffinity (alone of @resources) back in."""
    allowed = allowed_by(ROOT / "systemd" / "appliance.service")
    assert {"read", "sendfile", "splice", "sched_setaffinity", "sched_getaffinity", "epoll_wait"} <= allowed
    assert not {"setuid", "chroot", "setpriority", "sched_setscheduler", "setrlimit", "nice", "ioprio_set"} & allowed
