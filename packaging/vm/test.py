#!/usr/bin/env python3
"""Boot the VM image in qemu and use it as a customer would; exit non-zero on any failure.

    packaging/vm/test.py [build/vm/appliance.qcow2]

The image is left untouched (the VM writes to a throw-away overlay), so every run
is a first boot: the serial console must show the readiness banner with the
first admin's password, then OpenSSH's sftp (through sshpass) signs in on the
guest's port 22 and uploads and downloads a file, the web console's index.html
comes over HTTPS (443) and plain HTTP (80) redirects to it, and FTP (21) greets.
User-mode networking forwards free high ports on 127.0.0.1 to those guest ports.
Prints the seconds from starting qemu to the banner, then powers the VM off."""

from __future__ import annotations

import argparse
import http.client
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

READY = "===== appliance ready ====="
PASSWORD = re.compile(r"Sign in as:\s+(\S+), password (\S+) \(made at first boot")
GUEST_PORTS = {"ssh": 22, "ftp": 21, "http": 80, "https": 443}
SSH_OPTIONS = [
    "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "ConnectTimeout=20",
    "-o", "BatchMode=no", "-o", "PubkeyAuthentication=no", "-o", "PreferredAuthentications=password",
]  # fmt: skip


class Failure(Exception):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kvm_usable() -> bool:
    return os.access("/dev/kvm", os.R_OK | os.W_OK)


def kill(vm: subprocess.Popen) -> None:
    if vm.poll() is None:
        vm.kill()
        vm.wait()


def start_vm(image: Path, work: Path, ports: dict[str, int], kvm: bool) -> subprocess.Popen:
    overlay = work / "overlay.qcow2"
    subprocess.run(
        ["qemu-img", "create", "-q", "-f", "qcow2", "-b", str(image.resolve()), "-F", "qcow2", str(overlay)],
        check=True,
    )
    forwards = ",".join(f"hostfwd=tcp:127.0.0.1:{ports[name]}-:{guest}" for name, guest in GUEST_PORTS.items())
    accel = ["-enable-kvm"] if kvm else ["-accel", "tcg"]
    command = [
        "qemu-system-x86_64", *accel, "-m", "1024", "-smp", "2", "-no-reboot",
        "-drive", f"file={overlay},if=virtio,format=qcow2",
        "-netdev", f"user,id=net0,{forwards}", "-device", "virtio-net-pci,netdev=net0",
        "-display", "none", "-serial", f"file:{work / 'console.log'}",
        "-monitor", f"unix:{work / 'monitor.sock'},server,nowait",
    ]  # fmt: skip
    return subprocess.Popen(command, stdout=open(work / "qemu.log", "wb"), stderr=subprocess.STDOUT)


class KernelSilent(Exception):
    """GRUB ran but the kernel said nothing: this machine's KVM does not run it."""


def wait_for_banner(vm: subprocess.Popen, console: Path, timeout: float, kernel_within: float | None = None):
    started = time.monotonic()
    deadline = started + timeout
    while time.monotonic() < deadline:
        if vm.poll() is not None:
            raise Failure(f"qemu exited with {vm.returncode} before the appliance was ready")
        text = console.read_text(errors="replace") if console.exists() else ""
        if kernel_within and time.monotonic() - started > kernel_within and "Linux version" not in text:
            raise KernelSilent()
        if "Kernel panic" in text:
            raise Failure("the guest kernel panicked")
        if READY in text:
            match = PASSWORD.search(text[text.index(READY) :])
            if match:
                return match.group(1), match.group(2)
        time.sleep(0.2)
    raise Failure(f"no readiness banner on the serial console within {timeout:.0f} s")


def check_sftp(port: int, user: str, password: str, work: Path) -> None:
    upload = work / "upload.bin"
    upload.write_bytes(os.urandom(1 << 20))
    batch = work / "batch.txt"
    batch.write_text(f"put {upload} /vm-test.bin\nget /vm-test.bin {work / 'download.bin'}\nls -l /vm-test.bin\n")
    result = subprocess.run(
        ["sshpass", "-e", "sftp", *SSH_OPTIONS, "-P", str(port), "-b", str(batch), f"{user}@127.0.0.1"],
        env={**os.environ, "SSHPASS": password}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if result.returncode != 0:
        raise Failure(f"sftp failed ({result.returncode}): {result.stdout[-1000:]}{result.stderr[-1000:]}")
    if (work / "download.bin").read_bytes() != upload.read_bytes():
        raise Failure("sftp: the downloaded file differs from the uploaded one")


def check_http(http_port: int, https_port: int) -> None:
    plain = http.client.HTTPConnection("127.0.0.1", http_port, timeout=30)
    plain.request("GET", "/", headers={"Host": "appliance.test"})
    response = plain.getresponse()
    location = response.getheader("Location") or ""
    if response.status not in (301, 302, 307, 308) or not location.startswith("https://"):
        raise Failure(f"HTTP port 80: expected a redirect to HTTPS, got {response.status} {location!r}")
    plain.close()
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE  # the appliance's own self-signed certificate
    tls = http.client.HTTPSConnection("127.0.0.1", https_port, timeout=30, context=insecure)
    tls.request("GET", "/")
    response = tls.getresponse()
    body = response.read().decode(errors="replace")
    if response.status != 200 or "<title>" not in body or not re.search(r"<div id=[\"']?root", body):
        raise Failure(f"HTTPS port 443: expected the console's index.html, got {response.status}: {body[:300]!r}")
    tls.close()


def check_ftp(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        greeting = s.recv(1024).decode(errors="replace")
    if not greeting.startswith("220"):
        raise Failure(f"FTP port 21: expected a 220 greeting, got {greeting!r}")


def power_off(vm: subprocess.Popen, work: Path) -> None:
    if vm.poll() is not None:
        return
    try:
        with socket.socket(socket.AF_UNIX) as monitor:
            monitor.connect(str(work / "monitor.sock"))
            monitor.sendall(b"system_powerdown\n")
            vm.wait(90)
            return
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"vm-test: no clean power-off ({e}); killing qemu", file=sys.stderr)
    kill(vm)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("image", nargs="?", default="build/vm/appliance.qcow2", type=Path)
    parser.add_argument(
        "--timeout", type=float, help="seconds to wait for the banner (default 300 with KVM, 1200 without)"
    )
    parser.add_argument(
        "--accel",
        choices=("auto", "kvm", "tcg"),
        default="auto",
        help="auto: KVM when /dev/kvm is usable and runs the kernel, else TCG",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work dir (console log, overlay)")
    args = parser.parse_args()
    if not args.image.is_file():
        print(f"vm-test: {args.image}: no image (make vm-image)", file=sys.stderr)
        return 1
    for tool in ("qemu-system-x86_64", "qemu-img", "sftp", "sshpass"):
        if not shutil.which(tool):
            print(f"vm-test: {tool} is missing (make vm-deps)", file=sys.stderr)
            return 1
    kvm = args.accel == "kvm" or (args.accel == "auto" and kvm_usable())
    work = Path(tempfile.mkdtemp(prefix="appliance-vm-test."))
    ports = {name: free_port() for name in GUEST_PORTS}
    print(f"vm-test: booting {args.image} ({'KVM' if kvm else 'TCG'}), serial console in {work}/console.log")
    started = time.monotonic()
    vm = start_vm(args.image, work, ports, kvm)
    ok = False
    try:
        try:
            # KVM inside some sandboxes runs the BIOS and GRUB but not Linux: then TCG
            silent_after = 30 if kvm and args.accel == "auto" else None
            user, password = wait_for_banner(vm, work / "console.log", args.timeout or 300, silent_after)
        except KernelSilent:
            kill(vm)
            print("vm-test: KVM ran GRUB but not the kernel here; booting again with TCG")
            kvm = False
            (work / "overlay.qcow2").unlink()
            (work / "console.log").unlink()
            started = time.monotonic()
            vm = start_vm(args.image, work, ports, kvm)
            user, password = wait_for_banner(vm, work / "console.log", args.timeout or 1200)
        boot_seconds = time.monotonic() - started
        print(
            f"vm-test: ready {boot_seconds:.1f} s after starting qemu ({'KVM' if kvm else 'TCG'}); first admin {user!r}"
        )
        check_sftp(ports["ssh"], user, password, work)
        print("vm-test: sftp on port 22: signed in, uploaded and downloaded 1 MiB intact")
        check_http(ports["http"], ports["https"])
        print("vm-test: port 80 redirects to HTTPS; port 443 serves the console's index.html")
        check_ftp(ports["ftp"])
        print("vm-test: FTP on port 21 greets")
        ok = True
    except (Failure, OSError, subprocess.SubprocessError, http.client.HTTPException) as e:
        print(f"vm-test: FAILED: {e}", file=sys.stderr)
        console = work / "console.log"
        if console.exists():
            print("vm-test: last lines of the serial console:", file=sys.stderr)
            print("\n".join(console.read_text(errors="replace").splitlines()[-40:]), file=sys.stderr)
    finally:
        power_off(vm, work)
        if args.keep or not ok:
            print(f"vm-test: work dir kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(
        f"vm-test: passed, boot-to-ready {boot_seconds:.1f} s with {'KVM' if kvm else 'TCG'}"
        if ok
        else "vm-test: failed"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
