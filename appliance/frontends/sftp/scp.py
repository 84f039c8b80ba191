"""Legacy scp (the rcp protocol) over the same core FileSession as SFTP.

`scp -O`, `pscp -scp` and old scripts do not speak SFTP: they exec `scp -t TARGET`
(sink: the client uploads) or `scp -f PATH...` (source: the client downloads) and
talk the rcp protocol on the session channel. Nothing is executed here: the command
line is parsed as a POSIX shell would split it (`scp_request`), and anything but
those two commands with the flags OpenSSH's scp sends (-r, -p, -d, -v) is refused.

Every file goes through the core as an SFTP transfer does: permissions, quotas,
uploads to a temporary name committed once their last byte is there (an interrupted
upload leaves nothing), path confinement and one audit row per transfer, under the
session's protocol (sftp). Errors reach the client the rcp way: a line starting with
\\x01 (this file failed, the next one goes on) or \\x02 (the copy ends), with the
core's message; the exit status is 1 when anything failed, as from OpenSSH's scp.

Flow control: what the client sends is taken from the channel as it is handled and
only then given back to its window (BufferedChannel.consumed), so a client uploading
faster than the disk writes is paused by SSH; a download is read a chunk at a time
while the channel's unsent output stays under MAX_UNSENT. Both draw on the daemon's
SFTP Pacer, so an scp transfer takes no more of a reactor turn than an SFTP one.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from pathlib import PurePosixPath

from twisted.internet import defer
from twisted.internet.protocol import Protocol
from twisted.logger import Logger
from twisted.python.failure import Failure

from ...core.files import Entry, FileSession, Reader, Writer
from ...deferreds import spawn
from ...errors import ApplianceError, Invalid, NotFound

log = Logger()

FLAGS = frozenset("tfrpdv")  # what OpenSSH's scp and PuTTY's pscp send to the remote scp
MAX_LINE = 4096  # a control line longer than this ends the copy (OpenSSH's sink takes 2 KiB)
CHUNK = 256 * 1024  # bytes of a download read and sent at a time
MAX_UNSENT = 1 << 20  # channel output waiting for the client's window before reading stops
MAX_TIME = 253402300799  # 9999-12-31: a later time from a T line is accepted and ignored
_TIMES = re.compile(rb"T(\d{1,20}) (\d{1,6}) (\d{1,20}) (\d{1,6})")
_RECORD = re.compile(rb"([CD])([0-7]{4}) (\d{1,20}) (.*)", re.DOTALL)
# unquoted, these would make a shell do something else than pass a name: refused
_SHELL = frozenset("|&;<>()$`*?[{}\r\n")


@dataclass(frozen=True)
class ScpRequest:
    """What an exec'd scp command asks for."""

    sink: bool  # -t: the client sends files to `paths[0]`; else -f: it gets `paths`
    paths: tuple[str, ...]
    recursive: bool = False  # -r
    preserve: bool = False  # -p: times (T lines)
    directory: bool = False  # -d: the target must be a folder


def scp_request(command: bytes) -> ScpRequest | None:
    """The scp transfer an exec request asks for, or None for any other command (refused):
    `scp` with -t or -f (not both), only the flags scp sends, and the names quoted as a
    shell would take them (OpenSSH passes the remote path as typed; a shell splits it)."""
    try:
        text = command.decode("utf-8")
    except UnicodeDecodeError:
        return None
    words = _shell_words(text)
    if not words or words[0] != "scp":
        return None
    flags: set[str] = set()
    index = 1
    while index < len(words):
        word = words[index]
        if word == "--":
            index += 1
            break
        if not word.startswith("-") or word == "-":
            break
        if not set(word[1:]) <= FLAGS:
            return None
        flags.update(word[1:])
        index += 1
    paths = tuple(words[index:])
    if ("t" in flags) == ("f" in flags) or not paths:
        return None
    return ScpRequest("t" in flags, paths, "r" in flags, "p" in flags, "d" in flags)


def _shell_words(text: str) -> list[str] | None:
    """`text` split into words as a POSIX shell does (quotes, backslashes, a leading `~`
    as the home folder); None when a shell would expand, redirect or run something."""
    words: list[str] = []
    word: list[str] = []
    in_word = False
    i, end = 0, len(text)
    while i < end:
        c = text[i]
        if c in " \t":
            if in_word:
                words.append("".join(word))
                word, in_word = [], False
        elif c == "'":
            close = text.find("'", i + 1)
            if close < 0:
                return None
            word.append(text[i + 1 : close])
            in_word, i = True, close
        elif c == '"':
            in_word = True
            i += 1
            while True:
                if i >= end or text[i] in "$`":
                    return None
                c = text[i]
                if c == '"':
                    break
                if c == "\\" and i + 1 < end and text[i + 1] in '$`"\\':
                    c = text[i + 1]
                    i += 1
                word.append(c)
                i += 1
        elif c == "\\":
            if i + 1 >= end or text[i + 1] in "\r\n":
                return None
            word.append(text[i + 1])
            in_word = True
            i += 1
        elif c == "~" and not in_word:
            follows = text[i + 1] if i + 1 < end else " "
            if follows not in " \t/":
                return None  # ~user
            if follows != "/":
                word.append("/")  # the home folder is the root of the tree the profile sees
            in_word = True
        elif c == "#" and not in_word:
            return None
        elif c in _SHELL or ord(c) < 0x20:
            return None
        else:
            word.append(c)
            in_word = True
        i += 1
    if in_word:
        words.append("".join(word))
    return words


def scp_message(error: BaseException) -> str:
    """The one mapping from the core's errors to what an rcp error line says."""
    if isinstance(error, ApplianceError):
        message = error.message
    else:
        log.failure("unexpected error in the scp front end", Failure(error))
        message = "Internal error: the request was not carried out."
    return " ".join(message.splitlines())


class _Lost(Exception):
    """The client went away (or ended its input) in the middle of the protocol."""


class _Fatal(Exception):
    """The copy ends: the message (if any) is sent as a \\x02 line, the exit status is 1."""

    def __init__(self, message: str | None):
        super().__init__(message)
        self.message = message


class Input:
    """What the client sent and the protocol has not handled yet, taken as lines and
    runs of bytes by the coroutine that waits for them. Bytes go back to the channel's
    window (`release`) only once handled: a client is paused by SSH while they wait."""

    def __init__(self, release):
        self._chunks: deque[bytes] = deque()
        self._ended = False
        self._waiting: defer.Deferred | None = None
        self.release = release

    def feed(self, data: bytes) -> None:
        if not self._ended and data:
            self._chunks.append(bytes(data))
            self._wake()

    def end(self) -> None:
        self._ended = True
        self._wake()

    def _wake(self) -> None:
        waiting, self._waiting = self._waiting, None
        if waiting is not None:
            waiting.callback(None)

    async def _more(self) -> None:
        if self._ended:
            raise _Lost()
        self._waiting = defer.Deferred()
        await self._waiting

    async def line(self) -> bytes | None:
        """The next line without its newline (released); None when the input ended before it."""
        while True:
            head = self._peek(MAX_LINE + 1)
            newline = head.find(b"\n")
            if newline >= 0:
                self._drop(newline + 1)
                return head[:newline]
            if len(head) > MAX_LINE:
                raise _Fatal("protocol error: a line longer than the protocol allows")
            if self._ended:
                if head:
                    raise _Lost()
                return None
            await self._more()

    async def take(self, most: int) -> bytes:
        """Up to `most` bytes (at least one), at once when they are at hand; the caller
        releases them when it is done with them."""
        while not self._chunks:
            await self._more()
        first = self._chunks[0]
        if len(first) <= most:
            return self._chunks.popleft()
        self._chunks[0] = first[most:]
        return first[:most]

    async def drain(self) -> None:
        """Drop what the client sends until its input ends."""
        try:
            while True:
                self.release(len(await self.take(1 << 20)))
        except _Lost:
            return

    def _peek(self, size: int) -> bytes:
        pieces, have = [], 0
        for chunk in self._chunks:
            pieces.append(chunk)
            have += len(chunk)
            if have >= size:
                break
        return b"".join(pieces)[:size]

    def _drop(self, size: int) -> None:
        left = size
        while left:
            first = self._chunks[0]
            if len(first) <= left:
                self._chunks.popleft()
                left -= len(first)
            else:
                self._chunks[0] = first[left:]
                left = 0
        self.release(size)


def _join(folder: str, name: str) -> str:
    return folder.rstrip("/") + "/" + name


class ScpProtocol(Protocol):
    """One exec'd `scp -t` or `scp -f` on a session channel, over the connection's FileSession."""

    def __init__(self, files: FileSession, request: ScpRequest, pacer=None):
        self._files = files
        self._request = request
        self._pacer = pacer
        self._channel = None
        self._input = Input(lambda size: None)
        self._errors = 0
        self._finished = False
        self._exit_waiting: list[defer.Deferred] = []
        self._room_wait: defer.Deferred | None = None
        self._turn_wait: defer.Deferred | None = None
        self._lost = False

    # -- the channel ------------------------------------------------------------------

    def connectionMade(self):
        # conch's session transport (SSHSessionProcessProtocol) keeps the channel as `session`
        self._channel = channel = self.transport.session
        self._input.release = channel.consumed
        channel.exit_after = self._still_running
        spawn(self._run(), "an scp copy")

    def dataReceived(self, data):
        self._input.feed(data)

    def connectionLost(self, reason=None):
        """The client's input ended (its EOF) or the channel closed."""
        self._lost = True
        self._input.end()
        for name in ("_room_wait", "_turn_wait"):
            waiting = getattr(self, name)
            setattr(self, name, None)
            if waiting is not None:
                waiting.errback(_Lost())

    def _still_running(self) -> defer.Deferred | None:
        """What the session's exit (at the client's EOF) waits for: this copy's end, its last
        commit and audit rows; None once it has ended (and said its exit status)."""
        if self._finished:
            return None
        waiting: defer.Deferred = defer.Deferred()
        self._exit_waiting.append(waiting)
        return waiting

    def _write(self, data: bytes) -> None:
        self.transport.write(data)

    def _warn(self, error: BaseException | str) -> None:
        """This file or folder failed: say why (\\x01), the copy goes on."""
        self._errors += 1
        message = error if isinstance(error, str) else scp_message(error)
        self._write(b"\x01scp: " + message.encode("utf-8", "replace") + b"\n")

    async def _run(self) -> None:
        status = 1
        try:
            if self._request.sink:
                await self._receive_all()
            else:
                await self._send_all()
            status = 1 if self._errors else 0
        except _Lost:
            pass
        except Exception as e:  # noqa: BLE001 - _Fatal, or a bug: it ends this copy, not the daemon
            message = e.message if isinstance(e, _Fatal) else scp_message(e)
            if message:
                self._write(b"\x02scp: " + message.encode("utf-8", "replace") + b"\n")
            if self._request.sink:
                # an uploading client ends the session itself: PuTTY's pscp takes an end
                # before its own for a lost connection and never shows the message
                await self._input.drain()
        finally:
            self._finished = True
            self._channel.exited(status)
            waiting, self._exit_waiting = self._exit_waiting, []
            for each in waiting:
                each.callback(None)

    # -- pacing -------------------------------------------------------------------------

    async def _paced(self, cost: int) -> None:
        """Count `cost` bytes against the reactor turn's budget; wait for the next turn when it is spent."""
        if self._pacer is None or self._pacer.spend(cost):
            return
        self._turn_wait = waiting = defer.Deferred()
        self._pacer.wait(self)
        await waiting

    def resume(self) -> None:
        """The pacer's next turn."""
        waiting, self._turn_wait = self._turn_wait, None
        if waiting is not None:
            waiting.callback(None)

    async def _room(self) -> None:
        """Wait while the channel holds MAX_UNSENT bytes the client's window has no room for."""
        while self._channel.unsent >= MAX_UNSENT:
            if self._lost:
                raise _Lost()
            self._room_wait = waiting = defer.Deferred()
            self._channel.when_drained(self._drained)
            await waiting

    def _drained(self) -> None:
        waiting, self._room_wait = self._room_wait, None
        if waiting is not None:
            waiting.callback(None)

    async def _answer(self) -> str | None:
        """The client's answer to a line or a file sent: None when it is fine, else what it
        says (a \\x02 answer ends the copy)."""
        code = (await self._input.take(1))[0]
        self._input.release(1)
        if code == 0:
            return None
        line = await self._input.line()
        if line is None:
            raise _Lost()
        self._errors += 1
        if code == 2:
            raise _Fatal(None)
        return (line if code == 1 else bytes((code,)) + line).decode("utf-8", "replace")

    # -- sink: the client uploads (scp -t TARGET) ------------------------------------

    async def _receive_all(self) -> None:
        """OpenSSH's sink: T, C, D and E records into the target, a folder at a time."""
        request = self._request
        if len(request.paths) != 1:
            raise _Fatal("ambiguous target: quote a name with spaces as a shell would take it")
        try:
            target = self._files.normalise(request.paths[0])
            into = await self._is_folder(target)
        except ApplianceError as e:
            raise _Fatal(scp_message(e)) from None
        if request.directory and not into:
            raise _Fatal(f"{target}: Not a directory")
        self._write(b"\0")
        top_into = into
        folders: list[tuple[str, tuple[float, float] | None]] = []  # entered, with their times
        folder, times = target, None
        while True:
            line = await self._input.line()
            if line is None:
                return  # the client is done
            kind = line[:1]
            if kind in (b"\x01", b"\x02"):  # the client could not send a file: it says why
                self._errors += 1
                if kind == b"\x02":
                    raise _Fatal(None)
                continue
            if kind == b"E":
                self._write(b"\0")
                if not folders:
                    return
                done, folder_times = folder, folders.pop()[1]
                folder, into = (folders[-1][0], True) if folders else (target, top_into)
                if folder_times is not None:
                    await self._stamp_folder(done, folder_times)
                continue
            if kind == b"T":
                times = _times(line)
                self._write(b"\0")
                continue
            record = _RECORD.fullmatch(line)
            if record is None:
                raise _Fatal("protocol error: expected control record")
            size = int(record[3])
            raw = record[4]
            if not raw or b"/" in raw or raw == b"..":
                raise _Fatal(f"unexpected filename: {raw.decode('utf-8', 'replace')}")
            try:
                name = raw.decode("utf-8")
            except UnicodeDecodeError:
                self._warn("File names must be UTF-8.")
                times = None
                continue
            path = _join(folder, name) if into else folder
            stamp, times = times, None
            if record[1] == b"D":
                if not request.recursive:
                    raise _Fatal("received directory without -r")
                if await self._enter(path):
                    folders.append((path, stamp))
                    folder, into = path, True
                continue
            if size >= 1 << 63:
                raise _Fatal("size out of range")
            await self._receive_file(path, size, stamp)

    async def _is_folder(self, path: str) -> bool:
        try:
            return (await self._files.stat(path)).is_dir
        except NotFound:
            return False

    async def _enter(self, path: str) -> bool:
        """A D record: the folder at `path`, made if missing; False (said) when it cannot be."""
        try:
            try:
                entry = await self._files.stat(path)
            except NotFound:
                await self._files.mkdir(path)
            else:
                if not entry.is_dir:
                    raise Invalid(f"{self._files.normalise(path)} is a file, not a folder.")
        except ApplianceError as e:
            self._warn(e)
            return False
        self._write(b"\0")
        return True

    async def _stamp_folder(self, path: str, times: tuple[float, float]) -> None:
        try:
            await self._files.set_times(path, *times)
        except ApplianceError:
            pass  # as OpenSSH's sink: a folder's times are kept where they can be

    async def _receive_file(self, path: str, size: int, times: tuple[float, float] | None) -> None:
        """A C record: the file's bytes into an upload committed once they are all there."""
        try:
            # refused before a byte is sent: the permission, a folder there, the quota for `size`
            await self._files.check_upload(path, overwrite=True, size=size)
            writer = await self._files.open_write(path)
        except ApplianceError as e:
            self._warn(e)
            return
        try:
            if times is not None:
                writer.set_times(*times)
            self._write(b"\0")
            error = await self._receive_bytes(writer, size)
            complaint = await self._answer()  # the client's word that it sent the file whole
            if error is None and complaint is not None:
                error = Invalid(f"{writer.path} was not saved: the client could not send it whole.")
            if error is None:
                await writer.commit()
        except ApplianceError as e:
            error = e  # the commit failed
        except BaseException:
            await writer.abort()  # the client went away, or the copy ends: nothing is kept
            raise
        if error is not None:
            await writer.abort()
            self._warn(error)
            return
        self._write(b"\0")

    async def _receive_bytes(self, writer: Writer, size: int) -> BaseException | None:
        """`size` bytes from the client to `writer`; the first write error, after which
        the rest is read and dropped (the protocol has no way to stop a file midway)."""
        offset, error = 0, None
        while offset < size:
            chunk = await self._input.take(size - offset)
            if error is None:
                try:
                    pending = writer.write_nowait(offset, chunk)
                    if pending is not None:
                        await pending  # a disk write: the bytes held meanwhile close the window
                except Exception as e:  # noqa: BLE001 - reported once the file's bytes are read
                    error = e
            offset += len(chunk)
            self._input.release(len(chunk))
            await self._paced(len(chunk))
        return error

    # -- source: the client downloads (scp -f PATH...) -------------------------------

    async def _send_all(self) -> None:
        """OpenSSH's source: each path, folders (with -r) as D ... E around their entries."""
        await self._answer()  # the client is ready
        for given in self._request.paths:
            try:
                path = self._files.normalise(given)
                entry = await self._files.stat(path)
            except ApplianceError as e:
                self._warn(e)
                continue
            # the home folder itself goes by its own name, as `scp -r host:~ .` from OpenSSH's
            name = path.rsplit("/", 1)[1] or PurePosixPath(self._files.account.profile.home).name or "home"
            if entry.is_dir and self._request.recursive:
                await self._send_tree(path, name, entry)
            else:
                await self._send_entry(path, name, entry)

    async def _send_entry(self, path: str, name: str, entry: Entry) -> None:
        if entry.kind != "file":
            self._warn(f"{path}: not a regular file")
            return
        await self._send_file(path, name, entry)

    async def _send_tree(self, path: str, name: str, entry: Entry) -> None:
        """A folder and everything in it, depth first, without recursion (a deep tree
        holds one listing per level, not one Python frame)."""
        entries = await self._open_folder(path, name, entry)
        if entries is None:
            return
        stack = [(path, entries)]
        while stack:
            folder, left = stack[-1]
            if not left:
                stack.pop()
                self._write(b"E\n")
                await self._answer()
                continue
            child = left.popleft()
            child_path = _join(folder, child.name)
            if child.is_dir:
                inside = await self._open_folder(child_path, child.name, child)
                if inside is not None:
                    stack.append((child_path, inside))
            else:
                await self._send_entry(child_path, child.name, child)

    async def _open_folder(self, path: str, name: str, entry: Entry) -> deque[Entry] | None:
        """Its entries (sorted by name) once the client took its D record; None when it failed."""
        try:
            entries = await self._files.list(path)
        except ApplianceError as e:
            self._warn(e)
            return None
        if not await self._announce(b"D%04o 0 %s\n", entry, 0, name):
            return None
        return deque(sorted(entries, key=lambda e: e.name))

    async def _announce(self, record: bytes, entry: Entry, size: int, name: str) -> bool:
        """Send the T record (with -p) and the C or D record; whether the client took them."""
        if "\n" in name:
            self._warn(f"{name!r}: a name with a line break cannot be sent over scp")
            return False
        if self._request.preserve:
            mtime, atime = (max(0, min(int(t), MAX_TIME)) for t in (entry.mtime, entry.atime))
            self._write(b"T%d 0 %d 0\n" % (mtime, atime))
            if await self._answer() is not None:
                return False
        if record.startswith(b"C"):
            self._write(record % (entry.mode & 0o7777, size, name.encode("utf-8", "surrogateescape")))
        else:
            self._write(record % (entry.mode & 0o7777, name.encode("utf-8", "surrogateescape")))
        return await self._answer() is None

    async def _send_file(self, path: str, name: str, entry: Entry) -> None:
        try:
            reader = await self._files.open_read(path)
        except ApplianceError as e:
            self._warn(e)
            return
        started = False
        try:
            size = reader.size
            if not await self._announce(b"C%04o %d %s\n", entry, size, name):
                return
            started = True
            error = await self._send_bytes(reader, path, size)
            if error is None:
                self._write(b"\0")
            else:
                self._warn(error)
        finally:
            if started:
                await reader.close()  # the download's audit row (the bytes read of its size)
            else:
                await reader.discard()
        await self._answer()

    async def _send_bytes(self, reader: Reader, path: str, size: int) -> BaseException | None:
        """`size` bytes of the file; the first read error, after which zeros keep the
        client in step (it reads `size` bytes whatever happens, and is told after)."""
        offset, error = 0, None
        while offset < size:
            await self._room()
            length = min(CHUNK, size - offset)
            chunk = b""
            if error is None:
                try:
                    chunk = await reader.read(offset, length)
                except Exception as e:  # noqa: BLE001 - said to the client after the bytes
                    error = e
                if not chunk and error is None:
                    error = Invalid(f"{path} became shorter while it was being sent: the copy is incomplete.")
            if not chunk:
                chunk = bytes(length)
            self._write(chunk)
            offset += len(chunk)
            await self._paced(len(chunk))
        return error


def _times(line: bytes) -> tuple[float, float] | None:
    """(atime, mtime) of a T record; None when out of range (accepted and ignored)."""
    found = _TIMES.fullmatch(line)
    if found is None:
        raise _Fatal("protocol error: a T record is mtime usec atime usec")
    mtime, mtime_usec, atime, atime_usec = (int(n) for n in found.groups())
    if mtime > MAX_TIME or atime > MAX_TIME or mtime_usec > 999999 or atime_usec > 999999:
        return None
    return atime + atime_usec / 1e6, mtime + mtime_usec / 1e6
