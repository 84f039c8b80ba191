"""systemd integration without a dependency: sd_notify over $NOTIFY_SOCKET
(READY=1 when every listener is up, STOPPING=1 on shutdown, WATCHDOG=1 pings)."""

from __future__ import annotations

import os
import socket

from twisted.internet import task


def notify(state: str, environ=os.environ) -> bool:
    """Send `state` to the service manager; False when not run by systemd."""
    address = environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
        try:
            sock.connect(address)
            sock.sendall(state.encode())
        except OSError:
            return False
    return True


def start_watchdog(clock, environ=os.environ) -> task.LoopingCall | None:
    """Ping the watchdog at half its interval, from the reactor: a stuck reactor stops pinging."""
    usec = environ.get("WATCHDOG_USEC")
    pid = environ.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    loop = task.LoopingCall(notify, "WATCHDOG=1", environ)
    loop.clock = clock
    loop.start(int(usec) / 2_000_000, now=True)
    return loop


UNIT = "appliance.service"


def unit_problems(unit: str = UNIT, run=None) -> list[str]:
    """What is wrong with the installed daemon's unit, as systemd sees it: failed, or
    restarting (it keeps ending and systemd keeps starting it again). Nothing where no
    systemd runs, where it does not know the unit, or where it cannot be asked."""
    import shutil
    import subprocess

    if not os.path.isdir("/run/systemd/system") or shutil.which("systemctl") is None:
        return []
    run = run or subprocess.run
    try:
        shown = run(
            ["systemctl", "show", unit, "--property=LoadState,ActiveState,SubState,Result,NRestarts,ExecMainStatus"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    if shown.returncode != 0:
        return []
    state = dict(line.split("=", 1) for line in shown.stdout.splitlines() if "=" in line)
    if state.get("LoadState") != "loaded":
        return []
    why = f"read why with: journalctl -u {unit.removesuffix('.service')} -e"
    active, sub = state.get("ActiveState", ""), state.get("SubState", "")
    restarts = int(state.get("NRestarts") or 0)
    if active == "failed":
        status = state.get("ExecMainStatus") or "?"
        return [f"{unit} has failed (result {state.get('Result', '?')}, exit status {status}): {why}"]
    if sub == "auto-restart" or (active == "activating" and restarts):
        return [f"{unit} is restarting ({restarts} restarts so far): it ends soon after it starts; {why}"]
    return []
