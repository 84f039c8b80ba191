"""Profiles, mailboxes and sources are declared once (appliance/declarations.py): the core
checks a body by the same declaration the API's document publishes, so every field the
document names is one the core checks, with the core's own words."""

from __future__ import annotations

import pytest
import pytest_twisted

from appliance.core.mailbox_admin import MailboxFields
from appliance.core.profile_admin import ProfileFields
from appliance.core.source_admin import SourceFields
from appliance.declarations import schema
from appliance.errors import Invalid

from .conftest import make_account

# a value of another kind than each JSON type the document declares
WRONG = {"string": 5, "integer": "5", "boolean": "yes", "array": "x", "object": "x"}


def wrong_body(declared: dict) -> dict:
    """A body whose every field is of a kind its declaration does not take."""
    body = {}
    for name, field in declared["properties"].items():
        kinds = field["type"] if isinstance(field["type"], list) else [field["type"]]
        body[name] = WRONG[next(kind for kind in kinds if kind != "null")]
    return body


@pytest_twisted.ensureDeferred
async def test_the_core_refuses_every_declared_field_of_the_wrong_kind(core):
    admin = await make_account(core, "admin")
    for model, admin_service in (
        (ProfileFields, core.profile_admin),
        (MailboxFields, core.mailbox_admin),
        (SourceFields, core.source_admin),
    ):
        declared = schema(model, creating=True)
        with pytest.raises(Invalid) as refused:
            await admin_service.values(admin, wrong_body(declared))
        assert set(refused.value.fields) == set(declared["properties"]), model.__name__
        assert all(refused.value.fields.values())


@pytest_twisted.ensureDeferred
async def test_the_cores_words_for_a_wrong_field_are_kept(core):
    """The messages are the console-spec's: the declarations carry the core's words."""
    admin = await make_account(core, "admin")
    with pytest.raises(Invalid) as refused:
        await core.profile_admin.values(
            admin, {"permissions": ["list", "fly"], "quota_bytes": -1, "home": 5, "require_tls": "x"}, admin.profile
        )
    assert refused.value.fields == {
        "permissions": ["Unknown: fly. Choose from: list, download, upload, overwrite, delete, rename, mkdir."],
        "quota_bytes": ["Enter a whole number, or nothing for no limit."],
        "home": ["Not a valid value."],
        "require_tls": ["Must be true, false, or null to follow the organisation."],
    }
    with pytest.raises(Invalid) as refused:
        await core.mailbox_admin.values(admin, {"name": "n" * 256, "port": 0, "after": "move"})
    assert refused.value.fields == {
        "name": ["Enter a value."],
        "host": ["This field is required."],
        "username": ["This field is required."],
        "port": ["Enter a port from 1 to 65535."],
        "move_to": ["Name the folder to move processed messages to."],
    }
