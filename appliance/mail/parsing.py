"""Turning one email into files: its attachments (or the whole message as .eml)
and the values for the target folder template, every name made safe as a
single path part. Pure functions: they run on the work pool."""

from __future__ import annotations

import email
import email.parser
import email.policy
import email.utils
import mimetypes
import re
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage

MAX_PART_BYTES = 120  # room for " (12)" and an extension within 255 bytes
# Python's own table only (not /etc/mime.types): the same names on every machine
_TYPES = mimetypes.MimeTypes(filenames=())
_EXTENSIONS = {"message/rfc822": "eml", "text/plain": "txt", "text/html": "html", "image/jpeg": "jpg"}


@dataclass(frozen=True)
class MessageInfo:
    date: str  # YYYY-MM-DD
    sender: str
    subject: str
    message_id: str


def safe_part(text: str, fallback: str = "_", limit: int = MAX_PART_BYTES) -> str:
    """One path component: no separators, controls, leading dots, or excess length."""
    text = unicodedata.normalize("NFC", text or "")
    text = "".join("_" if (not ch.isprintable() or ch in '/\\:*?"<>|') else ch for ch in text)
    text = re.sub(r"\s+", " ", text).strip().lstrip(".").strip()
    while len(text.encode("utf-8")) > limit:
        text = text[:-1]
    return text.strip() or fallback


def safe_filename(name: str, fallback: str) -> str:
    """A file name kept readable: the extension survives shortening."""
    name = safe_part(name, fallback, limit=10_000)
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem or len(extension) > 16:
        stem, extension = name, ""
    extension = safe_part(extension, "", limit=16)
    stem = safe_part(stem, fallback, limit=MAX_PART_BYTES - len(extension.encode()) - 1)
    return f"{stem}.{extension}" if extension else stem


def parse(raw: bytes) -> EmailMessage:
    return email.message_from_bytes(raw, policy=email.policy.default)


def parse_headers(raw: bytes) -> EmailMessage:
    """Only the top-level headers (for a message whose body cannot be parsed)."""
    return email.parser.BytesHeaderParser(policy=email.policy.default).parsebytes(raw)


def _header(message: EmailMessage, name: str) -> str:
    try:
        return str(message.get(name, "") or "")
    except (ValueError, TypeError, IndexError):  # malformed header: keep the raw text
        raw = message.get_all(name, failobj=[""])
        return str(raw[0]) if raw else ""


def info(message: EmailMessage, received: datetime | None = None) -> MessageInfo:
    when = None
    try:
        when = email.utils.parsedate_to_datetime(_header(message, "Date"))
    except (TypeError, ValueError, IndexError):
        pass
    when = when or received or datetime.now(UTC)
    sender = email.utils.parseaddr(_header(message, "From"))[1] or "unknown"
    return MessageInfo(
        date=when.strftime("%Y-%m-%d"),
        sender=sender,
        subject=_header(message, "Subject"),
        message_id=_header(message, "Message-ID").strip().strip("<>"),
    )


def attachments(message: EmailMessage) -> list[tuple[str, bytes]]:
    """Every attachment as (safe name, bytes); an attached email becomes a .eml file.

    Parts without a name that are not the message's text (e.g. an inline image)
    are kept too, with a made-up name, so nothing the sender attached is lost.
    """
    found: list[tuple[str, bytes]] = []
    for part in message.walk():
        if part.is_multipart():
            continue
        filename = None
        try:
            filename = part.get_filename()
        except (ValueError, TypeError, LookupError):
            filename = None
        disposition = part.get_content_disposition()
        content_type = part.get_content_type()
        if not filename and disposition != "attachment" and content_type in ("text/plain", "text/html"):
            continue  # the body of the message itself
        try:
            payload = part.get_payload(decode=True)
        except (ValueError, TypeError, LookupError):
            payload = None
        if payload is None:
            payload = part.get_payload() if isinstance(part.get_payload(), bytes) else b""
        number = len(found) + 1
        extension = _extension(content_type)
        found.append((safe_filename(filename or "", f"attachment-{number}.{extension}"), payload))
    # message/rfc822 parts are containers in walk(): save each attached email whole as well
    for part in message.walk():
        if part.get_content_type() == "message/rfc822" and part.is_multipart():
            inner = part.get_payload()[0]
            subject = _header(inner, "Subject") or "attached message"
            found.append((safe_filename(f"{subject}.eml", f"message-{len(found) + 1}.eml"), inner.as_bytes()))
    return found


def _extension(content_type: str) -> str:
    """The extension a part without a name gets from its type (an inline image.png
    stays openable); bin when the type says nothing."""
    if content_type in _EXTENSIONS:
        return _EXTENSIONS[content_type]
    guessed = _TYPES.guess_extension(content_type, strict=True)
    return guessed.lstrip(".") if guessed and content_type != "application/octet-stream" else "bin"


def render_folder(template: str, details: MessageInfo) -> str:
    """The target folder for a message: each template part rendered and made safe."""
    values = {
        "date": details.date,
        "from": details.sender,
        "subject": details.subject,
        "message_id": details.message_id,
    }
    parts = []
    for piece in template.split("/"):
        if not piece:
            continue
        rendered = re.sub(r"\{(date|from|subject|message_id)\}", lambda m: values[m.group(1)], piece)
        parts.append(safe_part(rendered))
    return "/" + "/".join(parts)
