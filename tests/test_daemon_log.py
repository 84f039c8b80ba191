"""What the daemon's log observer lets through (`appliance serve` writes it to stdout,
which systemd's journal keeps)."""

from __future__ import annotations

import io

from twisted.logger import Logger, globalLogPublisher
from twisted.python import log as legacy

from appliance.cli import _log_observer


def logged(*legacy_lines: str) -> str:
    """The text the observer writes for these lines, logged the way Twisted's ports log."""
    out = io.StringIO()
    observer = _log_observer(out)
    globalLogPublisher.addObserver(observer)
    try:
        for line in legacy_lines:
            legacy.msg(line)
        Logger(namespace="appliance.service").info("HTTPS listening on {where}", where="tcp:8443")
    finally:
        globalLogPublisher.removeObserver(observer)
    return out.getvalue()


def test_port_openings_and_closings_are_left_out_listeners_named_once():
    text = logged(
        "Site starting on 8000",
        "Site (TLS) starting on 8443",  # TLSMemoryBIOFactory's prefix has a space in it
        "DataChannelFactory starting on 40001",  # each passive FTP transfer
        "(TCP Port 40001 Closed)",
        "an operator should see this",
    )
    assert "starting on" not in text and "Closed)" not in text, text
    assert "an operator should see this" in text
    assert text.count("HTTPS listening on tcp:8443") == 1
