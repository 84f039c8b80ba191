"""The upload buffer: chunks kept as they came and written with pwritev (short
writes resumed, more chunks than IOV_MAX), write_nowait's fast path, and callers'
mutable buffers copied; uploads read straight from a socket by splice(2)."""

from __future__ import annotations

import os
import socket
import struct
import threading
from pathlib import Path

import pytest
import pytest_twisted

from appliance.errors import ClientGone, QuotaExceeded
from appliance.storage.local import handles

from .test_files import session_for


def test_pwrite_all_resumes_short_writes_and_splits_past_iov_max(tmp_path, monkeypatch):
    chunks = [bytes([i % 251]) * (1 + i % 7) for i in range(2 * handles.IOV_MAX + 5)]
    real, calls = os.pwritev, []

    def short_pwritev(fd, buffers, offset):
        calls.append(len(buffers))
        assert len(buffers) <= handles.IOV_MAX
        first = bytes(buffers[0])
        if len(first) > 1:  # half of the first buffer only: a short write mid-chunk
            return os.pwrite(fd, first[: len(first) // 2], offset)
        return real(fd, buffers, offset)

    monkeypatch.setattr(handles.os, "pwritev", short_pwritev)
    path = tmp_path / "out.bin"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        handles.pwrite_all(fd, list(chunks), 10)
    finally:
        os.close(fd)
    assert path.read_bytes() == b"\0" * 10 + b"".join(chunks)
    assert len(calls) > 3


@pytest_twisted.ensureDeferred
async def test_write_nowait_buffers_without_a_deferred_until_the_buffer_is_full(core):
    session = await session_for(core)
    writer = await session.open_write("/fast.bin")
    piece = os.urandom(64 * 1024)
    pending, offset = [], 0
    while offset < 3 * handles.WRITE_BUFFER:
        d = writer.write_nowait(offset, piece)
        if d is not None:
            pending.append((offset, d))
        offset += len(piece)
    # one disk write per full buffer, each started by the write that filled it
    assert [at + len(piece) for at, _ in pending] == [n * handles.WRITE_BUFFER for n in (1, 2, 3)]
    for _, d in pending:
        await d
    await writer.commit()
    assert Path(os.path.join(session.tree.root, "fast.bin")).read_bytes() == piece * 48


@pytest_twisted.ensureDeferred
async def test_a_reused_caller_buffer_does_not_change_what_was_written(core):
    session = await session_for(core)
    writer = await session.open_write("/copy.bin")
    scratch = bytearray(b"a" * 1000)
    await writer.write(0, scratch)
    scratch[:] = b"b" * 1000  # a caller reusing its buffer
    await writer.write(1000, memoryview(scratch))
    scratch[:] = b"c" * 1000
    await writer.commit()
    assert Path(os.path.join(session.tree.root, "copy.bin")).read_bytes() == b"a" * 1000 + b"b" * 1000


@pytest_twisted.ensureDeferred
async def test_many_tiny_writes_are_written_out_every_iov_max_chunks(core):
    session = await session_for(core)
    writer = await session.open_write("/tiny.bin")
    started = [n for n in range(3 * handles.IOV_MAX) if writer.write_nowait(n, b"x") is not None]
    assert started == [handles.IOV_MAX - 1, 2 * handles.IOV_MAX - 1, 3 * handles.IOV_MAX - 1]
    await writer.commit()
    assert Path(os.path.join(session.tree.root, "tiny.bin")).read_bytes() == b"x" * (3 * handles.IOV_MAX)


@pytest_twisted.ensureDeferred
async def test_a_commit_asks_its_last_look_after_the_fsync_and_before_the_name_appears(core, monkeypatch):
    """FTP's commit asks whether the client is still there (still_wanted) on the disk
    thread: after the bytes are durable, before the rename. No: nothing is saved."""
    session = await session_for(core)
    steps, real_fsync = [], os.fsync

    def counting_fsync(fd):
        steps.append(("fsync", os.fstat(fd).st_size if os.path.isfile(f"/proc/self/fd/{fd}") else "dir"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    root = session.tree.root

    def asked(name: str, answer: bool):
        def still_wanted() -> bool:
            steps.append(("asked", os.path.exists(os.path.join(root, name))))  # is the name there yet?
            return answer

        return still_wanted

    writer = await session.open_write("/kept.bin")
    await writer.write(0, b"a" * 1000)  # buffered: written out in the commit's trip
    await writer.commit(asked("kept.bin", True))
    assert steps == [("fsync", 1000), ("asked", False), ("fsync", "dir")]
    assert Path(root, "kept.bin").read_bytes() == b"a" * 1000

    steps.clear()
    writer = await session.open_write("/dropped.bin")
    await writer.write(0, b"b" * 10)
    with pytest.raises(ClientGone):
        await writer.commit(asked("dropped.bin", False))
    assert steps == [("fsync", 10), ("asked", False)]
    assert not Path(root, "dropped.bin").exists()
    assert not [name for name in os.listdir(root) if name.startswith(".~upload-")]  # its temporary file went too


# -- uploads straight from a socket (splice on a transfer thread: plain FTP) ----------------------


def _connected_pair():
    """A loopback TCP connection: (sender, receiver), the receiver non-blocking as the reactor's are."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        sender = socket.create_connection(server.getsockname())
        receiver, _ = server.accept()
    receiver.setblocking(False)
    return sender, receiver


def _send_then(sender, data: bytes, end: str) -> threading.Thread:
    """Send `data` from a thread, then close ("close"), reset ("reset") or keep the connection ("keep")."""

    def run():
        sender.sendall(data)
        if end == "reset":
            sender.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        if end != "keep":
            sender.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest_twisted.ensureDeferred
async def test_a_socket_upload_lands_every_byte_at_its_offset_and_counts_the_quota(core):
    session = await session_for(core, quota_bytes=10 << 20)
    writer = await session.open_write("/spliced.bin")
    await writer.write(0, b"head")  # buffered bytes before the socket's are written first
    data = os.urandom(3 * handles.SPLICE_CHUNK + 12345)
    sender, receiver = _connected_pair()
    ticks = []
    _send_then(sender, data, "close")
    stop = writer.socket_slot()
    how, received = await writer.receive_socket(receiver.fileno(), 4, stop, lambda: ticks.append(1))
    receiver.close()
    assert (how, received) == ("eof", len(data))
    assert writer.size == 4 + len(data)
    assert session.limits.usage.pending == 4 + len(data)  # the quota taken ahead was given back
    await writer.commit()
    assert Path(os.path.join(session.tree.root, "spliced.bin")).read_bytes() == b"head" + data
    assert session.limits.usage.pending == 0


@pytest_twisted.ensureDeferred
async def test_a_socket_upload_past_the_quota_is_refused_and_leaves_nothing(core):
    session = await session_for(core, "quotaed", quota_bytes=100_000)
    writer = await session.open_write("/big.bin")
    sender, receiver = _connected_pair()
    _send_then(sender, os.urandom(300_000), "close")
    with pytest.raises(QuotaExceeded, match="quota of 100.0 KB is used up"):
        await writer.receive_socket(receiver.fileno(), 0, writer.socket_slot(), lambda: None)
    receiver.close()
    await writer.abort()
    assert session.limits.usage.pending == 0
    assert os.listdir(session.tree.root) == []


@pytest_twisted.ensureDeferred
async def test_a_socket_upload_stops_when_told_and_reports_a_reset(core):
    session = await session_for(core)
    writer = await session.open_write("/stopped.bin")
    sender, receiver = _connected_pair()
    _send_then(sender, b"x" * 1000, "keep")  # the client goes quiet, the connection stays
    stop = writer.socket_slot()
    from twisted.internet import reactor

    reactor.callLater(0.3, stop.set)
    assert await writer.receive_socket(receiver.fileno(), 0, stop, lambda: None) == ("stopped", 1000)
    sender.close()
    receiver.close()
    await writer.abort()

    writer = await session.open_write("/reset.bin")
    sender, receiver = _connected_pair()
    _send_then(sender, b"y" * 1000, "reset").join()
    with pytest.raises(handles.SocketError):
        await writer.receive_socket(receiver.fileno(), 0, writer.socket_slot(), lambda: None)
    receiver.close()
    await writer.abort()
    assert os.listdir(session.tree.root) == []


def test_transfer_threads_are_reserved_and_given_back(core):
    threads = core.threads
    slots = [threads.transfer_slot() for _ in range(4)]
    assert all(slots) and threads.transfer_slot() is None  # all busy: the caller uses the reactor
    threads.release_slot(slots[0])
    assert threads.transfer_slot() is not None


@pytest_twisted.ensureDeferred
async def test_a_socket_download_to_a_client_gone_is_a_socket_error(core):
    session = await session_for(core)
    writer = await session.open_write("/gone.bin")
    await writer.write(0, os.urandom(8 << 20))
    await writer.commit()
    reader = await session.open_read("/gone.bin")
    sender, receiver = _connected_pair()
    sender.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sender.close()  # the client resets before the download
    with pytest.raises(handles.SocketError):
        await reader.send_socket(receiver.fileno(), 0, reader.socket_slot(), lambda: None)
    receiver.close()
    await reader.close()
    assert core.threads.transfer_slot() is not None  # the slot came back
