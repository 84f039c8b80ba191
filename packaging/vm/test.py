#!/usr/bin/env python3
"""Check the VM image's formats and boot them in qemu as a customer would; exit non-zero on any failure.

    packaging/vm/test.py [build/vm/appliance.qcow2] [--quick] [--firmware bios|uefi|both]

Beside the qcow2, `make vm-image` wrote appliance.ova and appliance.vhdx. First the OVA's
descriptor is validated against the OVF envelope schema (schema/) and its manifest's SHA256
sums, and qemu-img check reads the qcow2, the OVA's VMDK and the VHDX. Then each is booted,
one at a time: the qcow2 with BIOS (SeaBIOS) on a disk grown to 8 GiB, the qcow2 with UEFI
(Debian's OVMF with Secure Boot enforced), and the VMDK and the VHDX with UEFI. --quick
boots only the qcow2 with each firmware.

The images are left untouched (each VM writes to a throw-away overlay), so every boot is a
first boot: the serial console must show the readiness banner with the first admin's
password and the kernel's word on the firmware (no EFI with BIOS; EFI and "Secure boot
enabled" with UEFI); then OpenSSH's sftp (through sshpass) signs in on the guest's port 22
and uploads and downloads a file, the web console's index.html comes over HTTPS (443) and
plain HTTP (80) redirects to it, and FTPS (21) signs the admin in. On the grown disk, SFTP's df must
show the space in the data folder. The last boot also drives the console menu on the
serial line: a host name and a static address, which its status must then show.
User-mode networking forwards free high ports on 127.0.0.1 to the guest's ports.
Prints the seconds from starting qemu to the banner, then powers each VM off."""

from __future__ import annotations

import argparse
import ftplib
import hashlib
import http.client
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tarfile
import tempfile
import threading
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


FORMATS = {".qcow2": "qcow2", ".vmdk": "vmdk", ".vhdx": "vhdx", ".raw": "raw"}


def image_format(image: Path) -> str:
    return FORMATS[image.suffix]


def kvm_usable() -> bool:
    return os.access("/dev/kvm", os.R_OK | os.W_OK)


def kill(vm: subprocess.Popen) -> None:
    if vm.poll() is None:
        vm.kill()
        vm.wait()


# Debian's ovmf package: the Secure Boot build (SMM, q35) with Microsoft's keys enrolled,
# as vSphere, Hyper-V and most PCs ship them; shim is signed by Microsoft
OVMF_CODE = Path("/usr/share/OVMF/OVMF_CODE_4M.secboot.fd")
OVMF_VARS = Path("/usr/share/OVMF/OVMF_VARS_4M.ms.fd")


def firmware_options(firmware: str, work: Path) -> list[str]:
    if firmware == "bios":
        return ["-machine", "pc"]  # SeaBIOS
    variables = work / "OVMF_VARS.fd"
    shutil.copyfile(OVMF_VARS, variables)
    return [
        "-machine", "q35,smm=on", "-global", "driver=cfi.pflash01,property=secure,value=on",
        "-drive", f"if=pflash,format=raw,unit=0,readonly=on,file={OVMF_CODE}",
        "-drive", f"if=pflash,format=raw,unit=1,file={variables}",
    ]  # fmt: skip


def start_vm(
    image: Path,
    work: Path,
    ports: dict[str, int],
    kvm: bool,
    firmware: str,
    disk_mib: int | None = None,
    extra: tuple[str, ...] = (),
) -> subprocess.Popen:
    overlay = work / "overlay.qcow2"
    overlay.unlink(missing_ok=True)
    (work / "console.log").unlink(missing_ok=True)
    size = [f"{disk_mib}M"] if disk_mib else []
    subprocess.run(
        ["qemu-img", "create", "-q", "-f", "qcow2", "-b", str(image.resolve()), "-F", image_format(image),
         str(overlay), *size],
        check=True,
    )  # fmt: skip
    forwards = ",".join(f"hostfwd=tcp:127.0.0.1:{ports[name]}-:{guest}" for name, guest in GUEST_PORTS.items())
    accel = ["-enable-kvm"] if kvm else ["-accel", "tcg"]
    command = [
        "qemu-system-x86_64", *accel, *firmware_options(firmware, work), "-m", "1024", "-smp", "2", "-no-reboot",
        "-drive", f"file={overlay},if=virtio,format=qcow2",
        "-netdev", f"user,id=net0,{forwards}", "-device", "virtio-net-pci,netdev=net0",
        "-display", "none",
        # the serial line: logged to console.log, and typed into through serial.sock (the console menu)
        "-chardev", f"socket,id=serial0,path={work / 'serial.sock'},server=on,wait=off,logfile={work / 'console.log'}",
        "-serial", "chardev:serial0", *extra,
        "-monitor", f"unix:{work / 'monitor.sock'},server,nowait",
    ]  # fmt: skip
    return subprocess.Popen(command, stdout=open(work / "qemu.log", "wb"), stderr=subprocess.STDOUT)


class KernelSilent(Exception):
    """GRUB ran but the kernel said nothing: this machine's KVM does not run it."""


class QemuExited(Failure):
    """qemu stopped before the appliance was ready (with KVM: a nested KVM without SMM
    refuses the Secure Boot machine at once, 'System Management Mode not supported')."""


def wait_for_banner(vm: subprocess.Popen, console: Path, timeout: float, kernel_within: float | None = None):
    started = time.monotonic()
    deadline = started + timeout
    while time.monotonic() < deadline:
        if vm.poll() is not None:
            raise QemuExited(f"qemu exited with {vm.returncode} before the appliance was ready")
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


def check_ftp(port: int, user: str, password: str) -> str:
    """FTPS on port 21 as a client does: the greeting, AUTH TLS, the first admin's sign-in
    and the working folder (user-mode networking forwards the control port only, so no
    data connection: SFTP and HTTPS carry the bytes in this test)."""
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE  # the appliance's self-signed certificate
    client = ftplib.FTP_TLS(context=insecure, timeout=60)
    try:
        greeting = client.connect("127.0.0.1", port)
        if not greeting.startswith("220"):
            raise Failure(f"FTP port 21: expected a 220 greeting, got {greeting!r}")
        client.auth()
        signed_in = client.login(user, password)
        if not signed_in.startswith("230"):
            raise Failure(f"FTPS on port 21: the sign-in answered {signed_in!r}")
        return client.pwd()
    except ftplib.all_errors as e:
        raise Failure(f"FTPS on port 21: {e}") from None
    finally:
        client.close()


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


def check_firmware(firmware: str, console: str) -> str:
    """What the kernel says of the firmware it was started by."""
    efi = re.search(r"efi: EFI v[\d.]+ by (.*)", console)
    if firmware == "bios":
        if efi:
            raise Failure(f"asked for BIOS, but the kernel says it runs on UEFI ({efi.group(0)})")
        return "BIOS (SeaBIOS)"
    if not efi:
        raise Failure("asked for UEFI, but the kernel names no EFI firmware")
    if "Secure boot enabled" not in console:
        raise Failure(
            "UEFI with Secure Boot on (OVMF, Microsoft keys), but the kernel does not say Secure boot enabled"
        )
    return f"UEFI ({efi.group(1).strip()}) with Secure Boot enforced: shim, GRUB and the kernel verified"


def check_free_space(port: int, user: str, password: str, work: Path, at_least_mib: int) -> int:
    """The free space the admin's folder has, from SFTP's statvfs (OpenSSH's df), in MiB."""
    batch = work / "df.txt"
    batch.write_text("df /\n")
    result = subprocess.run(
        ["sshpass", "-e", "sftp", *SSH_OPTIONS, "-P", str(port), "-b", str(batch), f"{user}@127.0.0.1"],
        env={**os.environ, "SSHPASS": password}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    # "        Size         Used        Avail       (root)    %Capacity" then the numbers in KiB
    numbers = re.search(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\d+%", result.stdout, re.M)
    if result.returncode != 0 or not numbers:
        raise Failure(f"sftp df failed ({result.returncode}): {result.stdout[-1000:]}{result.stderr[-1000:]}")
    free_mib = int(numbers.group(3)) // 1024
    if free_mib < at_least_mib:
        raise Failure(f"the data folder has {free_mib} MiB free on the grown disk; expected at least {at_least_mib}")
    return free_mib


def extract_plainly(tar: tarfile.TarFile, into: Path) -> None:
    """Extract regular files with plain names only (the OVA holds three): what
    `extractall(filter="data")` does, which Debian 12's python3.11 (3.11.2) lacks."""
    for member in tar.getmembers():
        if not member.isfile() or "/" in member.name or member.name in ("", ".", ".."):
            raise Failure(f"{tar.name}: {member.name!r} is not a plain file name")
        source = tar.extractfile(member)
        with source, open(into / member.name, "wb") as target:
            shutil.copyfileobj(source, target, 1 << 20)


def check_formats(qcow2: Path, work: Path) -> list[Path]:
    """The OVA's descriptor against the OVF schema and its manifest, and every disk with
    qemu-img check; returns the disks to boot: the qcow2, the OVA's VMDK, the VHDX."""
    import xmlschema  # the venv's (make python): `make vm-test` runs this with it

    ova, vhdx = qcow2.with_suffix(".ova"), qcow2.with_suffix(".vhdx")
    for path in (ova, vhdx):
        if not path.is_file():
            raise Failure(f"{path}: missing (make vm-image writes it beside {qcow2.name})")
    with tarfile.open(ova) as tar:
        names = tar.getnames()
        if len(names) != 3 or not names[0].endswith(".ovf") or not names[1].endswith(".mf"):
            raise Failure(f"{ova.name}: expected the descriptor, the manifest, then the disk; it holds {names}")
        extract_plainly(tar, work)
    descriptor = work / names[0]
    schema = xmlschema.XMLSchema(str(Path(__file__).with_name("schema") / "ovf-envelope.xsd"))
    try:
        schema.validate(str(descriptor))
    except xmlschema.XMLSchemaValidationError as e:
        raise Failure(f"{descriptor.name} is not a valid OVF envelope: {e.reason} at {e.path}") from None
    for line in (work / names[1]).read_text().splitlines():
        name, digest = re.fullmatch(r"SHA256\((.+)\)= ([0-9a-f]{64})", line).groups()
        if hashlib.sha256((work / name).read_bytes()).hexdigest() != digest:
            raise Failure(f"{ova.name}: {name} does not match its SHA256 in the manifest")
    vmdk = work / names[2]
    print(f"vm-test: {ova.name}: {descriptor.name} valid against the OVF envelope schema, manifest matches")
    for disk in (qcow2, vmdk, vhdx):
        result = subprocess.run(
            ["qemu-img", "check", "-f", image_format(disk), str(disk)], capture_output=True, text=True
        )
        if result.returncode != 0:
            raise Failure(f"qemu-img check {disk.name}: {result.stdout[-500:]}{result.stderr[-500:]}")
        print(
            f"vm-test: qemu-img check {disk.name}: {result.stdout.strip().splitlines()[0] if result.stdout.strip() else 'ok'}"
        )
    return [qcow2, vmdk, vhdx]


class Serial:
    """The guest's serial line: the console menu, then a root shell. What the guest writes is read
    from console.log (qemu's log of the line); the socket is drained so qemu never waits on it."""

    def __init__(self, work: Path):
        self.log = work / "console.log"
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(str(work / "serial.sock"))
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        try:
            while self.sock.recv(65536):
                pass
        except OSError:
            pass

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def send(self, line: str) -> None:
        self.sock.sendall(line.encode() + b"\r")

    def expect(self, pattern: str, after: int, timeout: float) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = re.compile(pattern, re.M).search(self.text(), after)
            if match:
                return match
            time.sleep(0.3)
        raise Failure(f"the serial line never showed {pattern!r}; it ends: {self.text()[-1500:]!r}")

    def menu_prompt(self, timeout: float = 240) -> None:
        """Press Enter until the console menu asks for a choice afresh, then let the line go
        quiet. Enter again every 20 s: a key typed while the menu (re)starts on the line is
        flushed by the line's reset, and under TCG on a loaded machine the boot's own
        messages can still be arriving."""
        deadline = time.monotonic() + timeout
        while True:
            mark = len(self.text())
            self.send("")
            try:
                self.expect(r"Choose 1-6: ", mark, max(1.0, min(20.0, deadline - time.monotonic())))
                break
            except Failure:
                if time.monotonic() >= deadline:
                    raise
        self.quiet(2.0)

    def quiet(self, seconds: float, at_most: float = 30) -> None:
        """Wait until nothing new has arrived on the line for `seconds` (at most `at_most`)."""
        deadline = time.monotonic() + at_most
        size, since = len(self.text()), time.monotonic()
        while time.monotonic() < deadline and time.monotonic() - since < seconds:
            time.sleep(0.2)
            now = len(self.text())
            if now != size:
                size, since = now, time.monotonic()

    def shell(self, command: str, name: str, timeout: float = 120) -> str:
        """Run COMMAND in the root shell; the value it prints after its NAME marker."""
        mark = len(self.text())
        # the marker is split in the typed line, so only the output has it whole
        self.send(f'echo "{name[:2]}""{name[2:]}=$({command})=END"')
        return self.expect(rf"^{name}=(.*?)=END", mark, timeout).group(1)


def check_console_menu(work: Path) -> str:
    """On the serial line's console menu: a host name and a static address (the one qemu's DHCP
    gave, so the forwarded ports still reach it), then the menu's status must show both."""
    serial = Serial(work)
    serial.menu_prompt()
    for typed, answer in [
        ("3", r"Host name \["), ("files-vmtest", r"Saved and applied: host name files-vmtest"),
        ("2", r"Address with prefix length"), ("10.0.2.15/24", r"Gateway"), ("10.0.2.2", r"DNS servers"),
        ("10.0.2.3", r"Saved and applied: 10.0.2.15/24 via 10.0.2.2"),
    ]:  # fmt: skip
        mark = len(serial.text())
        serial.send(typed)
        serial.expect(answer, mark, 60)
    status = serial.expect(r"Host name:\s+(\S+)\s+Network:\s+(static .*?)\s+Web console:\s+(\S+)", mark, 60)
    if (
        status.group(1) != "files-vmtest"
        or "10.0.2.15/24, gateway 10.0.2.2, DNS 10.0.2.3" not in status.group(2)
        or status.group(3) != "https://10.0.2.15/"
    ):
        raise Failure(f"the console menu's status after the changes: {status.group(0)!r}")
    serial.sock.close()
    return f"host name {status.group(1)}, {status.group(2)}, console at {status.group(3)}"


def qemu_said(work: Path) -> str:
    """qemu's last line of output, which says why it stopped."""
    lines = (work / "qemu.log").read_text(errors="replace").strip().splitlines()
    return lines[-1] if lines else "no output"


class Run:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.kvm = args.accel == "kvm" or (args.accel == "auto" and kvm_usable())
        self.results: list[str] = []

    def boot(self, image: Path, firmware: str, grow_mib: int | None = None, menu: bool = False) -> bool:
        """Boot a throw-away overlay of IMAGE, use it, power it off; True when every check passed."""
        label = f"{image.name} ({image_format(image)}) with {firmware.upper()}" + (
            f", disk grown to {grow_mib} MiB" if grow_mib else ""
        )
        work = Path(tempfile.mkdtemp(prefix="appliance-vm-test."))
        ports = {name: free_port() for name in GUEST_PORTS}
        print(f"vm-test: booting {label} ({'KVM' if self.kvm else 'TCG'}), serial console in {work}/console.log")
        timeout = self.args.timeout or (300 if self.kvm else 1200)
        started = time.monotonic()
        vm = start_vm(image, work, ports, self.kvm, firmware, grow_mib)
        ok = False
        try:
            try:
                # KVM inside some sandboxes runs the BIOS and GRUB but not Linux: then TCG
                silent_after = 30 if self.kvm and self.args.accel == "auto" else None
                user, password = wait_for_banner(vm, work / "console.log", timeout, silent_after)
            except (KernelSilent, QemuExited) as e:
                kill(vm)
                if not silent_after:
                    raise Failure(f"{e} ({qemu_said(work)})") from None
                why = "ran GRUB but not the kernel" if isinstance(e, KernelSilent) else f"failed ({qemu_said(work)})"
                print(f"vm-test: KVM {why} here; booting again with TCG")
                self.kvm = False
                started = time.monotonic()
                vm = start_vm(image, work, ports, self.kvm, firmware, grow_mib)
                user, password = wait_for_banner(vm, work / "console.log", self.args.timeout or 1200)
            seconds = time.monotonic() - started
            accel = "KVM" if self.kvm else "TCG"
            print(f"vm-test: ready {seconds:.1f} s after starting qemu ({accel}); first admin {user!r}")
            print(f"vm-test: firmware: {check_firmware(firmware, (work / 'console.log').read_text(errors='replace'))}")
            check_sftp(ports["ssh"], user, password, work)
            print("vm-test: sftp on port 22: signed in, uploaded and downloaded 1 MiB intact")
            check_http(ports["http"], ports["https"])
            print("vm-test: port 80 redirects to HTTPS; port 443 serves the console's index.html")
            folder = check_ftp(ports["ftp"], user, password)
            print(f"vm-test: FTP on port 21: AUTH TLS, {user!r} signed in, working folder {folder}")
            if grow_mib:
                free = check_free_space(ports["ssh"], user, password, work, grow_mib - GROW_SLACK_MIB)
                print(f"vm-test: the root grew into the {grow_mib} MiB disk: the data folder has {free} MiB free")
            if menu:
                print(f"vm-test: console menu on the serial line: {check_console_menu(work)}")
                check_sftp(ports["ssh"], user, password, work)
                print("vm-test: sftp still works on the static address")
            ok = True
            self.results.append(f"passed: {label}, ready in {seconds:.0f} s ({accel})")
        except (Failure, OSError, subprocess.SubprocessError, http.client.HTTPException) as e:
            print(f"vm-test: FAILED ({label}): {e}", file=sys.stderr)
            self.results.append(f"FAILED: {label}: {e}")
            console = work / "console.log"
            if console.exists():
                print("vm-test: last lines of the serial console:", file=sys.stderr)
                print("\n".join(console.read_text(errors="replace").splitlines()[-40:]), file=sys.stderr)
        finally:
            power_off(vm, work)
            if self.args.keep or not ok:
                print(f"vm-test: work dir kept: {work}", file=sys.stderr)
            else:
                shutil.rmtree(work, ignore_errors=True)
        return ok


# The base system, the appliance and the file system's own reserve take at most this much of a grown disk
GROW_SLACK_MIB = 2048
GROW_TO_MIB = 8192


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("image", nargs="?", default="build/vm/appliance.qcow2", type=Path)
    parser.add_argument(
        "--firmware", choices=("bios", "uefi", "both"), default="both", help="boot the image with each (default both)"
    )
    parser.add_argument(
        "--timeout", type=float, help="seconds to wait for the banner (default 300 with KVM, 1200 without)"
    )
    parser.add_argument(
        "--accel",
        choices=("auto", "kvm", "tcg"),
        default="auto",
        help="auto: KVM when /dev/kvm is usable and runs the kernel, else TCG",
    )
    parser.add_argument(
        "--quick", action="store_true", help="only the qcow2, with each firmware: no OVA, VHDX or grown disk"
    )
    parser.add_argument("--keep", action="store_true", help="keep the work dirs (console log, overlay)")
    args = parser.parse_args()
    if not args.image.is_file():
        print(f"vm-test: {args.image}: no image (make vm-image)", file=sys.stderr)
        return 1
    for tool in ("qemu-system-x86_64", "qemu-img", "sftp", "sshpass"):
        if not shutil.which(tool):
            print(f"vm-test: {tool} is missing (make vm-deps)", file=sys.stderr)
            return 1
    if args.firmware != "bios" and not (OVMF_CODE.is_file() and OVMF_VARS.is_file()):
        print(f"vm-test: {OVMF_CODE} is missing (make vm-deps: Debian's ovmf)", file=sys.stderr)
        return 1
    started = time.monotonic()
    run = Run(args)
    firmwares = [firmware for firmware in ("bios", "uefi") if args.firmware in (firmware, "both")]
    if args.quick:
        plan = [(args.image, firmware, None) for firmware in firmwares]
    else:
        disks = Path(tempfile.mkdtemp(prefix="appliance-vm-disks."))
        try:
            qcow2, vmdk, vhdx = check_formats(args.image, disks)
        except (Failure, OSError, subprocess.SubprocessError) as e:
            print(f"vm-test: FAILED: {e}", file=sys.stderr)
            return 1
        # The first boot grows the disk: the root must fill it. Hypervisors that import the OVA
        # or VHDX boot UEFI (ESXi's default, Hyper-V Generation 2).
        plan = [(qcow2, firmwares[0], GROW_TO_MIB), *[(qcow2, f, None) for f in firmwares[1:]]]
        plan += [(vmdk, "uefi", None), (vhdx, "uefi", None)]
    # the last boot also drives the console menu
    ok = all([run.boot(image, fw, grow, menu=i == len(plan) - 1) for i, (image, fw, grow) in enumerate(plan)])
    if not args.quick:
        shutil.rmtree(disks, ignore_errors=True)
    print("vm-test: " + "\nvm-test: ".join(run.results))
    print(f"vm-test: {'passed' if ok else 'failed'} in {time.monotonic() - started:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
