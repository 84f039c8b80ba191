"""The upload buffer: chunks kept as they came and written with pwritev (short
writes resumed, more chunks than IOV_MAX), write_nowait's fast path, and callers'
mutable buffers copied."""

from __future__ import annotations

import os

import pytest_twisted

from appliance.core.files import handles

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
        handles._pwrite_all(fd, list(chunks), 10)
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
    assert open(os.path.join(session.tree.root, "fast.bin"), "rb").read() == piece * 48


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
    assert open(os.path.join(session.tree.root, "copy.bin"), "rb").read() == b"a" * 1000 + b"b" * 1000


@pytest_twisted.ensureDeferred
async def test_many_tiny_writes_are_written_out_every_iov_max_chunks(core):
    session = await session_for(core)
    writer = await session.open_write("/tiny.bin")
    started = [n for n in range(3 * handles.IOV_MAX) if writer.write_nowait(n, b"x") is not None]
    assert started == [handles.IOV_MAX - 1, 2 * handles.IOV_MAX - 1, 3 * handles.IOV_MAX - 1]
    await writer.commit()
    assert open(os.path.join(session.tree.root, "tiny.bin"), "rb").read() == b"x" * (3 * handles.IOV_MAX)


@pytest_twisted.ensureDeferred
async def test_sync_writes_out_and_fsyncs_and_commit_then_only_renames(core, monkeypatch):
    session = await session_for(core)
    fsynced, real_fsync = [], os.fsync

    def counting_fsync(fd):
        fsynced.append(os.fstat(fd).st_size if os.path.isfile(f"/proc/self/fd/{fd}") else "dir")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    writer = await session.open_write("/synced.bin")
    await writer.write(0, b"a" * 1000)
    await writer.sync()
    assert fsynced == [1000]  # the buffered bytes went to the temporary file first
    assert not os.path.exists(os.path.join(session.tree.root, "synced.bin"))  # nothing visible yet
    await writer.commit()
    assert fsynced == [1000, "dir"]  # the rename's folder, not the file again
    assert open(os.path.join(session.tree.root, "synced.bin"), "rb").read() == b"a" * 1000

    fsynced.clear()
    writer = await session.open_write("/later.bin")
    await writer.write(0, b"b" * 10)
    await writer.sync()
    await writer.write(10, b"c" * 10)  # written after the sync: commit fsyncs again
    await writer.commit()
    assert fsynced == [10, 20, "dir"]
    assert open(os.path.join(session.tree.root, "later.bin"), "rb").read() == b"b" * 10 + b"c" * 10
