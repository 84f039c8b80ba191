"""The files service: atomic uploads, permissions, quotas, audit rows."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import pytest_twisted

from appliance.core.files import TEMP_PREFIX
from appliance.errors import AlreadyExists, Invalid, NotEmpty, NotFound, PermissionDenied, QuotaExceeded
from appliance.store import queries

from .conftest import make_account


def temp_files(root: str) -> list[str]:
    return [n for _, _, names in os.walk(root) for n in names if n.startswith(TEMP_PREFIX)]


async def session_for(core, username="alice", **changes):
    account = await make_account(core, username, **changes)
    return await core.files.session(account, "sftp", "127.0.0.1")


async def upload(session, path, data: bytes, chunk: int = 32768):
    writer = await session.open_write(path)
    for offset in range(0, len(data), chunk):
        await writer.write(offset, data[offset : offset + chunk])
    await writer.commit()


async def download(session, path) -> bytes:
    reader = await session.open_read(path)
    parts, offset = [], 0
    while True:
        data = await reader.read(offset, 32768)
        if not data:
            break
        parts.append(data)
        offset += len(data)
    await reader.close()
    return b"".join(parts)


@pytest_twisted.ensureDeferred
async def test_home_is_created_and_confined(core):
    session = await session_for(core)
    assert session.tree.root.endswith("/files/acme/alice")
    assert os.path.isdir(session.tree.root)
    assert await session.list("/") == []


@pytest_twisted.ensureDeferred
async def test_round_trip_and_audit_rows(core):
    session = await session_for(core)
    data = os.urandom(3 * 1024 * 1024 + 17)
    await upload(session, "/data.bin", data)
    assert await download(session, "/data.bin") == data
    ended = session.end()  # an SFTP session's download row is written behind its reply: its end waits for it
    if ended is not None:
        await ended
    logs = await core.store.run(queries.recent_logs, None)
    actions = [(row["action"], row["path"], row["bytes"]) for row in logs if row["action"] in ("upload", "download")]
    assert ("upload", "/data.bin", len(data)) in actions
    assert ("download", "/data.bin", len(data)) in actions
    assert temp_files(session.tree.root) == []


@pytest_twisted.ensureDeferred
async def test_an_upload_is_invisible_until_committed_and_abort_leaves_nothing(core):
    session = await session_for(core)
    await upload(session, "/keep.txt", b"old content")
    writer = await session.open_write("/keep.txt")
    await writer.write(0, b"x" * (3 << 20))  # past the write buffer: on disk in the temp file
    assert Path(os.path.join(session.tree.root, "keep.txt")).read_bytes() == b"old content"
    assert [e.name for e in await session.list("/")] == ["keep.txt"]  # temp file hidden
    await writer.abort()
    assert Path(os.path.join(session.tree.root, "keep.txt")).read_bytes() == b"old content"
    assert temp_files(session.tree.root) == []


@pytest_twisted.ensureDeferred
async def test_resume_starts_from_the_existing_file(core):
    session = await session_for(core)
    await upload(session, "/log.txt", b"first half|")
    writer = await session.open_write("/log.txt", truncate=False)
    await writer.write(len(b"first half|"), b"second half")
    await writer.commit()
    assert await download(session, "/log.txt") == b"first half|second half"


@pytest_twisted.ensureDeferred
async def test_writes_at_offsets_out_of_order(core):
    session = await session_for(core)
    writer = await session.open_write("/sparse.bin")
    await writer.write(10, b"world")
    await writer.write(0, b"hello")
    await writer.write(5, b"-----")
    await writer.commit()
    assert await download(session, "/sparse.bin") == b"hello-----world"


@pytest_twisted.ensureDeferred
async def test_exclusive_create_and_overwrite_permission(core):
    session = await session_for(core)
    await upload(session, "/a.txt", b"a")
    with pytest.raises(AlreadyExists):
        await session.open_write("/a.txt", exclusive=True)
    limited = await session_for(core, "bob", permissions=["list", "download", "upload"])
    await upload(limited, "/b.txt", b"b")
    with pytest.raises(PermissionDenied, match="overwrite"):
        await limited.open_write("/b.txt")


@pytest.mark.parametrize(
    "permission,action",
    [
        ("list", lambda s: s.list("/")),
        ("download", lambda s: s.open_read("/f.txt")),
        ("upload", lambda s: s.open_write("/new.txt")),
        ("delete", lambda s: s.remove("/f.txt")),
        ("rename", lambda s: s.rename("/f.txt", "/g.txt")),
        ("mkdir", lambda s: s.mkdir("/d")),
    ],
)
@pytest_twisted.ensureDeferred
async def test_each_permission_is_enforced(core, permission, action):
    full = await session_for(core, "carol")
    await upload(full, "/f.txt", b"f")
    allowed = [p for p in ("list", "download", "upload", "overwrite", "delete", "rename", "mkdir") if p != permission]
    session = await session_for(core, "carol", permissions=allowed)
    with pytest.raises(PermissionDenied, match="Ask your administrator"):
        await action(session)
    assert os.path.exists(os.path.join(session.tree.root, "f.txt"))


@pytest_twisted.ensureDeferred
async def test_read_only_source_refuses_changes(core):
    session = await session_for(core)
    await upload(session, "/f.txt", b"f")
    source_id = session.account.source.id
    await core.store.run(lambda db: db["sources"].update(source_id, {"read_only": 1}))
    session = await session_for(core)
    assert await download(session, "/f.txt") == b"f"
    with pytest.raises(PermissionDenied, match="read-only"):
        await session.open_write("/g.txt")


@pytest_twisted.ensureDeferred
async def test_quota_stops_an_upload_and_keeps_nothing(core):
    session = await session_for(core, quota_bytes=1_000_000)
    await upload(session, "/small.bin", b"x" * 600_000)
    writer = await session.open_write("/big.bin")
    with pytest.raises(QuotaExceeded, match="quota"):
        for offset in range(0, 600_000, 32768):
            await writer.write(offset, b"y" * 32768)
    await writer.abort()
    assert sorted(os.listdir(session.tree.root)) == ["small.bin"]
    # replacing a file counts only the difference
    await upload(session, "/small.bin", b"z" * 900_000)
    space = await session.space()
    assert space.total_blocks * space.block_size <= 1_000_000
    assert space.free_blocks * space.block_size <= 100_000


@pytest_twisted.ensureDeferred
async def test_two_parallel_uploads_cannot_both_fit_under_the_quota(core):
    session = await session_for(core, quota_bytes=1_000_000)
    first = await session.open_write("/one.bin")
    second = await session.open_write("/two.bin")
    await first.write(0, b"a" * 600_000)
    with pytest.raises(QuotaExceeded):
        await second.write(0, b"b" * 600_000)
    await second.abort()
    await first.commit()


@pytest_twisted.ensureDeferred
async def test_renaming_a_file_onto_itself_or_its_hard_link_keeps_its_bytes_counted(core):
    session = await session_for(core, quota_bytes=1_000_000)
    await upload(session, "/kept.bin", b"k" * 400_000)
    usage = session.limits.usage.bytes
    await session.rename("/kept.bin", "/kept.bin", overwrite=True)
    os.link(os.path.join(session.tree.root, "kept.bin"), os.path.join(session.tree.root, "link.bin"))
    await session.rename("/link.bin", "/kept.bin", overwrite=True)
    assert session.limits.usage.bytes == usage
    assert await download(session, "/kept.bin") == b"k" * 400_000
    with pytest.raises(QuotaExceeded):  # still counted: 400 KB + 700 KB does not fit in 1 MB
        await upload(session, "/more.bin", b"m" * 700_000)


@pytest_twisted.ensureDeferred
async def test_file_count_quota(core):
    session = await session_for(core, quota_files=1)
    await upload(session, "/one.txt", b"1")
    with pytest.raises(QuotaExceeded, match="files"):
        await session.open_write("/two.txt")


@pytest_twisted.ensureDeferred
async def test_folders_rename_remove(core):
    session = await session_for(core)
    await session.mkdir("/a/b/c", parents=True)
    await session.mkdir("/a/b/c", parents=True)  # idempotent with parents
    with pytest.raises(AlreadyExists):
        await session.mkdir("/a")
    await upload(session, "/a/b/c/f.txt", b"f")
    with pytest.raises(NotEmpty):
        await session.rmdir("/a/b/c")
    with pytest.raises(Invalid, match="is a folder"):
        await session.remove("/a")
    await upload(session, "/g.txt", b"g")
    with pytest.raises(AlreadyExists):
        await session.rename("/g.txt", "/a/b/c/f.txt")
    await session.rename("/g.txt", "/a/b/c/f.txt", overwrite=True)
    assert await download(session, "/a/b/c/f.txt") == b"g"
    await session.remove("/a/b/c/f.txt")
    await session.rmdir("/a/b/c")
    await session.remove_tree("/a")
    assert await session.list("/") == []
    with pytest.raises(NotFound):
        await session.remove("/nothing")
    with pytest.raises(PermissionDenied):
        await session.rmdir("/")
    rows = await core.store.run(queries.recent_logs, None)
    assert {"mkdir", "delete", "rename"} <= {row["action"] for row in rows}


@pytest_twisted.ensureDeferred
async def test_deleting_a_link_never_touches_its_target(core, tmp_path):
    session = await session_for(core)
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me")
    os.symlink(str(outside), os.path.join(session.tree.root, "link"))
    await session.remove("/link")
    assert outside.read_text() == "keep me"


@pytest_twisted.ensureDeferred
async def test_no_source_and_missing_source_folder(core):
    account = await make_account(core, "dave", source_id=None)
    with pytest.raises(PermissionDenied, match="No source"):
        await core.files.session(account, "sftp", "127.0.0.1")


@pytest_twisted.ensureDeferred
async def test_sweep_removes_leftovers_of_a_crash(core):
    session = await session_for(core)
    writer = await session.open_write("/crash.bin")
    await writer.write(0, b"x" * (2 << 20))
    assert len(temp_files(session.tree.root)) == 1  # the "crash": never committed nor aborted
    sources = await core.store.run(queries.all_sources)
    assert await core.files.sweep(sources) == 1
    assert temp_files(session.tree.root) == []
    assert not os.path.exists(os.path.join(session.tree.root, "crash.bin"))


@pytest_twisted.ensureDeferred
async def test_sweep_passes_over_a_remote_sftp_source_that_is_down(core):
    from appliance.models import Source

    from ..helpers import free_port

    session = await session_for(core)
    writer = await session.open_write("/crash.bin")
    await writer.write(0, b"x" * 10)
    core.files.remote.allow_loopback = True
    down = Source(999, 1, "Down host", "sftp", {"host": "127.0.0.1", "port": free_port(), "username": "u"}, False,
                  "ok", "")  # fmt: skip
    sources = await core.store.run(queries.all_sources)
    assert await core.files.sweep([down, *sources]) == 1  # the local source is swept all the same
    assert temp_files(session.tree.root) == []


@pytest_twisted.ensureDeferred
async def test_shutdown_drain_waits_for_uploads_then_aborts_the_rest(core):
    from twisted.internet import reactor
    from twisted.internet.defer import Deferred

    session = await session_for(core)
    finishing = await session.open_write("/finishing.bin")
    stuck = await session.open_write("/stuck.bin")
    await finishing.write(0, b"done")
    await stuck.write(0, b"x" * (2 << 20))
    assert core.files.uploads == {finishing, stuck}
    reactor.callLater(0.1, lambda: Deferred.fromCoroutine(finishing.commit()))
    assert await core.files.drain(reactor, grace=0.6) == 1
    assert core.files.uploads == set()
    assert sorted(os.listdir(session.tree.root)) == ["finishing.bin"]  # the stuck one left nothing


@pytest_twisted.ensureDeferred
async def test_reads_in_any_order_return_the_right_bytes(core):
    import random

    session = await session_for(core)
    data = os.urandom(5 * 1024 * 1024 + 333)
    await upload(session, "/big.bin", data)
    assert await download(session, "/big.bin") == data  # sequential, with prefetch
    reader = await session.open_read("/big.bin")
    rng = random.Random(7)
    for _ in range(200):
        offset = rng.randrange(0, len(data) + 10)
        length = rng.choice([1, 100, 32768, 65536, 1 << 20])
        assert await reader.read(offset, length) == data[offset : offset + length]
    await reader.close()


@pytest_twisted.ensureDeferred
async def test_pipelined_reads_complete_in_the_order_they_were_asked(core):
    """SFTP clients keep many reads in flight; OpenSSH's scp truncates a download at the
    first reply that arrives out of order, so replies must keep the requests' order."""
    from twisted.internet.defer import Deferred

    session = await session_for(core)
    data = os.urandom(5 * 1024 * 1024)
    await upload(session, "/pipe.bin", data)
    reader = await session.open_read("/pipe.bin")
    finished: list[int] = []

    async def one(offset: int) -> bytes:
        chunk = await reader.read(offset, 32768)
        finished.append(offset)
        return chunk

    offsets = list(range(0, len(data), 32768))
    in_flight, replies = [], {}
    for offset in offsets:  # 64 outstanding, as OpenSSH's client keeps
        in_flight.append((offset, Deferred.fromCoroutine(one(offset))))
        if len(in_flight) >= 64:
            first, d = in_flight.pop(0)
            replies[first] = await d
    for offset, d in in_flight:
        replies[offset] = await d
    await reader.close()
    assert finished == offsets
    assert b"".join(replies[o] for o in offsets) == data


@pytest_twisted.ensureDeferred
async def test_many_open_downloads_share_the_read_ahead(core, monkeypatch):
    """Hundreds of downloads at once read ahead less each, so their windows fit one
    budget; the bytes stay right whatever the window, and closing gives it back."""
    from appliance.storage.local import handles

    session = await session_for(core)
    data = os.urandom(3 * 1024 * 1024 + 5)
    await upload(session, "/shared.bin", data)
    sizes: list[int] = []
    real_pread = os.pread
    monkeypatch.setattr(handles.os, "pread", lambda fd, n, at: sizes.append(n) or real_pread(fd, n, at))

    budget = core.files.read_ahead
    alone = budget.chunk()
    assert alone == handles.READ_AHEAD
    readers = [await session.open_read("/shared.bin") for _ in range(400)]
    assert budget.readers == 400
    crowded = budget.chunk()
    assert handles.READ_AHEAD_LEAST <= crowded < alone
    assert 400 * 2 * crowded <= handles.READ_AHEAD_TOTAL
    sizes.clear()
    assert await download_with(readers[0], len(data)) == data
    assert sizes and max(sizes) == crowded
    for reader in readers:
        await reader.close()
    assert budget.readers == 0 and budget.chunk() == alone


async def download_with(reader, size: int) -> bytes:
    parts, offset = [], 0
    while offset < size:
        chunk = await reader.read(offset, 32768)
        parts.append(chunk)
        offset += len(chunk)
    return b"".join(parts)


async def read_all(reader) -> bytes:
    data = await reader.read(0, 1 << 30)
    await reader.close()
    return data


@pytest_twisted.ensureDeferred
async def test_the_writing_session_sees_its_upload_and_others_do_not(core):
    """A FUSE mount stats, lists and reads back a file it is writing; every other
    session sees the old file (or nothing) until it is committed."""
    session = await session_for(core)
    other = await core.files.session(session.account, "sftp", "127.0.0.1")
    await upload(session, "/report.txt", b"old")
    writer = await session.open_write("/report.txt", truncate=False, readable=True)
    await writer.write(3, b" and new")
    fresh = await session.open_write("/fresh.txt")
    await fresh.write(0, b"fresh")
    assert (await session.stat("/report.txt")).size == len(b"old and new")
    assert (await session.stat("/fresh.txt")).size == 5
    assert sorted((e.name, e.size) for e in await session.list("/")) == [("fresh.txt", 5), ("report.txt", 11)]
    assert await writer.read(0, 100) == b"old and new"
    assert await read_all(await session.open_read("/fresh.txt")) == b"fresh"
    assert [(e.name, e.size) for e in await other.list("/")] == [("report.txt", 3)]
    assert await read_all(await other.open_read("/report.txt")) == b"old"
    with pytest.raises(NotFound):
        await other.stat("/fresh.txt")
    with pytest.raises(AlreadyExists):  # O_EXCL on a file the session is writing
        await session.open_write("/fresh.txt", exclusive=True)
    await writer.commit()
    await fresh.commit()
    assert await read_all(await other.open_read("/report.txt")) == b"old and new"
    assert await read_all(await other.open_read("/fresh.txt")) == b"fresh"
    uploads = [row["path"] for row in await core.store.run(queries.recent_logs, None) if row["action"] == "upload"]
    assert sorted(uploads) == ["/fresh.txt", "/report.txt", "/report.txt"]  # one row per committed file


@pytest_twisted.ensureDeferred
async def test_an_interrupted_read_write_session_leaves_the_original_untouched(core):
    session = await session_for(core)
    await upload(session, "/ledger.csv", b"1,2,3\n" * 1000)
    writer = await session.open_write("/ledger.csv", truncate=False, readable=True)
    await writer.write(0, b"X" * 3000)
    await writer.truncate(100)
    await session.resize("/ledger.csv", 50)  # SETSTAT on the path: the session's own copy
    assert (await session.stat("/ledger.csv")).size == 50
    await writer.abort()  # what the SFTP front end does when the connection drops
    with open(os.path.join(session.tree.root, "ledger.csv"), "rb") as f:
        assert f.read() == b"1,2,3\n" * 1000
    assert temp_files(session.tree.root) == []
    assert (await session.stat("/ledger.csv")).size == 6000


@pytest_twisted.ensureDeferred
async def test_resize_rewrites_a_stored_file_atomically_within_the_rules(core):
    session = await session_for(core)
    await upload(session, "/data.bin", b"0123456789")
    await session.resize("/data.bin", 4)
    await session.resize("/data.bin", 6)
    assert await download(session, "/data.bin") == b"0123\0\0"
    with pytest.raises(NotFound):
        await session.resize("/missing.bin", 0)
    limited = await session_for(core, "bob", permissions=["list", "download", "upload"])
    await upload(limited, "/b.txt", b"bbbb")
    with pytest.raises(PermissionDenied, match="overwrite"):
        await limited.resize("/b.txt", 1)
    small = await session_for(core, "carol", quota_bytes=100)
    await upload(small, "/c.bin", b"c" * 60)
    with pytest.raises(QuotaExceeded):
        await small.resize("/c.bin", 200)
    assert await download(small, "/c.bin") == b"c" * 60
    assert temp_files(small.tree.root) == []


@pytest_twisted.ensureDeferred
async def test_an_upload_renamed_or_deleted_before_it_is_closed(core):
    """Editors and sshfs rename a file (or delete it) before their CLOSE arrives: the
    upload follows the rename, or saves nothing once deleted, as on a local disk."""
    session = await session_for(core)
    await upload(session, "/doc.txt", b"version 1")
    temp = await session.open_write("/.doc.txt.tmp", exclusive=True)
    await temp.write(0, b"version 2")
    await session.rename("/.doc.txt.tmp", "/doc.txt", overwrite=True)
    assert (await session.stat("/doc.txt")).size == len(b"version 2")
    with pytest.raises(NotFound):
        await session.stat("/.doc.txt.tmp")
    await session.mkdir("/sub")
    moving = await session.open_write("/sub/a.txt")
    await moving.write(0, b"into another folder")
    await session.rename("/sub/a.txt", "/b.txt")
    inside = await session.open_write("/sub/inside.txt")
    await inside.write(0, b"in a renamed folder")
    await session.rename("/sub", "/sub2")  # the upload inside goes with its folder
    assert (await session.stat("/sub2/inside.txt")).size == len(b"in a renamed folder")
    await inside.commit()
    dropped = await session.open_write("/gone.txt")
    await dropped.write(0, b"never saved")
    await session.remove("/gone.txt")
    await temp.commit()
    await moving.commit()
    await dropped.commit()  # closing a deleted file: nothing saved, no error
    assert await download(session, "/doc.txt") == b"version 2"
    assert await download(session, "/b.txt") == b"into another folder"
    assert sorted(os.listdir(session.tree.root)) == ["b.txt", "doc.txt", "sub2"]
    assert await download(session, "/sub2/inside.txt") == b"in a renamed folder"
    uploads = [row["path"] for row in await core.store.run(queries.recent_logs, None) if row["action"] == "upload"]
    assert "/sub2/inside.txt" in uploads and "/gone.txt" not in uploads


@pytest_twisted.ensureDeferred
async def test_a_shaped_listing_is_made_off_the_reactor_batch_by_batch_in_name_order(core):
    """What a listing makes of its entries (an FTP listing's lines) is made where they are
    read, on the disk thread: the reactor only sends it."""
    from twisted.python.threadable import isInIOThread

    from appliance.core.files.batches import LIST_BATCH

    session = await session_for(core)
    folder = Path(session.tree.root) / "big"
    folder.mkdir()
    names = [f"f{i:05d}" for i in range(LIST_BATCH + 5)]
    for name in reversed(names):
        (folder / name).write_bytes(name.encode())
    on_reactor = []

    def shape(entries):
        on_reactor.append(isInIOThread())
        return [(e.name, e.size) for e in entries]

    batches = (await session.list_in_order("/big")).shaped(shape)
    seen = []
    while (batch := await batches.next()) is not None:
        seen.append(batch)
    assert [len(batch) for batch in seen] == [LIST_BATCH, 5]
    assert [name for batch in seen for name, _ in batch] == names
    assert all(size == 6 for batch in seen for _, size in batch)
    assert on_reactor == [False, False]

    started = await session.list_in_order("/big")
    await started.next()
    with pytest.raises(RuntimeError):
        started.shaped(shape)
    started.close()
