"""`bench/run --only sources`: the product's SFTP upload and download of one file
through each type of source: its local folder, a remote SFTP server (an OpenSSH
sshd started here on loopback, internal-sftp, signing the product in by key) and
S3 (moto's server, a stand-in for S3, started here on loopback), each with its
MB/s and its ratio to the local source. The same client (OpenSSH sftp, by
password) and the same product daemon for all three; the order of the three
rotates each repeat, the median is reported."""

from __future__ import annotations

import contextlib
import http.client
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import concurrency
from clients import DOWNLOAD, UPLOAD, Endpoint, Login, TransferFailed, sftp_transfer
from product import USERNAME, Product
from support import (
    LOOPBACK,
    MIB,
    REPO_ROOT,
    BenchError,
    Child,
    Ports,
    Workspace,
    format_size,
    one_run_at_a_time,
    sha256_file,
    write_random_file,
)

SSHD = "/usr/sbin/sshd"
PYTHON = REPO_ROOT / ".venv" / "bin" / "python"  # moto is installed there (make build)
BACKENDS = ("local", "sftp", "s3")
BUCKET = "bench-sources"
PASSWORD = "bench-sources-password-1"
MB = 1_000_000
TIMEOUT = 1800  # seconds for one transfer: moto is slow


class LoopbackProduct(Product):
    """The product with [sources] allow_loopback on: its remote sources are on 127.0.0.1."""

    def _environment(self) -> dict:
        return {**super()._environment(), "APPLIANCE_SOURCES_ALLOW_LOOPBACK": "true"}


def start_sshd(workspace: Workspace, ports: Ports) -> tuple[Child, dict]:
    """An sshd serving internal-sftp to this user by key; returns it and the source's config."""
    folder = workspace.folder("src-sshd")
    files = workspace.folder("src-sshd-files", 0o755)
    for name in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / name)], check=True)
    (folder / "authorized_keys").write_text((folder / "client_key.pub").read_text())
    port = ports.one()
    config = folder / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress {LOOPBACK}\nHostKey {folder / 'host_key'}\nPidFile {folder / 'sshd.pid'}\n"
        f"UsePAM no\nPermitRootLogin yes\nStrictModes no\nAuthorizedKeysFile {folder / 'authorized_keys'}\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nX11Forwarding no\nPrintMotd no\n"
        "Subsystem sftp internal-sftp\n"
    )
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    child = Child("sshd (remote source)", [SSHD, "-D", "-e", "-f", str(config)], folder / "sshd.log")
    child.wait_for_ports([port])
    user = subprocess.run(["id", "-un"], capture_output=True, text=True, check=True).stdout.strip()
    source = {"host": LOOPBACK, "port": port, "username": user,
              "private_key": (folder / "client_key").read_text(), "path": str(files)}  # fmt: skip
    return child, source


def start_moto(workspace: Workspace, ports: Ports) -> tuple[Child, dict]:
    """moto's S3 server (keys not checked) with one bucket; returns it and the source's config."""
    folder = workspace.folder("src-moto")
    port = ports.one()
    argv = [str(PYTHON), "-m", "moto.server", "-H", LOOPBACK, "-p", str(port)]
    child = Child("moto.server (S3 stand-in)", argv, folder / "moto.log")
    child.wait_for_ports([port])
    conn = http.client.HTTPConnection(LOOPBACK, port, timeout=30)
    conn.request("PUT", f"/{BUCKET}")
    status = conn.getresponse().status
    conn.close()
    if status != 200:
        raise BenchError(f"moto did not create the bucket: HTTP {status}")
    source = {"endpoint": f"http://{LOOPBACK}:{port}", "region": "us-east-1", "bucket": BUCKET,
              "prefix": "bench", "access_key": "bench", "secret_key": "bench", "path_style": True}  # fmt: skip
    return child, source


@dataclass
class Figures:
    backend: str
    upload: list[float] = field(default_factory=list)  # MB/s per repeat
    download: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def median(self, direction: str) -> float | None:
        values = getattr(self, direction)
        return statistics.median(values) if values else None


def run(args, workspace: Workspace, servers) -> list[Figures]:
    """Start the product and the two remote stores, make a source and a user on each, time the transfers."""
    ports = Ports()
    product = servers.enter_context(LoopbackProduct(workspace, ports, args.appliance))
    endpoints = product.start()
    api = concurrency.Api(product.http_port, USERNAME, product.password)
    configs: dict[str, dict | None] = {"local": None}
    for backend, start in (("sftp", start_sshd), ("s3", start_moto)):
        try:
            child, configs[backend] = start(workspace, ports)
        except (BenchError, OSError, subprocess.CalledProcessError) as e:
            print(f"!! {backend}: could not start its server: {e}", file=sys.stderr)
            continue
        servers.callback(child.stop)
    logins: dict[str, Login] = {}
    for backend, config in configs.items():
        body = {"username": f"src{backend}", "email": f"src{backend}@example.com", "password": PASSWORD,
                "protocols": ["sftp"],
                "permissions": ["list", "download", "upload", "overwrite", "delete", "rename", "mkdir"]}  # fmt: skip
        if config is not None:  # local: the organisation's own folder, its default source
            status, made = api.call("POST", "sources/", {"name": f"bench {backend}", "type": backend, "config": config})
            if status != 201:
                raise BenchError(f"the {backend} source was refused: {status} {made}")
            body["source"] = made["id"]
        status, made = api.call("POST", "profiles/", body)
        if status != 201:
            raise BenchError(f"the {backend} user was refused: {status} {made}")
        logins[backend] = Login(endpoints["sftp"].login.port, body["username"], PASSWORD)
        print(f"source {backend:5} ready, user {body['username']}")

    scratch = workspace.folder("src-client")
    test_file = workspace.path / "sources-test.bin"
    size = max(args.sizes)
    print(f"creating {format_size(size)} of random data ...", flush=True)
    digest = write_random_file(test_file, size)
    figures = {backend: Figures(backend) for backend in logins}
    order = list(logins)
    for repeat in range(args.repeat):
        for backend in order[repeat % len(order) :] + order[: repeat % len(order)]:
            endpoint = Endpoint("product", "sftp", endpoints["sftp"].software, logins[backend], lambda name: None)
            back = scratch / "back.bin"
            try:
                up = sftp_transfer(endpoint, UPLOAD, test_file, "bench.bin", scratch, TIMEOUT)
                figures[backend].upload.append(size / up.seconds / MB)
                down = sftp_transfer(endpoint, DOWNLOAD, back, "bench.bin", scratch, TIMEOUT)
                if sha256_file(back) != digest:
                    raise TransferFailed("the downloaded file differs from the uploaded one")
                figures[backend].download.append(size / down.seconds / MB)
                print(f"  {backend:5} repeat {repeat + 1}: upload {figures[backend].upload[-1]:7.1f} MB/s "
                      f"({up.seconds:.2f} s, session {up.session_seconds:.2f} s), download "
                      f"{figures[backend].download[-1]:7.1f} MB/s ({down.seconds:.2f} s, session "
                      f"{down.session_seconds:.2f} s)", flush=True)  # fmt: skip
            except BenchError as e:
                figures[backend].errors.append(str(e))
                print(f"!! {backend} repeat {repeat + 1}: {e}", file=sys.stderr, flush=True)
            finally:
                back.unlink(missing_ok=True)
    return [figures[backend] for backend in BACKENDS if backend in figures]


def print_table(rows: list[Figures], size: int) -> None:
    local = next((row for row in rows if row.backend == "local"), None)
    print(f"\nSFTP through each source, {format_size(size)}, median MB/s (ratio to the local source)")
    print(f"{'source':8} {'upload':>18} {'download':>18}")
    for row in rows:
        cells = []
        for direction in (UPLOAD, DOWNLOAD):
            value, base = row.median(direction), local.median(direction) if local else None
            if value is None:
                cells.append(f"{'failed':>18}")
            else:
                ratio = f"({value / base:.2f})" if base else ""
                cells.append(f"{value:9.1f} {ratio:>8}")
        print(f"{row.backend:8} {cells[0]:>18} {cells[1]:>18}")


def main(args) -> int:
    needed = 4 * max(args.sizes) + 64 * MIB  # the file, its copy in each store, a download
    with (
        one_run_at_a_time(),
        Workspace(needed, keep=args.keep_workdir) as workspace,
        contextlib.ExitStack() as servers,
    ):
        print(f"workspace: {workspace.path}{' (tmpfs)' if workspace.on_tmpfs else ''}")
        rows = run(args, workspace, servers)
    print_table(rows, max(args.sizes))
    return 1 if any(row.errors for row in rows) else 0
