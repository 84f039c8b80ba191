"""The daemon under a service manager: READY=1 once listening, STOPPING=1 and a
clean exit on SIGTERM (sd_notify over a real datagram socket)."""

from __future__ import annotations

import signal
import socket

from ..helpers import daemon_with


def test_ready_and_stopping_are_notified(tmp_path):
    address = str(tmp_path / "notify.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(address)
    listener.settimeout(20)
    daemon = daemon_with(tmp_path, env={"NOTIFY_SOCKET": address, "WATCHDOG_USEC": "2000000"})
    try:
        messages = []
        while not any(m.startswith("READY=1") for m in messages):
            messages.append(listener.recv(4096).decode())
        ready = next(m for m in messages if m.startswith("READY=1"))
        assert f"tcp:{daemon.sftp_port}" in ready and f"tcp:{daemon.ftp_port}" in ready
        while "WATCHDOG=1" not in messages:
            messages.append(listener.recv(4096).decode())
        daemon.process.send_signal(signal.SIGTERM)
        while "STOPPING=1" not in messages:
            messages.append(listener.recv(4096).decode())
        assert daemon.process.wait(30) == 0
    finally:
        daemon.stop()
        listener.close()
    assert "Traceback" not in daemon.output()
