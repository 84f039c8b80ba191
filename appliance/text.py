"""Checks on text that every layer shares (below the config, the core, mail and the storage backends)."""

from __future__ import annotations

import unicodedata


def control_characters(value: str) -> bool:
    """Whether `value` holds a control character: C0 (NUL, tab, CR, LF, ...), DEL or C1.
    Any of them could end or split a command of another server's protocol (IMAP, SMTP,
    SFTP, S3) that the value is sent on to, so credentials, hosts, folders and paths an
    admin enters never hold one."""
    return any(unicodedata.category(c) == "Cc" for c in value)


def control_problem(value: object, label: str) -> str | None:
    """What is wrong with text (`label`: "The password", "config.host") that holds a control
    character, for the person who typed it; None when it holds none (or is no text)."""
    if not isinstance(value, str) or not control_characters(value):
        return None
    return f"{label} holds a control character (a line break, a tab or another invisible code): remove it."
