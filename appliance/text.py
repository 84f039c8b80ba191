"""Checks on text that every layer shares (below the config, the core, mail and the storage backends)."""

from __future__ import annotations

import unicodedata


def control_characters(value: str) -> bool:
    """Whether `value` holds a control character: C0 (NUL, tab, CR, LF, ...), DEL or C1.
    Any of them could end or split a command of another server's protocol (IMAP, SMTP,
    SFTP, S3) that the value is sent on to, so credentials, hosts, folders and paths an
    admin enters never hold one."""
    return any(unicodedata.category(c) == "Cc" for c in value)
