#!/usr/bin/env python3
"""Upgrade a running appliance VM from an earlier release to this checkout's .deb, as an admin would.

    packaging/vm/upgrade_test.py [--from COMMIT] [--deb dist/appliance_<version>_<arch>.deb]

1. The earlier release is built from its own commit: `git worktree add` of COMMIT under
   build/upgrade/, `make deb` there (with this checkout's venv and node_modules; kept for
   the next run), and a VM image of it made by this checkout's packaging/vm/build.sh.
2. That VM boots in qemu (a throw-away overlay) and is filled through its API and clients:
   a profile with a password and an SSH key (API), a file and a folder it uploads (SFTP,
   signed in with the key), the organisation's branding and terms (API).
3. The new .deb reaches the guest as a read-only second disk; the serial line's console
   menu opens a root shell, which installs it with dpkg -i: the package's postinst
   restarts the running daemon, which backs the database up and migrates it.
4. Then the daemon must run with a new process, the database backup must be there, and
   the admin's password, the profile, its key (an SFTP sign-in with it), the file's bytes
   and the organisation's settings must have survived.
Not part of `make test` (two `make deb` and a VM boot): `make upgrade-test`."""

from __future__ import annotations

import argparse
import hashlib
import http.client
import importlib.util
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent.parent
# The release before migration 7 (web sessions), with the .deb whose postinst restarts the daemon
UPGRADE_FROM = "8bff2f3"

spec = importlib.util.spec_from_file_location("vm_test", HERE / "test.py")
vm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(vm)
Failure = vm.Failure


def run(*command: str, cwd: Path | None = None, timeout: float = 1800) -> str:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise Failure(
            f"{' '.join(command)} failed ({result.returncode}): {result.stdout[-2000:]}{result.stderr[-2000:]}"
        )
    return result.stdout


def old_release(commit: str) -> tuple[str, Path]:
    """The full commit and the .deb `make deb` builds at it, in a worktree under build/upgrade/."""
    full = run("git", "rev-parse", "--verify", f"{commit}^{{commit}}", cwd=CHECKOUT).strip()
    tree = CHECKOUT / "build" / "upgrade" / f"from-{full[:12]}"
    debs = sorted((tree / "dist").glob("appliance_*.deb")) if tree.is_dir() else []
    if debs:
        return full, debs[-1]
    if not tree.is_dir():
        tree.parent.mkdir(parents=True, exist_ok=True)
        # --force: also when this path is still registered but its folder was deleted
        run("git", "worktree", "add", "--force", "--detach", str(tree), full, cwd=CHECKOUT)
    # This checkout's venv and npm packages: -o keeps make from reinstalling into them
    for link, target in ((".venv", CHECKOUT / ".venv"), ("ui/node_modules", CHECKOUT / "ui" / "node_modules")):
        if not (tree / link).exists():
            (tree / link).symlink_to(target.resolve())
    print(f"upgrade-test: make deb at {full[:12]} in {tree} (a few minutes)")
    run("make", "-o", "ui/node_modules/.package-lock.json", "-o", ".venv/.installed", "deb", cwd=tree)
    (deb,) = sorted((tree / "dist").glob("appliance_*.deb"))
    return full, deb


def old_image(commit: str, deb: Path) -> Path:
    image = deb.parent.parent.parent / f"from-{commit[:12]}.qcow2"
    if not image.is_file() or image.stat().st_mtime < deb.stat().st_mtime:
        print(f"upgrade-test: building a VM image with {deb.name} of {commit[:12]}")
        run(str(HERE / "build.sh"), str(deb), str(image))
    return image


class Https:
    """The portal API over the VM's HTTPS port (its self-signed certificate)."""

    def __init__(self, port: int):
        self.port = port
        self.token: str | None = None
        self.context = ssl.create_default_context()
        self.context.check_hostname = False
        self.context.verify_mode = ssl.CERT_NONE

    def call(self, method: str, path: str, body=None) -> tuple[int, object]:
        connection = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=60, context=self.context)
        headers = {"Content-Type": "application/json"} if body is not None else {}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        connection.request(method, "/api/portal/" + path, json.dumps(body) if body is not None else None, headers)
        response = connection.getresponse()
        payload = response.read()
        connection.close()
        return response.status, (json.loads(payload) if payload else None)

    def sign_in(self, username: str, password: str) -> None:
        status, body = self.call("POST", "token/", {"username": username, "password": password})
        if status != 200:
            raise Failure(f"{username} cannot sign in: {status} {body}")
        self.token = body["access"]

    def expect(self, status: int, method: str, path: str, body=None):
        got, reply = self.call(method, path, body)
        if got != status:
            raise Failure(f"{method} {path}: expected {status}, got {got} {reply}")
        return reply


def sftp_with_key(port: int, user: str, key: Path, commands: str, work: Path) -> str:
    batch = work / "batch.txt"
    batch.write_text(commands)
    options = [
        "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "ConnectTimeout=20",
        "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "PasswordAuthentication=no", "-i", str(key),
    ]  # fmt: skip
    result = subprocess.run(
        ["sftp", *options, "-P", str(port), "-b", str(batch), f"{user}@127.0.0.1"],
        capture_output=True, text=True, timeout=120, cwd=work,
    )  # fmt: skip
    if result.returncode != 0:
        raise Failure(f"sftp as {user} with its key failed ({result.returncode}): {result.stderr[-1500:]}")
    return result.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--from", dest="commit", default=UPGRADE_FROM, help=f"the earlier release (default {UPGRADE_FROM})"
    )
    parser.add_argument("--deb", type=Path, help="the new .deb (default: dist/appliance_<version>_<arch>.deb)")
    parser.add_argument("--keep", action="store_true", help="keep the work dir")
    args = parser.parse_args()
    new_deb = args.deb or next(iter(sorted((CHECKOUT / "dist").glob("appliance_*.deb"))), None)
    if not new_deb or not new_deb.is_file():
        print("upgrade-test: no new .deb (make deb)", file=sys.stderr)
        return 1
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="appliance-upgrade-test."))
    vm_process = None
    ok = False
    try:
        commit, deb = old_release(args.commit)
        image = old_image(commit, deb)
        # the new .deb as a raw disk, padded to whole sectors
        disk = work / "new-deb.raw"
        shutil.copyfile(new_deb, disk)
        with disk.open("ab") as f:
            f.write(b"\0" * (-disk.stat().st_size % 512))
        size = new_deb.stat().st_size
        digest = hashlib.sha256(new_deb.read_bytes()).hexdigest()
        ports = {name: vm.free_port() for name in vm.GUEST_PORTS}
        print(f"upgrade-test: booting the release of {commit[:12]} ({deb.name}), console in {work}/console.log")
        extra = ("-drive", f"file={disk},if=virtio,format=raw,readonly=on")
        vm_process = vm.start_vm(image, work, ports, False, "bios", None, extra)
        user, password = vm.wait_for_banner(vm_process, work / "console.log", 1200)
        print(f"upgrade-test: the old release is ready after {time.monotonic() - started:.0f} s; filling it")

        api = Https(ports["https"])
        api.sign_in(user, password)
        key = work / "alice_ed25519"
        run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "alice@upgrade-test", "-f", str(key))
        public = key.with_suffix(".pub").read_text().strip()
        profile = api.expect(201, "POST", "profiles/", {
            "username": "alice", "email": "alice@example.com", "password": "alice-password-1",
            "ssh_keys": [public], "permissions": ["list", "download", "upload", "mkdir"], "protocols": ["sftp", "web"],
        })  # fmt: skip
        org = api.expect(200, "GET", "organisation/")[0]
        settings = {"branding": True, "branding_colour": "#123ABC", "user_terms": "Upgrades keep this."}
        api.expect(200, "PATCH", f"organisation/{org['id']}/", settings)
        payload = work / "kept.bin"
        payload.write_bytes(os.urandom(3 << 20))
        sftp_with_key(ports["ssh"], "alice", key, "mkdir reports\nput kept.bin reports/kept.bin\n", work)
        print("upgrade-test: a profile with a password and a key (API), 3 MiB in reports/ (SFTP), branding (API)")

        serial = vm.Serial(work)
        serial.menu_prompt()
        mark = len(serial.text())
        serial.send("4")  # the menu's root shell
        serial.expect(r"Root shell", mark, 60)
        time.sleep(2)  # bash -l starts
        before = serial.shell("systemctl show -p MainPID --value appliance.service", "PIDBEFORE")
        got = serial.shell(
            f"head -c {size} /dev/vdb > /root/new.deb && sha256sum < /root/new.deb | cut -c1-64", "COPIED"
        )
        if got != digest:
            raise Failure(f"the new .deb arrived damaged in the guest ({got} != {digest})")
        status = serial.shell("dpkg -i /root/new.deb > /root/dpkg.log 2>&1; echo $?", "DPKG", timeout=900)
        if status != "0":
            log = serial.shell("tail -c 600 /root/dpkg.log | tr -d '\\n'", "LOG")
            raise Failure(f"dpkg -i failed ({status}): {log}")
        active = serial.shell("systemctl is-active appliance.service", "ACTIVE", timeout=300)
        after = serial.shell("systemctl show -p MainPID --value appliance.service", "PIDAFTER")
        backups = serial.shell("ls /var/lib/appliance/ | grep '[.]bak$' | tr '\\n' ' '", "BACKUPS")
        print(f"upgrade-test: dpkg -i {new_deb.name}: daemon {active}, process {before} -> {after}, backups: {backups}")
        if active != "active" or after in (before, "0", ""):
            raise Failure(f"the daemon did not restart on the new code: {active}, process {before} -> {after}")
        if not backups.strip():
            raise Failure("no database backup beside appliance.db: the new code did not migrate it")

        api = Https(ports["https"])
        deadline = time.monotonic() + 300
        while True:  # the restarted daemon takes its sockets back
            try:
                api.sign_in(user, password)
                break
            except (Failure, OSError, http.client.HTTPException):
                if time.monotonic() > deadline:
                    raise
                time.sleep(2)
        listing = api.expect(200, "GET", "profiles/?search=alice")
        found = [p for p in listing["results"] if p["username"] == "alice"]
        if not found or found[0]["id"] != profile["id"]:
            raise Failure(f"the profile alice did not survive: {listing}")
        org_after = api.expect(200, "GET", "organisation/")[0]
        changed = {k: (v, org_after.get(k)) for k, v in settings.items() if org_after.get(k) != v}
        if changed:
            raise Failure(f"the organisation's settings changed in the upgrade (was, now): {changed}")
        (work / "back.bin").unlink(missing_ok=True)
        sftp_with_key(ports["ssh"], "alice", key, "get reports/kept.bin back.bin\n", work)
        if (work / "back.bin").read_bytes() != payload.read_bytes():
            raise Failure("reports/kept.bin came back different after the upgrade")
        Https(ports["https"]).sign_in("alice", "alice-password-1")
        print("upgrade-test: after: admin and alice sign in, alice's key signs in over SFTP, her file is intact,")
        print("upgrade-test: the organisation's branding and terms are as they were")
        ok = True
    except (Failure, OSError, subprocess.SubprocessError, http.client.HTTPException, KeyError, ValueError) as e:
        print(f"upgrade-test: FAILED: {e}", file=sys.stderr)
        console = work / "console.log"
        if console.exists():
            print("\n".join(console.read_text(errors="replace").splitlines()[-30:]), file=sys.stderr)
    finally:
        if vm_process is not None:
            vm.power_off(vm_process, work)
        if args.keep or not ok:
            print(f"upgrade-test: work dir kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"upgrade-test: {'passed' if ok else 'failed'} in {time.monotonic() - started:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
