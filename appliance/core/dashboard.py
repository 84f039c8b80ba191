"""What the dashboard and the connect dialog show, for one organisation."""

from __future__ import annotations

import base64
import hashlib
import re
from datetime import UTC, datetime, timedelta

from twisted.conch.ssh import keys

from ..models import to_iso
from ..store import Store
from ..store import dashboard as dashboard_queries
from .auth import Account

PROTOCOLS = ("sftp", "ftp", "web", "mail")
MONTHS = 12


def month_labels(now: datetime) -> list[tuple[str, str]]:
    """The last 12 months, oldest first, as (YYYY-MM, 'Nov 2026')."""
    year, month = now.year, now.month
    labels = []
    for _ in range(MONTHS):
        labels.append((f"{year:04d}-{month:02d}", datetime(year, month, 1).strftime("%b %Y")))
        month -= 1
        if month == 0:
            year, month = year - 1, 12
    return labels[::-1]


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
    def __init__(self, store: Store, settings, host_keys: dict[str, bytes], clock):
        self._store = store
        self._settings = settings
        self._clock = clock
        self.host_keys = []
        for data in host_keys.values():
            key = keys.Key.fromString(data).public()
            self.host_keys.append({"type": key.sshType().decode(), "fingerprint": fingerprint(key.blob())})

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.seconds(), UTC)

    async def overview(self, account: Account) -> dict:
        now = self._now()
        labels = month_labels(now)
        data = await self._store.run(
            dashboard_queries.overview,
            account.organisation.id,
            to_iso(now - timedelta(days=30)),
            labels[0][0] + "-01T00:00:00.000000Z",
        )
        counts = {(protocol, month): n for protocol, month, n in data.pop("monthly")}
        data["series"] = [
            {"name": protocol, "data": [{"x": label, "y": counts.get((protocol, key), 0)} for key, label in labels]}
            for protocol in PROTOCOLS
        ]
        return data

    def information(self, account: Account) -> dict:
        return {
            "source": account.source.name if account.source else "",
            "hostname": self._settings.server.public_hostname,
            "username": account.profile.username,
            "sftp_port": listener_port(self._settings.listen.sftp, 22),
            "ftp_port": listener_port(self._settings.listen.ftp, 21),
            "host_keys": self.host_keys,
            # what the file viewer offers: the profile's permissions, and whether its source takes no changes
            "permissions": list(account.profile.permissions),
            "read_only": account.source.read_only if account.source else True,
        }
