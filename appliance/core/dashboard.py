"""What the dashboard and the connect dialog show, for one organisation."""

from __future__ import annotations

import base64
import bisect
import hashlib
import re
from datetime import UTC, date, datetime, timedelta

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from ..errors import Invalid
from ..models import to_iso
from ..store import Store
from ..store import dashboard as dashboard_queries
from .auth import Account

PROTOCOLS = ("sftp", "ftp", "web", "mail")
# the chart's periods and how many bars of each it shows: a day-one appliance reads
# its first transfers by the day, a year-old one by the month
PERIODS = {"day": 30, "week": 12, "month": 12}
DEFAULT_PERIOD = "month"


def chart_bars(today: date, period: str) -> tuple[list[tuple[date, str]], date]:
    """The chart's bars, oldest first, as (the first day each counts, its label), and
    the day after the last one ends. Days: '28 Nov'; weeks from Monday: '24 Nov' (the
    Monday); months: 'Nov 2026'. Days are UTC, as the log's times are."""
    count = PERIODS[period]
    if period == "day":
        starts = [today - timedelta(days=n) for n in range(count - 1, -1, -1)]
        return [(d, f"{d.day} {d:%b}") for d in starts], today + timedelta(days=1)
    if period == "week":
        monday = today - timedelta(days=today.weekday())
        starts = [monday - timedelta(weeks=n) for n in range(count - 1, -1, -1)]
        return [(d, f"{d.day} {d:%b}") for d in starts], monday + timedelta(weeks=1)
    year, month = today.year, today.month
    starts = []
    for _ in range(count):
        starts.append(date(year, month, 1))
        month -= 1
        if month == 0:
            year, month = year - 1, 12
    end = date(today.year + today.month // 12, today.month % 12 + 1, 1)
    return [(d, f"{d:%b %Y}") for d in starts[::-1]], end


def listener_port(endpoints: list[str], default: int) -> int:
    """The port people connect to: the first listener's, or the standard one (socket activation)."""
    for description in endpoints:
        match = re.match(r"^(?:tcp6?|ssl):(\d+)", description)
        if match:
            return int(match.group(1))
    return default


def fingerprint(public_blob: bytes) -> str:
    """As OpenSSH prints it: SHA256:<base64 without padding>."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(public_blob).digest()).decode().rstrip("=")


class Dashboard:
    def __init__(self, store: Store, settings, appliance_settings, host_keys: dict[str, bytes], clock):
        self._store = store
        self._settings = settings
        self._appliance_settings = appliance_settings  # the public host name as it is now
        self._clock = clock
        self.host_keys = []
        for data in host_keys.values():
            # the public half only, from a key DataDir.host_keys has read (no second check of RSA primes)
            key = serialization.load_ssh_private_key(data, None, unsafe_skip_rsa_key_validation=True)
            kind, blob = key.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).split()[:2]
            self.host_keys.append({"type": kind.decode(), "fingerprint": fingerprint(base64.b64decode(blob))})

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.seconds(), UTC)

    async def overview(self, account: Account, period: str = "") -> dict:
        """The dashboard's figures; its chart's `series` by `period` (one of PERIODS;
        empty: by month), a bar per day, week or month up to today."""
        period = period or DEFAULT_PERIOD
        if period not in PERIODS:
            message = f"Choose one of: {', '.join(PERIODS)}."
            raise Invalid(f"period: {message}", {"period": [message]})
        now = self._now()
        bars, end = chart_bars(now.date(), period)
        data = await self._store.run(
            dashboard_queries.overview,
            account.organisation.id,
            to_iso(now - timedelta(days=30)),
            bars[0][0].isoformat() + "T00:00:00.000000Z",
        )
        starts = [start for start, _label in bars]
        counts = {(protocol, i): 0 for protocol in PROTOCOLS for i in range(len(bars))}
        for protocol, day, n in data.pop("daily"):
            when = date.fromisoformat(day)
            bar = bisect.bisect_right(starts, when) - 1
            if protocol in PROTOCOLS and bar >= 0 and when < end:  # a clock ahead of ours: in no bar yet
                counts[(protocol, bar)] += n
        data["series"] = [
            {"name": protocol, "data": [{"x": label, "y": counts[(protocol, i)]} for i, (_, label) in enumerate(bars)]}
            for protocol in PROTOCOLS
        ]
        return data

    def information(self, account: Account) -> dict:
        return {
            "source": account.source.name if account.source else "",
            "hostname": self._appliance_settings.public_host,
            "username": account.profile.username,
            "sftp_port": listener_port(self._settings.listen.sftp, 22),
            "ftp_port": listener_port(self._settings.listen.ftp, 21),
            "host_keys": self.host_keys,
            # what the file viewer offers: the profile's permissions, and whether its source takes no changes
            "permissions": list(account.profile.permissions),
            "read_only": account.source.read_only if account.source else True,
        }
