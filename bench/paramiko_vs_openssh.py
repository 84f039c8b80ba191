"""`bench/run --only paramiko`: paramiko's SFTPClient.put() and get() (what pysftp,
Fabric, Ansible's paramiko mode and Airflow's SFTP hook call) against OpenSSH's
`sftp`, each with its defaults, both moving the same file to and from the product
(issue 22's target: paramiko >= 0.8 x sftp) and, for scale, to and from OpenSSH's
sshd (internal-sftp). Per repeat and server the two clients take turns (the order
alternates), each uploading then downloading the file; every upload is checked
against the SHA-256 on the server's disk, every download against the file's. The
table has the median MB/s of each and the ratio paramiko / sftp per server.

paramiko runs in the project's venv (a test extra); this file is also its client:
`.venv/bin/python bench/paramiko_vs_openssh.py put|get PORT USER LOCAL REMOTE`
(the password in $SSHPASS, or a key file in $PARAMIKO_KEY) prints the transfer's
seconds as JSON, timed from the open of the remote file to its close, as sftp's
batch echoes time it."""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import time

from clients import DOWNLOAD, UPLOAD, Endpoint, TransferFailed, sftp_transfer
from product import Product
from refservers import OpenSshServer
from support import MIB, REPO_ROOT, BenchError, Ports, Workspace, one_run_at_a_time, sha256_file, write_random_file

MB = 1_000_000
CLIENTS = ("sftp", "paramiko")
PYTHON = str(REPO_ROOT / ".venv" / "bin" / "python")


def client(direction: str, port: str, user: str, local: str, remote: str) -> None:
    import paramiko

    transport = paramiko.Transport(("127.0.0.1", int(port)))
    if "PARAMIKO_KEY" in os.environ:
        transport.connect(username=user, pkey=paramiko.Ed25519Key.from_private_key_file(os.environ["PARAMIKO_KEY"]))
    else:
        transport.connect(username=user, password=os.environ["SSHPASS"])
    sftp = paramiko.SFTPClient.from_transport(transport)
    sftp.get_channel().settimeout(120)  # a reply that never comes fails the run instead of hanging it
    started = time.monotonic()
    if direction == "put":
        sftp.put(local, remote)
    else:
        sftp.get(remote, local)
    print(json.dumps({"seconds": time.monotonic() - started, "cipher": transport.remote_cipher}))
    transport.close()


def transfer(name: str, endpoint: Endpoint, direction: str, local, scratch, timeout: float) -> float:
    if name == "sftp":
        return sftp_transfer(endpoint, direction, local, "bench.bin", scratch, timeout).seconds
    login = endpoint.login
    argv = [
        PYTHON,
        "-B",
        __file__,
        "put" if direction == UPLOAD else "get",
        str(login.port),
        login.username,
        str(local),
    ]
    secret = {"PARAMIKO_KEY": str(login.key_file)} if login.key_file else {"SSHPASS": login.password}
    run = subprocess.run([*argv, "bench.bin"], env={**os.environ, **secret}, capture_output=True, text=True,
                         timeout=timeout)  # fmt: skip
    if run.returncode != 0:
        raise TransferFailed(f"paramiko exited with {run.returncode}\n{run.stderr[-2000:]}")
    return json.loads(run.stdout.splitlines()[-1])["seconds"]


def main(args) -> int:
    size, failures = max(args.sizes), 0
    timeout = max(120, size / (2 * MB))  # a floor of 2 MB/s: slower is a hang
    figures: dict[tuple, list[float]] = {}
    with (
        one_run_at_a_time(),
        Workspace(5 * size + 64 * MIB, keep=args.keep_workdir) as workspace,
        contextlib.ExitStack() as servers,
    ):
        ports = Ports()
        endpoints = {"product": servers.enter_context(Product(workspace, ports, args.appliance)).start()["sftp"]}
        endpoints["OpenSSH"] = servers.enter_context(OpenSshServer(workspace, ports)).start()
        scratch = workspace.folder("paramiko")
        source, back = workspace.path / "paramiko-test.bin", scratch / "back.bin"
        digest = write_random_file(source, size)
        for repeat in range(args.repeat):
            for server, endpoint in endpoints.items():
                for name in CLIENTS if repeat % 2 == 0 else CLIENTS[::-1]:
                    try:
                        up = transfer(name, endpoint, UPLOAD, source, scratch, timeout)
                        if sha256_file(endpoint.stored_path("bench.bin")) != digest:
                            raise TransferFailed("the uploaded file differs on the server's disk")
                        down = transfer(name, endpoint, DOWNLOAD, back, scratch, timeout)
                        if sha256_file(back) != digest:
                            raise TransferFailed("the downloaded file differs")
                    except (BenchError, subprocess.SubprocessError, OSError, ValueError) as e:
                        failures += 1
                        print(f"!! {name} to {server}, repeat {repeat + 1}: {e}", file=sys.stderr, flush=True)
                        continue
                    finally:
                        back.unlink(missing_ok=True)
                    figures.setdefault((server, name, UPLOAD), []).append(size / up / MB)
                    figures.setdefault((server, name, DOWNLOAD), []).append(size / down / MB)
                    print(f"  {name:8} to {server:7} repeat {repeat + 1}: upload {size / up / MB:7.1f} MB/s, "
                          f"download {size / down / MB:7.1f} MB/s", flush=True)  # fmt: skip
    print(f"\nparamiko against OpenSSH's sftp, {size // MIB} MiB, median MB/s (target: product ratio >= 0.8)")
    for server in ("product", "OpenSSH"):
        for direction in (UPLOAD, DOWNLOAD):
            ours, theirs = (statistics.median(figures.get((server, c, direction)) or [0]) for c in CLIENTS[::-1])
            ratio = f"{ours / theirs:.2f}" if theirs else "-"
            print(f"{server:8} {direction:9} paramiko {ours:7.1f}  sftp {theirs:7.1f}  ratio {ratio}")
    return 1 if failures else 0


if __name__ == "__main__":
    client(*sys.argv[1:])
