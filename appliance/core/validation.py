"""Field rules shared by the CLI, the API and the core."""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime

from ..errors import Invalid
from ..text import control_characters, control_problem

USERNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,149}$")
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
SUBDOMAIN = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
DATE_HINT = "Enter a date and time like 2027-01-31T18:00:00Z."


def username(value: str) -> str:
    value = value.strip()
    if not USERNAME.match(value):
        raise Invalid(
            "A username has 1 to 150 letters, digits or . _ @ + - and starts with a letter or digit.",
            {"username": ["Use letters, digits and . _ @ + - only (at most 150)."]},
        )
    return value


def email(value: str) -> str:
    value = value.strip()
    if not EMAIL.match(value) or len(value) > 254:
        raise Invalid(f"{value!r} is not an email address.", {"email": ["Enter a valid email address."]})
    return value


HIDDEN_HINT = "Use printable characters only (no control or text-direction characters)."


def no_control_characters(value: str, field: str, label: str) -> str:
    """`value`, or Invalid with a field error on `field` when it holds a control character."""
    problem = control_problem(value, label)
    if problem:
        raise Invalid(problem, {field: [problem]})
    return value


def hidden_characters(value: str) -> bool:
    """Whether `value` holds characters a name shown to others may not: controls, line
    and paragraph separators, and the bidirectional overrides and isolates that make
    text read otherwise than it is stored (Trojan Source, CVE-2021-42574)."""
    return control_characters(value) or any(
        unicodedata.category(c) in ("Zl", "Zp") or "\u202a" <= c <= "\u202e" or "\u2066" <= c <= "\u2069" for c in value
    )


def name(value: str, field: str = "name", limit: int = 200) -> str:
    value = value.strip()
    if not value or len(value) > limit or hidden_characters(value):
        if len(value) > limit:
            hint = f"Use at most {limit} characters."
        else:
            hint = HIDDEN_HINT if value else "Enter a name."
        raise Invalid(f"The {field} must be 1 to {limit} printable characters.", {field: [hint]})
    return value


def subdomain_from(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:63].strip("-")
    return slug or "org"


def subdomain(value: str) -> str:
    value = value.strip().lower()
    if not SUBDOMAIN.match(value) or value in ("app", "www", "localhost", "api"):
        raise Invalid(
            f"{value!r} cannot be a subdomain.",
            {"subdomain": ["Use lower-case letters, digits and hyphens (not app, www, api or localhost)."]},
        )
    return value


def moment(value: object, field: str) -> datetime:
    """A date and time a caller gave (ISO 8601; without an offset it is UTC), in UTC.
    Text that is no date, or a date that leaves the calendar in UTC, is a field error."""
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))  # type: ignore[union-attr]
        return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).astimezone(UTC)
    except (ValueError, TypeError, AttributeError, OverflowError):
        raise Invalid(f"The {field} is not a date and time.", {field: [DATE_HINT]}) from None
