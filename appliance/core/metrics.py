"""Prometheus metrics, on a registry of this daemon's own (no global state).

Transfers, bytes, sign-ins, failures and bans are counted from the audit log,
which every protocol already writes to exactly once per event; sessions come
from the connection limits; mailbox runs and HTTP latency are observed where
they happen.
"""

from __future__ import annotations

import gc

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

from ..models import LogEntry


class _Sessions:
    """Live signed-in sessions and connections still signing in, read at scrape time."""

    def __init__(self, connections):
        self._connections = connections

    def collect(self):
        sessions = GaugeMetricFamily("appliance_sessions", "Signed-in sessions", labels=["protocol"])
        for protocol in ("sftp", "ftp"):
            sessions.add_metric([protocol], self._connections.sessions.get(protocol, 0))
        yield sessions
        yield GaugeMetricFamily(
            "appliance_connections_signing_in", "Connections not yet signed in", value=self._connections.pending
        )


class _Heap:
    """Objects the garbage collector's full passes skip: the daemon's start-up heap,
    frozen once it is built, before it listens (cli.freeze_start_up_heap); 0 in a
    process that did not freeze it."""

    def collect(self):
        yield GaugeMetricFamily(
            "appliance_gc_frozen_objects",
            "Objects of the start-up heap left out of the garbage collector's full passes",
            value=gc.get_freeze_count(),
        )


class Metrics:
    def __init__(self, connections=None):
        self.registry = CollectorRegistry()
        self.transfers = Counter(
            "appliance_transfers", "Finished transfers", ["protocol", "direction"], registry=self.registry
        )
        self.bytes = Counter(
            "appliance_transfer_bytes", "Bytes transferred", ["protocol", "direction"], registry=self.registry
        )
        self.logins = Counter("appliance_logins", "Successful sign-ins", ["protocol"], registry=self.registry)
        self.login_failures = Counter(
            "appliance_login_failures", "Failed sign-ins", ["protocol"], registry=self.registry
        )
        self.bans = Counter("appliance_bans", "Addresses banned for repeated failures", registry=self.registry)
        self.mailbox_runs = Counter(
            "appliance_mailbox_runs", "Finished mailbox runs", ["status"], registry=self.registry
        )
        self.request_seconds = Histogram(
            "appliance_http_request_seconds",
            "HTTP API request latency",
            ["method"],
            registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        if connections is not None:
            self.registry.register(_Sessions(connections))
        self.registry.register(_Heap())
        # (protocol, direction) -> its two counters: `labels` looks them up by a lock and a
        # tuple of strings, once per transferred file otherwise
        self._transfer_counters: dict[tuple[str, str], tuple] = {}

    def observe(self, entry: LogEntry) -> None:
        """Count an audit entry (called by the audit log for every row it writes)."""
        if entry.action in ("upload", "download"):
            key = (entry.protocol, entry.action)
            counters = self._transfer_counters.get(key)
            if counters is None:
                counters = self._transfer_counters[key] = (self.transfers.labels(*key), self.bytes.labels(*key))
            counters[0].inc()
            counters[1].inc(entry.bytes or 0)
        elif entry.action == "login":
            self.logins.labels(entry.protocol).inc()
        elif entry.action == "login_failed":
            self.login_failures.labels(entry.protocol).inc()
        elif entry.action == "ban":
            self.bans.inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
