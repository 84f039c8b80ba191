"""Request bodies declared once, as pydantic models: each field's type and bounds, what a
new resource must give, and the rules that need neither the store nor the network.
From one declaration come the core's checks of a body (`read`), the schema the
OpenAPI document publishes for it (`schema`, which the HTTP type gate holds bodies to)
and the reply the core answers with (`shown`: the declared fields but the secrets, and
the ones only the core sets; `reply_schema` publishes it), so a field added to a model
is checked and documented, asked and answered, at once.

The core's messages are part of the API's contract (console-spec's error catalogue):
a field says in `Hint` what to tell for a value of the wrong type or out of its
bounds; a rule (`rule`) says its own words, raising errors.Invalid as the core's rules
always have. Checks that need the store or the network (a taken name, a reachable
host) stay in the core's services."""

from __future__ import annotations

from collections.abc import Callable
from copy import copy
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, TypeAdapter, ValidationError, create_model
from pydantic import Field as Bounds
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import PydanticCustomError, PydanticUndefined

from .errors import ApplianceError, Invalid

SQLITE_MAX = 2**63 - 1  # the largest number a column holds
MAX_STRING = 4096  # the longest text a field takes unless its declaration says otherwise
REQUIRED = "This field is required."
_RULE = "rule"  # the error type of a rule's own words


class Declaration(BaseModel):
    """A request body: fields checked strictly (true is no number, 1 no text); fields it
    does not name are ignored (no handler reads them)."""

    model_config = ConfigDict(strict=True, extra="ignore")


class Shown(BaseModel):
    """A reply: a resource as the core answers with it. A field without a default is always
    given, one with a default only sometimes (never as that default); no other field is."""

    model_config = ConfigDict(extra="forbid")


# the fields only the core sets, as replies give them
ID = Annotated[int, Bounds(ge=1)]
MOMENT = Annotated[str, Bounds(json_schema_extra={"format": "date-time"})]
MAYBE_MOMENT = Annotated[str | None, Bounds(json_schema_extra={"format": "date-time"})]


def shown(declared: type[Declaration], *, leave: tuple[str, ...] = ()) -> type[Shown]:
    """The reply of a resource `declared` declares, to extend with the fields only the core
    sets: every field it declares but `leave` (the secrets, which a reply never echoes), as
    declared (type, bounds, description) and always given."""
    unknown = set(leave) - set(declared.model_fields)
    if unknown:
        raise ValueError(f"{declared.__name__} declares no {', '.join(sorted(unknown))}")
    fields = {}
    for name, info in declared.model_fields.items():
        if name not in leave:
            given = copy(info)
            given.default, given.default_factory = PydanticUndefined, None
            fields[name] = (info.annotation, given)
    return create_model(f"{declared.__name__}Shown", __base__=Shown, __module__=declared.__module__, **fields)


@dataclass(frozen=True)
class Hint:
    """What the core says of a field's value of the wrong type or out of its bounds."""

    message: str


def rule(check: Callable[[Any], Any], *, before: bool = False) -> AfterValidator | BeforeValidator:
    """A field's rule: `check` returns the value to keep or raises an errors.ApplianceError,
    whose field messages (or message) are what the caller is told. It sees the value of the
    declared type; `before`: the value as given, before its type is checked."""

    def validate(value):
        try:
            return check(value)
        except ApplianceError as e:
            messages = [m for found in (getattr(e, "fields", None) or {}).values() for m in found] or [e.message]
            raise PydanticCustomError(_RULE, "{message}", {"message": messages[0], "messages": messages}) from None

    return BeforeValidator(validate) if before else AfterValidator(validate)


@cache
def _fields(model: type[Declaration]) -> dict[str, tuple[bool, TypeAdapter, str | None]]:
    """{name: (required, the field's validator, its hint)}"""
    found = {}
    for name, info in model.model_fields.items():
        hint = next((m.message for m in info.metadata if isinstance(m, Hint)), None)
        adapter = TypeAdapter(Annotated[info.annotation, info], config=ConfigDict(strict=True))
        found[name] = (info.is_required(), adapter, hint)
    return found


def read(model: type[Declaration], body: dict, *, creating: bool) -> tuple[dict, dict[str, list[str]]]:
    """(the valid fields `body` gives, {field: [messages]} of the others): each field
    given is checked by its declaration; `creating`: the required ones must be given."""
    values: dict = {}
    errors: dict[str, list[str]] = {}
    for name, (required, adapter, hint) in _fields(model).items():
        if name not in body:
            if required and creating:
                errors[name] = [REQUIRED]
            continue
        try:
            values[name] = adapter.validate_python(body[name])
        except ValidationError as e:
            errors[name] = _messages(e, hint)
    return values, errors


def defaults(model: type[Declaration]) -> dict:
    """The value of each field `model` does not require, when it is not given."""
    return {name: info.get_default(call_default_factory=True)
            for name, info in model.model_fields.items() if not info.is_required()}  # fmt: skip


def in_order(model: type[Declaration], problems: dict[str, list[str]]) -> list[str]:
    """The messages of `problems` ({field: [messages]}) in the order `model` declares its fields."""
    return [message for name in model.model_fields for message in problems.get(name, ())]


def _messages(error: ValidationError, hint: str | None) -> list[str]:
    found = error.errors(include_url=False)
    own = [e for e in found if e["type"] == _RULE]
    if own:
        return list(own[0]["ctx"]["messages"])
    return [hint or found[0]["msg"]]


def refuse(errors: dict[str, list[str]]) -> None:
    """Raise the core's Invalid for a body when any field was wrong."""
    if errors:
        raise Invalid("Some fields are not valid.", errors)


class _Published(GenerateJsonSchema):
    """JSON Schema as the OpenAPI document and the HTTP type gate read it: a field that
    may be null is of ["type", "null"], no titles."""

    def field_title_should_be_set(self, schema) -> bool:
        return False

    def default_schema(self, schema):
        return self.generate_inner(schema["schema"])  # what a field left out means is the service's to say

    def nullable_schema(self, schema):
        inner = self.generate_inner(schema["schema"])
        if isinstance(inner.get("type"), str):
            return {**inner, "type": [inner["type"], "null"]}
        return {"anyOf": [inner, {"type": "null"}]}

    def model_schema(self, schema):
        found = super().model_schema(schema)
        for key in ("title", "description", "additionalProperties"):  # a model's docstring is the code's
            found.pop(key, None)
        return found


class _WithDefaults(_Published):
    """As _Published, with the value of each field left out (where a form starts from)."""

    def default_schema(self, schema):
        return GenerateJsonSchema.default_schema(self, schema)


class _Replied(_Published):
    """As _Published, for a reply: an object holds no field it does not name."""

    def model_schema(self, schema):
        return {**super().model_schema(schema), "additionalProperties": False}


def schema(model: type[Declaration], *, creating: bool, nullable: bool = False, defaults: bool = False) -> dict:
    """The JSON Schema of a body of `model` (nested models inlined); `creating`: with the
    fields a new one must give as required; `defaults`: with each field's value when left out."""
    found = _inlined(model.model_json_schema(schema_generator=_WithDefaults if defaults else _Published))
    if not creating:
        found.pop("required", None)
    if nullable:
        found["type"] = [found["type"], "null"]
    return found


def reply_schema(model: type[Shown]) -> dict:
    """The JSON Schema of a reply of `model` (nested models inlined): closed, every field
    required but those with a default."""
    return _inlined(model.model_json_schema(schema_generator=_Replied))


def _inlined(found: dict) -> dict:
    """`found` with the models it refers to written in place."""
    definitions = found.pop("$defs", {})

    def inline(node):
        if isinstance(node, dict):
            if "$ref" in node:
                return inline(definitions[node["$ref"].rsplit("/", 1)[1]])
            return {key: inline(value) for key, value in node.items()}
        if isinstance(node, list):
            return [inline(value) for value in node]
        return node

    return inline(found)
