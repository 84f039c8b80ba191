"""The servers sources are tested against, one per test module: a real OpenSSH sshd
as a remote SFTP host, and moto's server as a stand-in for an S3 service."""

from __future__ import annotations

import os
import shutil

import pytest

from .sources import SSHD, RemoteServer, S3Server


@pytest.fixture(scope="module")
def remote(tmp_path_factory):
    if not os.path.exists(SSHD):
        pytest.skip("openssh-server is not installed (make system-deps)")
    if shutil.which("sftp") is None:
        pytest.skip("openssh-client is not installed")
    server = RemoteServer(tmp_path_factory.mktemp("sshd"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    pytest.importorskip("botocore.session", reason="botocore is not installed")
    pytest.importorskip("moto.server", reason="moto is not installed (make build)")
    server = S3Server(tmp_path_factory.mktemp("s3"))
    server.start()
    yield server
    server.stop()
