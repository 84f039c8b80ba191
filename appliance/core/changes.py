"""What a change changed, in words: the one helper every audit sentence about a
changed profile, source, mailbox or organisation is written with.

It compares the old values with the new ones, names only the fields whose value
really differs, by their label (never the column's name), and shows each value as
a person reads it: times as "2030-01-03 10:00 UTC", sizes as "1.5 GB", yes/no,
lists joined; secrets and long texts only as "changed", never their value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from ..models import from_iso
from .audit import clean, human_bytes

NONE = "none"


@dataclass(frozen=True)
class Field:
    """How a field is named and shown. kind: text, number, bool, time, bytes, list,
    count (a list told by its length), choice (`choices` maps a value to words), secret
    and long (told only as changed), hidden (never told: bookkeeping columns)."""

    label: str
    kind: str = "text"
    choices: Mapping = field(default_factory=dict)
    empty: str = NONE  # what an empty value reads as ("no limit", "never")


def readable_time(value) -> str:
    """An ISO 8601 time as "2030-01-03 10:00 UTC" (seconds only when there are some)."""
    try:
        moment = value if isinstance(value, datetime) else from_iso(str(value))
    except ValueError:
        return clean(str(value))
    if moment is None:
        return NONE
    shown = moment.strftime("%Y-%m-%d %H:%M:%S" if moment.second else "%Y-%m-%d %H:%M")
    return f"{shown} UTC"


def _comparable(spec: Field, value):
    if value is None or value == "":
        return None
    if spec.kind in ("list", "count"):
        return tuple(value) or None
    if spec.kind == "time":
        try:
            return from_iso(str(value))
        except ValueError:
            return value
    return value


def _shown(spec: Field, value) -> str:
    if spec.kind == "choice" and value in spec.choices:
        return spec.choices[value]
    if value is None or value == "" or (spec.kind in ("list", "count") and not value):
        return spec.empty
    if spec.kind == "bool":
        return "yes" if value else "no"
    if spec.kind == "time":
        return readable_time(value)
    if spec.kind == "bytes":
        return human_bytes(int(value))
    if spec.kind == "list":
        return ", ".join(clean(str(v)) for v in value)
    if spec.kind == "count":
        return str(len(value))
    return clean(str(value))


def changed_fields(old: Mapping, new: Mapping, fields: Mapping[str, Field]) -> list[str]:
    """The keys of `new` whose value differs from `old`'s (in `fields`' order, then the
    rest), hidden ones left out."""
    keys = [k for k in fields if k in new] + [k for k in new if k not in fields]
    found = []
    for key in keys:
        spec = fields.get(key) or Field(key.replace("_", " "))
        if spec.kind == "hidden":
            continue
        if _comparable(spec, old.get(key)) != _comparable(spec, new[key]):
            found.append(key)
    return found


def describe_change(
    old: Mapping, new: Mapping, fields: Mapping[str, Field], shown: Mapping[str, Callable] | None = None
) -> str:
    """ "source from Default to Archive, quota from no limit to 1.0 GB, password changed"
    for what differs between `old` and `new` (a key missing from `new` is unchanged);
    "" when nothing does. `shown`: a key's own way to show a value (say, a source's id
    as its name)."""
    parts = []
    for key in changed_fields(old, new, fields):
        spec = fields.get(key) or Field(key.replace("_", " "))
        if spec.kind in ("secret", "long"):
            parts.append(f"{spec.label} changed")
            continue
        show = (shown or {}).get(key) or (lambda value, spec=spec: _shown(spec, value))
        parts.append(f"{spec.label} from {show(old.get(key))} to {show(new[key])}")
    return ", ".join(parts)
