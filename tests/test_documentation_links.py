"""The project's own documents stay true to the repository: README.md, CONTRIBUTING.md
and docs/*.md link only to files that a clone has (never to one outside it, such as a
design kept beside the checkout), their #anchors name headings that exist, and every
module and function docs/architecture.md's rule table names is still in the code."""

from __future__ import annotations

import ast
import re
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = ROOT / "docs" / "architecture.md"
RULES_HEADING = "## Where each rule lives"

# [text](target) and [text](target "title"); images too. Reference definitions: [label]: target
INLINE_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.MULTILINE)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)


def documents() -> list[Path]:
    found = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert ARCHITECTURE in found and all(path.is_file() for path in found), [str(p) for p in found if not p.is_file()]
    return found


def prose(path: Path) -> str:
    """The document without its fenced code blocks (a shell example is not a link)."""
    return FENCE.sub("", path.read_text(encoding="utf-8"))


def links(path: Path) -> list[str]:
    text = prose(path)
    return INLINE_LINK.findall(text) + REFERENCE_LINK.findall(text)


def external(target: str) -> bool:
    return re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) is not None  # https:, mailto:, ...


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, code marks and punctuation dropped,
    spaces to hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading.strip()).lower()
    kept = "".join(ch for ch in text if ch in " -_" or unicodedata.category(ch)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    for line in prose(path).splitlines():
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            base = slug(match.group(1))
            name, number = base, 0
            while name in found:  # a repeated heading: -1, -2, ...
                number += 1
                name = f"{base}-{number}"
            found.add(name)
    return found


def test_every_relative_link_reaches_a_file_in_the_repository():
    wrong = []
    for document in documents():
        for target in links(document):
            if external(target):
                continue
            where, _, fragment = target.partition("#")
            resolved = (document.parent / where).resolve() if where else document
            name = f"{document.relative_to(ROOT)}: {target}"
            if not resolved.is_relative_to(ROOT):
                wrong.append(f"{name} leads outside the repository")
            elif not resolved.exists():
                wrong.append(f"{name}: no such file")
            elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
                wrong.append(f"{name}: no heading #{fragment} in {resolved.relative_to(ROOT)}")
    assert wrong == []


def test_no_document_names_a_file_outside_the_repository():
    """`../somewhere` or a Markdown file named in a code span (say, a design file kept beside
    the checkout) must be one a clone has."""
    wrong = []
    for document in documents():
        text = prose(document)
        for match in re.finditer(r"(?<![\w./-])((?:\.\./)+[\w./-]*)", text):
            resolved = (document.parent / match.group(1)).resolve()
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                wrong.append(f"{document.relative_to(ROOT)}: {match.group(1)}")
        for span in CODE_SPAN.findall(text):
            if span.endswith(".md") and not span.startswith("/") and " " not in span:
                if not any((base / span).resolve().is_file() for base in (document.parent, ROOT)):
                    wrong.append(f"{document.relative_to(ROOT)}: `{span}` is not in the repository")
    assert wrong == []


def test_the_readme_leads_to_the_architecture_and_contributing():
    targets = {target.partition("#")[0] for target in links(ROOT / "README.md")}
    assert {"docs/architecture.md", "CONTRIBUTING.md"} <= targets
    assert "DESIGN.md" not in (ROOT / "README.md").read_text(encoding="utf-8")


def rule_rows() -> list[tuple[list[str], list[str]]]:
    """(paths, names) of each row of the rule table: the code spans of its Module and Where cells."""
    lines = ARCHITECTURE.read_text(encoding="utf-8").splitlines()
    start = lines.index(RULES_HEADING)
    table = []
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            table.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    header, rows = table[0], table[2:]
    module, where = header.index("Module"), header.index("Where")
    assert all(set(cell) <= set("-: ") for cell in table[1]), "the second line of the table is its rule"
    return [(CODE_SPAN.findall(row[module]), CODE_SPAN.findall(row[where])) for row in rows]


def defined(tree: ast.Module, name: str) -> bool:
    """Whether `name` ("function", "Class", "Class.method" or a module's "CONSTANT") is defined in the module."""
    scope: list[ast.stmt] = tree.body
    for part in name.split("."):
        found = [
            node
            for node in scope
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node.name == part
            or isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == part for t in node.targets)
            or isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == part
        ]
        if not found:
            return False
        scope = found[0].body if isinstance(found[0], ast.ClassDef) else []
    return True


def test_every_module_and_name_of_the_rule_table_is_in_the_code():
    rows = rule_rows()
    assert len(rows) >= 30  # the table was read (a reformatted table must not pass vacuously)
    wrong = []
    for paths, names in rows:
        assert len(paths) == 1 and paths[0].startswith("appliance/") and paths[0].endswith(".py"), paths
        assert names, f"{paths[0]}: a row names no function or class"
        path = ROOT / paths[0]
        if not path.is_file():
            wrong.append(f"{paths[0]}: no such file")
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        wrong += [f"{paths[0]}: no def or class {name}" for name in names if not defined(tree, name)]
    assert wrong == []


def test_the_checks_see_what_they_check():
    """The helpers find a link, a heading's anchor and a missing name (else the tests above
    could pass vacuously)."""
    assert "docs/architecture.md" in {target.partition("#")[0] for target in links(ROOT / "CONTRIBUTING.md")}
    assert "where-each-rule-lives" in anchors(ARCHITECTURE)
    assert slug("`core/`: every rule, once") == "core-every-rule-once"
    tree = ast.parse((ROOT / "appliance" / "core" / "files" / "service.py").read_text(encoding="utf-8"))
    assert defined(tree, "FileSession.mode_check") and not defined(tree, "FileSession.no_such_rule")
