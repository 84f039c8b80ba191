"""S3 sources end to end: moto's server (a stand-in for S3, speaking the S3 API
over HTTP) started here on 127.0.0.1 with IAM authentication on (so wrong keys
are refused as by S3), a bucket and an access key made through its API, a source
made through the admin API (with [sources] allow_loopback on), a profile on it,
and OpenSSH's sftp and curl against the appliance. The round trips by FTP and HTTP,
the quota and the rename onto itself run over every backend in test_backends.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings

import pytest

from ..api_client import signed_in
from ..frontends.sftp_client import OPTIONS, auth_options, sftp, sha256
from ..helpers import ADMIN_PASSWORD, free_port, require, require_module, wait_for_port
from .sources import BUCKET, S3Server

botocore = require_module("botocore.session")
require_module("moto.server")

PASSWORD = "s3-password-1"


@pytest.fixture(scope="module")
def gateway(daemon_factory):
    return daemon_factory(sources__allow_loopback=True)


def source_body(s3: S3Server, name: str, **config) -> dict:
    body = {
        "endpoint": s3.endpoint,
        "region": "us-east-1",
        "bucket": BUCKET,
        "prefix": "tenants/acme",
        "access_key": s3.access_key,
        "secret_key": s3.secret_key,
        "path_style": True,
    }
    body.update(config)
    return {"name": name, "type": "s3", "config": body}


@pytest.fixture(scope="module")
def source(gateway, s3):
    admin = signed_in(gateway, "admin", ADMIN_PASSWORD)
    created = admin.post("sources/", source_body(s3, "Bucket"))
    assert created.status == 201, created.body
    return created.body


def make_user(gateway, source: dict, username: str, **extra) -> None:
    admin = signed_in(gateway, "admin", ADMIN_PASSWORD)
    body = {"username": username, "email": f"{username}@example.com", "password": PASSWORD, "source": source["id"],
            "protocols": ["sftp", "ftp", "web"],
            "permissions": ["list", "download", "upload", "overwrite", "delete", "rename", "mkdir"]}  # fmt: skip
    body.update(extra)
    reply = admin.post("profiles/", body)
    assert reply.status == 201, reply.body


@pytest.mark.parametrize("field", ["endpoint", "bucket", "prefix", "access_key", "secret_key"])
def test_control_characters_in_what_reaches_the_bucket_are_refused(gateway, s3, field):
    admin = signed_in(gateway, "admin", ADMIN_PASSWORD)
    reply = admin.post("sources/", source_body(s3, f"Injected {field}", **{field: "x\r\nX-Injected: 1\x85"}))
    assert reply.status == 400, reply.body
    assert any(f"config.{field} holds a control character" in m for m in reply.body["config"]), reply.body


def test_the_source_is_created_checked_with_its_secret_hidden(gateway, s3, source):
    assert source["type"] == "s3" and source["status"] == "ok", source
    config = source["config"]
    assert config["bucket"] == BUCKET and config["prefix"] == "tenants/acme" and config["path_style"] is True
    assert config["verify_tls"] is True and config["has_secret_key"] and config["access_key"] == s3.access_key
    assert "secret_key" not in config and "secret_key_encrypted" not in config
    stored = gateway.query("SELECT config FROM sources WHERE id=?", source["id"])[0][0]
    assert s3.secret_key not in stored and "secret_key_encrypted" in stored  # encrypted at rest
    admin = signed_in(gateway, "admin", ADMIN_PASSWORD)
    checked = admin.post(f"sources/{source['id']}/check/")
    assert checked.status == 200 and checked.body["status"] == "ok", checked.body
    # a change without the secret keeps the stored one (and is checked again)
    changed = admin.patch(f"sources/{source['id']}/", {"config": {"prefix": "tenants/acme/"}})
    assert changed.status == 200 and changed.body["config"]["prefix"] == "tenants/acme", changed.body


def test_round_trip_over_sftp_with_multipart(gateway, s3, source, tmp_path):
    make_user(gateway, source, "gw")
    small = tmp_path / "small.bin"
    small.write_bytes(os.urandom(3 * 1024 * 1024 + 12345))
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(20 * 1024 * 1024 + 777))  # more than two parts
    result = sftp(
        gateway, "gw", PASSWORD,
        "mkdir docs\nput small.bin docs/small.bin\nput big.bin docs/big.bin\nput big.bin whole.bin\nls -l docs\n"
        "rename docs/big.bin docs/moved.bin\nrename docs archive\nget archive/moved.bin back.bin\n"
        "get archive/small.bin small-back.bin\nls archive",
        tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "small.bin" in result.stdout and "moved.bin" in result.stdout
    head = s3.s3.head_object(Bucket=BUCKET, Key="tenants/acme/gw/whole.bin")
    assert head["ETag"].endswith('-3"'), head["ETag"]  # sent as a multipart upload of three parts
    assert "-" not in s3.s3.head_object(Bucket=BUCKET, Key="tenants/acme/gw/archive/small.bin")["ETag"]  # one PUT
    assert s3.body("tenants/acme/gw/whole.bin") == big.read_bytes()
    s3.s3.delete_object(Bucket=BUCKET, Key="tenants/acme/gw/whole.bin")
    keys = s3.keys("tenants/acme/gw/")
    assert keys == {
        "tenants/acme/gw/archive/": 0,
        "tenants/acme/gw/archive/small.bin": small.stat().st_size,
        "tenants/acme/gw/archive/moved.bin": big.stat().st_size,
    }, keys
    assert sha256(tmp_path / "back.bin") == sha256(big)
    assert sha256(tmp_path / "small-back.bin") == sha256(small)
    assert s3.body("tenants/acme/gw/archive/moved.bin") == big.read_bytes()
    assert s3.pending_uploads() == []
    result = sftp(
        gateway, "gw", PASSWORD, "rm archive/moved.bin\nrm archive/small.bin\nrmdir archive\nls -la", tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert s3.keys("tenants/acme/gw/") == {}
    actions = [row["action"] for row in gateway.logs() if row["username"] == "gw"]
    assert {"upload", "download", "mkdir", "rename", "delete"} <= set(actions), actions


def test_a_folder_keeps_existing_after_its_last_file_goes(gateway, s3, source, tmp_path):
    make_user(gateway, source, "keeper")
    (tmp_path / "a.txt").write_text("a")
    result = sftp(gateway, "keeper", PASSWORD, "mkdir d\nput a.txt d/a.txt\nrm d/a.txt\nls d\nrmdir d", tmp_path)
    assert result.returncode == 0, result.stderr
    result = sftp(gateway, "keeper", PASSWORD, "put a.txt nowhere/a.txt", tmp_path)
    assert result.returncode != 0  # no folder, no upload into it
    assert s3.keys("tenants/acme/keeper/") == {}


def test_a_path_escape_is_refused(gateway, s3, source, tmp_path):
    make_user(gateway, source, "jailed")
    s3.s3.put_object(Bucket=BUCKET, Key="tenants/acme/secret.txt", Body=b"not yours")
    s3.s3.put_object(Bucket=BUCKET, Key="outside.txt", Body=b"not yours")
    for path in ("../secret.txt", "/../secret.txt", "../../../outside.txt"):
        result = sftp(gateway, "jailed", PASSWORD, f"get {path} got.txt", tmp_path)
        assert result.returncode != 0
        assert not (tmp_path / "got.txt").exists()
    api = signed_in(gateway, "jailed", PASSWORD)
    assert api.get("files/?path=/../..").status == 403


def test_an_interrupted_upload_leaves_no_object_and_no_pending_upload(gateway, s3, source, tmp_path):
    make_user(gateway, source, "cutoff")
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(64 * 1024 * 1024))
    batch = tmp_path / "batch.txt"
    batch.write_text("put big.bin big.bin\n")
    env = dict(os.environ, SSHPASS=PASSWORD)
    client = subprocess.Popen(
        ["sshpass", "-e", "sftp", *OPTIONS, *auth_options(None), "-P", str(gateway.sftp_port), "-b", str(batch),
         "cutoff@127.0.0.1"],
        env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    started = False
    while time.monotonic() < deadline and not started:  # until the multipart upload has begun
        started = "tenants/acme/cutoff/big.bin" in s3.pending_uploads()
        time.sleep(0.05)
    os.killpg(client.pid, signal.SIGKILL)
    client.wait()
    assert started, "the multipart upload never started"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and s3.pending_uploads():
        time.sleep(0.1)
    assert s3.pending_uploads() == []
    assert s3.keys("tenants/acme/cutoff/") == {}


def test_wrong_credentials_and_a_missing_bucket_are_refused_at_creation(gateway, s3, source):
    admin = signed_in(gateway, "admin", ADMIN_PASSWORD)
    reply = admin.post("sources/", source_body(s3, "Wrong key", access_key="AKIANOTAKEY000000000"))
    assert reply.status == 400, reply.body
    assert "does not know the access key AKIANOTAKEY000000000" in reply.body["config"][0], reply.body
    reply = admin.post("sources/", source_body(s3, "Wrong secret", secret_key="not-the-secret"))
    assert reply.status == 400 and "secret key does not belong" in reply.body["config"][0], reply.body
    reply = admin.post("sources/", source_body(s3, "No bucket", bucket="no-such-bucket"))
    assert reply.status == 400 and "no-such-bucket does not exist" in reply.body["config"][0], reply.body
    reply = admin.post("sources/", source_body(s3, "Closed", endpoint=f"http://127.0.0.1:{free_port()}"))
    assert reply.status == 400 and "Cannot connect to" in reply.body["config"][0], reply.body
    reply = admin.post("sources/", source_body(s3, "Metadata", endpoint="http://169.254.169.254"))
    assert reply.status == 400 and "metadata" in reply.body["config"][0], reply.body
    reply = admin.post("sources/", source_body(s3, "Bad URL", endpoint="ftp://x/y?z"))
    assert reply.status == 400 and "config.endpoint" in reply.body["config"][0], reply.body
    reply = admin.post("sources/", source_body(s3, "Escape", prefix="a/../../b"))
    assert reply.status == 400 and "config.prefix" in reply.body["config"][0], reply.body
    names = {s["name"] for s in admin.get("sources/").body["results"]}
    assert not names & {"Wrong key", "Wrong secret", "No bucket", "Closed", "Metadata", "Bad URL", "Escape"}


def test_appending_copies_the_existing_object_in(gateway, s3, source, tmp_path):
    require("curl")
    make_user(gateway, source, "appender")
    large, small, tail = os.urandom(9 * 1024 * 1024 + 3), os.urandom(100_000), os.urandom(1024 * 1024 + 1)
    s3.s3.put_object(Bucket=BUCKET, Key="tenants/acme/appender/large.bin", Body=large)  # more than one part
    s3.s3.put_object(Bucket=BUCKET, Key="tenants/acme/appender/small.bin", Body=small)
    (tmp_path / "tail.bin").write_bytes(tail)
    for name in ("large.bin", "small.bin"):
        url = f"ftp://appender:{PASSWORD}@127.0.0.1:{gateway.ftp_port}/{name}"
        result = subprocess.run(["curl", "-sS", "--ftp-pasv", "--append", "-T", str(tmp_path / "tail.bin"), url],
                                capture_output=True, timeout=60)  # fmt: skip
        assert result.returncode == 0, result.stderr
    assert s3.body("tenants/acme/appender/large.bin") == large + tail
    assert s3.body("tenants/acme/appender/small.bin") == small + tail
    assert s3.pending_uploads() == []


def test_a_certificate_not_trusted_is_refused_unless_verification_is_off(gateway, tmp_path):
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port), "--ssl"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        wait_for_port(port, server)
        import botocore.config

        client = botocore.session.Session().create_client(
            "s3", endpoint_url=f"https://127.0.0.1:{port}", region_name="us-east-1", aws_access_key_id="k",
            aws_secret_access_key="s", verify=False, config=botocore.config.Config(s3={"addressing_style": "path"}),
        )  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # urllib3's InsecureRequestWarning: this client does not verify
            client.create_bucket(Bucket="tls-bucket")
        body = {"endpoint": f"https://127.0.0.1:{port}", "bucket": "tls-bucket", "access_key": "k", "secret_key": "s",
                "path_style": True}  # fmt: skip
        admin = signed_in(gateway, "admin", ADMIN_PASSWORD)
        reply = admin.post("sources/", {"name": "Self-signed", "type": "s3", "config": body})
        assert reply.status == 400, reply.body
        assert "TLS connection" in reply.body["config"][0] and "verify_tls" in reply.body["config"][0], reply.body
        reply = admin.post("sources/", {"name": "Self-signed", "type": "s3", "config": {**body, "verify_tls": False}})
        assert reply.status == 201 and reply.body["config"]["verify_tls"] is False, reply.body
    finally:
        server.terminate()
        server.wait(10)


def test_a_stale_multipart_upload_is_aborted_at_start_up(gateway, s3, source):
    # moto dates every multipart upload in 2010: older than the day after which one counts as a crash's leftover
    s3.s3.create_multipart_upload(Bucket=BUCKET, Key="tenants/acme/crashed/big.bin")
    s3.s3.create_multipart_upload(Bucket=BUCKET, Key="elsewhere/not-ours.bin")  # outside the source's prefix
    assert sorted(s3.pending_uploads()) == ["elsewhere/not-ours.bin", "tenants/acme/crashed/big.bin"]
    gateway.restart()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and len(s3.pending_uploads()) > 1:
        time.sleep(0.1)
    assert s3.pending_uploads() == ["elsewhere/not-ours.bin"]
