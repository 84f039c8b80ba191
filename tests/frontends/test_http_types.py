"""Type confusion in request bodies, query parameters, path ids and headers answers 400
(or 404 for an id no row can have), never a 500: a body is checked against its
operation's declaration in the OpenAPI document before a handler reads it, and the
400 names each wrong field ("config.port" for a nested one) with a message."""

from __future__ import annotations

import json

import pytest

from ..api_client import Api, signed_in
from ..helpers import ADMIN_PASSWORD

HUGE = 2**70  # past SQLite's 64-bit integers
MAILBOX = {"name": "Inbox", "host": "127.0.0.1", "username": "files"}
ORGANISATION = {"name": "Typed", "admin": {"username": "typed-admin", "email": "typed@example.com"}}


@pytest.fixture(scope="module")
def operator(daemon) -> Api:
    return signed_in(daemon, "admin", ADMIN_PASSWORD)  # setup's admin is the operator


def refused(reply, field: str) -> list[str]:
    """The messages of a 400 for `field`, after checking the reply is the console-spec's field map."""
    assert reply.status == 400, (reply.status, reply.body)
    assert isinstance(reply.body, dict) and field in reply.body, reply.body
    assert all(isinstance(v, list) and v and all(isinstance(m, str) for m in v) for v in reply.body.values())
    return reply.body[field]


@pytest.fixture(autouse=True)
def no_server_errors(daemon):
    """Whatever a test sends, the daemon logs no unexpected error (a 500) meanwhile."""
    before = len(daemon.output())
    yield
    logged = daemon.output()[before:]
    assert "unexpected error" not in logged, logged[-3000:]


# -- the reported cases ---------------------------------------------------------------------


def test_a_huge_integer_as_a_mailboxs_source_is_a_400(daemon, operator):
    messages = refused(operator.post("mailboxes/", {**MAILBOX, "source": HUGE}), "source")
    assert messages == ["Must be a whole number from 1 to 9223372036854775807."]
    refused(operator.post("mailboxes/", {**MAILBOX, "source": 2**63}), "source")  # one past SQLite's largest


@pytest.mark.parametrize("subdomain", [["typed"], 5, {"a": 1}, True, 1.5])
def test_a_new_organisations_subdomain_must_be_text(daemon, operator, subdomain):
    messages = refused(operator.post("god/organisations/", {**ORGANISATION, "subdomain": subdomain}), "subdomain")
    assert messages == ["Must be text, or null for none."]
    assert not daemon.query("SELECT id FROM organisations WHERE name = 'Typed'")


def test_true_is_not_a_port(daemon, operator):
    assert refused(operator.post("mailboxes/", {**MAILBOX, "port": True}), "port") == [
        "Must be a whole number from 1 to 65535."
    ]
    sftp = {"name": "Remote", "type": "sftp", "config": {"host": "127.0.0.1", "port": True, "username": "u"}}
    assert refused(operator.post("sources/", sftp), "config.port") == ["Must be a whole number from 1 to 65535."]


# -- the same class elsewhere -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        # huge integers
        ("POST", "profiles/", {"username": "q1", "email": "q1@example.com", "quota_bytes": HUGE}, "quota_bytes"),
        ("POST", "profiles/", {"username": "q2", "email": "q2@example.com", "source": HUGE}, "source"),
        ("POST", "mailboxes/", {**MAILBOX, "interval_minutes": HUGE}, "interval_minutes"),
        ("POST", "shares/", {"path": "/", "max_downloads": HUGE}, "max_downloads"),
        ("POST", "mailboxes/", {**MAILBOX, "port": -(2**70)}, "port"),
        # a list, an object or a number where text belongs
        ("POST", "profiles/", {"username": ["x"], "email": "x@example.com"}, "username"),
        ("POST", "profiles/", {"username": "q3", "email": "q3@example.com", "home": ["/x"]}, "home"),
        ("POST", "tokens/", {"name": {"a": "b"}}, "name"),
        ("POST", "files/mkdir/", {"path": ["a", "b"]}, "path"),
        ("POST", "files/rename/", {"path": "/a", "new_path": 7}, "new_path"),
        ("POST", "token/", {"username": ["admin"], "password": "x"}, "username"),
        ("POST", "password/reset/", {"email": ["admin@example.com"]}, "email"),
        ("POST", "god/organisations/", {**ORGANISATION, "admin": {"username": 1, "email": "t@example.com"}},
         "admin.username"),
        ("POST", "sources/", {"name": "S", "config": {"path": ["files"]}}, "config.path"),
        # true or false where a number belongs, and the other way round
        ("POST", "mailboxes/", {**MAILBOX, "interval_minutes": False}, "interval_minutes"),
        ("POST", "profiles/", {"username": "q4", "email": "q4@example.com", "quota_files": True}, "quota_files"),
        ("POST", "files/mkdir/", {"path": "/dir", "parents": "no"}, "parents"),
        ("POST", "profiles/", {"username": "q5", "email": "q5@example.com", "is_admin": 1}, "is_admin"),
        # a fraction, a list of the wrong things, null where text is required
        ("POST", "mailboxes/", {**MAILBOX, "port": 993.5}, "port"),
        ("POST", "tokens/", {"name": "t", "scopes": "admin"}, "scopes"),
        ("POST", "profiles/", {"username": "q6", "email": "q6@example.com", "permissions": [1, 2]}, "permissions"),
        ("POST", "token/", {"username": None, "password": "x"}, "username"),
        ("POST", "god/organisations/", {"name": "No admin"}, "admin"),
    ],
)  # fmt: skip
def test_wrong_types_are_a_400_naming_the_field(daemon, operator, method, path, body, field):
    refused(operator.call(method, path, body), field)


def test_deep_nesting_is_a_400(daemon, operator):
    deep = "x"
    for _ in range(300):  # 600 levels: as deep as the client's encoder goes
        deep = {"x": [deep]}
    refused(operator.post("mailboxes/", {**MAILBOX, "name": deep}), "name")
    s3 = {"name": "Deep", "type": "s3", "config": {"auth": "oauth2", "oauth": {"client_id": deep}}}
    refused(operator.post("sources/", s3), "config.oauth.client_id")
    refused(operator.patch(f"organisation/{daemon.default_org()}/", {"branding": deep}), "branding")
    # deeper than the JSON parser goes: not valid JSON
    too_deep = ("[" * 100_000 + "]" * 100_000).encode()
    reply = operator.post("tokens/", raw=b'{"name": ' + too_deep + b"}", headers={"Content-Type": "application/json"})
    assert reply.status == 400 and reply.body == {"detail": "The request body is not valid JSON."}


def test_a_string_of_200_000_characters_is_a_400(daemon, operator):
    text = "x" * 200_000  # the body itself stays within its 256 KiB cap (a larger one is a 413: test_http_gate)
    assert refused(operator.post("tokens/", {"name": text}), "name") == ["Use at most 4,096 characters."]
    refused(operator.post("sources/", {"name": "Big", "config": {"path": text}}), "config.path")
    refused(operator.post("token/", {"username": "admin", "password": text}), "password")
    org = daemon.default_org()
    refused(operator.patch(f"organisation/{org}/", {"user_terms": text}), "user_terms")
    assert not daemon.query("SELECT id FROM sources WHERE name = 'Big'")


def test_half_a_character_is_a_400(daemon, operator):
    """JSON may escape a lone surrogate (\\ud800), which no UTF-8 column, path or mail can hold."""
    for path, raw, field in [
        ("tokens/", b'{"name": "robot \\ud800"}', "name"),
        ("files/mkdir/", b'{"path": "/\\udfff"}', "path"),
        ("token/", b'{"username": "\\ud800", "password": "x"}', "username"),
        ("password/reset/", b'{"email": "\\ud800@example.com"}', "email"),
    ]:
        reply = operator.post(path, raw=raw, headers={"Content-Type": "application/json"})
        assert "not valid Unicode" in refused(reply, field)[0]
    # a pair of surrogates is one character, and welcome
    reply = operator.post(
        "tokens/", raw=b'{"name": "robot \\ud83d\\ude00"}', headers={"Content-Type": "application/json"}
    )
    assert reply.status == 201 and reply.body["name"] == "robot \N{GRINNING FACE}"


def test_right_types_still_reach_the_cores_rules(daemon, operator):
    """The gate checks kinds; the core keeps its own rules and words."""
    reply = operator.post("god/organisations/", {**ORGANISATION, "subdomain": "www"})
    assert reply.status == 400 and "subdomain" in reply.body
    reply = operator.post("mailboxes/", {**MAILBOX, "port": 993, "source": 9_999_999})
    assert refused(reply, "source") == ["Choose one of your organisation's sources."]
    admin = {"username": "null-admin", "email": "null@example.com", "password": None}  # null: invited
    reply = operator.post("god/organisations/", {"name": "Null Co", "subdomain": None, "admin": admin})
    assert reply.status == 201 and reply.body["subdomain"] == "null-co"  # null: made from the name


# -- query parameters, path ids and headers ----------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["logs/?page=abc", "logs/?page=99999999999999999999999", "logs/?page=1e3", "profiles/?page_size=1.5",
     "logs/?date_from=99999-01-01", "logs/?date_to=%00", "files/?path=%00"],
)  # fmt: skip
def test_bad_query_parameters_are_a_400(daemon, operator, path):
    assert operator.get(path).status == 400


@pytest.mark.parametrize(
    "path",
    ["profiles/9223372036854775808/", "profiles/18446744073709551616/", "mailboxes/99999999999999999999999/runs/",
     "god/organisations/9223372036854775808/", "sources/9223372036854775807/", "shares/0/"],
)  # fmt: skip
def test_ids_no_row_can_have_are_a_404(daemon, operator, path):
    assert operator.get(path).status == 404


def test_odd_headers_are_answered(daemon, operator):
    for headers in [{"Authorization": "Bearer " + "x" * 6000}, {"Authorization": "Token abc"},
                    {"X-Request-Id": "x" * 5000}, {"X-Share-Password": "\xff\xfe"}]:  # fmt: skip
        assert Api(daemon).call("GET", "shared/no-such-link/", headers=headers).status == 404
        assert Api(daemon).call("GET", "profiles/", headers=headers).status == 401
    for content_type in ("text/plain", "application/json; charset=latin-1", "multipart/form-data"):
        reply = operator.post("tokens/", raw=json.dumps({"name": 5}).encode(), headers={"Content-Type": content_type})
        assert refused(reply, "name")
