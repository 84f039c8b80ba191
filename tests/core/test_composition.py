"""What the composition root hands the core (the storage registry), and the core's one
start-up call (the sweep of what uploads cut short left behind)."""

from __future__ import annotations

import dataclasses
import os

import pytest
import pytest_twisted

from appliance import config
from appliance.core import build_core
from appliance.core.files import TEMP_PREFIX
from appliance.errors import Unavailable
from appliance.storage.local.backend import LocalSources
from appliance.storage.paths import RESUMABLE_PREFIX
from appliance.storage.registry import Backends

from .conftest import make_account


def leftovers(root: str) -> list[str]:
    return sorted(n for _, _, names in os.walk(root) for n in names if n.startswith((TEMP_PREFIX, RESUMABLE_PREFIX)))


@pytest_twisted.ensureDeferred
async def test_the_start_up_sweep_is_one_core_call(core):
    account = await make_account(core)
    session = await core.files.session(account, "sftp", "127.0.0.1")
    writer = await session.open_write("/cut-short.bin")
    await writer.write(0, b"x" * 10)  # the "crash": never committed nor aborted
    root = session.tree.root
    with open(os.path.join(root, f"{RESUMABLE_PREFIX}orphan"), "wb") as f:  # a resumable upload no row knows
        f.write(b"x")
    assert len(leftovers(root)) == 2

    await core.sweep_unfinished_uploads()

    assert leftovers(root) == []
    assert os.listdir(root) == []


def local_only(settings, reactor, threads, data_dir, saved_sign_ins, destinations) -> Backends:
    return Backends(LocalSources(threads, data_dir.path))


@pytest.fixture
def local_core(tmp_path):
    from twisted.internet import reactor

    settings = config.load(None, {})
    settings.server.data_dir = str(tmp_path / "data")
    settings.security.bcrypt_rounds = 4
    built = build_core(settings, reactor, local_only)
    yield built
    built.threads.stop()
    built.store.close()


@pytest_twisted.ensureDeferred
async def test_the_core_serves_only_the_backends_it_is_handed(local_core):
    account = await make_account(local_core)
    local = await local_core.files.session(account, "sftp", "127.0.0.1")
    await local.mkdir("/reports")
    remote = dataclasses.replace(account.source, type="sftp", config={"host": "192.0.2.1", "username": "u"})
    with pytest.raises(Unavailable, match="of type sftp, which is not available yet"):
        await local_core.files.session(dataclasses.replace(account, source=remote), "sftp", "127.0.0.1")
