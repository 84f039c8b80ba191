"""The type gate of JSON request bodies: a body is checked against its operation's
declaration in openapi.INPUTS (the schema the OpenAPI document publishes) before a
handler reads a field of it, so a wrong type, a number larger than SQLite holds or a
runaway string answers 400 with the console-spec's {field: [messages]} map instead of
reaching the core. The core stays the place of the business rules (a name's
characters, a taken username, a reachable host); this only makes sure each field is
of the kind the core expects.

The JSON Schema subset the declarations use: type (one name or a list, "null"
included), enum, minimum/maximum, minLength/maxLength, pattern, format date-time and
email (loosely; the core parses them), maxItems, properties, required, items, anyOf
(the first alternative's words say what is wrong); and x-hint, a field's own message
for a value of the wrong type, choice or pattern.
Fields a declaration does not name are ignored (additionalProperties is left open: no
handler reads them). Rules that hold for every declaration: an integer is one SQLite
can store (and true or false is not an integer); a string is Unicode text (JSON can
escape half a character); a string or a list has a bounded length (MAX_STRING,
MAX_ITEMS) unless its declaration says otherwise."""

from __future__ import annotations

import re
from datetime import datetime

from klein import Klein

from ...errors import Invalid
from .openapi import INPUTS, MAX_STRING, SQLITE_MAX
from .twisted_private import bound_instance

SQLITE_MIN = -(2**63)
MAX_ITEMS = 1000
DATE_HINT = "Enter a date and time like 2027-01-31T18:00:00Z."
EMAIL_HINT = "Enter a valid email address."

_KINDS = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}


class DeclaredKlein(Klein):
    """A Klein app that tells each request which operation answers it, "<resource
    class>.<handler>" (the key of openapi.INPUTS), before the handler runs, so that
    read_json checks the body against that operation's declaration."""

    def execute_endpoint(self, endpoint, request, *args, **kwargs):
        request.operation = f"{type(bound_instance(self)).__name__}.{endpoint.removesuffix('_branch')}"
        return super().execute_endpoint(endpoint, request, *args, **kwargs)


def checked_body(request, body: dict) -> dict:
    """`body` if it matches the declaration of the operation answering `request`;
    otherwise Invalid with every wrong field. An operation that reads a JSON body
    must declare it (a test holds every handler to this)."""
    operation = getattr(request, "operation", None)
    declared = INPUTS.get(operation or "", {}).get("body")
    if declared is None:
        raise LookupError(f"{operation} reads a JSON body, but openapi.INPUTS declares none for it")
    errors = problems(declared, body)
    if errors:
        raise Invalid("Some fields are not valid.", errors)
    return body


def problems(schema: dict, value, field: str = "") -> dict[str, list[str]]:
    """What is wrong with `value` against `schema`: {field: [messages]}; nested fields are
    named by their path ("config.port"), an item of a list by its list."""
    errors: dict[str, list[str]] = {}
    _check(schema, value, field, errors)
    return errors


def _check(schema: dict, value, field: str, errors: dict, item: str = "") -> None:
    def fail(message: str, name: str = field) -> None:
        errors.setdefault(name or "detail", []).append(f"{item}{message[0].lower()}{message[1:]}" if item else message)

    kind = _KINDS.get(type(value), "null")
    allowed = schema.get("type")
    allowed = [allowed] if isinstance(allowed, str) else allowed
    if allowed is not None and kind not in allowed and not (kind == "integer" and "number" in allowed):
        return fail(schema.get("x-hint") or f"Must be {describe(schema)}.")
    if "enum" in schema and not any(type(value) is type(choice) and value == choice for choice in schema["enum"]):
        return fail(schema.get("x-hint") or f"Choose one of: {', '.join(str(choice) for choice in schema['enum'])}.")
    if "anyOf" in schema:
        found = [problems(alternative, value, field) for alternative in schema["anyOf"]]
        if all(found):
            for name, messages in found[0].items():
                for message in messages:
                    fail(message, name)
            return
    if kind in ("integer", "number"):
        if not schema.get("minimum", SQLITE_MIN) <= value <= schema.get("maximum", SQLITE_MAX):
            fail(f"Must be {describe(schema)}.")
    elif kind == "string":
        _check_string(schema, value, fail)
    elif kind == "array":
        limit = schema.get("maxItems", MAX_ITEMS)
        if len(value) > limit:
            return fail(f"Give at most {limit} items.")
        for position, element in enumerate(value):
            before = sum(map(len, errors.values()))
            _check(schema.get("items", {}), element, field, errors, f"Item {position + 1}: ")
            if sum(map(len, errors.values())) > before:
                return  # the first wrong item says enough
    elif kind == "object":
        prefix = f"{field}." if field else ""
        for name in schema.get("required", ()):
            if name not in value:
                fail("This field is required.", prefix + name)
        for name, declared in schema.get("properties", {}).items():
            if name in value:
                _check(declared, value[name], prefix + name, errors)


def _check_string(schema: dict, value: str, fail) -> None:
    limit = schema.get("maxLength", MAX_STRING)
    if len(value) > limit:
        return fail(f"Use at most {limit:,} characters.")
    if not _unicode(value):  # JSON may escape half a character (\ud800): no file name, column or mail holds it
        return fail("This text holds a character that is not valid Unicode (a lone \\uD800-\\uDFFF escape).")
    if len(value) < schema.get("minLength", 0):
        return fail("This field is required." if len(value) == 0 else f"Use at least {schema['minLength']} characters.")
    if "pattern" in schema and not re.search(schema["pattern"], value):
        return fail(schema.get("x-hint") or "This is not in the expected form.")
    if schema.get("format") == "date-time" and not _moment(value):
        return fail(DATE_HINT)
    if schema.get("format") == "email" and not re.fullmatch(r"[^@\s]+@[^@\s]+", value.strip()):
        return fail(EMAIL_HINT)


def _unicode(value: str) -> bool:
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


def _moment(value: str) -> bool:
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def describe(schema: dict) -> str:
    """What a schema takes, in words: "a whole number from 1 to 65535, or null"."""
    allowed = schema.get("type", [])
    allowed = [allowed] if isinstance(allowed, str) else allowed
    if "enum" in schema:
        return f"one of: {', '.join(str(choice) for choice in schema['enum'])}"
    words = []
    for kind in allowed:
        if kind in ("integer", "number"):
            low, high = schema.get("minimum", SQLITE_MIN), schema.get("maximum", SQLITE_MAX)
            words.append(f"{'a whole number' if kind == 'integer' else 'a number'} from {low} to {high}")
        elif kind == "string":
            shape = schema.get("format") or next((a["format"] for a in schema.get("anyOf", ()) if "format" in a), "")
            words.append({"date-time": "a date and time like 2027-01-31T18:00:00Z", "email": "an email address"}.get(
                shape, "text"))  # fmt: skip
        elif kind != "null":
            words.append({"boolean": "true or false", "array": "a list", "object": "an object"}[kind])
    text = " or ".join(words) or "one of the choices"
    return text + (", or null for none" if "null" in allowed else "")
