"""Property-based fuzzing of the two hand-written parsers of client input: the SFTP
packet loop (SftpProtocol) and the FTP command interpreter (FTPSession).

Each runs in-process over a real core (SQLite file, real folders) with a
StringTransport, fed hypothesis-generated input; the core's thread work is waited
for through pytest-twisted. The budget is fixed (derandomised, no example
database) so `make test` is reproducible and bounded.

Invariants checked after every example:
- feeding input never raises;
- every byte the server sends parses (SFTP packets / FTP reply lines);
- every framed SFTP request and every complete FTP command line gets exactly one
  final reply, unless the server closed the connection;
- nothing outside the profile's home changes (the data dir, a neighbour's home,
  a folder outside the data dir that links point at);
- no error is logged other than the malformed-packet refusals listed below;
- after the connection is lost, no upload's temporary file is left and no file
  descriptor leaks;
- PORT/EPRT never make a connection attempt to another host or a port < 1024;
  passive ports listen only on the control connection's address.
"""

from __future__ import annotations

import gc
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import pytest_twisted
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from twisted.internet import defer, task
from twisted.internet.address import IPv4Address
from twisted.internet.error import ConnectionDone
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.logger import globalLogPublisher
from twisted.python.failure import Failure

from appliance import config
from appliance.core import build_core
from appliance.core.files import TEMP_PREFIX
from appliance.core.throttle import LoginThrottle
from appliance.service import storage_backends

from ..core.conftest import make_account

FUZZ = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
PASSWORD = "user-password-1"
MAX_HANDLES = 4  # per SFTP session here: small, so the limit is reached
OUTSIDE_SECRET = b"OUTSIDE-SECRET-5b1e9c"  # in a folder outside the data dir that links point at
NEIGHBOUR_SECRET = b"NEIGHBOUR-SECRET-77d2"  # in another profile's home


def leaks(data: bytes) -> bool:
    return OUTSIDE_SECRET in data or NEIGHBOUR_SECRET in data or b"root:x:0:0" in data


# -- the world: one core for the module, with homes, links and a folder outside -------


@dataclass
class Watch:
    """The core's thread work in flight, and the errors logged, while fuzzing."""

    in_flight: int = 0
    failures: list = field(default_factory=list)

    def wrap(self, threads) -> None:
        for name in ("work", "db"):
            original = getattr(threads, name)

            def counted(fn, *args, _original=original, **kwargs):
                self.in_flight += 1
                d = _original(fn, *args, **kwargs)

                def done(result):
                    self.in_flight -= 1
                    return result

                return d.addBoth(done)

            setattr(threads, name, counted)

    def observe(self, event) -> None:
        if (
            event.get("log_failure") is not None
            or event.get("log_level") is not None
            and (event["log_level"].name in ("error", "critical"))
        ):
            self.failures.append(event)


@dataclass(repr=False)
class World:
    core: object
    data_dir: Path
    outside: Path
    homes: dict
    accounts: dict
    watch: Watch


def wait(coroutine):
    """Run a core call from a fixture (outside the reactor's greenlet)."""
    return pytest_twisted.blockon(defer.Deferred.fromCoroutine(coroutine))


def plant(home: Path, outside: Path, neighbour: Path) -> None:
    (home / "docs").mkdir(parents=True, exist_ok=True)
    (home / "docs" / "a.txt").write_text("inside")
    (home / "big.bin").write_bytes(os.urandom(70_000))
    (home / "café").write_text("nfc")  # NFC; the fuzzer also sends the NFD spelling
    for name, target in (
        ("link-out", str(outside)),
        ("link-etc", "/etc"),
        ("link-neighbour", f"../{neighbour.name}"),
        ("link-in", "docs"),
        ("link-file-out", str(outside / "secret.txt")),
    ):
        if not os.path.lexists(home / name):
            os.symlink(target, home / name)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    from twisted.internet import reactor

    base = tmp_path_factory.mktemp("fuzz")
    settings_ = config.load(None, {})
    settings_.server.data_dir = str(base / "data")
    settings_.security.bcrypt_rounds = 4
    core = build_core(settings_, reactor, storage_backends)
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(OUTSIDE_SECRET)
    accounts, homes = {}, {}
    for name, changes in (("bob", {}), ("alice", {}), ("carol", {"quota_bytes": 300_000})):
        accounts[name] = wait(make_account(core, name, **changes))
        session = wait(core.files.session(accounts[name], "sftp", "127.0.0.1"))
        homes[name] = Path(session.tree.root)
    (homes["bob"] / "secret.txt").write_bytes(NEIGHBOUR_SECRET)
    for name in ("alice", "carol"):
        plant(homes[name], outside, homes["bob"])
    watch = Watch()
    watch.wrap(core.threads)
    globalLogPublisher.addObserver(watch.observe)
    try:
        yield World(core, base / "data", outside, homes, accounts, watch)
    finally:
        globalLogPublisher.removeObserver(watch.observe)
        core.threads.stop()
        core.store.close()


def snapshot(world: World, inside: Path) -> dict:
    """Every file, folder and link outside `inside` (the database aside: audit rows change it)."""
    seen = {}
    for top in (world.data_dir, world.outside):
        for folder, dirs, names in os.walk(top):
            here = Path(folder)
            if here == inside:
                dirs[:] = []
                continue
            for name in dirs + names:
                path = here / name
                if path == inside or name.startswith("appliance.db"):
                    continue
                st = path.lstat()
                target = os.readlink(path) if path.is_symlink() else None
                seen[str(path)] = (st.st_mode, st.st_size, st.st_mtime_ns, target)
    return seen


def home_size(home: Path) -> int:
    total = 0
    for folder, _dirs, names in os.walk(home):
        for name in names:
            path = Path(folder) / name
            if not path.is_symlink() and path.is_file() and not name.startswith(TEMP_PREFIX):
                total += path.stat().st_size
    return total


def temp_files(home: Path) -> list[str]:
    return [n for _, _, names in os.walk(home) for n in names if n.startswith(TEMP_PREFIX)]


def open_fds(world: World) -> list[str]:
    """The files under the fuzzed data dir this process holds open.

    Only those: sockets and pipes of earlier tests' daemons and clients close whenever
    the reactor gets to them, and would make a count of every descriptor flaky.
    """
    held = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed while listing (the listing's own descriptor, for one)
        inside = target.startswith((str(world.data_dir), str(world.outside)))
        if inside and not target.endswith((".db", ".db-wal", ".db-shm")):
            held.append(target)
    return sorted(held)


async def quiet(world: World, output, extra=lambda: False, timeout: float = 20.0) -> None:
    """Wait until no core thread work is in flight and the output stopped growing."""
    from twisted.internet import reactor

    calm = 0
    last = -1
    waited = 0.0
    while calm < 3:
        await task.deferLater(reactor, 0.001, lambda: None)
        waited += 0.001
        size = len(output())
        if world.watch.in_flight == 0 and size == last and not extra():
            calm += 1
        else:
            calm = 0
        last = size
        if waited > timeout:
            raise AssertionError("the server never went quiet")


# -- hostile names ---------------------------------------------------------------------

SEGMENTS = [
    "..",
    ".",
    "",
    "a",
    "b.txt",
    "docs",
    "a.txt",
    "big.bin",
    "link-out",
    "link-etc",
    "link-neighbour",
    "link-in",
    "link-file-out",
    "secret.txt",
    "passwd",
    "café",  # NFC
    "cafe\u0301",  # NFD
    "\\",
    "..\\..",
    "%2e%2e",
    "%2f",
    "..%2f..",
    "\x00",
    "a\x00b",
    "\r\n",
    "evil\r\n226 ok",
    "\t",
    "x" * 255,
    "y" * 256,
    "é" * 128,
    TEMP_PREFIX + "0123456789abcdef",
    " ",
    "\u202e",
    "\ufeff",
    "*",
    "?",
    "[a]",
    "~",
    "-la",
    '"q"',
]


@st.composite
def hostile_paths(draw) -> str:
    parts = draw(st.lists(st.sampled_from(SEGMENTS) | st.text(max_size=8), max_size=6))
    lead = draw(st.sampled_from(["", "/", "//", "./", "../"]))
    return lead + "/".join(parts)


@st.composite
def hostile_path_bytes(draw) -> bytes:
    """A path as bytes, sometimes not UTF-8 (overlong '.' and '/', lone bytes)."""
    raw = draw(hostile_paths()).encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 9)) == 0:
        junk = draw(st.sampled_from([b"\xff", b"\xc0\xae", b"\xc0\xaf", b"\xe0\x80\xae", b"\xed\xa0\x80", b"\x80"]))
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + junk + raw[at:]
    return raw


# -- SFTP ---------------------------------------------------------------------------------

FXP = {
    "INIT": 1,
    "OPEN": 3,
    "CLOSE": 4,
    "READ": 5,
    "WRITE": 6,
    "LSTAT": 7,
    "FSTAT": 8,
    "SETSTAT": 9,
    "FSETSTAT": 10,
    "OPENDIR": 11,
    "READDIR": 12,
    "REMOVE": 13,
    "MKDIR": 14,
    "RMDIR": 15,
    "REALPATH": 16,
    "STAT": 17,
    "RENAME": 18,
    "READLINK": 19,
    "SYMLINK": 20,
    "EXTENDED": 200,
}
REPLY_TYPES = {2, 101, 102, 103, 104, 105, 201}


def ns(data: bytes) -> bytes:
    return struct.pack("!L", len(data)) + data


def packet(kind: int, body: bytes) -> bytes:
    return struct.pack("!LB", len(body) + 1, kind) + body


@st.composite
def sftp_attrs(draw) -> bytes:
    flags = draw(st.sampled_from([0, 1, 2, 4, 8, 0x0F, 0x80000000, 0x8000000F]) | st.integers(0, 2**32 - 1))
    body = b""
    if flags & 1:
        body += struct.pack("!Q", draw(st.integers(0, 2**64 - 1)))
    if flags & 2:
        body += struct.pack("!2L", draw(st.integers(0, 2**32 - 1)), draw(st.integers(0, 2**32 - 1)))
    if flags & 4:
        body += struct.pack("!L", draw(st.sampled_from([0o777, 0o4755, 0o120777, 0xFFFFFFFF, 0o100644])))
    if flags & 8:
        body += struct.pack("!2L", draw(st.integers(0, 2**32 - 1)), draw(st.integers(0, 2**32 - 1)))
    if flags & 0x80000000:
        count = draw(st.integers(0, 3))
        body += struct.pack("!L", count)
        for _ in range(count):
            body += ns(draw(st.binary(max_size=8))) + ns(draw(st.binary(max_size=8)))
    return struct.pack("!L", flags) + body


OFFSETS = st.sampled_from(
    [0, 1, 5, 4096, 69_999, 70_000, 300_001, 2**31, 2**32, 2**40, 2**62, 2**63 - 1, 2**63, 2**64 - 1]
)
SIZES = st.sampled_from([0, 1, 100, 32768, 65536, 2**31, 2**32 - 1])


class SftpConnection:
    """SftpProtocol over a StringTransport, with a reply parser."""

    def __init__(self, world: World, session, pacer=None):
        from appliance.frontends.sftp.server import FilesServer, SftpProtocol

        self.world = world
        self.session = session
        self.server = FilesServer(self.session, MAX_HANDLES)
        self.protocol = SftpProtocol(self.server, pacer)
        self.transport = StringTransport()
        self.protocol.makeConnection(self.transport)
        self.parsed = 0  # bytes of output parsed so far
        self.replies: dict[int, int] = {}  # request id -> replies seen
        self.handles: list[bytes] = []
        self.next_id = 1000
        self.sent_ids: set[int] = set()
        self.lost = False

    def output(self) -> bytes:
        return self.transport.value()

    def feed(self, data: bytes, cuts: list[int]) -> None:
        edges = [0, *sorted(c % (len(data) + 1) for c in cuts), len(data)]
        for start, end in zip(edges, edges[1:], strict=False):
            if start < end:
                self.protocol.dataReceived(data[start:end])

    def request_id(self) -> bytes:
        self.next_id += 1
        self.sent_ids.add(self.next_id)
        return struct.pack("!L", self.next_id)

    async def settle(self) -> None:
        await quiet(self.world, self.output)
        self.parse()

    def parse(self) -> None:
        out = self.output()
        while len(out) - self.parsed >= 5:
            length, kind = struct.unpack_from("!LB", out, self.parsed)
            assert 1 <= length <= 64 * 1024 * 1024, f"reply length {length}"
            assert len(out) - self.parsed >= 4 + length, "a reply was cut short"
            body = out[self.parsed + 5 : self.parsed + 4 + length]
            self.parsed += 4 + length
            self.check_reply(kind, body)
        assert self.parsed == len(out), "trailing bytes after the last reply"

    def check_reply(self, kind: int, body: bytes) -> None:
        assert kind in REPLY_TYPES, f"reply of type {kind}"
        if kind == 2:  # VERSION: version, then extension pairs
            rest = body[4:]
            assert len(body) >= 4
            while rest:
                rest = take_string(take_string(rest))
            return
        (request,) = struct.unpack("!L", body[:4])
        self.replies[request] = self.replies.get(request, 0) + 1
        rest = body[4:]
        if kind == 101:  # STATUS: code, message, language
            (code,) = struct.unpack("!L", rest[:4])
            assert code <= 31, f"status code {code}"
            rest = take_string(take_string(rest[4:]))
            assert rest == b""
        elif kind in (102, 103):  # HANDLE, DATA
            if kind == 102:
                self.handles.append(string_at(rest))
            assert take_string(rest) == b""
        elif kind == 104:  # NAME
            (count,) = struct.unpack("!L", rest[:4])
            rest = rest[4:]
            for _ in range(count):
                rest = skip_attrs(take_string(take_string(rest)))
            assert rest == b""
        elif kind == 105:  # ATTRS
            assert skip_attrs(rest) == b""

    async def close(self) -> None:
        if not self.lost:
            self.lost = True
            self.protocol.connectionLost(Failure(ConnectionDone()))
        await quiet(self.world, self.output)


async def sftp_connection(world: World, who: str, pacer=None) -> SftpConnection:
    return SftpConnection(world, await world.core.files.session(world.accounts[who], "sftp", "127.0.0.1"), pacer)


def take_string(data: bytes) -> bytes:
    (length,) = struct.unpack("!L", data[:4])
    assert len(data) >= 4 + length, "a string runs past its packet"
    return data[4 + length :]


def string_at(data: bytes) -> bytes:
    (length,) = struct.unpack("!L", data[:4])
    return data[4 : 4 + length]


def skip_attrs(data: bytes) -> bytes:
    (flags,) = struct.unpack("!L", data[:4])
    data = data[4:]
    for bit, size in ((1, 8), (2, 8), (4, 4), (8, 8)):
        if flags & bit:
            assert len(data) >= size
            data = data[size:]
    if flags & 0x80000000:
        (count,) = struct.unpack("!L", data[:4])
        data = data[4:]
        for _ in range(count):
            data = take_string(take_string(data))
    return data


def draw_handle(data, conn: SftpConnection) -> bytes:
    choices = [st.binary(max_size=12), st.sampled_from([b"", b"0", b"-1", b"\x00" * 4])]
    if conn.handles:
        choices = [st.sampled_from(conn.handles)] * 3 + choices
    return data.draw(st.one_of(*choices))


def draw_sftp_request(data, conn: SftpConnection) -> tuple[bytes, bool]:
    """One framed request and whether it expects a reply carrying its id."""
    name = data.draw(st.sampled_from([*FXP, "UNKNOWN"]))
    if name == "INIT":
        version = data.draw(st.sampled_from([3, 0, 6, 2**32 - 1]))
        return packet(1, struct.pack("!L", version) + ns(b"ext") + ns(b"x")), False
    request = conn.request_id()
    path = lambda: ns(data.draw(hostile_path_bytes()))  # noqa: E731
    handle = lambda: ns(draw_handle(data, conn))  # noqa: E731
    if name == "UNKNOWN":
        kind = data.draw(st.sampled_from([0, 2, 21, 101, 102, 199, 201, 255]))
        return packet(kind, request + data.draw(st.binary(max_size=16))), True
    kind = FXP[name]
    if name == "OPEN":
        flags = data.draw(st.sampled_from([1, 2, 3, 0x0A, 0x1A, 0x2A, 0x3A, 0x06, 0x04, 0, 0x3F]) | st.integers(0, 63))
        body = path() + struct.pack("!L", flags) + data.draw(sftp_attrs())
    elif name in ("CLOSE", "FSTAT", "READDIR"):
        body = handle()
    elif name == "READ":
        body = handle() + struct.pack("!QL", data.draw(OFFSETS), data.draw(SIZES))
    elif name == "WRITE":
        size = data.draw(st.sampled_from([0, 1, 1000, 40_000, 70_001]))
        body = handle() + struct.pack("!Q", data.draw(OFFSETS)) + ns(os.urandom(size))
    elif name in ("LSTAT", "STAT", "OPENDIR", "REMOVE", "RMDIR", "REALPATH", "READLINK"):
        body = path()
    elif name in ("SETSTAT", "MKDIR"):
        body = path() + data.draw(sftp_attrs())
    elif name == "FSETSTAT":
        body = handle() + data.draw(sftp_attrs())
    elif name in ("RENAME", "SYMLINK"):
        body = path() + path()
    else:  # EXTENDED
        which = data.draw(
            st.sampled_from([b"posix-rename@openssh.com", b"statvfs@openssh.com", b"fstatvfs@openssh.com", b"x@y"])
        )
        if which == b"posix-rename@openssh.com":
            payload = path() + path()
        elif which == b"statvfs@openssh.com":
            payload = path()
        elif which == b"fstatvfs@openssh.com":
            payload = handle()
        else:
            payload = data.draw(st.binary(max_size=16))
        body = ns(which) + payload
        if which == b"x@y" and data.draw(st.booleans()):
            body = ns(data.draw(st.text(max_size=12)).encode()) + payload
    mangle = data.draw(st.sampled_from(["none"] * 6 + ["truncate", "append", "length"]))
    if mangle == "truncate":
        body = body[: data.draw(st.integers(0, len(body)))]
    elif mangle == "append":
        body += data.draw(st.binary(min_size=1, max_size=8))
    elif mangle == "length" and len(body) >= 4:
        body = data.draw(st.sampled_from([b"\xff\xff\xff\xff", b"\x00\x00\x00\x00", b"\x7f\x00\x00\x00"])) + body[4:]
    return packet(kind, request + body), True


# Errors logged by the packet loop for a request it could not parse: the client gets
# FX_BAD_MESSAGE. Anything else logged is a finding.
PARSE_ERRORS = (struct.error, AssertionError, UnicodeDecodeError)
# Findings already reported and pinned by an xfail test below; remove when fixed.
KNOWN = ()


def unexpected(events) -> list:
    bad = []
    for event in events:
        failure = event.get("log_failure")
        if failure is None and event.get("log_format") == "Unhandled error in Deferred:":
            continue  # the failure itself comes in an event of its own
        if failure is not None:
            value = failure.value
            if isinstance(value, PARSE_ERRORS) and "malformed SFTP request" in event.get("log_format", ""):
                continue
            text = f"{type(value).__name__}: {value}"
            if any(type(value).__name__ == kind and needle in text for kind, needle in KNOWN):
                continue
            bad.append(text + " | " + event.get("log_format", ""))
        else:
            bad.append(event.get("log_format", ""))
    return bad


def test_sftp_fuzz_world_is_hostile_enough(world):
    """The planted links really point out, so a confinement bug would show. Checked
    before the fuzzing (pytest keeps the file's order): alice may delete or rename
    her own links, and some examples do."""
    home = world.homes["alice"]
    assert (home / "link-out" / "secret.txt").read_bytes() == OUTSIDE_SECRET
    assert (home / "link-neighbour" / "secret.txt").read_bytes() == NEIGHBOUR_SECRET


@FUZZ
@given(data=st.data())
def test_sftp_packet_loop_survives_hostile_requests(world, data):
    return defer.Deferred.fromCoroutine(sftp_example(world, data))


async def sftp_example(world, data):
    who = data.draw(st.sampled_from(["alice", "carol"]))
    home = world.homes[who]
    before = snapshot(world, home)
    fds = open_fds(world)
    world.watch.failures.clear()
    conn = await sftp_connection(world, who)
    try:
        if data.draw(st.booleans()):
            conn.feed(packet(1, struct.pack("!L", 3)), [])
        expect_all = True
        for _ in range(data.draw(st.integers(1, 6))):
            if data.draw(st.integers(0, 11)) == 0:
                # raw bytes: the framing itself may be garbage from here on
                expect_all = False
                conn.feed(data.draw(st.binary(max_size=64)), [])
            else:
                batch = [draw_sftp_request(data, conn)[0] for _ in range(data.draw(st.integers(1, 5)))]
                stream = b"".join(batch)
                conn.feed(stream, data.draw(st.lists(st.integers(0, 2**16), max_size=4)))
            if data.draw(st.booleans()):
                await conn.settle()
        await conn.settle()
        if expect_all and not conn.transport.disconnecting:
            unanswered = sorted(conn.sent_ids - set(conn.replies))
            assert not unanswered, f"requests never answered: {unanswered}"
        twice = {k: v for k, v in conn.replies.items() if v > 1 and k in conn.sent_ids}
        assert not twice, f"requests answered more than once: {twice}"
    finally:
        await conn.close()
    gc.collect(1)  # unhandled errors in Deferreds are logged when they are collected (a full pass costs 0.1 s)
    conn.parse()
    assert not leaks(conn.output()), "a reply carried a file from outside the home"
    assert snapshot(world, home) == before, "something outside the home changed"
    assert not temp_files(home), "an upload's temporary file survived the session"
    assert not world.core.files.uploads, "an upload is still registered after the session"
    if who == "carol":
        assert home_size(home) <= 300_000, "the quota was exceeded"
    assert open_fds(world) == fds, "file descriptors leaked"
    assert not unexpected(world.watch.failures), unexpected(world.watch.failures)


# -- SFTP findings, pinned ------------------------------------------------------------------


def sftp_status(conn: SftpConnection, request: int) -> int:
    """The status code of the reply to `request`."""
    out = conn.output()
    offset = 0
    while offset < len(out):
        length, kind = struct.unpack_from("!LB", out, offset)
        body = out[offset + 5 : offset + 4 + length]
        offset += 4 + length
        if kind == 101 and struct.unpack("!L", body[:4])[0] == request:
            return struct.unpack("!L", body[4:8])[0]
    raise AssertionError(f"no status for request {request}")


@pytest.mark.parametrize("kind", ["READDIR", "FSTAT", "FSETSTAT"])
@pytest_twisted.ensureDeferred
async def test_sftp_a_stale_handle_is_refused_without_a_logged_error(world, kind):
    world.watch.failures.clear()
    conn = await sftp_connection(world, "alice")
    try:
        body = ns(b"no-such-handle")
        if kind == "READ":
            body += struct.pack("!QL", 0, 10)
        elif kind == "FSETSTAT":
            body += struct.pack("!L", 0)
        conn.feed(packet(FXP[kind], struct.pack("!L", 7) + body), [])
        await conn.settle()
        assert sftp_status(conn, 7) == 4  # FX_FAILURE
    finally:
        await conn.close()
    assert world.watch.failures == []


@pytest.mark.parametrize("kind", ["READ", "WRITE"])
@pytest_twisted.ensureDeferred
async def test_sftp_an_offset_past_the_largest_file_is_refused_cleanly(world, kind):
    world.watch.failures.clear()
    conn = await sftp_connection(world, "alice")
    try:
        flags = 1 if kind == "READ" else 0x1A  # read / write+create+truncate
        conn.feed(packet(3, struct.pack("!L", 1) + ns(f"/offset-{kind}".encode()) + struct.pack("!LL", flags, 0)), [])
        if kind == "READ":
            conn.feed(packet(3, struct.pack("!L", 1) + ns(b"/big.bin") + struct.pack("!LL", 1, 0)), [])
        await conn.settle()
        handle = conn.handles[-1]
        if kind == "READ":
            conn.feed(packet(5, struct.pack("!L", 2) + ns(handle) + struct.pack("!QL", 2**63, 10)), [])
        else:
            conn.feed(packet(6, struct.pack("!L", 2) + ns(handle) + struct.pack("!Q", 2**63) + ns(b"x")), [])
            conn.feed(packet(4, struct.pack("!L", 3) + ns(handle)), [])
        await conn.settle()
    finally:
        await conn.close()
    assert world.watch.failures == []
    assert not (world.homes["alice"] / "offset-WRITE").exists()


@pytest_twisted.ensureDeferred
async def test_sftp_an_extension_with_a_non_ascii_name_is_answered(world):
    world.watch.failures.clear()
    conn = await sftp_connection(world, "alice")
    try:
        conn.feed(packet(200, struct.pack("!L", 9) + ns("café@example.com".encode())), [])
        await conn.settle()
        assert sftp_status(conn, 9) == 8  # FX_OP_UNSUPPORTED
    finally:
        await conn.close()
    gc.collect(1)
    assert not unexpected(world.watch.failures)


@pytest_twisted.ensureDeferred
async def test_sftp_pipelined_opens_cannot_exceed_the_handle_limit(world):
    conn = await sftp_connection(world, "alice")
    try:
        opens = b"".join(
            packet(3, struct.pack("!L", i) + ns(b"/big.bin") + struct.pack("!LL", 1, 0)) for i in range(40)
        )
        conn.feed(opens, [])
        await conn.settle()
        assert len(conn.protocol.openFiles) <= MAX_HANDLES
    finally:
        await conn.close()


@pytest_twisted.ensureDeferred
async def test_sftp_directory_handles_count_against_the_limit(world):
    conn = await sftp_connection(world, "alice")
    try:
        for i in range(MAX_HANDLES + 4):
            conn.feed(packet(11, struct.pack("!L", i) + ns(b"/docs")), [])
            await conn.settle()
        assert len(conn.protocol.openDirs) <= MAX_HANDLES
    finally:
        await conn.close()


# -- FTP ------------------------------------------------------------------------------------

VERBS = [
    "USER", "PASS", "QUIT", "CWD", "XCWD", "CDUP", "PWD", "MKD", "RMD", "DELE", "RNFR", "RNTO", "SIZE", "MDTM",
    "MFMT", "LIST", "NLST", "MLSD", "MLST", "REST", "RETR", "STOR", "APPE", "STOU", "ABOR", "ALLO", "PASV",
    "EPSV", "PORT", "EPRT", "FEAT", "OPTS", "HELP", "SITE", "STAT", "SYST", "NOOP", "TYPE", "MODE", "STRU",
    "AUTH", "PBSZ", "PROT", "ACCT", "REIN", "SMNT", "LPRT", "LPSV", "CLNT", "HOST", "xcwd", "Retr", "",
    "BOGUS", "ftp_USER", "__init__", "US ER", "USER\x00",
]  # fmt: skip
PEER = "127.0.0.1"


@st.composite
def port_arguments(draw) -> str:
    kind = draw(st.sampled_from(["PORT", "EPRT", "junk"]))
    host = draw(
        st.sampled_from([PEER, "127.0.0.2", "10.0.0.1", "0.0.0.0", "255.255.255.255", "::1", "::ffff:127.0.0.1"])
    )
    port = draw(st.sampled_from([0, 21, 22, 25, 1023, 1024, 2121, 40000, 65535, 65536, -1]))
    if kind == "PORT":
        numbers = [*host.split("."), str(port >> 8), str(port & 255)] if "." in host else ["1"] * 6
        return ",".join(numbers)
    if kind == "EPRT":
        family = draw(st.sampled_from(["1", "2", "3", ""]))
        delim = draw(st.sampled_from(["|", "!", ""]))
        return f"{delim}{family}{delim}{host}{delim}{port}{delim}"
    return draw(st.text(max_size=30))


@st.composite
def ftp_lines(draw) -> bytes:
    verb = draw(st.sampled_from(VERBS))
    if verb.upper() in ("PORT", "EPRT", "LPRT"):
        arg = draw(port_arguments())
    elif verb.upper() == "PASS":
        arg = draw(st.sampled_from([PASSWORD, "wrong", ""]))
    elif verb.upper() == "USER":
        arg = draw(st.sampled_from(["alice", "bob", "nobody", "", "alice\x00", "a" * 300]))
    elif verb.upper() == "REST":
        arg = draw(st.sampled_from(["0", "5", "-1", "70000", str(2**63), str(2**64), "1e3", "x", ""]))
    elif verb.upper() == "MFMT":
        arg = draw(st.sampled_from(["20200101000000 ", "99999999999999 ", "x "])) + draw(hostile_paths())
    elif verb.upper() == "OPTS":
        arg = draw(st.sampled_from(["UTF8 ON", "UTF8 OFF", "MLST type;size;", "MLST \r", "X"]))
    else:
        arg = draw(hostile_paths())
    line = (verb + (" " + arg if draw(st.booleans()) or arg else "")).encode("utf-8", "surrogatepass")
    tweak = draw(st.sampled_from(["none"] * 8 + ["iac", "nul", "cr", "lf", "latin1", "long", "random"]))
    at = draw(st.integers(0, len(line)))
    if tweak == "iac":
        line = line[:at] + draw(st.sampled_from([b"\xff\xf4", b"\xff\xf2", b"\xff", b"\xff\xff", b"\xff\xfb\x01"]))
        line += line[at:]
    elif tweak == "nul":
        line = line[:at] + b"\x00" + line[at:]
    elif tweak == "cr":
        line = line[:at] + b"\r" + line[at:]
    elif tweak == "lf":
        line = line[:at] + b"\n" + line[at:]
    elif tweak == "latin1":
        line = line[:at] + b"\xe9\xff\xc3" + line[at:]
    elif tweak == "long":
        line += b"A" * draw(st.sampled_from([4096, 8190, 8200, 20000]))
    elif tweak == "random":
        line = draw(st.binary(max_size=40)).replace(b"\r\n", b"")
    return line


class FtpConnection:
    """An FTP control connection over a StringTransport; its clock and connections are fake."""

    def __init__(self, world: World):
        from appliance.frontends.ftp.login import ftp_portal
        from appliance.frontends.ftp.protocol import FTPFactory

        self.world = world
        self.clock = MemoryReactorClock()
        factory = FTPFactory(
            ftp_portal(world.core),
            self.clock,
            passive_ports=range(40000, 40010),
            idle_timeout=900,
            transfer_timeout=300,
            masquerade=None,
        )
        self.protocol = factory.buildProtocol(IPv4Address("TCP", PEER, 50000))
        self.transport = StringTransport(
            hostAddress=IPv4Address("TCP", "127.0.0.1", 2121), peerAddress=IPv4Address("TCP", PEER, 50000)
        )
        self.protocol.makeConnection(self.transport)
        self.session = self.protocol.wrappedProtocol
        self.lines = 0  # complete command lines sent before the server closed
        self.lost = False

    def output(self) -> bytes:
        return self.transport.value()

    def send(self, line: bytes) -> None:
        if not self.transport.disconnecting:
            self.lines += (line + b"\r\n").count(b"\r\n")  # a CR LF inside makes two lines
        self.protocol.dataReceived(line + b"\r\n")

    async def settle(self) -> None:
        """Let the core answer; let waits for data connections time out."""
        for _ in range(10):
            await quiet(self.world, self.output)
            if not self.session.busy or self.transport.disconnecting:
                break
            self.clock.advance(31)  # DATA_CONNECT_TIMEOUT passes
        await quiet(self.world, self.output)

    def replies(self) -> list[int]:
        """The final reply codes; asserts every line is a well-formed reply line."""
        out = self.output()
        assert out == b"" or out.endswith(b"\r\n"), f"a reply line was cut: {out[-80:]!r}"
        codes, multi = [], None
        for line in out.split(b"\r\n")[:-1]:
            assert b"\r" not in line and b"\n" not in line, f"bare CR/LF in a reply: {line!r}"
            if multi is not None:
                if line.startswith(multi + b" "):
                    codes.append(int(multi))
                    multi = None
                else:
                    assert not re.match(rb"^\d{3} ", line), f"a continuation line looks like a reply: {line!r}"
                continue
            assert re.match(rb"^\d{3}[ -]", line), f"not a reply line: {line!r}"
            if line[3:4] == b"-":
                multi = line[:3]
            elif not line.startswith(b"1"):
                codes.append(int(line[:3]))
        assert multi is None, "an unfinished multi-line reply"
        return codes

    async def close(self) -> None:
        if not self.lost:
            self.lost = True
            self.protocol.connectionLost(Failure(ConnectionDone()))
        await quiet(self.world, self.output)


@FUZZ
@given(data=st.data())
def test_ftp_command_interpreter_survives_hostile_lines(world, data):
    return defer.Deferred.fromCoroutine(ftp_example(world, data))


async def ftp_example(world, data):
    home = world.homes["alice"]
    before = snapshot(world, home)
    fds = open_fds(world)
    world.watch.failures.clear()
    world.core.auth._throttle = LoginThrottle(world.core.reactor)  # failed sign-ins must not slow the fuzz
    conn = FtpConnection(world)
    try:
        if data.draw(st.booleans()):
            conn.send(b"USER alice")
            conn.send(b"PASS " + PASSWORD.encode())
            await conn.settle()
        for _ in range(data.draw(st.integers(1, 8))):
            conn.send(data.draw(ftp_lines()))
            if data.draw(st.booleans()):
                await conn.settle()
        await conn.settle()
        codes = conn.replies()
        if not conn.transport.disconnecting and not unexpected(world.watch.failures):
            # the greeting, then one final reply per line
            assert codes[0] == 220 and len(codes) - 1 == conn.lines, f"{conn.lines} lines, final replies {codes}"
        for host, port, *_ in conn.clock.tcpClients:
            assert host == PEER and port >= 1024, f"a data connection to {host}:{port}"
        for port, _factory, _backlog, interface in conn.clock.tcpServers:
            assert interface == "127.0.0.1" and 40000 <= port < 40010, f"a passive port {interface}:{port}"
    finally:
        await conn.close()
    gc.collect(1)
    assert snapshot(world, home) == before, "something outside the home changed"
    assert not temp_files(home), "an upload's temporary file survived the session"
    assert open_fds(world) == fds, "file descriptors leaked"
    assert not unexpected(world.watch.failures), unexpected(world.watch.failures)


@pytest_twisted.ensureDeferred
async def test_ftp_type_with_an_empty_argument_gets_a_reply(world):
    world.watch.failures.clear()
    conn = FtpConnection(world)
    try:
        conn.send(b"USER alice")
        conn.send(b"PASS " + PASSWORD.encode())
        conn.send(b"TYPE ")
        await conn.settle()
        assert conn.replies() == [220, 331, 230, 501]
    finally:
        await conn.close()
    assert not unexpected(world.watch.failures)


@pytest_twisted.ensureDeferred
async def test_ftp_a_line_break_in_an_argument_is_not_echoed(world):
    conn = FtpConnection(world)
    try:
        conn.send(b"USER alice")
        conn.send(b"PASS " + PASSWORD.encode())
        conn.send(b"MODE \n226 fake reply")
        await conn.settle()
        assert conn.replies() == [220, 331, 230, 504]
    finally:
        await conn.close()


@pytest_twisted.ensureDeferred
async def test_ftp_a_listing_cut_short_by_a_disconnect_logs_no_error(world):
    conn = FtpConnection(world)
    conn.send(b"USER alice")
    conn.send(b"PASS " + PASSWORD.encode())
    await conn.settle()
    world.watch.failures.clear()
    conn.send(b"MLST /docs")
    await conn.close()
    gc.collect(1)
    assert not [e for e in world.watch.failures if e.get("log_failure") is not None]


def sftp_status_message(conn: SftpConnection, request: int) -> tuple[int, bytes]:
    out = conn.output()
    offset = 0
    while offset < len(out):
        length, kind = struct.unpack_from("!LB", out, offset)
        body = out[offset + 5 : offset + 4 + length]
        offset += 4 + length
        if kind == 101 and struct.unpack("!L", body[:4])[0] == request:
            return struct.unpack("!L", body[4:8])[0], string_at(body[8:])
    raise AssertionError(f"no status for request {request}")


@pytest_twisted.ensureDeferred
async def test_sftp_a_disk_error_during_a_read_reaches_the_client_as_the_core_says(world, monkeypatch):
    """A READ whose disk read fails on the work pool gets the core's message (run_now resumes
    the coroutine with the failure), not 'Internal error' and a logged traceback."""
    import types

    from appliance.storage.local import handles

    conn = await sftp_connection(world, "alice")
    try:
        conn.feed(packet(3, struct.pack("!L", 1) + ns(b"/big.bin") + struct.pack("!LL", 1, 0)), [])
        await conn.settle()
        handle = conn.handles[-1]

        def broken_pread(fd, length, offset):
            raise OSError(5, "Input/output error")

        monkeypatch.setattr(handles, "os", types.SimpleNamespace(**{**vars(os), "pread": broken_pread}))
        world.watch.failures.clear()
        conn.feed(packet(5, struct.pack("!L", 2) + ns(handle) + struct.pack("!QL", 0, 100)), [])
        await conn.settle()
        code, message = sftp_status_message(conn, 2)
    finally:
        monkeypatch.undo()
        await conn.close()
    assert code == 4 and b"storage failed" in message, message
    # ops see the failing disk in the daemon's log, once, and nothing else (no traceback)
    assert [event.get("log_format") for event in world.watch.failures] == ["the storage failed on {path}: {error}"]
    assert world.watch.failures[0]["path"] == "/big.bin"


@pytest_twisted.ensureDeferred
async def test_the_pacer_spreads_many_sessions_reads_over_turns_in_order(world):
    """With the turn's budget spent, later sessions keep their requests for the next
    turn; every request is still answered once, in order, with the right bytes."""
    from twisted.internet import reactor

    from appliance.frontends.sftp.server import Pacer

    pacer = Pacer(reactor, budget=16 * 1024)
    conns = [await sftp_connection(world, "alice", pacer) for _ in range(3)]
    expected = (world.homes["alice"] / "big.bin").read_bytes()
    try:
        for conn in conns:
            conn.feed(packet(1, struct.pack("!L", 3)), [])
            conn.feed(packet(FXP["OPEN"], conn.request_id() + ns(b"/big.bin") + struct.pack("!LL", 1, 0)), [])
        await task.deferLater(reactor, 0.05, lambda: None)
        for conn in conns:
            await conn.settle()
            assert len(conn.handles) == 1
        reads = {}
        for conn in conns:  # all three in one turn, as from one epoll wake-up
            ids = []
            stream = b""
            for offset in range(0, len(expected), 4096):
                ids.append(conn.next_id + 1)
                stream += packet(
                    FXP["READ"], conn.request_id() + ns(conn.handles[0]) + struct.pack("!QL", offset, 4096)
                )
            reads[conn] = ids
            conn.feed(stream, [])
        assert conns[0].protocol.buf, "the first session went past the budget"
        assert len(conns[1].protocol.buf) == len(stream), "a later session did not wait for the next turn"
        for conn in conns:
            await conn.settle()
        for conn in conns:
            out, order, data = conn.output(), [], b""
            offset = 0
            while offset < len(out):
                length, kind = struct.unpack_from("!LB", out, offset)
                body = out[offset + 5 : offset + 4 + length]
                offset += 4 + length
                (request,) = struct.unpack("!L", body[:4])
                if request in reads[conn]:
                    assert kind == 103, f"READ {request} answered with type {kind}"
                    order.append(request)
                    data += body[8:]
            assert order == reads[conn], "replies out of order, missing or repeated"
            assert data == expected
    finally:
        for conn in conns:
            await conn.close()
