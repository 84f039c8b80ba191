"""The audit trail: one row per sign-in, transfer and change, with a sentence a
person can read on the dashboard."""

from __future__ import annotations

from twisted.logger import Logger

from ..models import ACTIONS, LogEntry
from ..store import Store, queries

log = Logger()

PROTOCOL_NAMES = {"sftp": "SFTP", "ftp": "FTP", "web": "the web", "api": "the API", "mail": "mail"}


def human_bytes(count: int) -> str:
    value = float(count)
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{count} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{count} bytes"


def clean(text: str) -> str:
    """Make a value safe inside a one-line log sentence (no CR/LF or controls)."""
    return "".join(ch if ch.isprintable() else "?" for ch in text)


class AuditLog:
    def __init__(self, store: Store, metrics=None):
        self._store = store
        self._metrics = metrics

    async def record(self, entry: LogEntry) -> None:
        """Write the row, count it in the metrics, and echo it to the daemon's log (stdout/journald)."""
        if entry.action not in ACTIONS:  # the logs screen filters by ACTIONS: one missing there could not be found
            raise ValueError(f"audit action {entry.action!r} is not in models.ACTIONS")
        await self._store.run(queries.insert_log, entry)
        if self._metrics is not None:
            self._metrics.observe(entry)
        log.info(
            "audit org={org} user={user} protocol={protocol} action={action} "
            "address={address} path={path} bytes={bytes}: {message}",
            org=entry.org_id,
            user=clean(entry.username),
            protocol=entry.protocol,
            action=entry.action,
            address=entry.remote_address,
            path=clean(entry.path),
            bytes=entry.bytes,
            message=clean(entry.message),
        )

    async def transfer(
        self,
        account,
        protocol: str,
        address: str,
        action: str,
        path: str,
        size: int,
        share: str | None = None,
        of: int | None = None,
    ) -> None:
        """One row per finished upload or download. `share` names the share link an
        anonymous visitor went through (the row still belongs to the sharing profile).
        `of`: a download's file size; when fewer bytes went out (a client that stopped,
        a range, a resumed download), the message says how many of how many."""
        verb = {"upload": "uploaded", "download": "downloaded"}[action]
        name = account.profile.username
        how = f"through {clean(share)}" if share else f"over {PROTOCOL_NAMES.get(protocol, protocol)}"
        amount = human_bytes(size) if of is None or of == size else f"{human_bytes(size)} of {human_bytes(of)}"
        await self.record(
            LogEntry(
                org_id=account.organisation.id,
                profile_id=account.profile.id,
                username=name,
                protocol=protocol,
                action=action,
                path=path,
                bytes=size,
                remote_address=address,
                message=f"{'anonymous' if share else clean(name)} {verb} {clean(path)} ({amount}) {how}",
            )
        )

    async def change(self, account, protocol: str, address: str, action: str, path: str, message: str) -> None:
        """A file change (delete, rename, mkdir) or an admin change."""
        await self.record(
            LogEntry(
                org_id=account.organisation.id,
                profile_id=account.profile.id,
                username=account.profile.username,
                protocol=protocol,
                action=action,
                path=path,
                remote_address=address,
                message=message,
            )
        )
