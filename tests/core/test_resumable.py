"""Resumable uploads in the core, on a real SQLite file and a real folder, with an
injected clock: offsets, leftovers of a crash mid-append, completion rules,
serialised appends, expiry and the start-up sweep."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
import pytest_twisted
from twisted.internet import defer, task

from appliance.core.files.resumable import OffsetMismatch, ResumableUploads, TooLarge
from appliance.errors import AlreadyExists, Gone, NotFound, PermissionDenied
from appliance.storage.paths import RESUMABLE_PREFIX
from appliance.store import queries
from appliance.store import uploads as upload_queries

from .conftest import make_account


def uploads_with(core, clock=None, **options) -> ResumableUploads:
    return ResumableUploads(core.store, core.threads, core.files, core.audit, clock or task.Clock(), **options)


def partials(root: str) -> list[str]:
    return sorted(n for _, _, names in os.walk(root) for n in names if n.startswith(RESUMABLE_PREFIX))


async def begin(uploads, account, name="f.bin", length=10, **options):
    return await uploads.create(
        account, "web", "127.0.0.1", folder="/", name=name, length=length, metadata={}, **options
    )


@pytest_twisted.ensureDeferred
async def test_appends_at_the_recorded_offset_then_the_file_appears(core):
    uploads = uploads_with(core)
    account = await make_account(core)
    state = await begin(uploads, account, length=10)
    home = (await core.files.session(account, "web", "")).tree.root
    assert partials(home) == [RESUMABLE_PREFIX + state.id] and not os.path.exists(f"{home}/f.bin")
    state = await uploads.append(account, "web", "", state.id, 0, io.BytesIO(b"01234"))
    assert state.offset == 5 and not state.complete
    with pytest.raises(OffsetMismatch):
        await uploads.append(account, "web", "", state.id, 4, io.BytesIO(b"x"))
    with pytest.raises(TooLarge):
        await uploads.append(account, "web", "", state.id, 5, io.BytesIO(b"123456"))
    # a crash mid-append left bytes past the recorded offset: they are not the upload's
    with open(f"{home}/{RESUMABLE_PREFIX}{state.id}", "ab") as f:
        f.write(b"garbage")
    state = await uploads.append(account, "web", "", state.id, 5, io.BytesIO(b"56789"))
    assert state.complete and state.offset == 10
    assert Path(f"{home}/f.bin").read_bytes() == b"0123456789" and partials(home) == []
    logs = await core.store.run(queries.recent_logs, None)
    assert [(r["action"], r["path"], r["bytes"]) for r in logs if r["action"] == "upload"] == [("upload", "/f.bin", 10)]
    with pytest.raises(NotFound):
        await uploads.status(account, "web", "", state.id)


@pytest_twisted.ensureDeferred
async def test_appends_to_one_upload_never_overlap(core):
    uploads = uploads_with(core)
    account = await make_account(core)
    state = await begin(uploads, account, length=8)
    results = await defer.DeferredList(
        [defer.ensureDeferred(uploads.append(account, "web", "", state.id, 0, io.BytesIO(b"abcd"))) for _ in range(2)],
        consumeErrors=True,
    )
    outcomes = sorted("ok" if ok else type(value.value).__name__ for ok, value in results)
    assert outcomes == ["OffsetMismatch", "ok"]
    assert (await uploads.status(account, "web", "", state.id)).offset == 4


@pytest_twisted.ensureDeferred
async def test_completion_checks_again_and_a_refusal_leaves_nothing(core):
    uploads = uploads_with(core)
    account = await make_account(core)
    state = await begin(uploads, account, length=3)
    profile = account.profile
    await core.store.run(queries.update_profile, profile.id, {"permissions": ["list", "download"]})
    account = await make_account(core)
    with pytest.raises(PermissionDenied):
        await uploads.append(account, "web", "", state.id, 0, io.BytesIO(b"abc"))
    home = (await core.files.session(account, "web", "")).tree.root
    assert partials(home) == [] and not os.path.exists(f"{home}/f.bin")
    assert await core.store.run(upload_queries.get_upload, state.id) is None


@pytest_twisted.ensureDeferred
async def test_a_name_taken_meanwhile_is_never_overwritten(core):
    uploads = uploads_with(core)
    account = await make_account(core)
    state = await begin(uploads, account, name="taken.txt", length=3)
    home = (await core.files.session(account, "web", "")).tree.root
    with open(f"{home}/taken.txt", "wb") as f:
        f.write(b"first")
    with pytest.raises(AlreadyExists):
        await uploads.append(account, "web", "", state.id, 0, io.BytesIO(b"abc"))
    assert Path(f"{home}/taken.txt").read_bytes() == b"first" and partials(home) == []
    state = await begin(uploads, account, name="taken.txt", length=3, overwrite=True)
    await uploads.append(account, "web", "", state.id, 0, io.BytesIO(b"abc"))
    assert Path(f"{home}/taken.txt").read_bytes() == b"abc"


@pytest_twisted.ensureDeferred
async def test_expiry_is_counted_from_the_last_append(core):
    clock = task.Clock()
    clock.advance(1_000_000)
    uploads = uploads_with(core, clock, expire_after=3600)
    account = await make_account(core)
    home = (await core.files.session(account, "web", "")).tree.root
    stale = await begin(uploads, account, name="stale.bin")
    fresh = await begin(uploads, account, name="fresh.bin")
    clock.advance(3000)
    await uploads.append(account, "web", "", fresh.id, 0, io.BytesIO(b"12"))  # renews it
    clock.advance(700)
    assert await uploads.expire() == 1
    assert partials(home) == [RESUMABLE_PREFIX + fresh.id]
    assert await core.store.run(upload_queries.get_upload, stale.id) is None
    with pytest.raises(NotFound):
        await uploads.status(account, "web", "", stale.id)
    clock.advance(3000)
    with pytest.raises(Gone):  # asked for after its time, before the job came by
        await uploads.status(account, "web", "", fresh.id)
    assert partials(home) == []


@pytest_twisted.ensureDeferred
async def test_the_start_up_sweep_removes_only_partial_files_without_a_row(core):
    uploads = uploads_with(core)
    account = await make_account(core)
    live = await begin(uploads, account, name="live.bin")
    home = (await core.files.session(account, "web", "")).tree.root
    os.makedirs(f"{home}/deep/er")
    for name in ("orphan1", "deep/er/orphan2"):
        with open(f"{home}/{os.path.dirname(name)}/{RESUMABLE_PREFIX}{os.path.basename(name)}", "wb") as f:
            f.write(b"x")
    uploads._creating.add(RESUMABLE_PREFIX + "being-made")  # created, its row not written yet
    with open(f"{home}/{RESUMABLE_PREFIX}being-made", "wb") as f:
        f.write(b"")
    sources = await core.store.run(queries.all_sources)
    assert await core.files.sweep(sources) == 0  # the crash sweep leaves them all alone
    assert await uploads.sweep(sources) == 2
    assert partials(home) == sorted([RESUMABLE_PREFIX + live.id, RESUMABLE_PREFIX + "being-made"])
