"""A mailbox's run acts as a principal of its own (core.access.MailboxPrincipal), not as
a profile: it files into its source, takes back what it filed, and may do nothing else."""

from __future__ import annotations

import os

import pytest
import pytest_twisted

from appliance.core.access import MailboxPrincipal
from appliance.errors import PermissionDenied, Unavailable
from appliance.store import mailboxes as mailbox_queries

from .conftest import make_account


async def add_mailbox(core, **changes):
    admin = await make_account(core, "admin")
    values = {
        "org_id": admin.organisation.id,
        "name": "invoices",
        "host": "imap.example",
        "port": 993,
        "security": "tls",
        "username": "files",
        "password_encrypted": "",
        "folder": "INBOX",
        "source_id": admin.source.id,
        "target_folder": "/mail/{date}",
        "created_at": "2026-11-01T00:00:00.000000Z",
        **changes,
    }
    mailbox_id = await core.store.run(mailbox_queries.insert_mailbox, values)
    return await core.store.run(mailbox_queries.get_mailbox, admin.organisation.id, mailbox_id)


@pytest_twisted.ensureDeferred
async def test_a_mailbox_run_files_as_itself_and_may_do_nothing_else(core):
    mailbox = await add_mailbox(core)
    account = await core.access.mailbox(mailbox)
    assert account.profile == MailboxPrincipal(mailbox.id, mailbox.org_id, "invoices")
    files = await core.files.session(account, "mail", mailbox.host)
    await files.mkdir("/mail/2026-11-29", parents=True)
    for name in ("invoice.pdf", "draft.pdf"):
        writer = await files.open_write(f"/mail/2026-11-29/{name}", exclusive=True)
        await writer.write(0, os.urandom(1000))
        await writer.commit()
    await files.remove("/mail/2026-11-29/draft.pdf")  # a message it could not finish: taken back

    refused = {
        "list": files.list("/mail"),
        "read": files.open_read("/mail/2026-11-29/invoice.pdf"),
        "overwrite": files.open_write("/mail/2026-11-29/invoice.pdf"),
        "rename": files.rename("/mail/2026-11-29/invoice.pdf", "/mail/kept.pdf"),
    }
    for what, call in refused.items():
        with pytest.raises(PermissionDenied):
            await call
            pytest.fail(f"a mailbox run may not {what}")
    rows = await core.audit.search(await make_account(core, "admin"), {}, 100, 0)
    mine = [row for row in rows[1] if row["username"] == "mailbox:invoices"]
    assert sorted(row["action"] for row in mine) == ["delete", "mkdir", "upload", "upload"], mine
    assert {row["protocol"] for row in mine} == {"mail"}, mine


@pytest_twisted.ensureDeferred
async def test_a_mailbox_without_a_target_source_says_so(core):
    mailbox = await add_mailbox(core, source_id=None)
    with pytest.raises(Unavailable, match="no target source"):
        await core.access.mailbox(mailbox)
