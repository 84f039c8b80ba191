"""The access policy holds the same on every entry point (issue 24, "one access policy").

Every kind of principal (SFTP with a password and with a key, through paramiko; plain
FTP and FTPS, through ftplib; a web sign-in; a web session already signed in; an API
token; a share link; an SFTP and an FTP session already open when the state changes)
against every refusal (payment missing, a trial over, deleted, inactive, expired,
protocol withdrawn, address not allowed, TLS required) gets the same decision and the
same message, where its protocol can carry one. One daemon; each case gets its own
organisation and profile, and its state is changed through the API as an admin would.
A mailbox acts for no profile: the organisation refusals, the ones that apply to it,
stop its collection with the same messages (tests/core/test_mail_outside_in.py).
"""

from __future__ import annotations

import ftplib
import io
import itertools
import logging
import ssl
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import paramiko
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from ..api_client import Api, signed_in
from ..helpers import ADMIN_PASSWORD, insecure_tls, now_iso, wait_for

PASSWORD = "matrix-password-1"
ALLOWED = "allowed"
FTP_TLS = "This account must use FTPS (AUTH TLS) or SFTP: plain-text FTP passwords are refused."
WEB_TLS = "This account must sign in over HTTPS: passwords over plain HTTP are refused."
PLAIN_FTP_FAILED = (
    "Invalid username or password, or the account must use FTPS (AUTH TLS) or SFTP: "
    "plain-text FTP passwords are refused for it."
)
PLAIN_WEB_FAILED = "Invalid username or password, or the account must sign in over HTTPS."
# the protocol each principal acts over, as the policy names it
PROTOCOL = {
    "sftp_password": "sftp",
    "sftp_key": "sftp",
    "ftp": "ftp",
    "ftps": "ftp",
    "web_sign_in": "web",
    "web_session": "web",
    "api_token": "web",
    "share_link": "web",
    "live_sftp": "sftp",
    "live_ftp": "ftp",
}
NAMES = {"sftp": "SFTP", "ftp": "FTP", "web": "Web"}
REFUSALS = ("payment_missing", "trial_over", "deleted", "inactive", "expired", "protocol", "address", "tls")


def expected(principal: str, refusal: str) -> str:
    """What the principal must be told: the policy's one message, or ALLOWED where the
    refusal does not apply to it."""
    protocol = PROTOCOL[principal]
    if refusal in ("payment_missing", "trial_over"):
        return "Organisation payment missing"
    if refusal == "deleted":
        return "Organisation is deleted"
    if principal == "share_link":
        # the visitor is not the sharer: the sharer's own account, told as the link's state;
        # the sharer's protocols, addresses and TLS do not bind a visitor from anywhere
        return {
            "inactive": "This link no longer works: the account that shared it is disabled.",
            "expired": "This link no longer works: the account that shared it has expired.",
        }.get(refusal, ALLOWED)
    if refusal == "inactive":
        return "This account is disabled. Ask your administrator to enable it."
    if refusal == "expired":
        return "This account has expired. Ask your administrator to extend it."
    if refusal == "protocol":
        return f"{NAMES[protocol]} access is not enabled for this account. Ask your administrator."
    if refusal == "address":
        return "Sign-in from 127.0.0.1 is not allowed for this account."
    # tls: SSH always is encrypted, FTPS is; plain FTP and plain HTTP are not. A sign-in
    # over them is answered as any failed one there (no name or requirement told); a
    # session or token already held is told why
    if protocol == "sftp" or principal == "ftps":
        return ALLOWED
    if principal in ("ftp", "web_sign_in"):
        return PLAIN_FTP_FAILED if protocol == "ftp" else PLAIN_WEB_FAILED
    return FTP_TLS if protocol == "ftp" else WEB_TLS


@pytest.fixture(scope="module")
def operator(daemon):
    return signed_in(daemon, "admin", ADMIN_PASSWORD)


@pytest.fixture(scope="module")
def key():
    private = ed25519.Ed25519PrivateKey.generate()
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    ).decode()
    public = private.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return paramiko.Ed25519Key.from_private_key(io.StringIO(pem)), public.decode() + " matrix@test"


_numbers = itertools.count(1)


@dataclass
class Case:
    daemon: object
    org_id: int
    boss: Api  # the organisation's admin
    user_id: int
    username: str


def arrange(daemon, operator: Api, public_key: str) -> Case:
    """An organisation of its own (on trial, as the operator makes them) with an admin and a
    profile that may use every protocol, holding one file."""
    n = next(_numbers)
    created = operator.post(
        "god/organisations/",
        {"name": f"Matrix {n}", "subdomain": f"matrix{n}",
         "admin": {"username": f"boss{n}", "email": f"boss{n}@example.com", "password": PASSWORD}},
    )  # fmt: skip
    assert created.status == 201, created.body
    boss = signed_in(daemon, f"boss{n}", PASSWORD)
    username = f"member{n}"
    made = boss.post(
        "profiles/",
        {"username": username, "email": f"{username}@example.com", "password": PASSWORD, "is_admin": True,
         "protocols": ["sftp", "ftp", "web"], "ssh_keys": [public_key]},
    )  # fmt: skip
    assert made.status == 201, made.body
    case = Case(daemon, created.body["id"], boss, made.body["id"], username)
    home = daemon.home(username)
    home.mkdir(parents=True, exist_ok=True)
    (home / "f.txt").write_bytes(b"shared")
    return case


def change(case: Case, operator: Api, refusal: str, protocol: str) -> None:
    """Bring about `refusal` through the API, as the operator or the organisation's admin would."""
    org = f"god/organisations/{case.org_id}/"
    profile = f"profiles/{case.user_id}/"
    reply = {
        "payment_missing": lambda: operator.patch(org, {"status": "payment_missing"}),
        "trial_over": lambda: operator.patch(org, {"status": "trial", "trial_ends_at": now_iso(-timedelta(hours=1))}),
        "deleted": lambda: operator.patch(org, {"status": "deleted"}),
        "inactive": lambda: case.boss.patch(profile, {"active": False}),
        "expired": lambda: case.boss.patch(profile, {"expires_at": now_iso(-timedelta(minutes=1))}),
        "protocol": lambda: case.boss.patch(
            profile, {"protocols": [p for p in ("sftp", "ftp", "web") if p != protocol]}
        ),
        "address": lambda: case.boss.patch(profile, {"ip_allow": ["192.0.2.0/24"]}),
        "tls": lambda: case.boss.patch(profile, {"require_tls": True}),
    }[refusal]()
    assert reply.status == 200, reply.body


# -- the principals: each returns ALLOWED or the message it was refused with ------------------


def sftp_sign_in(case: Case, key=None) -> str:
    transport = paramiko.Transport(("127.0.0.1", case.daemon.sftp_port))
    try:
        transport.start_client(timeout=20)
        try:
            if key is None:
                transport.auth_password(case.username, PASSWORD)
            else:
                transport.auth_publickey(case.username, key)
        except paramiko.AuthenticationException:
            return (transport.get_banner() or b"").decode().strip() or "refused without a message"
        sftp = paramiko.SFTPClient.from_transport(transport)
        assert "f.txt" in sftp.listdir(".")
        return ALLOWED
    finally:
        transport.close()


def tls_context() -> ssl.SSLContext:
    return insecure_tls()


def ftp_client(case: Case, tls: bool) -> ftplib.FTP:
    client = ftplib.FTP_TLS(context=tls_context(), timeout=20) if tls else ftplib.FTP(timeout=20)
    client.connect("127.0.0.1", case.daemon.ftp_port)
    if tls:
        client.auth()
    return client


def ftp_sign_in(case: Case, tls: bool) -> str:
    client = ftp_client(case, tls)
    try:
        client.login(case.username, PASSWORD)
    except ftplib.error_perm as e:
        assert str(e).startswith("530 "), e
        return str(e)[4:]
    finally:
        client.close()
    return ALLOWED


def web_sign_in(case: Case) -> str:
    reply = Api(case.daemon).login(case.username, PASSWORD)
    if reply.status == 200:
        return ALLOWED
    assert reply.status == 401, reply.body
    return reply.body["detail"]


def token_use(api: Api) -> str:
    """A signed-in call: 403 with the detail for the organisation's state (console-spec),
    401 token_not_valid with the message for the profile's."""
    reply = api.get("dashboard/information/")
    if reply.status == 200:
        return ALLOWED
    if reply.status == 403:
        return reply.body["detail"]
    assert reply.status == 401 and reply.body["code"] == "token_not_valid", reply.body
    return reply.body["messages"][0]["message"]


def share_visit(daemon, token: str) -> str:
    public = Api(daemon)
    reply = public.get(f"shared/{token}/download/")
    if reply.status == 200:
        return ALLOWED
    assert reply.status in (403, 410), (reply.status, reply.body)
    return reply.body["detail"]


class LiveSftp:
    def __init__(self, case: Case):
        self.messages: list[str] = []
        self.transport = paramiko.Transport(("127.0.0.1", case.daemon.sftp_port))
        channel = f"matrix.{case.username}"
        self.transport.set_log_channel(channel)
        logger = logging.getLogger(channel)
        logger.setLevel(logging.INFO)
        logger.addHandler(self._Collect(self.messages))
        self.transport.connect(username=case.username, password=PASSWORD)
        self.sftp = paramiko.SFTPClient.from_transport(self.transport)
        assert "f.txt" in self.sftp.listdir(".")

    class _Collect(logging.Handler):
        def __init__(self, into: list[str]):
            super().__init__()
            self._into = into

        def emit(self, record):
            self._into.append(record.getMessage())

    def outcome(self) -> str:
        """The DISCONNECT's reason once the session is ended; ALLOWED while it goes on
        (the API's change returns only after open sessions were checked)."""
        if self.transport.is_active():
            try:
                if "f.txt" in self.sftp.listdir("."):
                    return ALLOWED
            except (OSError, EOFError, paramiko.SSHException):
                pass
        wait_for(lambda: any(m.startswith("Disconnect (code") for m in self.messages), timeout=20)
        line = next(m for m in self.messages if m.startswith("Disconnect (code"))
        return line.split("): ", 1)[1]

    def close(self) -> None:
        self.transport.close()


class LiveFtp:
    def __init__(self, case: Case):
        self.client = ftp_client(case, tls=False)
        self.client.login(case.username, PASSWORD)

    def outcome(self) -> str:
        """The unasked 421's reason once the session is ended (sent before the hang-up);
        ALLOWED while it goes on."""
        try:
            reply = self.client.sendcmd("NOOP")
        except ftplib.error_temp as e:
            assert str(e).startswith("421 "), e
            return str(e)[4:]
        assert reply.startswith("200"), reply
        return ALLOWED

    def close(self) -> None:
        self.client.close()


@pytest.mark.parametrize("refusal", REFUSALS)
@pytest.mark.parametrize("principal", list(PROTOCOL))
def test_every_entry_point_gives_the_same_decision_and_message(daemon, operator, key, principal, refusal):
    private_key, public_key = key
    case = arrange(daemon, operator, public_key)
    # what exists before the change: a session, a token, a link, an open connection
    before = {}
    if principal == "web_session":
        before["api"] = signed_in(daemon, case.username, PASSWORD)
    elif principal == "api_token":
        member = signed_in(daemon, case.username, PASSWORD)
        made = member.post("tokens/", {"name": "matrix", "scopes": ["files", "admin"]})
        assert made.status == 201, made.body
        before["api"] = Api(daemon, made.body["token"])
    elif principal == "share_link":
        made = signed_in(daemon, case.username, PASSWORD).post("shares/", {"path": "/f.txt"})
        assert made.status == 201, made.body
        before["token"] = parse_qs(urlsplit(made.body["url"]).query)["token"][0]
        assert share_visit(daemon, before["token"]) == ALLOWED
    elif principal == "live_sftp":
        before["live"] = LiveSftp(case)
    elif principal == "live_ftp":
        before["live"] = LiveFtp(case)
    if "api" in before:
        assert token_use(before["api"]) == ALLOWED
    try:
        change(case, operator, refusal, PROTOCOL[principal])
        got = {
            "sftp_password": lambda: sftp_sign_in(case),
            "sftp_key": lambda: sftp_sign_in(case, private_key),
            "ftp": lambda: ftp_sign_in(case, tls=False),
            "ftps": lambda: ftp_sign_in(case, tls=True),
            "web_sign_in": lambda: web_sign_in(case),
            "web_session": lambda: token_use(before["api"]),
            "api_token": lambda: token_use(before["api"]),
            "share_link": lambda: share_visit(daemon, before["token"]),
            "live_sftp": lambda: before["live"].outcome(),
            "live_ftp": lambda: before["live"].outcome(),
        }[principal]()
    finally:
        if "live" in before:
            before["live"].close()
    assert got == expected(principal, refusal)
