"""The configuration reference, generated from the dataclasses in config.py: every
key with its TOML section, environment variable, default and the comment beside it
in the source (`appliance config-reference`; the README holds its output)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import json
import tokenize

from . import config


def _comments(cls: type) -> dict[str, str]:
    """Field name -> the comment at the end of its line(s) in the class's source."""
    source = inspect.getsource(cls)
    by_line = {
        token.start[0]: token.string.lstrip("#").strip()
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    }
    node = ast.parse(source).body[0]
    return {
        item.target.id: by_line.get(item.end_lineno, by_line.get(item.lineno, ""))
        for item in node.body
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
    }


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(value)


def entries() -> list[tuple[str, str, str, str]]:
    """(section, key, default as TOML, description) for every setting, in source order."""
    rows = []
    for section, value in config._section_fields(config.Settings()).items():
        comments = _comments(type(value))
        for f in dataclasses.fields(value):
            rows.append((section, f.name, _toml(getattr(value, f.name)), comments.get(f.name, "")))
    return rows


def reference() -> str:
    """Markdown: one table per section."""
    lines: list[str] = []
    current = None
    for section, key, default, description in entries():
        if section != current:
            if current is not None:
                lines.append("")
            lines += [
                f"`[{section}]`",
                "",
                "| key | default | environment variable | description |",
                "| --- | --- | --- | --- |",
            ]
            current = section
        env = f"{config.ENV_PREFIX}{section}_{key}".upper()
        cells = (f"`{key}`", f"`{default}`", f"`{env}`", description.replace("|", "\\|"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
