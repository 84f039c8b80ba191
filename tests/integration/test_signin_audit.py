"""A sign-in is audited once, with the outcome the client saw (issue 24, "one sign-in").

The password of a profile without a source is right, but its files cannot be opened:
SFTP and FTP refuse the sign-in, and the audit log (read through the API, as the
organisation's admin reads it) says so, with no "signed in" row. The web console opens
no files at sign-in: there the same profile signs in, and the log says that, once.
"""

from __future__ import annotations

import ftplib

import paramiko
import pytest

from ..api_client import Api, signed_in
from ..helpers import ADMIN_PASSWORD

PASSWORD = "audited-password-1"
NO_SOURCE = "No source is assigned to your account. Ask your administrator to assign one."


def sourceless(daemon, username: str) -> Api:
    """A profile without a source, made through the API; its organisation's admin."""
    admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
    made = admin.post(
        "profiles/",
        {"username": username, "email": f"{username}@example.com", "password": PASSWORD, "source": None},
    )
    assert made.status == 201 and made.body["source"] is None, made.body
    return admin


def sign_ins(admin: Api, username: str) -> list[tuple[str, str]]:
    rows = admin.get(f"logs/?username={username}&page_size=50").body["results"]
    return [(r["action"], r["message"]) for r in rows if r["action"] in ("login", "login_failed")]


def sftp_sign_in(daemon, username: str) -> str:
    transport = paramiko.Transport(("127.0.0.1", daemon.sftp_port))
    try:
        transport.start_client(timeout=20)
        with pytest.raises(paramiko.AuthenticationException):
            transport.auth_password(username, PASSWORD)
        return (transport.get_banner() or b"").decode().strip()
    finally:
        transport.close()


def ftp_sign_in(daemon, username: str) -> str:
    client = ftplib.FTP(timeout=20)
    client.connect("127.0.0.1", daemon.ftp_port)
    try:
        with pytest.raises(ftplib.error_perm) as refused:
            client.login(username, PASSWORD)
    finally:
        client.close()
    return str(refused.value)


@pytest.mark.parametrize("protocol", ["sftp", "ftp"])
def test_a_sign_in_refused_after_the_password_check_is_audited_as_refused(daemon, protocol):
    username = f"nosource-{protocol}"
    admin = sourceless(daemon, username)
    told = sftp_sign_in(daemon, username) if protocol == "sftp" else ftp_sign_in(daemon, username)
    assert NO_SOURCE in told, told
    rows = sign_ins(admin, username)
    assert [action for action, _ in rows] == ["login_failed"], rows  # one row, and no "signed in"
    assert NO_SOURCE in rows[0][1] and f"over {protocol.upper()}" in rows[0][1], rows


def test_a_web_sign_in_is_audited_once_as_the_client_saw_it(daemon):
    admin = sourceless(daemon, "nosource-web")
    reply = Api(daemon).login("nosource-web", PASSWORD)
    assert reply.status == 200, reply.body  # the console opens no files at sign-in
    rows = sign_ins(admin, "nosource-web")
    assert [action for action, _ in rows] == ["login"], rows
    files = Api(daemon, reply.body["access"]).get("files/?path=/")
    assert (files.status, files.body) == (403, {"detail": NO_SOURCE})
    refused = Api(daemon).login("nosource-web", "not-the-password")
    assert refused.status == 401
    assert [action for action, _ in sign_ins(admin, "nosource-web")] == ["login_failed", "login"]
