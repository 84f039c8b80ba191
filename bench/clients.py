"""Timed transfers with real clients: OpenSSH's `sftp` and `curl` for FTP and FTPS.

Each transfer is one client run (connect, sign in, one file, quit). The time
reported is the transfer alone, without connecting and signing in (which would
otherwise weigh the product's bcrypt password check against the reference's
key): curl measures it itself (`time_total - time_pretransfer`); for sftp it
runs from the moment the batch echoes `put`/`get` to the moment it echoes the
next command, read live from its line-buffered output."""

from __future__ import annotations

import os
import re
import signal
import struct
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from support import LOOPBACK, BenchError

UPLOAD, DOWNLOAD = "upload", "download"


@dataclass(frozen=True)
class Login:
    """How a client signs in: a key file (the references) or a password (the product)."""

    port: int
    username: str
    password: str | None = None
    key_file: Path | None = None


@dataclass(frozen=True)
class Endpoint:
    """One server to measure: which side of the comparison it is, its protocol,
    the software, how to sign in, where an uploaded file lands on disk (for
    checking it), and for a server whose one process serves every session from
    an event loop in its main thread (the product and the Python servers), that
    process's id (its scheduler figures go into the JSON)."""

    role: str  # "reference" or "product"
    protocol: str  # "sftp", "ftp" or "ftps" (or "logins")
    software: str
    login: Login
    stored_path: Callable[[str], Path | None]
    event_loop_pid: Callable[[], int | None] | None = None  # None: a process per session (sshd, vsftpd)


@dataclass
class Transfer:
    """One timed transfer."""

    seconds: float  # the transfer alone
    session_seconds: float  # the whole client run: connect, sign in, transfer, quit
    details: dict = field(default_factory=dict)


class TransferFailed(BenchError):
    """The client failed; the message carries its output."""


@dataclass
class _ClientRun:
    returncode: int
    lines: list[tuple[float, str]]  # stdout lines with the monotonic time each arrived
    stderr: str
    seconds: float


def _run_client(argv: list[str], env: dict, scratch: Path, timeout: float, stdin_text: str | None = None) -> _ClientRun:
    """Run a client, timestamping each stdout line as it arrives; killed after `timeout` seconds."""
    stderr_path = scratch / "client.stderr"
    timed_out = threading.Event()
    with open(stderr_path, "wb") as stderr:
        started = time.monotonic()
        # own process group: a kill reaches sshpass's sftp and sftp's ssh too
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
            text=True,
            bufsize=1,
            start_new_session=True,
        )

        def expire() -> None:
            timed_out.set()
            _kill_group(process)

        timer = threading.Timer(timeout, expire)
        timer.start()
        try:
            if stdin_text is not None:
                process.stdin.write(stdin_text)
                process.stdin.close()
            lines = [(time.monotonic(), line.rstrip("\n")) for line in process.stdout]
            returncode = process.wait()
            seconds = time.monotonic() - started
        finally:
            timer.cancel()
            if process.poll() is None:  # interrupted (Ctrl-C): leave nothing behind
                _kill_group(process)
                process.wait()
    stderr_text = stderr_path.read_text(errors="replace")
    if timed_out.is_set():
        raise TransferFailed(f"{argv[0]} did not finish within {timeout:.0f} s (killed)\n{_tail(stderr_text)}")
    return _ClientRun(returncode, lines, stderr_text, seconds)


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _tail(text: str, lines: int = 12) -> str:
    """The last lines of a client's stderr, without ssh's -v debug lines."""
    return "\n".join([line for line in text.strip().splitlines() if not line.startswith("debug")][-lines:])


# ---- sftp -----------------------------------------------------------------

_CIPHER = re.compile(r"kex: client->server cipher: (\S+) MAC: (\S+)")
_KEX = re.compile(r"kex: algorithm: (\S+)")


def _ssh_client_argv(program: str, login: Login, verbose: bool = False) -> tuple[list[str], dict]:
    """(argv, env) of OpenSSH's `program` ("sftp" or "ssh") signed in as `login`: by key,
    or through sshpass by password. The caller adds its own options and the destination."""
    options = ["-F", "/dev/null", "-v" if verbose else "-q", "-p" if program == "ssh" else "-P", str(login.port)]
    options += ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"]
    env = _client_env()
    if login.key_file is not None:
        argv = [program, *options, "-i", str(login.key_file), "-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none"]
    else:
        # -b implies BatchMode, which forbids password prompts: sshpass answers them
        options += ["-o", "BatchMode=no", "-o", "PreferredAuthentications=password,keyboard-interactive"]
        # -P: with -v, the debug line "Next authentication method: password" would match
        # sshpass's default prompt pattern and the password would go out too early
        argv = ["sshpass", "-e", "-P", "'s password:", program, *options, "-o", "PubkeyAuthentication=no"]
        env["SSHPASS"] = login.password
    return argv, env


def sftp_batch(login: Login, commands: list[str], scratch: Path, timeout: float, verbose: bool = False) -> _ClientRun:
    """One OpenSSH `sftp -b` run of `commands` (by key or, through sshpass, by password);
    its stdout lines come timestamped: the batch echoes each command (`sftp> put ...`)
    as it starts it, so the echo of the next one marks the end of the one before.
    `verbose`: ssh's -v (the negotiated cipher on stderr), else -q (no progress lines)."""
    batch = scratch / "sftp.batch"
    batch.write_text("".join(f"{command}\n" for command in commands))
    argv, env = _ssh_client_argv("sftp", login, verbose)
    # -b last: sftp turns it into -oBatchMode=yes where it stands, and ssh keeps the
    # first value it sees, which would override BatchMode=no and forbid passwords
    argv += ["-b", str(batch), f"{login.username}@{LOOPBACK}"]
    return _run_client(argv, env, scratch, timeout)


def sftp_round_trips(login: Login, path: str, count: int, scratch: Path, timeout: float) -> float:
    """Seconds of `count` SFTP STATs of `path`, one after the other (each waits for its
    answer), spoken by this process over OpenSSH's `ssh -s ... sftp` (ssh does the
    transport and the crypto, as under `sftp`): a server's cost of one request and its
    answer, without a client's per-command work (OpenSSH's `sftp` spends ~150 us on a
    batch command of its own)."""
    argv, env = _ssh_client_argv("ssh", login)
    argv += ["-s", f"{login.username}@{LOOPBACK}", "sftp"]
    with open(scratch / "client.stderr", "wb") as stderr:
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env,
                                   start_new_session=True)  # fmt: skip
    timer = threading.Timer(timeout, _kill_group, (process,))
    timer.start()
    try:
        send, receive = process.stdin, process.stdout

        def packet(kind: int, body: bytes) -> None:
            send.write(struct.pack(">IB", len(body) + 1, kind) + body)
            send.flush()

        def answer() -> tuple[int, bytes]:
            head = receive.read(5)
            if len(head) < 5:
                raise TransferFailed(f"the SFTP session ended\n{_tail((scratch / 'client.stderr').read_text())}")
            length, kind = struct.unpack(">IB", head)
            return kind, receive.read(length - 1)

        packet(1, struct.pack(">I", 3))  # SSH_FXP_INIT, version 3
        if answer()[0] != 2:  # SSH_FXP_VERSION
            raise TransferFailed("the server did not answer SSH_FXP_INIT with its version")
        name = path.encode()
        requests = [struct.pack(">II", i, len(name)) + name for i in range(count)]
        started = time.perf_counter()
        for request in requests:
            packet(17, request)  # SSH_FXP_STAT
            kind, body = answer()
            if kind != 105:  # SSH_FXP_ATTRS
                raise TransferFailed(f"STAT {path} was answered with packet type {kind}: {body[:80]!r}")
        seconds = time.perf_counter() - started
        send.close()
        process.wait()
        return seconds
    finally:
        timer.cancel()
        if process.poll() is None:
            _kill_group(process)
            process.wait()


def echoes(run: _ClientRun) -> list[tuple[float, str]]:
    """The commands an `sftp -b` run echoed, with the moment each started."""
    return [(at, text.removeprefix("sftp> ")) for at, text in run.lines if text.startswith("sftp> ")]


def sftp_transfer(
    endpoint: Endpoint, direction: str, local: Path, remote: str, scratch: Path, timeout: float
) -> Transfer:
    """Upload `local` to `remote` (or download `remote` to `local`) with OpenSSH's sftp."""
    command = f'put "{local}" "{remote}"' if direction == UPLOAD else f'get "{remote}" "{local}"'
    # the echo of the trailing `pwd` marks the end of the transfer
    run = sftp_batch(endpoint.login, [command, "pwd"], scratch, timeout, verbose=True)
    echoed = {text.split()[0]: at for at, text in echoes(run)}
    verb = command.split()[0]
    if run.returncode != 0 or verb not in echoed or "pwd" not in echoed:
        raise TransferFailed(f"sftp exited with {run.returncode}\n{_tail(run.stderr)}")
    details = {}
    if cipher := _CIPHER.search(run.stderr):
        details["cipher"], details["mac"] = cipher.groups()
    if kex := _KEX.search(run.stderr):
        details["kex"] = kex.group(1)
    return Transfer(echoed["pwd"] - echoed[verb], run.seconds, details)


def sftp_login(endpoint: Endpoint, scratch: Path, timeout: float) -> float:
    """One whole password sign-in with OpenSSH's sftp (through sshpass): connect, key
    exchange, password, the SFTP subsystem, `bye`. Returns the client run's seconds."""
    run = sftp_batch(endpoint.login, ["bye"], scratch, timeout)
    if run.returncode != 0:
        raise TransferFailed(f"sftp exited with {run.returncode}\n{_tail(run.stderr)}")
    return run.seconds


# ---- ftp ------------------------------------------------------------------

_CURL_TIMES = "%{time_pretransfer} %{time_total} %{size_upload} %{size_download}\n"
_CURL_TLS = re.compile(r"SSL connection using (\S+) / (\S+)")


def ftp_transfer(
    endpoint: Endpoint, direction: str, local: Path, remote: str, scratch: Path, timeout: float, tls: bool = False
) -> Transfer:
    """Upload `local` to `remote` (or download `remote` to `local`) with curl, in passive mode;
    with `tls`, explicit FTPS (AUTH TLS, PROT P) and the server's certificate unchecked."""
    login = endpoint.login
    url = f"ftp://{LOOPBACK}:{login.port}/{remote}"
    transfer = ["-T", str(local)] if direction == UPLOAD else ["-o", str(local)]
    secure = ["--ssl-reqd", "--insecure", "-v"] if tls else []  # -v: the negotiated TLS version and cipher
    # credentials through a config on stdin, not in argv (visible in ps)
    argv = ["curl", "--disable", "-sS", *secure, "-K", "-", "-w", _CURL_TIMES, *transfer, url]
    run = _run_client(argv, _client_env(), scratch, timeout, stdin_text=f'user = "{login.username}:{login.password}"\n')
    if run.returncode != 0 or not run.lines:
        stderr = re.sub(r"(?m)^> PASS .*$", "> PASS (hidden)", run.stderr)  # -v echoes the password
        raise TransferFailed(f"curl exited with {run.returncode}\n{_tail(stderr)}")
    pretransfer, total, uploaded, downloaded = run.lines[-1][1].split()
    details = {"bytes": int(float(uploaded if direction == UPLOAD else downloaded))}
    if tls:
        negotiated = _CURL_TLS.findall(run.stderr)  # the control connection's, then the data connection's
        if not negotiated:
            raise TransferFailed("curl did not report a TLS connection")
        details["mac"], details["cipher"] = negotiated[-1]  # the table prints "cipher mac": the suite, then the version
    return Transfer(float(total) - float(pretransfer), run.seconds, details)


def ftps_transfer(
    endpoint: Endpoint, direction: str, local: Path, remote: str, scratch: Path, timeout: float
) -> Transfer:
    """`ftp_transfer` over explicit FTPS."""
    return ftp_transfer(endpoint, direction, local, remote, scratch, timeout, tls=True)


TRANSFERS = {"sftp": sftp_transfer, "ftp": ftp_transfer, "ftps": ftps_transfer}


def _client_env() -> dict:
    """A plain environment: no ssh agent, no proxies that would reroute curl."""
    drop = {"SSH_AUTH_SOCK", "SSHPASS", "http_proxy", "https_proxy", "ftp_proxy", "all_proxy", "ALL_PROXY"}
    drop |= {name.upper() for name in drop}
    return {name: value for name, value in os.environ.items() if name not in drop}


# ---- http -----------------------------------------------------------------


def http_download(port: int, token: str, path: str, local: Path, scratch: Path, timeout: float) -> Transfer:
    """Download the product's file `path` through its API (GET /api/portal/files/download/)
    with curl, signed in with a Bearer token; timed as curl's `time_total - time_pretransfer`."""
    url = f"http://{LOOPBACK}:{port}/api/portal/files/download/?path={path}"
    argv = ["curl", "--disable", "-sS", "--fail", "-K", "-", "-w", _CURL_TIMES, "-o", str(local), url]
    # the token through a config on stdin, not in argv (visible in ps)
    run = _run_client(argv, _client_env(), scratch, timeout, stdin_text=f'header = "Authorization: Bearer {token}"\n')
    if run.returncode != 0 or not run.lines:
        raise TransferFailed(f"curl exited with {run.returncode}\n{_tail(run.stderr)}")
    pretransfer, total, _uploaded, downloaded = run.lines[-1][1].split()
    return Transfer(float(total) - float(pretransfer), run.seconds, {"bytes": int(float(downloaded))})
