"""The remote stores sources are tested against, shared by the source tests:
an OpenSSH sshd (a remote SFTP server) and moto's server (a stand-in for S3),
each started on 127.0.0.1 with its own folder."""

from __future__ import annotations

import json
import os
import pwd
import signal
import subprocess
import sys
from pathlib import Path

from ..helpers import free_port, wait_for_port

SSHD = "/usr/sbin/sshd"
BUCKET = "appliance-files"
SETUP_ACTIONS = 4  # create_user, put_user_policy, create_access_key, create_bucket: then every call is signed-checked


class RemoteServer:
    """`sshd -D -e -f CONFIG` serving internal-sftp to the current user by key."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.files = folder / "remote-files"
        self.files.mkdir(parents=True)
        self.port = free_port()
        self.user = pwd.getpwuid(os.geteuid()).pw_name
        self.host_key = folder / "ssh_host_ed25519_key"
        self.client_key = folder / "client_key"
        self.process: subprocess.Popen | None = None
        self.keygen(self.client_key)
        self.keygen(self.host_key)
        (folder / "authorized_keys").write_text((folder / "client_key.pub").read_text())

    @staticmethod
    def keygen(path: Path) -> None:
        for old in (path, path.with_suffix(".pub")):
            old.unlink(missing_ok=True)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test", "-f", str(path)], check=True)

    def fingerprint(self) -> str:
        out = subprocess.run(["ssh-keygen", "-lf", f"{self.host_key}.pub"], capture_output=True, text=True, check=True)
        return out.stdout.split()[1]

    def start(self) -> None:
        config = self.folder / "sshd_config"
        config.write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {self.host_key}\n"
            f"PidFile {self.folder / 'sshd.pid'}\nUsePAM no\nPermitRootLogin yes\nStrictModes no\n"
            f"AuthorizedKeysFile {self.folder / 'authorized_keys'}\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nX11Forwarding no\nPrintMotd no\nMaxStartups 100\n"
            "Subsystem sftp internal-sftp\n"
        )
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        with open(self.folder / "sshd.log", "ab") as log:  # sshd writes to its own copy
            self.process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdout=log, stderr=subprocess.STDOUT)
        wait_for_port(self.port, self.process)

    def children(self) -> list[int]:
        """The sessions this sshd forked (they outlive the listener)."""
        found = []
        for entry in Path("/proc").iterdir():
            try:
                if (
                    entry.name.isdigit()
                    and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == self.process.pid
                ):
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
        return found

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            for child in self.children():  # drop the connections too: the appliance must reconnect
                try:
                    os.kill(child, signal.SIGTERM)
                except ProcessLookupError:
                    pass
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(10)
        self.process = None


class S3Server:
    """`python -m moto.server` on a free port, its IAM checking keys after the setup calls."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None
        self.access_key = self.secret_key = ""
        self.command = [sys.executable, "-m", "moto.server"]  # or a stand-in built on it
        self.env: dict[str, str] = {}

    def client(self, service: str, access_key: str = "setup", secret_key: str = "setup"):
        import botocore.config
        import botocore.session

        return botocore.session.Session().create_client(
            service,
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id=access_key,
            aws_secret_access_key=secret_key,
            config=botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
        )

    def start(self) -> None:
        env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT=str(SETUP_ACTIONS), **self.env)
        with open(self.folder / "moto.log", "ab") as log:  # moto writes to its own copy
            self.process = subprocess.Popen(
                [*self.command, "-H", "127.0.0.1", "-p", str(self.port)],
                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        wait_for_port(self.port, self.process)
        iam = self.client("iam")
        iam.create_user(UserName="appliance")
        policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
        iam.put_user_policy(UserName="appliance", PolicyName="all", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName="appliance")["AccessKey"]
        self.access_key, self.secret_key = key["AccessKeyId"], key["SecretAccessKey"]
        self.s3 = self.client("s3", self.access_key, self.secret_key)
        self.s3.create_bucket(Bucket=BUCKET)

    def keys(self, prefix: str = "") -> dict[str, int]:
        found = {}
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
            found.update({item["Key"]: item["Size"] for item in page.get("Contents", [])})
        return found

    def body(self, key: str) -> bytes:
        return self.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()

    def pending_uploads(self) -> list[str]:
        return [u["Key"] for u in self.s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads", [])]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(10)
        self.process = None


def web_identity_s3(folder: Path, provider) -> S3Server:
    """moto's server (a stand-in) letting AssumeRoleWithWebIdentity through for the
    stand-in provider's id_tokens, started, with a role `files` that the provider's
    users may assume and that may do anything in S3 (`server.role_arn`)."""
    from .oauth_standin import CLIENT_ID

    server = S3Server(folder)
    server.folder.mkdir(parents=True, exist_ok=True)
    server.command = [sys.executable, str(Path(__file__).with_name("moto_web_identity.py"))]
    server.env = {"STANDIN_JWT_KEY": provider.jwt_key, "STANDIN_CLIENT_ID": CLIENT_ID}
    server.start()
    iam = server.client("iam", server.access_key, server.secret_key)
    trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Federated": provider.url},
                                                     "Action": "sts:AssumeRoleWithWebIdentity"}]}  # fmt: skip
    server.role_arn = iam.create_role(RoleName="files", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
    iam.put_role_policy(RoleName="files", PolicyName="files", PolicyDocument=json.dumps(policy))
    return server
