"""The daemon as it ships: the .deb installed into a Debian 12 root that boots with systemd
as PID 1 (systemd-nspawn --boot), its units enabled, the ports passed in by its socket
units, so the unit's real confinement holds (the system-call filter, ProtectSystem, the
unprivileged user, no capabilities): not a daemon started by hand. Then SFTP, FTPS and
HTTPS round trips from outside (the container shares this machine's network), and every
setting that changes how the daemon uses the system, under that unit: the pinning of the
reactor (allowed by the unit; refused by a stricter filter, it costs the pinning and not
the service), `appliance check` on a unit that keeps failing, and the VM's console banner,
which says "ready" only when the daemon serves.

The root is the one test_chroot.py installs into (conftest.base_tarball); the socket
units and the daemon get free high ports through drop-ins, as an admin would move them."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from ..helpers import ADMIN_PASSWORD, ROOT, free_port, free_port_range, insecure_tls, wait_for
from .conftest import AS_APPLIANCE, installed_root

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="booting a container needs root"),
    pytest.mark.requires("debootstrap", "systemd-nspawn", "nsenter", "sftp", "sshpass", "curl"),
]

SERVICE = "appliance.service"
CONFIG = "/etc/appliance/appliance.toml"
SSH_OPTIONS = [
    "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=no",
    "-o", "PubkeyAuthentication=no", "-o", "PreferredAuthentications=password", "-o", "ConnectTimeout=20",
]  # fmt: skip
BANNER = ROOT / "packaging" / "vm" / "files" / "appliance-banner"
PINNED = "run on CPU"
NOT_PINNED = "pin_reactor: not pinned"


class Machine:
    """A booted container: `run` a command inside it (its mount, PID, IPC and UTS
    namespaces; the network is this machine's), its ports, and its boot log."""

    def __init__(self, root: Path, ports: dict[str, int], log: Path):
        self.root, self.ports, self.log = root, ports, log
        self.process: subprocess.Popen | None = None
        self.leader: int | None = None

    def boot(self) -> None:
        with self.log.open("wb") as log:  # the child has its own descriptor
            self.process = subprocess.Popen(
                ["systemd-nspawn", "--register=no", "--keep-unit", "--quiet", "--console=read-only",
                 f"--machine=appliance-test-{os.getpid()}", "-D", str(self.root), "--boot"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        wait_for(self._found_leader, timeout=60)
        wait_for(lambda: self.run("systemctl", "is-system-running", check=False).stdout.strip()
                 in ("running", "degraded"), timeout=120)  # fmt: skip

    def _found_leader(self) -> bool:
        """The container's PID 1 (systemd), a descendant of systemd-nspawn."""
        if self.process.poll() is not None:
            raise AssertionError(f"systemd-nspawn ended ({self.process.returncode}): {self.boot_log()}")
        todo = [self.process.pid]
        while todo:
            pid = todo.pop()
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            except OSError:
                continue
            nspid = re.search(r"^NSpid:\s+(.*)$", status, re.M)
            if nspid and nspid.group(1).split()[-1] == "1" and pid != self.process.pid:
                self.leader = pid
                return True
            todo.extend(int(child) for child in children)
        return False

    def run(self, *command: str, check: bool = True, timeout: float = 60, **kwargs) -> subprocess.CompletedProcess:
        result = subprocess.run(
            ["nsenter", "-t", str(self.leader), "-m", "-u", "-i", "-p", "--", *command],
            capture_output=True, text=True, timeout=timeout, **kwargs,
            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "HOME": "/root"},
        )  # fmt: skip
        if check:
            assert result.returncode == 0, f"{command}: {result.stdout[-2000:]}{result.stderr[-2000:]}"
        return result

    def unit(self, *properties: str) -> dict[str, str]:
        shown = self.run("systemctl", "show", SERVICE, "--property=" + ",".join(properties)).stdout
        return dict(line.split("=", 1) for line in shown.splitlines() if "=" in line)

    def journal(self, since: str = "") -> str:
        """The daemon's lines in the journal (since `since`, a systemd time stamp)."""
        extra = ["--since", since] if since else []
        return self.run("journalctl", "-u", SERVICE, "--no-pager", "-o", "cat", *extra).stdout

    def now(self) -> str:
        return self.run("date", "+%Y-%m-%d %H:%M:%S").stdout.strip()

    def wait_serving(self, timeout: float = 180) -> None:
        """appliance.service active (it told systemd READY=1) and /readyz answering."""

        def serving() -> bool:
            if self.run("systemctl", "is-active", SERVICE, check=False).stdout.strip() != "active":
                return False
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.ports['ops']}/readyz", timeout=5) as response:
                    return response.status == 200
            except OSError:
                return False

        try:
            wait_for(serving, timeout=timeout)
        except TimeoutError:
            raise AssertionError(f"{SERVICE} does not serve: {self.unit('ActiveState', 'SubState', 'Result')}\n"
                                 f"{self.journal()[-3000:]}") from None  # fmt: skip

    def restart(self, drop_in: str | None = None) -> str:
        """Restart the daemon, with `drop_in` as /etc/systemd/system/appliance.service.d/test.conf
        (None: without it); the time stamp from which its journal lines are this start's."""
        path = self.root / "etc/systemd/system/appliance.service.d/test.conf"
        if drop_in is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(drop_in)
        self.run("systemctl", "daemon-reload")
        self.run("systemctl", "reset-failed", SERVICE, check=False)
        time.sleep(1.1)  # journalctl --since has whole seconds: nothing of the last start in this one's
        since = self.now()
        # Type=notify: returns once the new process said READY=1, or failed (then not 0)
        self.run("systemctl", "restart", SERVICE, check=False, timeout=180)
        return since

    def environment(self) -> list[str]:
        """The variables the test's drop-in gives the daemon, for a command run beside it."""
        return [f"APPLIANCE_LISTEN_OPS=tcp:{self.ports['ops']}:interface=127.0.0.1"]

    def main_pid(self) -> int:
        """The daemon's process id, as this machine sees it (the container's is another)."""
        inner = self.unit("MainPID")["MainPID"]
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    nspid = re.search(r"^NSpid:\s+(.*)$", (entry / "status").read_text(), re.M).group(1).split()
                except (OSError, AttributeError):
                    continue
                if len(nspid) > 1 and nspid[-1] == inner and self._in_container(int(entry.name)):
                    return int(entry.name)
        raise AssertionError(f"the daemon's process ({inner} in the container) is not found")

    def _in_container(self, pid: int) -> bool:
        return os.readlink(f"/proc/{pid}/ns/pid") == os.readlink(f"/proc/{self.leader}/ns/pid")

    def boot_log(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def power_off(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()  # systemd-nspawn asks the container's systemd to power off
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def machine(deb, tmp_path_factory):
    work = tmp_path_factory.mktemp("shipped")
    installed = installed_root(deb, work / "root")
    root = installed.root
    ports = {name: free_port() for name in ("sftp", "ftp", "http", "https", "ops")}
    low, high = free_port_range(10)
    # as an admin moves the ports: `systemctl edit appliance-sftp.socket` and the rest
    for name in ("sftp", "ftp", "http", "https"):
        drop_in = root / f"etc/systemd/system/appliance-{name}.socket.d/port.conf"
        drop_in.parent.mkdir(parents=True)
        drop_in.write_text(f"[Socket]\nListenStream=\nListenStream={ports[name]}\n")
    # the ops listener and passive ports off the defaults, which another daemon on this
    # machine may hold; nothing else differs from the package's unit and config
    drop_in = root / "etc/systemd/system/appliance.service.d/ports.conf"
    drop_in.parent.mkdir(parents=True)
    drop_in.write_text(
        "[Service]\n"
        f"Environment=APPLIANCE_LISTEN_OPS=tcp:{ports['ops']}:interface=127.0.0.1\n"
        f"Environment=APPLIANCE_FTP_PASSIVE_PORTS={low}-{high}\n"
    )
    installed("env", "APPLIANCE_SECURITY_BCRYPT_ROUNDS=4", *AS_APPLIANCE, "appliance", "setup", "--config",
              "/etc/appliance/appliance.toml", "--org", "Acme", "--username", "admin", "--email",
              "admin@example.com", "--password-stdin", input=ADMIN_PASSWORD + "\n", timeout=120)  # fmt: skip
    installed(
        "systemctl", "enable", SERVICE, *(f"appliance-{name}.socket" for name in ("sftp", "ftp", "http", "https"))
    )
    shutil.copy(BANNER, root / "usr/local/bin/appliance-banner")
    machine = Machine(root, ports, work / "boot.log")
    try:
        machine.boot()
        machine.wait_serving()
        yield machine
    finally:
        machine.power_off()


def sftp_round_trip(machine: Machine, work: Path, name: str) -> None:
    """OpenSSH's sftp signs in with the admin's password, uploads a file and downloads it."""
    sent = work / f"{name}.bin"
    sent.write_bytes(os.urandom(300_000))
    back = work / f"{name}.back"
    script = f"put {sent} /{name}.bin\nget /{name}.bin {back}\n"
    result = subprocess.run(
        ["sshpass", "-e", "sftp", *SSH_OPTIONS, "-b", "-", "-P", str(machine.ports["sftp"]), "admin@127.0.0.1"],
        input=script, capture_output=True, text=True, timeout=120, env=dict(os.environ, SSHPASS=ADMIN_PASSWORD),
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert back.read_bytes() == sent.read_bytes()


def test_the_shipped_unit_serves_sftp_ftps_and_https(machine, tmp_path):
    assert machine.unit("NRestarts")["NRestarts"] == "0"
    started = machine.journal()
    assert "Traceback" not in started and "not permitted" not in started, started[-3000:]
    sftp_round_trip(machine, tmp_path, "by-sftp")

    # FTP with explicit TLS (curl: AUTH TLS, PROT P, passive data from the unit's process)
    sent = tmp_path / "by-ftps.bin"
    sent.write_bytes(os.urandom(200_000))
    url = f"ftp://127.0.0.1:{machine.ports['ftp']}/by-ftps.bin"
    curl = ["curl", "-sS", "--ssl-reqd", "--insecure", "--user", f"admin:{ADMIN_PASSWORD}", "--max-time", "60"]
    subprocess.run([*curl, "-T", str(sent), url], check=True, capture_output=True, timeout=90)
    fetched = subprocess.run([*curl, url], check=True, capture_output=True, timeout=90).stdout
    assert fetched == sent.read_bytes()

    # HTTPS: the console, a sign-in, and the SFTP upload's bytes through the API
    base = f"https://127.0.0.1:{machine.ports['https']}"
    with urllib.request.urlopen(base + "/", context=insecure_tls(), timeout=60) as response:
        assert "<title>" in response.read().decode()
    request = urllib.request.Request(
        base + "/api/portal/token/",
        data=json.dumps({"username": "admin", "password": ADMIN_PASSWORD}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, context=insecure_tls(), timeout=60) as response:
        access = json.load(response)["access"]
    request = urllib.request.Request(
        base + "/api/portal/files/download/?path=/by-sftp.bin", headers={"Authorization": f"Bearer {access}"}
    )
    with urllib.request.urlopen(request, context=insecure_tls(), timeout=60) as response:
        assert response.read() == (tmp_path / "by-sftp.bin").read_bytes()

    # plain HTTP (its own socket unit) sends the browser to HTTPS
    redirected = subprocess.run(
        ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code} %{redirect_url}", f"http://127.0.0.1:{machine.ports['http']}/"],
        capture_output=True, text=True, timeout=60,
    ).stdout  # fmt: skip
    assert redirected.split()[0] in ("301", "308"), redirected
    assert redirected.split()[1].startswith("https://"), redirected


def test_the_daemon_runs_confined_as_the_unit_says(machine):
    """What CI sees here is the unit's own confinement, not a daemon started by hand."""
    pid = machine.main_pid()
    status = Path(f"/proc/{pid}/status").read_text()
    field = dict(re.findall(r"^(\w+):\s+(.*)$", status, re.M))
    assert field["Seccomp"] == "2"  # a system-call filter
    assert field["NoNewPrivs"] == "1"
    assert field["CapEff"] == "0" * 16 and field["CapBnd"] == "0" * 16
    user = machine.run("id", "-u", "appliance").stdout.strip()
    assert field["Uid"].split()[0] == user != "0"
    # ProtectSystem=strict: the daemon sees the whole tree read-only, but its data dir
    options = {}
    for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines():
        fields = line.split()
        options[fields[4]] = fields[5].split(",")
    assert "ro" in options["/"], options
    assert "rw" in options["/var/lib/appliance"], options


def test_the_hosts_command_line_reaches_the_confined_daemon(machine):
    """`appliance bans` on the host talks to the unit's daemon through its control socket
    in the state directory (AF_UNIX, as the unit allows), as root."""
    appliance = "/opt/appliance/venv/bin/appliance"
    listed = machine.run(appliance, "bans", "list", "--config", "/etc/appliance/appliance.toml")
    assert listed.stdout.strip() == "No ban is in force.", listed
    lifted = machine.run(appliance, "bans", "lift", "192.0.2.1", "--config", "/etc/appliance/appliance.toml")
    assert lifted.stdout.strip() == "No ban on 192.0.2.1 was in force.", lifted
    mode = machine.run("stat", "-c", "%a %U", "/var/lib/appliance/control.sock").stdout.split()
    assert mode == ["600", "appliance"], mode


def test_the_shipped_unit_lets_the_daemon_pin_its_reactor(machine):
    """[server] pin_reactor (on by default) under the shipped filter: the reactor's thread
    runs on one CPU, the bulk pool on every one, and the journal says so once."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: the daemon has nothing to pin")
    journal = machine.journal()
    assert journal.count(PINNED) == 1, journal[-3000:]
    assert NOT_PINNED not in journal
    pid = machine.main_pid()
    tasks = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        name = (task / "comm").read_text().strip()
        cpus = re.search(r"^Cpus_allowed_list:\s+(\S+)", (task / "status").read_text(), re.M).group(1)
        tasks.setdefault(name, set()).add(cpus)
    reactor = re.search(r"^Cpus_allowed_list:\s+(\S+)", (Path(f"/proc/{pid}/task/{pid}/status")).read_text(), re.M)
    assert re.fullmatch(r"\d+", reactor.group(1)), tasks  # one CPU
    assert tasks["appliance-db"] == {reactor.group(1)}, tasks


def test_a_stricter_filter_costs_the_pinning_not_the_service(machine, tmp_path):
    """An admin's (or a container's) filter that refuses sched_setaffinity: the daemon
    serves unpinned and says so in one line (it ended at start before)."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: the daemon has nothing to pin")
    since = machine.restart("[Service]\nSystemCallFilter=~sched_setaffinity\n")
    try:
        machine.wait_serving()
        assert machine.unit("NRestarts")["NRestarts"] == "0"
        journal = machine.journal(since)
        assert journal.count(NOT_PINNED) == 1, journal[-3000:]
        assert "Operation not permitted" in journal
        assert PINNED not in journal
        sftp_round_trip(machine, tmp_path, "unpinned")
    finally:
        machine.restart(None)
        machine.wait_serving()


def test_check_and_the_banner_tell_a_failing_unit(machine):
    """A daemon that cannot start: `appliance check` says the unit is failing or
    restarting and where to read why; the VM's banner says it failed, not "ready"."""
    machine.restart("[Service]\nEnvironment=APPLIANCE_LISTEN_SFTP=no-such-endpoint:22\n")
    try:
        wait_for(lambda: int(machine.unit("NRestarts")["NRestarts"]) >= 1 or
                 machine.unit("ActiveState")["ActiveState"] == "failed", timeout=60)  # fmt: skip
        checked = machine.run("env", *machine.environment(), "appliance", "check", "--config", CONFIG, check=False)
        assert checked.returncode == 1, checked.stdout + checked.stderr
        assert re.search(r"problem: appliance\.service (is restarting|has failed)", checked.stderr), checked.stderr
        assert "journalctl -u appliance" in checked.stderr

        banner = machine.run(
            "env", *machine.environment(), "APPLIANCE_BANNER_WAIT=4", "/usr/local/bin/appliance-banner", timeout=90
        )
        assert "appliance FAILED to start" in banner.stdout, banner.stdout
        assert "journalctl -u appliance" in banner.stdout and "Shell (root)" in banner.stdout
        assert "appliance ready" not in banner.stdout
    finally:
        machine.restart(None)
        machine.wait_serving()
    checked = machine.run("env", *machine.environment(), "appliance", "check", "--config", CONFIG, check=False)
    assert "appliance.service" not in checked.stderr, checked.stderr
    banner = machine.run(
        "env", *machine.environment(), "APPLIANCE_BANNER_WAIT=30", "/usr/local/bin/appliance-banner", timeout=90
    )
    assert "===== appliance ready =====" in banner.stdout, banner.stdout
    assert "FAILED" not in banner.stdout
