"""The docs' references into the package name code that is there. Code moves between modules
(issue 24 split the import-time walker out of ``analysis/extract.py`` into ``analysis/importtime/``)
and a page left naming the old place fails here.

**The rule for a reference.** A code span that is a path to a module of the package
(```analysis/importtime/walker.py```, ```model/facts.py```, with or without ``flake8_importpolicy/``
in front) names a file that exists. The code spans that directly follow it, in the same sentence or
table cell, name what is defined in that file: the run of spans after the path that are Python names
(dotted or not, ``()`` allowed), separated only by a comma, ``and``, ``or``, ``with``, ``/``, a
parenthesis opened after the path, or a parenthetical without code: in
```analysis/importtime/dynamic.py` `DynamicRecorder.import_call` (a site without a target),
`_module_reader``` the run is both symbols. Any other word ends the run, so a span further on in the
sentence (a flag, an option) is not read as a symbol; a symbol named outside a run is not checked.
A name ``X`` is defined when the file has a ``def``, ``class``, assignment target (``self.X``
included) or parameter called ``X`` anywhere; ``A.b`` when a class ``A`` of the file has a member
``b`` (a ``def`` or an assignment in its body, or ``self.b``).

**Fixtures.** The rules table's fixtures column in docs/semantics.md names fixtures that are
directories under ``tests/fixtures/`` (or test files that exist), and so does every fixture-shaped
span (``r01_parent_package``, ``x_unresolved``) of that page.

**The layer table.** docs/design.md's table of layers names, in its modules column, files of the
layer's directory (a directory span followed by a parenthesis opens that subdirectory for the
parenthesis); every module of each layer is named.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "flake8_importpolicy"
PAGES = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
_SPAN = re.compile(r"`([^`\n]+)`")
_LAYERS = "analysis|answers|config|history|model|output|runtime"
_MODULE_PATH = re.compile(rf"(?:flake8_importpolicy/)?(?:{_LAYERS})/[\w/]+\.py")
_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?:\(\))?")
_BETWEEN = re.compile(r"\s*(?:\([^()`]*\))?\s*(?:[,/()]\s*|\b(?:and|or|with)\b\s*)*")
_FIXTURE = re.compile(r"(?:r\d\d|x)_[a-z0-9_]+")


def units(page: Path) -> list[str]:
    """The sentences and table cells of ``page``, outside fenced blocks; a list item or paragraph
    is joined across its lines first."""
    blocks: list[str] = []
    lines: list[str] = []
    for line in _FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        stripped = line.strip()
        starts_item = stripped.startswith(("- ", "* ")) or re.match(r"\d+\. ", stripped)
        if not stripped or stripped.startswith(("#", "|")) or starts_item:
            blocks.append(" ".join(lines))
            lines = []
        if stripped.startswith("|"):
            blocks.extend(re.split(r"(?<!\\)\|", stripped))
        elif stripped and not stripped.startswith("#"):
            lines.append(stripped)
    blocks.append(" ".join(lines))
    sentences: list[str] = []
    for block in blocks:
        # a sentence ends at . ; ! ? followed by a space, outside code spans
        parts = re.split(r"(`[^`]*`)", block)
        sentence = ""
        for part in parts:
            if part.startswith("`"):
                sentence += part
                continue
            pieces = re.split(r"(?<=[.;!?])\s+", part)
            for piece in pieces[:-1]:
                sentences.append(sentence + piece)
                sentence = ""
            sentence += pieces[-1]
        sentences.append(sentence)
    return [sentence for sentence in sentences if "`" in sentence]


def references(unit: str) -> list[tuple[str, list[str]]]:
    """Each module path of ``unit`` with the symbols of the run of spans right after it."""
    found: list[tuple[str, list[str]]] = []
    spans = list(_SPAN.finditer(unit))
    for index, span in enumerate(spans):
        if not _MODULE_PATH.fullmatch(span.group(1)):
            continue
        symbols: list[str] = []
        end, depth = span.end(), 0
        for following in spans[index + 1:]:
            between = unit[end:following.start()]
            depth += between.count("(") - between.count(")")
            if not _BETWEEN.fullmatch(between) or depth < 0:  # `)` closes a parenthesis around the path
                break
            if not _NAME.fullmatch(following.group(1)):
                break
            symbols.append(following.group(1).removesuffix("()"))
            end = following.end()
        found.append((span.group(1).removeprefix("flake8_importpolicy/"), symbols))
    return found


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _stored(node: ast.AST) -> set[str]:
    """The names ``node``'s assignments and parameters store, ``self.x`` as ``x``."""
    names: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            names.add(sub.id)
        elif isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store):
            if isinstance(sub.value, ast.Name) and sub.value.id == "self":
                names.add(sub.attr)
        elif isinstance(sub, ast.arg):
            names.add(sub.arg)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(sub.name)
    return names


def _members(cls: ast.ClassDef) -> set[str]:
    own = {
        statement.name for statement in cls.body
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }
    for statement in cls.body:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            own |= {target.id for target in targets if isinstance(target, ast.Name)}
    self_attributes = {
        sub.attr for sub in ast.walk(cls)
        if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store)
        and isinstance(sub.value, ast.Name) and sub.value.id == "self"
    }
    return own | self_attributes


def defines(path: Path, symbol: str) -> bool:
    """Whether ``path`` defines ``symbol`` (``X``: anywhere; ``A.b``: as a member of class ``A``)."""
    tree = _tree(path)
    *owners, name = symbol.split(".")
    if not owners:
        return name in _stored(tree)
    scopes: list[ast.AST] = [tree]
    for owner in owners:
        scopes = [
            node for scope in scopes for node in ast.walk(scope)
            if isinstance(node, ast.ClassDef) and node.name == owner
        ]
    return any(name in _members(scope) for scope in scopes if isinstance(scope, ast.ClassDef))


def broken_references(page: Path) -> list[str]:
    broken = []
    for unit in units(page):
        for module, symbols in references(unit):
            path = PACKAGE / module
            if not path.is_file():
                broken.append(f"{module}: no such file")
                continue
            broken.extend(
                f"{module} {symbol}: not defined there" for symbol in symbols if not defines(path, symbol)
            )
    return broken


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_module_paths_and_their_symbols_exist(page: Path) -> None:
    broken = broken_references(page)
    assert not broken, broken


def test_the_reference_rule() -> None:
    """What the rule reads as a module's symbols, and what it leaves alone."""
    unit = (
        "`analysis/importtime/walker.py` `_ImportTimeVisitor.visit_stmt`, with `_if` (a test) and "
        "`_try()`, records `guarded`; `analysis/graph.py` `iter_breadth_first` (`too_deep`) and"
    )
    assert references(unit) == [
        ("analysis/importtime/walker.py", ["_ImportTimeVisitor.visit_stmt", "_if", "_try"]),
        ("analysis/graph.py", ["iter_breadth_first", "too_deep"]),
    ]
    assert references("(`analysis/extract.py`: `x-y`, `_z`)") == [("analysis/extract.py", [])]
    assert references("(`model/ignore.py`), `why`'s result") == [("model/ignore.py", [])]
    walker = PACKAGE / "analysis" / "importtime" / "walker.py"
    assert defines(walker, "_ImportTimeVisitor._try")
    assert defines(walker, "_ImportTimeVisitor.flow")  # self.flow
    assert not defines(walker, "_ImportTimeVisitor._bind")
    assert not defines(walker, "_NoSuchClass._try")
    assert units(REPO / "docs" / "semantics.md")  # the page has sentences with code spans


def _rules_table_fixtures() -> list[str]:
    text = (REPO / "docs" / "semantics.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if re.match(r"\| \[\d+\]\(#rule-", line)]
    assert len(rows) >= 19, "the rules table: one row per rule"
    return [name for row in rows for name in _SPAN.findall(row.rstrip(" |").rsplit("|", 1)[1])]


def test_the_rules_tables_fixtures_exist() -> None:
    missing = [
        name for name in _rules_table_fixtures()
        if not ((REPO / "tests" / "fixtures" / name).is_dir() or (REPO / name).is_file())
    ]
    assert not missing, missing


def test_the_fixtures_semantics_names_exist() -> None:
    text = _FENCE.sub("", (REPO / "docs" / "semantics.md").read_text(encoding="utf-8"))
    named = {span for span in _SPAN.findall(text) if _FIXTURE.fullmatch(span)}
    assert named
    missing = sorted(name for name in named if not (REPO / "tests" / "fixtures" / name).is_dir())
    assert not missing, missing


def _layer_rows() -> list[tuple[Path, str]]:
    """docs/design.md's layer table: each row's directory and its modules cell."""
    rows = []
    text = (REPO / "docs" / "design.md").read_text(encoding="utf-8")
    table = text.split("| layer (top to bottom) |", 1)[1].split("\n\n", 1)[0]
    for line in table.splitlines()[2:]:
        cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
        first = _SPAN.search(cells[0])
        if first and first.group(1).endswith("/"):
            rows.append((PACKAGE / first.group(1), cells[1]))
        else:  # the package's own modules: `codes.py`, `codes_help.py`
            rows.append((PACKAGE, f"{cells[0]} {cells[1]}"))
    return rows


def named_modules(directory: Path, cell: str) -> set[Path]:
    """The files ``cell`` names, a ``sub/`` span followed by ``(`` naming files of ``sub`` until the
    parenthesis closes."""
    named: set[Path] = set()
    stack = [(directory, 0)]
    last_directory: str | None = None
    depth = 0
    for piece in re.split(r"(`[^`]*`)", cell):
        if piece.startswith("`"):
            name = piece.strip("`")
            if re.fullmatch(r"\w+\.py", name):  # a file of this layer, not `tools/x.py`
                named.add(stack[-1][0] / name)
            last_directory = name if name.endswith("/") else None
            continue
        for char in piece:
            if char == "(":
                depth += 1
                if last_directory is not None:
                    stack.append((stack[-1][0] / last_directory, depth))
            elif char == ")":
                if len(stack) > 1 and stack[-1][1] == depth:
                    stack.pop()
                depth -= 1
            if not char.isspace():
                last_directory = None
    return named


def test_the_layer_table_names_every_module_that_is_there() -> None:
    named: set[Path] = set()
    for directory, cell in _layer_rows():
        named |= named_modules(directory, cell)
    missing = sorted(str(path.relative_to(PACKAGE)) for path in named if not path.is_file())
    assert not missing, f"named in docs/design.md, not there: {missing}"
    unnamed = sorted(
        str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py" and path not in named
    )
    assert not unnamed, f"modules docs/design.md's layer table does not name: {unnamed}"
