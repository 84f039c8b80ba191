"""A core built in-process on a real SQLite file and a real folder."""

from __future__ import annotations

import pytest

from appliance import config
from appliance.core import Core, build_core
from appliance.core.auth import Account
from appliance.service import storage_backends
from appliance.store import queries

from ..helpers import seed_keys


@pytest.fixture
def core(tmp_path) -> Core:
    from twisted.internet import reactor

    settings = config.load(None, {})
    settings.server.data_dir = str(seed_keys(tmp_path / "data"))
    settings.security.bcrypt_rounds = 4
    built = build_core(settings, reactor, storage_backends)
    yield built
    built.threads.stop()
    built.store.close()


async def make_account(core: Core, username: str = "alice", **changes) -> Account:
    """An organisation (first one: set up) and an account for `username` in it."""
    if not await core.organisations.initialized():
        await core.organisations.initialize("Acme", "admin", "admin@example.com", "admin-password-1")
    admin = await core.store.run(queries.profile_by_username, "admin")
    if username != "admin":
        existing = await core.store.run(queries.profile_by_username, username)
        if existing is None:
            values = {
                "username": username,
                "email": f"{username}@example.com",
                "password_hash": await core.passwords.hash("user-password-1"),
                "home": f"/{username}",
                "permissions": ["list", "download", "upload", "overwrite", "delete", "rename", "mkdir"],
                "protocols": ["sftp", "ftp", "web"],
                "org_id": admin.org_id,
                "source_id": admin.source_id,
                "created_at": "2026-01-01T00:00:00.000000Z",
            }
            await core.store.run(queries.insert_profile, values)
    profile = await core.store.run(queries.profile_by_username, username)
    if changes:
        await core.store.run(queries.update_profile, profile.id, changes)
        profile = await core.store.run(queries.profile_by_username, username)
    organisation = await core.store.run(queries.get_organisation, profile.org_id)
    source = await core.store.run(queries.get_source, profile.org_id, profile.source_id)
    return Account(profile, organisation, source)
