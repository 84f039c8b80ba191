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
