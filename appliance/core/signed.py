"""Short-lived signed values: `<subject>.<until>.<HMAC-SHA256>` with the data dir's
token secret, for a purpose and the facts they are bound to.

One mechanism for every value a URL carries in place of a sign-in: a share link's
`?access=` (after its password) and a signed download link of the file viewer. The
MAC covers the purpose, the subject (a share or profile id), the expiry and what the
value is bound to (a share's password hash, a file's path), so a value made for one
of them opens nothing else, and no database row is needed to check it.
"""

from __future__ import annotations

import hashlib
import hmac


def _mac(secret: bytes, purpose: str, subject: str, until: int, bound: str) -> str:
    # the bound value goes last, so a ':' inside it (a path) cannot shift the fields
    material = f"{purpose}:{subject}:{until}:{bound}".encode()
    return hmac.new(secret, material, hashlib.sha256).hexdigest()


def sign(secret: bytes, purpose: str, subject: int | str, until: int, bound: str) -> str:
    """A value for `subject` that `verify` accepts until `until` (seconds since the epoch)."""
    return f"{subject}.{until}.{_mac(secret, purpose, str(subject), until, bound)}"


def verify(secret: bytes, value: str, purpose: str, now: float, bound: str) -> tuple[str, int] | None:
    """(subject, until) of a genuine, unexpired value for this purpose and bound value;
    else None. Nothing in the value is trusted (nor looked up) before its MAC is checked."""
    try:
        subject, until, mac = value.split(".")
        until_seconds = int(until)
    except (ValueError, AttributeError):
        return None
    if str(until_seconds) != until:  # one spelling per moment ("+5", "05" are not it)
        return None
    expected = _mac(secret, purpose, subject, until_seconds, bound)
    if not hmac.compare_digest(expected.encode(), mac.encode("utf-8", "replace")):
        return None
    if until_seconds <= now:
        return None
    return subject, until_seconds
