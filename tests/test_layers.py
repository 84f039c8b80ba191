"""The layering of the files code: the storage backends (appliance/storage) never
import the rules (appliance.core) nor the store, and the files rules
(appliance/core/files) import everything at module level (a function-level import
is how the old import cycle between the rules and the backends was hidden)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "appliance"


def _imports(path: Path) -> list[tuple[str, ast.AST]]:
    """(absolute module name, node) of every import in the module at `path`."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    if path.name == "__init__.py":
        package = package[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found += [(name, node)] + [(f"{name}.{alias.name}", node) for alias in node.names]
    return found


def test_storage_never_imports_the_rules_or_the_store():
    wrong = [
        f"{path.relative_to(PACKAGE.parent)}:{node.lineno} imports {name}"
        for path in sorted((PACKAGE / "storage").rglob("*.py"))
        for name, node in _imports(path)
        if name.startswith(("appliance.core", "appliance.store", "appliance.frontends"))
    ]
    assert wrong == []


def test_the_files_rules_have_no_function_level_imports():
    wrong = []
    for path in sorted((PACKAGE / "core" / "files").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for function in ast.walk(tree):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                wrong += [
                    f"{path.relative_to(PACKAGE.parent)}:{node.lineno} in {function.name}"
                    for node in ast.walk(function)
                    if isinstance(node, (ast.Import, ast.ImportFrom))
                ]
    assert wrong == []


def test_the_relative_imports_are_resolved():
    """The walk above sees what a module imports (a guard against a test that passes vacuously)."""
    names = {name for name, _ in _imports(PACKAGE / "core" / "files" / "service.py")}
    assert "appliance.storage.interface" in names and "appliance.core.audit" in names
