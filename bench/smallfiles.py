"""`bench/run --only smallfiles`: many small files and big folders (issue 25), the
product against OpenSSH's sshd (internal-sftp) and vsftpd, side by side in one run:

- trees of --files files of --file-size bytes (100 to a folder): OpenSSH `sftp`
  `put -r` / `get -r`, and `lftp` `mirror -R` / `mirror` (and with --parallel=4);
  files/s of each side and the ratio product/reference;
- a folder of --listing entries: `ls -l` over SFTP (OpenSSH sftp), `LIST` and
  `MLSD` over FTP (ftplib; vsftpd has no MLSD, so the product's MLSD is compared
  with vsftpd's LIST), and the product's API listing (GET files/?path=, what the
  console calls): the time to its first page;
- a password sign-in to the last byte of a --file-size download, one connection
  after another (`sshpass sftp -b` with `get`), against sshd with a password.

With --refs (bench/pyrefs.py), the Python servers are a third side of their
protocol's trees and listings: asyncssh for SFTP, pyftpdlib for FTP (its MLSD is
the `ftp MLSD` row's); not of the sign-ins nor the API listing.

Each repeat runs every case on every side, the side going first rotating; the
median of --small-repeat is reported. Every tree that arrives is checked against
the sent one (the count of files and each SHA-256), every listing's count of
entries, every small download's SHA-256. The transfers are timed from the
client's own shell escape (`!date`) right before the command to the same right after
it (sftp and lftp), so connecting and signing in are left out; the sign-in case
times the whole client run. Targets (issue 25) are printed beside
each ratio; timings never make the exit status fail, only failed checks do."""

from __future__ import annotations

import contextlib
import ftplib
import hashlib
import http.client
import json
import os
import resource
import shutil
import statistics
import sys
import time
import urllib.parse
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path

import concurrency
import pyrefs
from clients import Endpoint, Login, TransferFailed, _client_env, _run_client, _tail, sftp_batch, sftp_round_trips
from product import USERNAME, Product
from refservers import OpenSshPasswordServer, OpenSshServer, VsftpdServer
from support import LOOPBACK, MIB, BenchError, Ports, Workspace, format_size, one_run_at_a_time

PER_FOLDER = 100  # files per folder of a tree
SIDES = ("product", "reference")
PYTHON = "python"  # the side of the Python reference servers (--refs): trees and listings only
TIMEOUT_FLOOR = 300  # seconds: one tree transfer slower than this (or 10 files/s) is a hang
# issue 25's targets: the least product/reference ratio (`upload` of SFTP trees: 0.8, as the
# product fsyncs and audits every file and OpenSSH does neither)
TARGETS = {
    ("sftp", "upload"): 0.8,
    ("sftp", "download"): 1.0,
    ("ftp", "upload"): 1.0,
    ("ftp", "download"): 1.0,
    ("ftp-parallel4", "upload"): 1.0,
    ("ftp-parallel4", "download"): 1.0,
    ("sftp ls -l", "listing"): 1.0,
    ("ftp LIST", "listing"): 1.0,
    ("ftp MLSD", "listing"): 1.0,
    ("sign-in + 4 KiB", "sign-in"): 1.0,
}
API_FIRST_PAGE_MS = 200  # the API listing's first page, at most


def add_arguments(parser) -> None:
    group = parser.add_argument_group("smallfiles (--only smallfiles)")
    group.add_argument("--files", default="1000,10000", metavar="N,N", help="files per tree (default: 1000,10000)")
    group.add_argument("--file-size", default="4K", metavar="SIZE", help="each small file's size (default: 4K)")
    group.add_argument("--listing", type=int, default=50_000, metavar="N", help="entries of the listed folder "
                       "(default: 50000; 0: no listing case)")  # fmt: skip
    group.add_argument("--small-logins", type=int, default=50, metavar="N",
                       help="sign-ins with a small download per server and repeat (default: 50; 0: none)")  # fmt: skip
    group.add_argument("--round-trips", type=int, default=2000, metavar="N",
                       help="requests, one after the other, of the round-trip rows: SFTP STAT, FTP MDTM "
                       "(default: 2000; 0: none)")  # fmt: skip
    group.add_argument("--small-repeat", type=int, default=3, metavar="N",
                       help="repeats of every smallfiles case; the median is reported (default: 3)")  # fmt: skip


@dataclass
class Figure:
    """One timed run of one case on one side."""

    case: str  # "sftp", "ftp", "ftp-parallel4", "sftp ls -l", "ftp LIST", "ftp MLSD", "api listing", "sftp STAT", ...
    direction: str  # "upload", "download", "listing", "sign-in", "round trip"
    count: int  # files moved or entries listed (sign-ins: sign-ins; round trips: requests)
    side: str
    repeat: int
    seconds: float | None = None
    error: str | None = None
    details: dict = field(default_factory=dict)
    client_cpu: float | None = None  # trees: CPU seconds of the client's processes for the command

    @property
    def per_second(self) -> float | None:
        return self.count / self.seconds if self.seconds else None


# ---- the trees -----------------------------------------------------------------


def make_tree(root: Path, count: int, size: int) -> dict[str, str]:
    """`count` random files of `size` bytes under `root`, PER_FOLDER to a folder;
    returns relative path -> SHA-256."""
    sums = {}
    for i in range(count):
        relative = f"d{i // PER_FOLDER:03d}/f{i:05d}.bin"
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        data = os.urandom(size)
        path.write_bytes(data)
        sums[relative] = hashlib.sha256(data).hexdigest()
    return sums


def tree_sums(root: Path) -> dict[str, str]:
    """Relative path -> SHA-256 of every file below `root` (none when it is missing)."""
    sums = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            sums[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return sums


def check_tree(got: Path, sent: dict[str, str]) -> str | None:
    """None when `got` holds exactly the files of `sent`, else what differs."""
    sums = tree_sums(got)
    if sums == sent:
        return None
    missing = sorted(set(sent) - set(sums))
    extra = sorted(set(sums) - set(sent))
    wrong = sorted(name for name in set(sent) & set(sums) if sent[name] != sums[name])
    return (f"{len(sums)} files of {len(sent)} arrived; missing {len(missing)} {missing[:3]}, "
            f"extra {len(extra)} {extra[:3]}, different {len(wrong)} {wrong[:3]}")  # fmt: skip


def clear(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


# ---- the clients -----------------------------------------------------------------


# A timestamp printed by a child of the client right before and right after the command
# (sftp's and lftp's `!`): reading the client's echoes as they arrive would stamp them
# when this process gets to read them, which on a loaded machine can be after a whole
# 1,000-file transfer (one such run gave 2,500,000 files/s). The `date` between the
# stamps (a fork and exec, about a millisecond) is inside the time, on both sides alike.
STAMP = "!date +@stamp@%s.%N"


def stamps(lines: list[tuple[float, str]]) -> list[float]:
    return [float(text.removeprefix("@stamp@")) for _, text in lines if text.startswith("@stamp@")]


def sftp_timed(login: Login, command: str, scratch: Path, timeout: float, before: list[str] = ()) -> tuple:
    """Run `command` in an `sftp -b` session (after `before`); returns its seconds (between
    two stamps around it) and the run, whose stdout has what the command printed."""
    run = sftp_batch(login, [*before, STAMP, command, STAMP], scratch, timeout)
    moments = stamps(run.lines)
    if run.returncode != 0 or len(moments) != 2:
        raise TransferFailed(f"sftp exited with {run.returncode}\n{_tail(run.stderr)}")
    return moments[1] - moments[0], run


def sftp_seconds(login: Login, command: str, scratch: Path, timeout: float) -> float:
    return sftp_timed(login, command, scratch, timeout)[0]


def lftp_timed(login: Login, command: str, scratch: Path, timeout: float, cwd: Path) -> float:
    """Run `command` in lftp, signed in over plain FTP in passive mode; the seconds between
    two stamps around it (lftp connects and signs in at the NOOP before them). Paths
    are relative: the references' login folders are not their root."""
    settings = [
        "set cmd:fail-exit yes",
        "set ftp:ssl-allow no",  # vsftpd here has no TLS: the product must not get TLS either
        "set ftp:passive-mode yes",
        "set net:max-retries 1",
        "set net:timeout 60",
        "set xfer:clobber yes",
        "set mirror:set-permissions no",  # SITE CHMOD after each file: vsftpd allows it, the product not
    ]
    script = [*settings, f"open -p {login.port} {LOOPBACK}", f"user {login.username} {login.password}",
              "quote NOOP", STAMP, command, STAMP, "quit"]  # fmt: skip
    argv = ["lftp", "-f", "/dev/stdin"]
    run = _run_client_in(argv, scratch, timeout, "\n".join(script) + "\n", cwd)
    moments = stamps(run.lines)
    if run.returncode != 0 or len(moments) != 2:
        raise TransferFailed(f"lftp exited with {run.returncode}\n{_tail(run.stderr)}")
    return moments[1] - moments[0]


def children_cpu() -> float:
    """CPU seconds (user and system) of this process's ended children: the clients (sftp
    and its ssh, lftp, the `date`s of their stamps). The servers are children too, but
    end only with the run; sshd's and vsftpd's session processes are theirs, not ours."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _run_client_in(argv, scratch, timeout, stdin_text, cwd):
    """clients._run_client with a working folder (lftp's mirror writes relative to it)."""
    here = os.getcwd()
    os.chdir(cwd)
    try:
        return _run_client(argv, _client_env(), scratch, timeout, stdin_text=stdin_text)
    finally:
        os.chdir(here)


def ftp_listing(login: Login, folder: str, command: str, expected: int) -> float:
    """`LIST` or `MLSD` of `folder` with ftplib, timed from the command to its 226;
    the number of entries must be `expected`."""
    with ftplib.FTP() as ftp:
        ftp.connect(LOOPBACK, login.port, timeout=120)
        ftp.login(login.username, login.password)
        ftp.cwd(folder)
        lines: list[str] = []
        started = time.perf_counter()
        ftp.retrlines(command, lines.append)
        seconds = time.perf_counter() - started
    entries = [line for line in lines if line.strip() and not _dot_entry(command, line)]
    if len(entries) != expected:
        raise TransferFailed(f"{command} gave {len(entries)} entries, not {expected}")
    return seconds


def ftp_round_trips(login: Login, name: str, count: int) -> float:
    """Seconds of `count` FTP `MDTM name` commands, one after the other, with ftplib."""
    with ftplib.FTP() as ftp:
        ftp.connect(LOOPBACK, login.port, timeout=60)
        ftp.login(login.username, login.password)
        command = f"MDTM {name}"
        started = time.perf_counter()
        for _ in range(count):
            reply = ftp.sendcmd(command)
            if not reply.startswith("213"):
                raise TransferFailed(f"{command} was answered {reply!r}")
        return time.perf_counter() - started


def _dot_entry(command: str, line: str) -> bool:
    if command == "MLSD":
        return line.split(";")[-1].strip() in (".", "..") or "type=cdir" in line or "type=pdir" in line
    return line.split()[-1] in (".", "..") or line.startswith("total")


def api_first_page(api: concurrency.Api, folder: str, expected: int) -> tuple[float, dict]:
    """The console's listing call (GET files/?path=) on a fresh keep-alive connection,
    timed from the request to the whole of its first reply; a paged reply is asked for
    its first page (page=1, page_size=100, the API's paging words)."""
    conn = http.client.HTTPConnection(LOOPBACK, api.port, timeout=120)
    try:
        conn.connect()
        query = urllib.parse.urlencode({"path": folder, "page": 1, "page_size": 100})
        headers = {"authorization": f"Bearer {api.current_token()}"}
        started = time.perf_counter()
        conn.request("GET", f"/api/portal/files/?{query}", headers=headers)
        response = conn.getresponse()
        raw = response.read()
        seconds = time.perf_counter() - started
    finally:
        conn.close()
    if response.status != 200:
        raise TransferFailed(f"GET files/ answered {response.status}: {raw[:200]!r}")
    body = json.loads(raw)
    entries = body.get("entries", body.get("results", []))
    total = body.get("count", len(entries))
    if total != expected:
        raise TransferFailed(f"the API listed {total} entries, not {expected}")
    return seconds, {"entries_in_first_page": len(entries), "paged": len(entries) < total, "bytes": len(raw)}


# ---- the run ---------------------------------------------------------------------


class SmallFiles:
    def __init__(self, args, workspace: Workspace, servers: contextlib.ExitStack):
        self.args = args
        self.workspace = workspace
        self.size = args.small_file_size
        self.counts = args.small_counts
        self.figures: list[Figure] = []
        self.sent: dict[int, dict[str, str]] = {}  # files per tree -> its relative paths' SHA-256
        # (protocol, side) -> the CPU seconds of a client's run besides its command
        self.sign_in_cpu: dict[tuple[str, str], float] = {}
        self.scratch = workspace.folder("smallfiles-scratch")
        ports = Ports()
        product = servers.enter_context(Product(workspace, ports, args.appliance))
        endpoints = product.start()
        self.product = product
        self.sftp: dict[str, Endpoint] = {"product": endpoints["sftp"]}
        self.ftp: dict[str, Endpoint] = {"product": endpoints["ftp"]}
        self.logins: dict[str, Endpoint] = {"product": endpoints["logins"]}
        sshd = servers.enter_context(OpenSshServer(workspace, ports))
        self.sftp["reference"] = sshd.start()
        vsftpd = servers.enter_context(SmallVsftpd(workspace, ports))
        self.ftp["reference"] = vsftpd.start()
        password_sshd = servers.enter_context(SmallPasswordSshd(workspace, ports))
        self.logins["reference"] = password_sshd.start()
        # where each server's files are on disk: the product's admin home (found by a
        # marker file, as the product decides where it is), the references' folders
        marker = workspace.path / "marker.bin"
        marker.write_bytes(b"where")
        sftp_timed(self.sftp["product"].login, f'put "{marker}" marker.bin', self.scratch, 60)
        found = product.stored_path("marker.bin")
        if found is None:
            raise BenchError("could not find where the product keeps its admin's files")
        found.unlink()
        self.disk = {
            ("sftp", "product"): found.parent, ("ftp", "product"): found.parent,
            ("sftp", "reference"): sshd.files, ("ftp", "reference"): vsftpd.files,
            ("logins", "product"): found.parent, ("logins", "reference"): password_sshd.files,
        }  # fmt: skip
        self.api = concurrency.Api(product.http_port, USERNAME, product.password)
        self.python: dict[str, str] = {}  # protocol -> its Python server's software
        self.not_measured: dict[str, str] = {}  # "reference asyncssh" -> why
        self.start_python(workspace, ports, servers)
        print(f"product   {self.sftp['product'].software}\nreference {self.sftp['reference'].software}, "
              f"{self.ftp['reference'].software}", flush=True)  # fmt: skip
        if self.python:
            print(f"python    {', '.join(self.python.values())}", flush=True)

    def start_python(self, workspace: Workspace, ports: Ports, servers: contextlib.ExitStack) -> None:
        """The Python servers of --refs, a third side of their protocol's trees and listings
        (bench/pyrefs.py, from .venv-bench; their files in the server's `files` folder). Not of
        the sign-ins: they are about password checks, and asyncssh signs in with a key. One
        that cannot start is left out, loudly, as in the main run."""
        started = pyrefs.start_named(self.args.refs, workspace, ports, servers, self._cannot_measure)
        for name, (server, endpoint) in started.items():
            protocol = pyrefs.PROTOCOL_OF[name]
            (self.sftp if protocol == "sftp" else self.ftp)[PYTHON] = endpoint
            self.disk[(protocol, PYTHON)] = server.files
            self.python[protocol] = endpoint.software

    def _cannot_measure(self, what: str, why: str) -> None:
        self.not_measured[what] = why
        print(f"!! {what}: could not be measured: {why}", file=sys.stderr, flush=True)

    def sides(self, repeat: int, protocol: str = "logins") -> tuple[str, ...]:
        """The sides of `protocol` in the order of this repeat: rotated by one each repeat
        (two sides: alternating), so each goes first in turn."""
        sides = [side for side in (*SIDES, PYTHON) if (protocol, side) in self.disk]
        turn = (repeat - 1) % len(sides)
        return tuple(sides[turn:] + sides[:turn])

    def record(self, figure: Figure, error: str | None = None) -> None:
        figure.error = error
        self.figures.append(figure)
        label = f"{figure.side:9} {figure.case:15} {figure.direction:8} {figure.count:6} #{figure.repeat}"
        if error is None:
            print(f"{label}: {figure.per_second:9.1f}/s  ({figure.seconds:.3f} s)", flush=True)
        else:
            print(f"!! {label}: FAILED: {error}", file=sys.stderr, flush=True)

    # -- trees

    def run_trees(self, repeat: int) -> None:
        for count in self.counts:
            local = self.workspace.path / f"tree-{count}"
            if not local.exists():
                print(f"creating a tree of {count:,} files of {format_size(self.size)} ...", flush=True)
                self.sent[count] = make_tree(local, count, self.size)
            timeout = max(TIMEOUT_FLOOR, count / 10)
            name, back = f"up-{count}", self.scratch / f"back-{count}"
            sftp = {"upload": f'put -r "{local}" {name}', "download": f'get -r {name} "{back}"'}
            for side in self.sides(repeat, "sftp"):
                timed = partial(sftp_seconds, self.sftp[side].login, scratch=self.scratch, timeout=timeout)
                self.tree(Figure("sftp", "", count, side, repeat), self.disk[("sftp", side)], local, back, sftp, timed)
            for case, parallel in (("ftp", ""), ("ftp-parallel4", " --parallel=4")):
                lftp = {
                    "upload": f'mirror -R{parallel} "{local}" {name}',
                    "download": f'mirror{parallel} {name} "{back}"',
                }
                for side in self.sides(repeat, "ftp"):
                    login = self.ftp[side].login
                    timed = partial(lftp_timed, login, scratch=self.scratch, timeout=timeout, cwd=self.scratch)
                    self.tree(Figure(case, "", count, side, repeat), self.disk[("ftp", side)], local, back, lftp, timed)

    def tree(self, figure: Figure, disk: Path, local: Path, back: Path, commands: dict, timed) -> None:
        """Upload the tree `local` to the server's `up-COUNT` (`timed(commands["upload"])`
        returns the seconds) and check it on the server's disk (`disk`); then download it to
        `back` and check that. The download reads the checked upload, or the sent tree put in place
        when the upload failed."""
        sent, stored = self.sent[figure.count], disk / f"up-{figure.count}"
        signing_in = self.client_sign_in(figure, timed)
        clear(stored)
        for direction in ("upload", "download"):
            clear(back)
            this = replace(figure, direction=direction)
            try:
                before = children_cpu()
                this.seconds = timed(commands[direction])
                if signing_in is not None:
                    this.client_cpu = max(0.0, children_cpu() - before - signing_in)
                error = check_tree(stored if direction == "upload" else back, sent)
            except TransferFailed as e:
                error = str(e)
            self.record(this, error)
            if direction == "upload" and error is not None:
                clear(stored)
                shutil.copytree(local, stored)
        clear(back)
        clear(stored)

    def client_sign_in(self, figure: Figure, timed) -> float | None:
        """The CPU seconds a client's run spends besides its command (starting, signing in:
        OpenSSH's sntrup761 key exchange costs its client ~150 ms, the product's curve25519
        ~25), so that a tree's client CPU is its transfer's alone: the median of three runs of
        `pwd` on that side, measured once per protocol and side. None when they failed (the
        tree's runs then say why, and have no client CPU)."""
        key = ("sftp" if figure.case == "sftp" else "ftp", figure.side)
        if key not in self.sign_in_cpu:
            used = []
            try:
                for _ in range(3):
                    before = children_cpu()
                    timed("pwd")
                    used.append(children_cpu() - before)
            except TransferFailed as e:
                print(
                    f"!! {figure.side} {key[0]}: no client CPU figures: `pwd` failed: {e}", file=sys.stderr, flush=True
                )
                return None
            self.sign_in_cpu[key] = statistics.median(used)
        return self.sign_in_cpu[key]

    # -- the big folder

    def make_big_folders(self) -> None:
        count = self.args.listing
        print(f"creating a folder of {count:,} empty files on each server ...", flush=True)
        # the product's SFTP and FTP share one folder; every other server has its own
        for root in sorted({path for (protocol, _), path in self.disk.items() if protocol != "logins"}):
            folder = root / "big"
            folder.mkdir()
            for i in range(count):
                (folder / f"entry-{i:06d}.txt").touch()

    def run_listings(self, repeat: int) -> None:
        count = self.args.listing
        for side in self.sides(repeat, "sftp"):
            figure = Figure("sftp ls -l", "listing", count, side, repeat)
            try:
                figure.seconds, run = sftp_timed(self.sftp[side].login, "ls -l", self.scratch, 300, before=["cd big"])
                listed = [t for _, t in run.lines if t.split() and t.split()[-1].startswith("entry-")]
                error = None if len(listed) == count else f"ls -l gave {len(listed)} entries, not {count}"
            except TransferFailed as e:
                error = str(e)
            self.record(figure, error)
        for command in ("LIST", "MLSD"):
            for side in self.sides(repeat, "ftp"):
                # vsftpd has no MLSD: the product's MLSD is compared with vsftpd's LIST (pyftpdlib has it)
                used = "LIST" if side == "reference" else command
                figure = Figure(f"ftp {command}", "listing", count, side, repeat, details={"command": used})
                try:
                    figure.seconds = ftp_listing(self.ftp[side].login, "big", used, count)
                    error = None
                except (TransferFailed, OSError, EOFError, ftplib.Error) as e:
                    error = str(e)
                self.record(figure, error)
        figure = Figure("api listing", "listing", count, "product", repeat)
        try:
            figure.seconds, figure.details = api_first_page(self.api, "/big", count)
            error = None
        except (TransferFailed, BenchError, OSError, ValueError, http.client.HTTPException) as e:
            error = str(e)
        self.record(figure, error)

    # -- request round trips

    def run_round_trips(self, repeat: int) -> None:
        """The cost of one request and its answer on each server: SFTP STAT (over OpenSSH's
        ssh, a client of a few lines here) and FTP MDTM (ftplib), of a small file, one after
        the other. No target: it says how much of a tree's time per file is the protocol's
        round trips (an SFTP upload has three, a download four; FTP two and three)."""
        count = self.args.round_trips
        for (protocol, _), disk in self.disk.items():
            if protocol in ("sftp", "ftp"):
                (disk / "round-trip.bin").write_bytes(os.urandom(self.size))
                (disk / "round-trip.bin").chmod(0o644)
        for side in self.sides(repeat, "sftp"):
            figure = Figure("sftp STAT", "round trip", count, side, repeat)
            try:
                figure.seconds = sftp_round_trips(self.sftp[side].login, "round-trip.bin", count, self.scratch, 120)
                error = None
            except TransferFailed as e:
                error = str(e)
            self.record(figure, error)
        for side in self.sides(repeat, "ftp"):
            figure = Figure("ftp MDTM", "round trip", count, side, repeat)
            try:
                figure.seconds = ftp_round_trips(self.ftp[side].login, "round-trip.bin", count)
                error = None
            except (TransferFailed, OSError, EOFError, ftplib.Error) as e:
                error = str(e)
            self.record(figure, error)

    # -- sign-in to a small download

    def run_signins(self, repeat: int) -> None:
        small = os.urandom(self.size)
        digest = hashlib.sha256(small).hexdigest()
        for side in SIDES:
            target = self.disk[("logins", side)] / "small.bin"
            target.write_bytes(small)
            target.chmod(0o644)
        back = self.scratch / "small-back.bin"
        for side in self.sides(repeat):
            figure = Figure("sign-in + 4 KiB", "sign-in", 0, side, repeat, details={"seconds": []})
            failures = []
            for _ in range(self.args.small_logins):
                back.unlink(missing_ok=True)
                try:
                    run = sftp_batch(self.logins[side].login, [f'get small.bin "{back}"', "bye"], self.scratch, 60)
                    if run.returncode != 0:
                        raise TransferFailed(f"sftp exited with {run.returncode}\n{_tail(run.stderr)}")
                    if not back.is_file() or hashlib.sha256(back.read_bytes()).hexdigest() != digest:
                        raise TransferFailed("the small download differs from the file")
                    figure.details["seconds"].append(run.seconds)
                except TransferFailed as e:
                    failures.append(str(e))
            times = figure.details["seconds"]
            figure.count = len(times)
            figure.seconds = sum(times) if times else None
            figure.details["median_seconds"] = statistics.median(times) if times else None
            self.record(figure, f"{len(failures)} failed: {failures[0]}" if failures else None)

    # -- results

    def summary(self) -> list[dict]:
        """Per case, direction and count: each side's median (`{side}_per_s`, `_seconds`,
        `_runs`), `ratio` (product/reference: the target's) and, with a Python server,
        `ratio_python` (product/python) and `python_server` (None: none ran that case)."""
        rows = []
        keys = []
        for f in self.figures:
            key = (
                f.case,
                f.direction,
                f.count if f.direction in ("upload", "download", "listing", "round trip") else None,
            )
            if key not in keys:
                keys.append(key)
        for case, direction, count in keys:
            row = {"case": case, "direction": direction, "count": count}
            for side in (*SIDES, PYTHON) if self.python else SIDES:
                runs = [f for f in self.figures
                        if (f.case, f.direction, f.side) == (case, direction, side) and f.error is None
                        and (count is None or f.count == count) and f.seconds]  # fmt: skip
                client = [f.client_cpu * 1e6 / f.count for f in runs if f.client_cpu is not None]
                row[f"{side}_per_s"] = statistics.median(f.per_second for f in runs) if runs else None
                row[f"{side}_seconds"] = statistics.median(f.seconds for f in runs) if runs else None
                row[f"{side}_client_us"] = statistics.median(client) if client else None  # a file's
                row[f"{side}_runs"] = len(runs)
            product, reference = row["product_per_s"], row["reference_per_s"]
            row["ratio"] = product / reference if product and reference else None
            if self.python:
                python = row["python_per_s"]
                row["ratio_python"] = product / python if product and python else None
                row["python_server"] = self.python_server(case)
            row["target"] = TARGETS.get((case, direction))
            if case == "api listing":
                ms = row["product_seconds"] * 1000 if row["product_seconds"] else None
                row["first_page_ms"] = ms
                row["met"] = ms is not None and ms < API_FIRST_PAGE_MS
            else:
                row["met"] = row["ratio"] is not None and row["target"] is not None and row["ratio"] >= row["target"]
            rows.append(row)
        return rows

    def python_server(self, case: str) -> str | None:
        """The Python server that ran `case` (even if every run of it failed), else None."""
        if not any(f.side == PYTHON and f.case == case for f in self.figures):
            return None
        return self.python["sftp" if case.startswith("sftp") else "ftp"]

    def print_table(self, rows: list[dict]) -> None:
        """The table; the python/s and ratio py columns only when a Python server ran,
        blank in the rows it had no part in (sign-ins, the API)."""
        python = ""
        if self.python:
            servers = [f"{software} for the {protocol} rows" for protocol, software in self.python.items()]
            python = (f"\nPython reference (python/s; ratio py = product/python): {', '.join(servers)}; "
                      "target and met: ratio only.")  # fmt: skip
        print(f"\nMany small files and a big folder (issue 25): median of {self.args.small_repeat} repeat(s); "
              f"files of {format_size(self.size)}; data in {'tmpfs' if self.workspace.on_tmpfs else 'a disk folder'};"
              f"\nload average now {' '.join(f'{x:.2f}' for x in os.getloadavg())}. Trees: files/s of the "
              "transfer alone; listings: entries/s;\nsign-ins: whole sftp runs/s (connect, password, get, bye). "
              f"Reference: OpenSSH internal-sftp (sshd with a password for sign-ins), vsftpd.{python}\n")  # fmt: skip
        py_header = f"  {'python/s':>10}" if self.python else ""
        py_ratio_header = f"  {'ratio py':>8}" if self.python else ""
        header = (f"{'case':15}  {'direction':9}  {'files':>6}  {'product/s':>10}  {'reference/s':>11}{py_header}  "
                  f"{'ratio':>5}{py_ratio_header}  {'target':>7}  {'met':>3}")  # fmt: skip
        print(header)
        print("-" * len(header))
        for row in rows:
            count = f"{row['count']:,}" if row["count"] is not None else ""
            py, py_ratio = self.python_cells(row)
            if row["case"] == "api listing":
                ms = row["first_page_ms"]
                print(f"{'api listing':15}  {'1st page':9}  {count:>6}  {f'{ms:.0f} ms' if ms else '-':>10}  "
                      f"{'':>11}{py}  {'':>5}{py_ratio}  {f'<{API_FIRST_PAGE_MS} ms':>7}  "
                      f"{'yes' if row['met'] else 'NO':>3}")  # fmt: skip
                continue
            product = f"{row['product_per_s']:.1f}" if row["product_per_s"] else "-"
            reference = f"{row['reference_per_s']:.1f}" if row["reference_per_s"] else "-"
            ratio = f"{row['ratio']:.2f}" if row["ratio"] is not None else "-"
            target = f">={row['target']:.1f}" if row["target"] is not None else ""
            met = "" if row["target"] is None else "yes" if row["met"] else "NO"
            print(f"{row['case']:15}  {row['direction']:9}  {count:>6}  {product:>10}  {reference:>11}{py}  "
                  f"{ratio:>5}{py_ratio}  {target:>7}  {met:>3}")  # fmt: skip
        mlsd = "; pyftpdlib's MLSD" if "ftp" in self.python else ""
        print(f"(ftp MLSD: the product's MLSD against vsftpd's LIST, which has no MLSD{mlsd})")
        self.print_file_times(rows)
        failed = [f for f in self.figures if f.error is not None]
        if failed:
            print(f"\n{len(failed)} run(s) FAILED their checks (see above); they are left out of the medians.")
        for what, why in self.not_measured.items():
            print(f"\nNOT MEASURED: {what}: " + "\n    ".join(why.splitlines()[:12]))

    def print_file_times(self, rows: list[dict]) -> None:
        """Where a small file's time goes, per tree and side: the transfer's time a file
        (wall), the CPU the client's processes spent a file (client: sftp and its ssh, or
        lftp, less their start and sign-in: `client_sign_in`), and the difference: the
        server's work and the waits between the two (for a client that asks one request at
        a time, the server's part)."""
        trees = [row for row in rows if row["direction"] in ("upload", "download")]
        if not any(row.get("product_client_us") for row in trees):
            return
        sides = [side for side in (*SIDES, PYTHON) if any(row.get(f"{side}_client_us") for row in trees)]
        print("\nA small file's time, us a file (medians): wall = the transfer's time; client = the CPU of the "
              "client's processes\n(sftp and ssh, or lftp; less their start and sign-in); the rest = wall - client: "
              f"the server's work and the waits between the two.\nSides: {', '.join(sides)}.\n")  # fmt: skip
        header = f"{'case':15}  {'direction':9}  {'files':>6}  " + "  ".join(
            f"{what + ' ' + '/'.join(side[:3] for side in sides):>{7 * len(sides) + 6}}"
            for what in ("wall", "client", "the rest")
        )
        print(header)
        print("-" * len(header))
        for row in trees:
            cells = []
            for what in ("wall", "client", "the rest"):
                values = []
                for side in sides:
                    rate, client = row.get(f"{side}_per_s"), row.get(f"{side}_client_us")
                    wall = 1e6 / rate if rate else None
                    value = {"wall": wall, "client": client,
                             "the rest": wall - client if wall is not None and client is not None else None}[what]  # fmt: skip
                    values.append(f"{value:.0f}" if value is not None else "-")
                cells.append(f"{' / '.join(values):>{7 * len(sides) + 6}}")
            print(f"{row['case']:15}  {row['direction']:9}  {row['count']:>6,}  " + "  ".join(cells))

    def python_cells(self, row: dict) -> tuple[str, str]:
        """The row's python/s and ratio py cells, with their leading gaps: nothing without
        a Python server, blanks in a row none ran, "-" where its runs all failed."""
        if not self.python:
            return "", ""
        if row.get("python_server") is None:
            return f"  {'':>10}", f"  {'':>8}"
        rate = f"{row['python_per_s']:.1f}" if row["python_per_s"] else "-"
        ratio = f"{row['ratio_python']:.2f}" if row["ratio_python"] is not None else "-"
        return f"  {rate:>10}", f"  {ratio:>8}"

    def report(self, rows: list[dict]) -> dict:
        return {
            "files": self.counts,
            "file_size": self.size,
            "listing": self.args.listing,
            "sign_ins": self.args.small_logins,
            "repeat": self.args.small_repeat,
            "workspace_on_tmpfs": self.workspace.on_tmpfs,
            "load_average": list(os.getloadavg()),
            "api_first_page_ms_target": API_FIRST_PAGE_MS,
            "python_references": self.python,  # protocol -> software; the rows' python_* figures
            "not_measured": self.not_measured,
            "client_sign_in_cpu_s": {f"{protocol} {side}": cpu for (protocol, side), cpu in self.sign_in_cpu.items()},
            "summary": rows,
            "runs": [asdict(f) for f in self.figures],
        }


class SmallVsftpd(VsftpdServer):
    """vsftpd for its own system user: a run outside the bench lock (a script importing
    refservers) gave `benchftp` a new password, then locked it, in the middle of a run."""

    user_name = "benchsmallftp"


class SmallPasswordSshd(OpenSshPasswordServer):
    """sshd with a password for its own system user, for the same reason."""

    user_name = "benchsmallssh"


def main(args) -> int:
    from support import parse_size

    args.small_file_size = parse_size(args.file_size)
    args.small_counts = [int(n) for n in args.files.split(",") if n.strip()]
    # the trees (sent, one stored copy, one downloaded copy, per side) and the big folders' inodes
    needed = 4 * sum(args.small_counts) * max(args.small_file_size, 4096) + 64 * MIB
    started = time.monotonic()
    load = os.getloadavg()
    try:
        with (
            one_run_at_a_time(),
            Workspace(needed, keep=args.keep_workdir) as workspace,
            contextlib.ExitStack() as servers,
        ):
            print(f"workspace: {workspace.path}{' (tmpfs)' if workspace.on_tmpfs else ''}; "
                  f"load average at the start {' '.join(f'{x:.2f}' for x in load)}", flush=True)  # fmt: skip
            bench = SmallFiles(args, workspace, servers)
            if args.listing:
                bench.make_big_folders()
            for repeat in range(1, args.small_repeat + 1):
                print(f"-- repeat {repeat} of {args.small_repeat}", flush=True)
                bench.run_trees(repeat)
                if args.listing:
                    bench.run_listings(repeat)
                if args.round_trips:
                    bench.run_round_trips(repeat)
                if args.small_logins:
                    bench.run_signins(repeat)
            rows = bench.summary()
    except BenchError as e:
        print(f"!! smallfiles: {e}", file=sys.stderr, flush=True)
        return 1
    bench.print_table(rows)
    print(f"\n(the whole smallfiles run took {(time.monotonic() - started) / 60:.1f} min)")
    if args.json:
        report = {**bench.report(rows), "load_average_at_start": list(load)}
        args.json.write_text(json.dumps({"smallfiles": report}, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 1 if any(f.error is not None for f in bench.figures) else 0
