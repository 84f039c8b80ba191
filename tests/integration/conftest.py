"""The servers sources are tested against, one per test module: a real OpenSSH sshd
as a remote SFTP host, and moto's server as a stand-in for an S3 service."""

from __future__ import annotations

import pytest

from ..helpers import require, require_module
from .sources import SSHD, RemoteServer, S3Server


@pytest.fixture(scope="module")
def remote(tmp_path_factory):
    require(SSHD, "sftp")
    server = RemoteServer(tmp_path_factory.mktemp("sshd"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    require_module("botocore.session")
    require_module("moto.server")
    server = S3Server(tmp_path_factory.mktemp("s3"))
    server.start()
    yield server
    server.stop()
