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


def test_lines_are_the_ones_twisteds_text_observer_writes():
    """The daemon's own observer makes one-field lines (the audit line of every file)
    and the timestamp itself: what it writes must stay what Twisted's would."""
    from twisted.logger import LogLevel, formatEventAsClassicLogText, formatTime

    now = 1_790_000_000.75
    events = [
        dict(log_format="{audit}", audit="audit org=1 user=u: u uploaded /a", log_namespace="appliance.core.audit"),
        dict(log_format="{audit}", audit="first\nsecond", log_namespace="appliance"),
        dict(log_format="{audit}", audit="by system", log_system="conch", log_namespace="x"),
        dict(log_format="{count} files from {who}", count=3, who="u", log_namespace="appliance"),
        dict(log_format="{n}", n=7, log_namespace="appliance"),  # one field, not text
        dict(log_format="{audit}", audit="at another second", log_namespace="appliance", log_time=now + 1),
        dict(log_format="{audit}", audit="no time", log_namespace="appliance", log_time=None),
    ]
    for event in events:
        event.setdefault("log_level", LogLevel.info)
        event.setdefault("log_time", now)
        out = io.StringIO()
        _log_observer(out)(event)
        assert out.getvalue() == formatEventAsClassicLogText(event, formatTime=formatTime), event


def test_a_failure_is_written_with_its_traceback():
    out = io.StringIO()
    observer = _log_observer(out)
    globalLogPublisher.addObserver(observer)
    try:
        try:
            raise ZeroDivisionError("a planted failure")
        except ZeroDivisionError:
            Logger(namespace="appliance.service").failure("{audit}", audit="the audit line")
    finally:
        globalLogPublisher.removeObserver(observer)
    text = out.getvalue()
    assert "the audit line" in text and "ZeroDivisionError" in text, text
