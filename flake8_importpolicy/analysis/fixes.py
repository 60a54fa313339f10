"""Planning and verifying the fixes of a heavy re-export (``importpolicy fix``, editors' code actions).

For an IPL001 whose first hop is a re-export in a light package's ``__init__.py``
(:func:`~flake8_importpolicy.model.fixes.find_reexport_hop`):

- **lazy re-export**: the statement is replaced by an explicit map, and a PEP 562 module
  ``__getattr__`` loads a name on first access (merged into the package's own ``__getattr__`` when it
  has one; a ``__dir__`` is added when it has none, so ``dir(pkg)`` still lists the names;
  ``__all__`` is kept). When every target version is 3.15 or newer the statement becomes
  ``lazy from .x import name`` (PEP 810) instead. Not offered when the package's own code uses a
  name (a module's global lookups do not call its ``__getattr__``: PEP 562), or when a first-party
  ``from pkg import *`` would lose it (no ``__all__``).
- **direct imports**: the statement is removed (and its names from a literal ``__all__``), and
  every first-party importer is rewritten: ``from pkg import name`` to ``from pkg.x import name``,
  ``pkg.name`` after ``import pkg`` to ``pkg.x.name`` with ``import pkg.x`` added. Importers that
  cannot be rewritten (``getattr(pkg, name)`` with a name that is not a literal, an installed module
  outside the source roots and the project, also one installed in a virtual environment inside the
  project's directory) are listed in :attr:`Fix.blockers`.

Every edit is a replacement of a range of the original text: formatting, comments and the rest of
each file stay byte-identical. Before a fix is returned the engine checks the patched tree in memory
(the sources as editor buffers, :class:`~flake8_importpolicy.analysis.engine.PolicyEngine`'s
``overrides``): a fix after which the finding still shows, or that adds a finding or a module that
does not parse, is not offered.
"""

from __future__ import annotations

import ast
import dataclasses
import io
import os
import re
import sys
import tokenize
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from flake8_importpolicy.analysis.engine import PolicyEngine
from flake8_importpolicy.model.findings import Report, Unresolved, Violation
from flake8_importpolicy.model.fixes import (
    NOT_AT_TOP_LEVEL,
    Fix,
    FixKind,
    Importer,
    TextEdit,
    find_reexport_hop,
    fix_refusals,
    module_level_binding_lines,
    reexport_statements,
    version_refusals,
)
from flake8_importpolicy.model.interpreter import InterpreterInfo
from flake8_importpolicy.model.paths import module_name_under
from flake8_importpolicy.model.policy import Policy
from flake8_importpolicy.model.ports import FactsCache
from flake8_importpolicy.model.reading import read_regular_file

__all__ = ["FixOutcome", "apply_edits", "find_fixes", "find_fixes_at", "fix_findings"]

_SKIPPED_DIRECTORIES = frozenset({"node_modules", "site-packages", "dist-packages", "build", "dist"})
"""Directories outside the source roots whose files are not rewritten (their importers are listed)."""


@dataclass(frozen=True)
class _Edit:
    """A replacement of ``text[start:end]`` in one file (character offsets)."""

    path: Path
    start: int
    end: int
    new_text: str


@dataclass(frozen=True)
class _Moved:
    """A name the re-export binds: where it comes from."""

    name: str  # the name bound in the package
    module: str  # the submodule it is loaded from
    attribute: str | None  # the attribute of that module, None: the module itself


_LINE_DIRECTIVE = re.compile(
    r"#\s*(noqa(:\s*[A-Z]+[0-9]+([,\s]+[A-Z]+[0-9]+)*)?|type:\s*ignore(\[[^\]]*\])?"
    r"|pragma:\s*no\s*cover|isort:\s*skip|fmt:\s*(skip|on|off)|nosec(\s+B[0-9]+([,\s]+B[0-9]+)*)?"
    r"|(pylint|pyright|mypy|ruff):\s*[\w\-=,\[\] ]*)\s*,?\s*", re.IGNORECASE)
"""A comment that is nothing but a linter's directive for its own line (flake8's ``# noqa``, a
type checker's ``# type: ignore[...]``, coverage's, isort's, black's, bandit's, pylint's): removed
with the statement it is about (:meth:`_Source.kept_comments`)."""


class _Source:
    """One file's text, its syntax tree and the conversions between ast positions and offsets."""

    def __init__(self, path: Path, data: bytes) -> None:
        self.path = path
        # the PEP 263 encoding (utf-8-sig when a BOM starts the file: the text is what follows
        # it, as ast counts line 1's columns); :meth:`encode` gives the file's bytes back
        self.encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
        self.text = data.decode(self.encoding)
        self.tree = ast.parse(data, str(path), feature_version=sys.version_info[:2])
        # the file's line break: its first one (a lone CR in an old Mac file), LF when it has none
        first_break = re.search(r"\r\n|\r|\n", self.text)
        self.newline = first_break.group() if first_break is not None else "\n"
        self._starts = [0]
        for match in re.finditer(r"\r\n|\r|\n", self.text):
            self._starts.append(match.end())
        # the lines as ast and tokenize count them: a form feed or U+2028 is not a line break
        self._lines = [self.text[start:end] for start, end in zip(
            self._starts, [*self._starts[1:], len(self.text)])]

    def encode(self, text: str) -> bytes:
        """``text`` (this file's text, edited) as the file's bytes: in its encoding, with its BOM."""
        return text.encode(self.encoding)

    def offset(self, line: int, col_bytes: int) -> int:
        """The character offset of an ast position (1-based line, UTF-8 byte column)."""
        text = self._lines[line - 1] if line - 1 < len(self._lines) else ""
        return self._starts[line - 1] + len(text.encode("utf-8")[:col_bytes].decode("utf-8", "replace"))

    def position(self, offset: int) -> tuple[int, int]:
        """``(1-based line, 0-based character column)`` of a character offset."""
        low, high = 0, len(self._starts) - 1
        while low < high:
            middle = (low + high + 1) // 2
            if self._starts[middle] <= offset:
                low = middle
            else:
                high = middle - 1
        return low + 1, offset - self._starts[low]

    def line_start(self, line: int) -> int:
        return self._starts[line - 1] if line - 1 < len(self._starts) else len(self.text)

    def span(self, node: ast.stmt | ast.expr) -> tuple[int, int]:
        assert node.end_lineno is not None and node.end_col_offset is not None
        return (self.offset(node.lineno, node.col_offset),
                self.offset(node.end_lineno, node.end_col_offset))

    def whole_lines(self, node: ast.stmt) -> tuple[int, int] | None:
        """The offsets of the lines a statement takes, line breaks included, when nothing else is on
        them (a comment after it goes with it); None when it shares a line."""
        start, end = self.span(node)
        first = self.line_start(node.lineno)
        assert node.end_lineno is not None
        after = self.line_start(node.end_lineno + 1)
        if self.text[first:start].strip():
            return None
        rest = self.text[end:after].strip()
        if rest and not rest.startswith("#"):
            return None
        return first, after

    def kept_comments(self, node: ast.stmt) -> list[str]:
        """The comments on the lines of a statement a fix removes (``# re-export``, a name's own
        comment in parentheses), in order, that stay when it goes: all but a bare linter directive
        for that line (:data:`_LINE_DIRECTIVE`: ``# noqa: F401``, ``# type: ignore``), which has
        no line left to speak of. One with words of its own (``# noqa: F401 keep``) stays whole."""
        assert node.end_lineno is not None
        first, after = self.line_start(node.lineno), self.line_start(node.end_lineno + 1)
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(self.text[first:after]).readline))
        except (tokenize.TokenError, IndentationError, SyntaxError):
            return []
        return [t.string.rstrip() for t in tokens if t.type == tokenize.COMMENT
                and not _LINE_DIRECTIVE.fullmatch(t.string.rstrip())]

    def indent(self, node: ast.stmt) -> str:
        return self.text[self.line_start(node.lineno):self.offset(node.lineno, node.col_offset)]

    @property
    def indent_unit(self) -> str:
        """One level of the file's indentation: its first indented block's (a tab, two spaces),
        four spaces when it has none."""
        try:
            for token in tokenize.generate_tokens(io.StringIO(self.text).readline):
                if token.type == tokenize.INDENT:
                    return token.string
        except (tokenize.TokenError, IndentationError, SyntaxError):
            pass
        return "    "


def find_fixes(
    policy: Policy,
    violation: Violation,
    *,
    report: Report | None = None,
    overrides: Mapping[Path, bytes] | None = None,
    facts_cache: FactsCache | None = None,
    interpreter_info: InterpreterInfo | None = None,
    interpreter: str | None = None,
    target_versions: Iterable[tuple[int, int]] = (),
    verify: bool = True,
    why_not: dict[FixKind, str] | None = None,
) -> list[Fix]:
    """The fixes that remove ``violation`` (an IPL001 of ``policy``), verified; the code actions of
    an editor. Empty when its first hop is not a re-export in a light package's ``__init__.py``.

    Args:
        policy: the policy the violation was found with.
        violation: the finding.
        report: the report it belongs to (computed when None, or when a baseline filtered it):
            the patched tree's report is compared with it.
        overrides: ``{path: bytes}`` of unsaved editor buffers, read instead of the files.
        facts_cache, interpreter_info, interpreter, target_versions: as for
            :class:`~flake8_importpolicy.analysis.engine.PolicyEngine`.
        verify: check the patched tree with the engine (a fix that fails is left out).
        why_not: filled with ``{kind: why}`` for each fix the planner refused to write (a
            ``__getattr__`` bound under an ``if``), when given.

    Returns:
        A lazy re-export fix first when one applies, then the direct-imports fix; the latter is
        returned with its :attr:`~flake8_importpolicy.model.fixes.Fix.blockers` when importers
        cannot be rewritten (and is then not verified).

    Raises:
        flake8_importpolicy.model.errors.InterpreterError: the interpreter cannot be queried.
    """
    if find_reexport_hop(violation) is None:
        return []
    try:
        refusals = fix_refusals(violation, _Reader(overrides or {})(violation.path),
                                tuple(target_versions) or policy.settings.target_versions)
    except OSError:
        refusals = dict.fromkeys(FixKind, NOT_AT_TOP_LEVEL)
    if len(refusals) == len(FixKind):
        if why_not is not None:
            why_not.update(refusals)
        return []
    options = _EngineOptions(interpreter, tuple(target_versions), facts_cache, interpreter_info)
    with options.engine(policy, overrides) as engine:
        planner = _Planner(policy, engine, dict(overrides or {}))
        # the versions the engine checks for (the interpreter's when none are given)
        planner.refusals.update(refusals)
        planner.refusals.update(version_refusals(engine.target.versions))
        fixes = planner.plan(violation)
        if why_not is not None:
            why_not.update(planner.refusals)
        if not verify or not fixes:
            return fixes
        if report is None or report.baselined:
            # the patched tree is checked whole: a report a baseline filtered would make each
            # baselined finding look new (SARIF's fixes under a baseline: issue 27)
            report = engine.check()
        info = engine.interpreter
    options = dataclasses.replace(options, interpreter_info=info)
    verified = []
    for fix in fixes:
        if fix.blockers:
            verified.append(fix)
            continue
        failed = _verify(policy, violation, report, fix, planner.read, overrides or {}, options)
        if failed is None:
            verified.append(_replace_verified(fix))
        elif why_not is not None:
            why_not.setdefault(fix.kind, failed)
    return verified


def _replace_verified(fix: Fix) -> Fix:
    return dataclasses.replace(fix, verified=True)


@dataclass(frozen=True)
class _EngineOptions:
    """What every engine of one ``find_fixes`` call shares: the finding's and the patched tree's."""

    interpreter: str | None
    target_versions: tuple[tuple[int, int], ...]
    facts_cache: FactsCache | None
    interpreter_info: InterpreterInfo | None

    def engine(self, policy: Policy, overrides: Mapping[Path, bytes] | None) -> PolicyEngine:
        return PolicyEngine(
            policy, overrides=overrides, interpreter=self.interpreter,
            target_versions=self.target_versions, facts_cache=self.facts_cache,
            interpreter_info=self.interpreter_info)


def _verify(policy: Policy, violation: Violation, report: Report, fix: Fix,
            read: _Reader, overrides: Mapping[Path, bytes], options: _EngineOptions) -> str | None:
    """None when the patched tree clears the finding and adds no finding and no unanalysable
    module; else why not, naming the place (``after it, pkg/__init__.py:2 would still reach heavy
    through pkg.x (pkg -> pkg.y -> pkg.x -> heavy)``)."""
    patched = dict(overrides)
    patched.update(apply_edits(fix.edits, read))
    lazy_keyword = fix.kind is FixKind.LAZY_REEXPORT and any(
        edit.new_text == "lazy " for edit in fix.edits)
    for path, data in patched.items():
        if path in overrides and overrides[path] == data:
            continue
        if lazy_keyword and sys.version_info < (3, 15):
            continue  # the engine's own parse (it removes the soft keyword) is the check
        try:
            compile(data, str(path), "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as exc:
            return f"the patched {policy.relpath(path)} would not compile ({exc})"
    with options.engine(policy, patched) as engine:
        after = engine.check()
    # the light package's own findings: none that still reaches the fixed statement's submodule,
    # through the statement or another first hop (``from .y import thing``, covered by the
    # re-export, when y's ``from . import name`` now loads the lazy name); another statement's
    # finding the fixed one covered (``from .z import c``, z heavy too) is its own, fixed next
    first = violation.chain[0].imported
    still = [found for found in after.violations
             if found.light == violation.light and found.path == violation.path
             and any(hop.imported == first for hop in found.chain)]
    if still:
        return "after it, " + "; ".join(
            f"{policy.relpath(found.path)}:{_line_before(fix.edits, found.path, found.line)} would "
            f"still reach {found.heavy} through "
            f"{first} ({' -> '.join([found.light, *(str(h.imported) for h in found.chain)])})"
            for found in still)
    # nor import-time code of the light package's that cannot be resolved and was not there before
    # (``from . import name`` in a module the package imports: its ``__getattr__``, loading a name)
    sites = {_site_identity(u) for u in report.unresolved}
    new_sites = [u for u in after.unresolved
                 if u.light == violation.light and _site_identity(u) not in sites]
    if new_sites:
        site = new_sites[0].site
        chain = " -> ".join([violation.light, *(str(h.imported) for h in new_sites[0].chain)])
        where = (f"{policy.relpath(site.path)}:{_line_before(fix.edits, site.path, site.line)}"
                 if site.path is not None else site.module)
        if site.path == violation.path and fix.kind is FixKind.LAZY_REEXPORT:
            where = "the __getattr__ the fix writes (a lazy name loaded while the package runs)"
        return (f"after it, {violation.light} would run import-time code that cannot be resolved, "
                f"{site.detail or site.construct}, at {where} ({chain})")
    before = {(v.code.id, v.light, str(v.heavy)) for v in report.violations}
    added = [v for v in after.violations if (v.code.id, v.light, str(v.heavy)) not in before]
    if added:
        return (f"it would add a finding: {policy.relpath(added[0].path)}:{added[0].line}: "
                f"{added[0].code.id} {added[0].light} -> {added[0].heavy}")
    problems = {p.identity for p in report.problems}
    new_problems = [p for p in after.problems if p.identity not in problems]
    if new_problems:
        return f"it would add a problem: {new_problems[0].code.id} {new_problems[0].message}"
    return None


def _line_before(edits: Iterable[TextEdit], path: Path, line: int) -> int:
    """The line of the file before ``edits`` at which the patched file's ``line`` was (a line the
    edits wrote: the first line of the range they replaced)."""
    shift = 0  # how many lines the edits so far added
    for edit in sorted(e for e in edits if e.path == path):
        start, end = edit.start[0], edit.end[0]
        written = len(re.findall(r"\r\n|\r|\n", edit.new_text))
        if line < start + shift:
            break
        if line < start + shift + written:
            return start
        if line == start + shift + written:  # the line the edit ends on: its rest is there
            return end
        shift += written - (end - start)
    return line - shift


def _site_identity(unresolved: Unresolved) -> tuple[str, ...]:
    """An unresolved site across edits that move lines: its light module, the modules of its chain,
    and what it is."""
    site = unresolved.site
    return (unresolved.light, *(str(h.imported) for h in unresolved.chain), site.module,
            str(site.construct), site.detail)


class _Reader:
    """Files as the fix sees them: editor buffers first, then the disk (cached)."""

    def __init__(self, overrides: Mapping[Path, bytes]) -> None:
        self._overrides = {Path(p).resolve(): data for p, data in overrides.items()}
        self._sources: dict[Path, _Source | None] = {}

    def __call__(self, path: Path) -> bytes:
        found = self._overrides.get(path.resolve())
        return found if found is not None else read_regular_file(path)[1]

    def source(self, path: Path) -> _Source | None:
        if path not in self._sources:
            try:
                self._sources[path] = _Source(path, self(path))
            except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
                self._sources[path] = None
        return self._sources[path]


def apply_edits(edits: Iterable[TextEdit], read: _Reader | None = None) -> dict[Path, bytes]:
    """The files ``edits`` change, with the edits applied: ``{path: new bytes}``.

    Args:
        edits: non-overlapping edits (:class:`~flake8_importpolicy.model.fixes.TextEdit`).
        read: how a file is read (default: from disk).

    Raises:
        OSError: a file cannot be read. UnicodeDecodeError: it does not parse and is not UTF-8.
    """
    reader = read or _Reader({})
    by_file: dict[Path, list[TextEdit]] = {}
    for edit in edits:
        by_file.setdefault(edit.path, []).append(edit)
    changed: dict[Path, bytes] = {}
    for path, file_edits in by_file.items():
        source = reader.source(path)
        text = source.text if source is not None else reader(path).decode("utf-8")
        starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]

        def offset(position: tuple[int, int]) -> int:
            line, col = position
            return (starts[line - 1] if line - 1 < len(starts) else len(text)) + col

        # from the end: a replacement at an offset before an insertion at the same offset
        for edit in sorted(file_edits, key=lambda e: (e.start, e.end), reverse=True):
            text = text[:offset(edit.start)] + edit.new_text + text[offset(edit.end):]
        changed[path] = source.encode(text) if source is not None else text.encode("utf-8")
    return changed


class _Project:
    """The project's own files and the installed modules that import from it: where importers of a
    moved name are looked for."""

    def __init__(self, policy: Policy, engine: PolicyEngine, read: _Reader) -> None:
        self.policy = policy
        self.engine = engine
        self.read = read
        self._installed: list[tuple[Path, str, bytes]] | None = None
        self._left_out: set[str] = set()

    def files(self, exclude: set[Path]) -> Iterator[Path]:
        """Every ``.py`` file of the source roots and of the policy's directory, once: virtual
        environments and the cache left out, and outside the source roots hidden, build and
        ``node_modules`` directories too (:meth:`left_out_importers` lists their importers)."""
        seen: set[Path] = set(p.resolve() for p in exclude)
        cache = os.path.realpath(self.policy.settings.cache_dir)
        roots = {os.path.realpath(r) for r in self.policy.settings.source_roots}
        for top in (*self.policy.settings.source_roots, self.policy.root):
            inside = os.path.realpath(top) in roots
            for directory, dirs, files in os.walk(top):
                dirs[:] = sorted(
                    d for d in dirs
                    if d != "__pycache__" and os.path.realpath(os.path.join(directory, d)) != cache
                    and not os.path.exists(os.path.join(directory, d, "pyvenv.cfg"))
                )
                if not inside:
                    left = [d for d in dirs if d.startswith(".") or d in _SKIPPED_DIRECTORIES]
                    self._left_out.update(os.path.join(directory, d) for d in left)
                    dirs[:] = [d for d in dirs if d not in left]
                for name in sorted(files):
                    if name.endswith(".py"):
                        path = Path(directory, name).resolve()
                        if path not in seen:
                            seen.add(path)
                            yield path

    def module_name(self, path: Path) -> str | None:
        return module_name_under(self.policy.settings.source_roots, path)

    def left_out_importers(self, light: str, names: Mapping[str, _Moved]) -> list[Importer]:
        """The importers of a moved name in the directories :meth:`files` leaves out (outside the
        source roots: build output, ``node_modules``, hidden directories such as ``.github``):
        listed, not rewritten."""
        own = set(self.files(exclude=set()))
        found: list[Importer] = []
        for top in sorted(self._left_out):
            for directory, dirs, files in os.walk(top):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__"
                                 and not os.path.exists(os.path.join(directory, d, "pyvenv.cfg")))
                for name in sorted(f for f in files if f.endswith(".py")):
                    path = Path(directory, name).resolve()
                    try:
                        data = self.read(path)
                    except OSError:
                        continue
                    module = self.module_name(path) or ""
                    line = None if path in own else _import_of_moved(
                        data, path, module, light, names, is_package=name == "__init__.py")
                    if line is not None:
                        found.append(Importer(path, line, module, (
                            "in a directory the fix does not rewrite (outside the source roots: "
                            "build output, node_modules or a hidden directory)")))
        return found

    def star_importers(self, light: str) -> list[tuple[Path, int]]:
        """``(file, line)`` of every first-party ``from light import *``."""
        found = []
        for path in self.files(exclude=set()):
            try:
                data = self.read(path)
            except OSError:
                continue
            if b"*" not in data:
                continue
            source = self.read.source(path)
            if source is None:
                continue
            module = self.module_name(path) or ""
            for node in ast.walk(source.tree):
                if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names) \
                        and _resolve_from(module, node, is_package=path.name == "__init__.py") == light:
                    found.append((path, node.lineno))
        return found

    def submodule_importers(self, submodule: str) -> list[tuple[Path, int]]:
        """``(file, line)`` of every first-party statement that imports ``submodule`` or a module
        inside it (``import pkg.x``, ``from pkg.x import y``, ``from .x.y import z``), outside
        ``submodule`` itself."""
        found: list[tuple[Path, int]] = []
        last = submodule.rpartition(".")[2].encode()
        for path in self.files(exclude=set()):
            try:
                data = self.read(path)
            except OSError:
                continue
            if last not in data:
                continue
            source = self.read.source(path)
            module = self.module_name(path) or ""
            if source is None or _within(module, submodule):
                continue
            found.extend((path, line) for line in _submodule_import_lines(
                source.tree, module, submodule, is_package=path.name == "__init__.py"))
        return found

    def submodule_shadows(self, violation: Violation, moved: Sequence[_Moved]) -> list[Importer]:
        """The first-party imports that would change what a lazy name means: a name bound to an
        attribute (``from .norm import norm``: a function) that is also the name of a submodule of
        the package. Importing that submodule binds it on the package (the import system's
        ``setattr(parent, child, module)``, docs/semantics.md rule 2); eagerly, the re-export bound
        the attribute over it and a later import of the loaded submodule binds nothing, but lazily
        an ``import pkg.norm`` that runs before the first access leaves the module there, and
        ``__getattr__`` is never asked: ``pkg.norm`` is a module where it was a function. The
        package's ``__init__.py`` is not one: its re-export is what the fix replaces, and another
        import of the submodule there keeps the finding (verification refuses the fix)."""
        light = violation.light
        found: list[Importer] = []
        for name in moved:
            submodule = f"{light}.{name.name}"
            if name.attribute is None or self.engine.index.resolve_module(submodule).kind == "unresolved":
                continue
            found.extend(Importer(
                path, line, self.module_name(path) or "",
                f"it imports the submodule {submodule}, which then binds {submodule} to the module "
                f"before the lazy {name.name} ({name.module}.{name.attribute}) is loaded: the name "
                "would mean the module")
                for path, line in self.submodule_importers(submodule)
                if path != violation.path.resolve())
            found.extend(Importer(
                path, line, module,
                f"{_INSTALLED}: it imports the submodule {submodule}, which then binds {submodule} "
                f"to the module before the lazy {name.name} ({name.module}.{name.attribute}) is "
                "loaded: the name would mean the module")
                for path, line, module in self.outside_submodule_importers(submodule))
        return found

    def star_reexporters(self, light: str, names: Mapping[str, _Moved]) -> list[Importer]:
        """The first-party importers of a moved name from a module that re-exports it by
        ``from light import *`` without using it (the star import keeps no name it does not use,
        so the name is gone from that module too): ``from app.helper import name``."""
        found: list[Importer] = []
        for star_path, _ in self.star_importers(light):
            source = self.read.source(star_path)
            helper = self.module_name(star_path)
            if source is None or helper is None:
                continue
            used = set(_used_names(source.tree, ()))
            lost = {n: m for n, m in names.items() if m.attribute is not None and n not in used}
            for path in self.files(exclude={star_path}) if lost else ():
                try:
                    data = self.read(path)
                except OSError:
                    continue
                if helper.rpartition(".")[2].encode() not in data:
                    continue
                line = _import_of_moved(data, path, self.module_name(path) or "", helper, lost,
                                        is_package=path.name == "__init__.py")
                if line is not None:
                    found.append(Importer(
                        path, line, self.module_name(path) or "",
                        f"it imports a moved name from {helper}, which re-exports it by from "
                        f"{light} import * (line {_}) and would no longer bind it"))
        return found

    def namespace_readers(self, light: str, names: Mapping[str, _Moved],
                          exclude: set[Path]) -> list[Importer]:
        """The first-party modules that read the package's namespace dictionary
        (:func:`_namespace_dict_reads`: a registry iterating ``vars(pkg)``, ``pkg.__dict__["a"]``):
        neither fix keeps a moved name there."""
        found: list[Importer] = []
        last = light.rpartition(".")[2].encode()
        for path in self.files(exclude=exclude):
            try:
                data = self.read(path)
            except OSError:
                continue
            if last not in data or (b"__dict__" not in data and b"vars" not in data):
                continue
            source = self.read.source(path)
            if source is None:
                continue  # a module that does not parse is a blocker of its own (direct imports)
            module = self.module_name(path) or ""
            bound = _package_names(source.tree, module, light, is_package=path.name == "__init__.py")
            found.extend(Importer(path, line, module, f"it reads the namespace dictionary of {light} "
                                  "(vars, __dict__), which never asks its __getattr__ (PEP 562): "
                                  "the moved names are not in it")
                         for line in _namespace_dict_reads(source.tree, bound, names))
        return found

    def outside_importers(self, light: str, names: Mapping[str, _Moved]) -> list[Importer]:
        """Installed modules (on the interpreter's path, outside the source roots and the project)
        that import a moved name from the light package: they cannot be rewritten."""
        named = _dotted_name_pattern(light)
        found: list[Importer] = []
        for path, module, data in self.installed_modules():
            if not named.search(data) or not any(n.encode() in data for n in names):
                continue  # a cheap filter (each form the parse finds names the package in full)
            line = _import_of_moved(data, path, module, light, names,
                                    is_package=path.name == "__init__.py")
            if line is not None:
                found.append(Importer(path, line, module, _INSTALLED))
        return found

    def outside_submodule_importers(self, submodule: str) -> list[tuple[Path, int, str]]:
        """``(file, line, module)`` of every installed module's statement that imports
        ``submodule`` or a module inside it (absolute forms, and relative ones inside the package)."""
        named = _dotted_name_pattern(submodule)
        found = []
        for path, module, data in self.installed_modules():
            if not named.search(data):
                continue  # a cheap filter: the parse below decides
            try:
                tree = ast.parse(data, str(path))
            except (SyntaxError, ValueError):
                continue
            lines = _submodule_import_lines(tree, module, submodule,
                                            is_package=path.name == "__init__.py")
            first = next(lines, None)
            if first is not None:
                found.append((path, first, module))
        return found

    def installed_modules(self) -> Iterator[tuple[Path, str, bytes]]:
        """``(file, module name, bytes)`` of every ``.py`` file on the interpreter's path that is
        not one of the project's own (:meth:`files`): the installed packages, also those of a
        virtual environment inside the project's directory (``.venv/lib/.../site-packages``),
        which the project's files leave out. Read once; only the files that name one of the
        project's top-level packages are kept (an import of one names it)."""
        if self._installed is None:
            self._installed = self._read_installed()
        yield from self._installed

    def _read_installed(self) -> list[tuple[Path, str, bytes]]:
        tops = [top.encode() for top in self.policy.first_party_tops]
        found: list[tuple[Path, str, bytes]] = []
        info = self.engine.interpreter
        stdlib = tuple(os.path.realpath(d) for d in info.stdlib_dirs)
        roots = tuple(os.path.realpath(r) for r in self.policy.settings.source_roots)
        own = set(self.files(exclude=set()))
        for entry in info.sys_path:
            real = os.path.realpath(entry)
            if not os.path.isdir(real) or real.startswith(stdlib) and not _is_site(real):
                continue
            if real == os.path.realpath(self.policy.root) or any(
                    real == p or real.startswith(p + os.sep) for p in roots):
                continue  # the project's own files: rewritten, not installed
            for directory, dirs, files in os.walk(real):
                dirs[:] = [d for d in dirs if d != "__pycache__" and not d.endswith(".dist-info")]
                for name in files:
                    if not name.endswith(".py"):
                        continue
                    path = Path(directory, name)
                    if path.resolve() in own:
                        continue
                    try:
                        data = read_regular_file(path)[1]
                    except OSError:
                        continue
                    if not any(top in data for top in tops):
                        continue
                    relative = Path(os.path.relpath(path, real)).with_suffix("").parts
                    module = ".".join(relative[:-1] if relative[-1] == "__init__" else relative)
                    found.append((path, module, data))
        return found


def _submodule_import_lines(tree: ast.Module, module: str, submodule: str, *,
                            is_package: bool) -> Iterator[int]:
    """The lines, in ``ast.walk`` order, of ``module``'s statements that import ``submodule`` or a
    module inside it (``import pkg.x``, ``from pkg.x import y``, ``from .x.y import z``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            hit = any(_within(alias.name, submodule) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_from(module, node, is_package=is_package)
            hit = base is not None and _within(base, submodule)
        else:
            continue
        if hit:
            yield node.lineno


_INSTALLED = "an installed module outside the source roots and the project"


def _dotted_name_pattern(module: str) -> re.Pattern[bytes]:
    """The dotted name ``module`` in a source's bytes, not as part of a longer name (``pkg`` is
    not in ``pkg_resources``; ``pkg.ops`` is in ``pkg.ops.x``)."""
    return re.compile(rb"(?<![\w.])" + re.escape(module.encode()) + rb"(?!\w)")


def _side_named(data: bytes, path: Path, light: str, wanted: Mapping[str, _Moved]) -> str:
    """Which of the ``wanted`` submodules a module names through the package (``light.x``): the
    first one read as an attribute, else the first one wanted."""
    try:
        tree = ast.parse(data, str(path))
    except (SyntaxError, ValueError):
        tree = None
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Attribute) and node.attr in wanted:
            return f"{light}.{node.attr}"
    return f"{light}.{next(iter(wanted))}"


def _import_of_moved(data: bytes, path: Path, module: str, light: str, names: Mapping[str, _Moved],
                     *, is_package: bool) -> int | None:
    """The line of the first statement of a module (its source ``data``) that imports a moved name
    of ``light``: ``from light import name`` (or ``*``; relative forms resolved in ``module``), or
    ``import light`` / a submodule or a parent of it, with ``.name`` read somewhere. None when
    there is none, or when the source does not parse (then nothing can be known of it: an
    installed module that does not compile does not run either)."""
    try:
        tree = ast.parse(data, str(path))
    except (SyntaxError, ValueError):
        return None
    imports_light: int | None = None
    reads = False
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if _resolve_from(module, node, is_package=is_package) == light and any(
                    a.name == "*" or a.name in names for a in node.names):
                return node.lineno
        elif isinstance(node, ast.Import):
            if imports_light is None and any(_related(a.name, light) for a in node.names):
                imports_light = node.lineno
        elif isinstance(node, ast.Attribute) and node.attr in names:
            reads = True
    return imports_light if reads else None


class _Planner:
    def __init__(self, policy: Policy, engine: PolicyEngine, overrides: Mapping[Path, bytes]) -> None:
        self.policy = policy
        self.engine = engine
        self.read = _Reader(overrides)
        self.project = _Project(policy, engine, self.read)
        self.refusals: dict[FixKind, str] = {}

    # -- the re-export -----------------------------------------------------------------------------

    def plan(self, violation: Violation) -> list[Fix]:
        self._light = violation.light
        source = self.read.source(violation.path)
        hop = violation.chain[0]
        if source is None:
            return []
        statements = reexport_statements(violation, source.tree)
        if not statements or statements[0].lineno != hop.line:
            # the buffer no longer has it where the finding was
            self.refusals.update(dict.fromkeys(FixKind, NOT_AT_TOP_LEVEL))
            return []
        moved: dict[str, _Moved] = {}
        for statement in statements:
            names = self._moved_names(violation.light, statement)
            if not names:
                return []
            moved.update((m.name, m) for m in names)
        fixes = []
        side = _side_bound(source, violation.light, statements, list(moved))
        if FixKind.LAZY_REEXPORT not in self.refusals:
            lazy = self._plan_lazy(violation, source, statements, list(moved.values()), side)
            if lazy is not None:
                fixes.append(lazy)
        if FixKind.DIRECT_IMPORTS not in self.refusals:
            direct = self._plan_direct(violation, source, statements, list(moved.values()), side)
            if direct is not None:
                fixes.append(direct)
        return fixes

    def _moved_names(self, light: str, node: ast.ImportFrom) -> list[_Moved]:
        """What the statement binds, and from where; empty when it cannot be listed (a star import
        of a module without a literal ``__all__`` or readable source)."""
        base = _resolve_from(light, node)
        if base is None or not base.startswith(light + ".") and base != light:
            return []
        moved: list[_Moved] = []
        for alias in node.names:
            if alias.name == "*":
                names = self._public_names(base)
                if names is None:
                    return []
                moved.extend(self._moved(base, name, name) for name in names)
            else:
                moved.append(self._moved(base, alias.name, alias.asname or alias.name))
        return moved

    def _moved(self, base: str, name: str, bound: str) -> _Moved:
        """``from base import name as bound``: a submodule when ``base`` does not bind ``name``
        and ``base.name`` exists (docs/semantics.md rule 2), else an attribute of ``base``."""
        submodule = f"{base}.{name}"
        if self.engine.index.resolve_module(submodule).kind != "unresolved" and (
                base == self._light or not self._binds(base, name)):
            return _Moved(bound, submodule, None)
        return _Moved(bound, base, name)

    def _binds(self, module: str, name: str) -> bool:
        path = self.engine.index.resolve_module(module).path
        source = self.read.source(path) if path is not None else None
        return source is not None and name in _top_level_bindings(source.tree)

    def _public_names(self, module: str) -> list[str] | None:
        path = self.engine.index.resolve_module(module).path
        source = self.read.source(path) if path is not None else None
        if source is None:
            return None
        declared = _literal_all(source.tree)
        if declared is not None:
            return declared[0]
        if any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)
               for n in source.tree.body):
            return None  # what a star import of it binds depends on another module
        return sorted(name for name in _top_level_bindings(source.tree) if not name.startswith("_"))

    # -- lazy re-export ----------------------------------------------------------------------------

    def _plan_lazy(self, violation: Violation, source: _Source, statements: list[ast.ImportFrom],
                   moved: list[_Moved], side: list[_Moved]) -> Fix | None:
        names = [m.name for m in moved]
        if any(source.whole_lines(s) is None for s in statements):
            return None
        versions = self.engine.target.versions
        blockers = _own_uses(source, violation.light, statements, names)
        blockers += _bound_before(source, violation.light, statements, names)
        if _literal_all(source.tree) is None:
            blockers += [
                Importer(path, line, self.project.module_name(path) or "",
                         f"from {violation.light} import * would no longer bind the names (the "
                         "package has no __all__, or not one literal list)")
                for path, line in self.project.star_importers(violation.light)
            ]
        blockers += self.project.submodule_shadows(violation, moved)
        blockers += self.project.namespace_readers(
            violation.light, {m.name: m for m in [*moved, *side]}, exclude={violation.path})
        is_star = any(alias.name == "*" for s in statements for alias in s.names)
        title_names = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        note = ""
        if versions and min(versions) >= (3, 15) and not is_star:
            readers = self._side_readers(violation, side)
            if not readers:
                edits = [_Edit(source.path, start, start, "lazy ") for start in
                         (source.offset(s.lineno, s.col_offset) for s in statements)]
                return self._fix(FixKind.LAZY_REEXPORT, f"make the re-export lazy (PEP 810): lazy "
                                 f"from ... import {title_names}", violation, statements[0], names,
                                 edits, source, blockers=blockers)
            path, line, submodule = readers[0]
            note = (f"not lazy from (PEP 810): {self.policy.relpath(path)}:{line} reads "
                    f"{submodule}, which lazy from would leave unbound until {title_names} is "
                    "first used; the module __getattr__ serves it")
        # the submodules the statement binds besides its names stay attributes, loaded lazily too
        return self._plan_getattr(violation, source, statements, [*moved, *side], title_names,
                                  blockers, names, note)

    def _side_readers(self, violation: Violation, side: Sequence[_Moved]) -> list[tuple[Path, int, str]]:
        """``(file, line, submodule)`` of the first-party and installed modules that may read a
        submodule the re-export binds on the package besides its names (``import pkg`` then
        ``pkg.x``, or ``from pkg import x``): eagerly the statement bound ``pkg.x``; ``lazy from .x
        import a`` (PEP 810) binds nothing until ``a`` is used, so ``pkg.x`` would be missing."""
        if not side:
            return []
        light = violation.light
        wanted = {s.name: s for s in side}
        found: list[tuple[Path, int, str]] = []
        for path in self.project.files(exclude={violation.path}):
            try:
                data = self.read(path)
            except OSError:
                continue
            if not any(name.encode() in data for name in wanted):
                continue
            line = _import_of_moved(data, path, self.project.module_name(path) or "", light, wanted,
                                    is_package=path.name == "__init__.py")
            if line is not None:
                found.append((path, line, _side_named(data, path, light, wanted)))
        found.extend((i.path, i.line, f"{light}.{side[0].name}")
                     for i in self.project.outside_importers(light, wanted))
        return found

    def _plan_getattr(self, violation: Violation, source: _Source, statements: list[ast.ImportFrom],
                      moved: list[_Moved], title_names: str, blockers: list[Importer],
                      names: list[str], note: str = "") -> Fix | None:
        """The map in place of the (first) statement, and a ``__getattr__`` right after it (so that
        a module the package imports later, ``from . import name`` in a sibling, finds the name as
        it found the eager one), or the map's lines merged into the package's own ``__getattr__``
        (fix_refusals has ruled out one that is not a single top-level def)."""
        tree = source.tree
        bound = _top_level_bindings(tree)
        getattrs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "__getattr__"]
        nl = source.newline
        unit = source.indent_unit
        map_name = _unused_name("_LAZY_IMPORTS", bound)
        modules_map = _unused_name("_LAZY_SUBMODULES", bound | {map_name})
        attributes = [m for m in moved if m.attribute is not None]
        submodules = [m for m in moved if m.attribute is None]
        maps = (map_name if attributes else None, modules_map if submodules else None)
        replacement = "".join(f"{c}{nl}" for s in statements for c in source.kept_comments(s))
        replacement += f"# Loaded on first access (PEP 562, module __getattr__ below): name -> module.{nl}"
        for table, entries in ((map_name, attributes), (modules_map, submodules)):
            if entries:
                replacement += f"{table} = {{{nl}" + "".join(
                    f"{unit}{_quote(m.name)}: {_quote(m.module)},{nl}" for m in entries) + f"}}{nl}"
        lines = [source.whole_lines(s) for s in statements]
        edits = [_Edit(source.path, *span, "") for span in lines[1:] if span is not None]
        assert lines[0] is not None
        if getattrs:
            edits.append(_merge_into_getattr(source, getattrs[0], maps))
        else:
            replacement += (f"{nl}{nl}def __getattr__(name: str) -> object:{nl}"
                            + _getattr_block("name", *maps, unit, nl, unit=unit)
                            + f"{unit}raise AttributeError(f\"module {{__name__!r}} has no attribute "
                              f"{{name!r}}\"){nl}")
            rest = lines[0][1]
            while any(span is not None and span[0] == rest for span in lines[1:]):
                rest = next(span[1] for span in lines[1:] if span is not None and span[0] == rest)
            blank = 0
            for line in source.text[rest:].splitlines():
                if line.strip():
                    break
                blank += 1
            if rest < len(source.text) and blank < 2:
                replacement += nl * (2 - blank)
        edits.append(_Edit(source.path, lines[0][0], lines[0][1], replacement))
        listed = " | ".join(f"set({m})" for m in maps if m is not None)
        generated = _generated_dir_end(source)
        if generated is not None:  # an earlier lazy fix's: it lists these names too
            edits.append(_Edit(source.path, generated, generated, f" | {listed}"))
        elif any(isinstance(n, ast.FunctionDef) and n.name == "__dir__" for n in tree.body):
            note = "; ".join(filter(None, (note, "the package's own __dir__ is kept as it is")))
        else:
            block = (f"{nl}{nl}def __dir__() -> \"list[str]\":{nl}"
                     f"{unit}return sorted(set(globals()) | {listed}){nl}")
            end = len(source.text)
            if source.text and not source.text.endswith(("\n", "\r")):
                block = nl + block
            edits.append(_Edit(source.path, end, end, block))
        return self._fix(FixKind.LAZY_REEXPORT, f"re-export {title_names} lazily (module "
                         "__getattr__, PEP 562)", violation, statements[0],
                         names, edits, source, note=note, blockers=blockers)

    # -- direct imports ----------------------------------------------------------------------------

    def _plan_direct(self, violation: Violation, source: _Source, statements: list[ast.ImportFrom],
                     moved: list[_Moved], side: list[_Moved]) -> Fix | None:
        light = violation.light
        names = {m.name: m for m in moved}
        edits: list[_Edit] = []
        for statement in statements:
            removal = source.whole_lines(statement)
            if removal is None:
                return None
            edits.append(_Edit(source.path, removal[0], removal[1], "".join(
                f"{source.indent(statement)}{c}{source.newline}"
                for c in source.kept_comments(statement))))
        declared = _literal_all(source.tree)
        if declared is not None:
            edits += _all_removal(source, declared[1], names)
        star_bound = set(declared[0] if declared else (n for n in names if n[:1] != "_"))
        blockers = _own_uses(source, light, statements, list(names))
        blockers += _all_still_listing(source, light, names, declared)
        # an importer's light.x.name, x a submodule the statement binds besides its names, gets
        # import light.x as for a re-exported submodule
        used = {**names, **{s.name: s for s in side}}
        rewriter = _ImporterRewriter(self.read, self.project, light, star_bound)
        for path in self.project.files(exclude={violation.path}):
            rewriter.rewrite(path, light, used, edits, blockers)
        blockers += self.project.star_reexporters(light, names)
        blockers += self.project.namespace_readers(light, used, exclude={violation.path})
        blockers += self.project.left_out_importers(light, used)
        blockers.extend(self.project.outside_importers(light, used))
        title = (f"import {_shown(sorted(names))} from {moved[0].module} where it is used, and "
                 "remove the re-export" if moved[0].attribute is not None else
                 f"import {_shown(m.module for m in moved)} where "
                 f"{_shown(f'{light}.{m.name}' for m in moved)} is used, and remove the re-export")
        return self._fix(FixKind.DIRECT_IMPORTS, title, violation, statements[0], sorted(names),
                         edits, source, blockers=blockers)

    # -- shared ------------------------------------------------------------------------------------

    def _fix(self, kind: FixKind, title: str, violation: Violation, statement: ast.ImportFrom,
             names: Sequence[str], edits: list[_Edit], source: _Source, *,
             blockers: Sequence[Importer] = (), note: str = "") -> Fix | None:
        converted = []
        for edit in sorted(edits, key=lambda e: (str(e.path), e.start, e.end)):
            positions = source if edit.path == source.path else self.read.source(edit.path)
            assert positions is not None
            converted.append(TextEdit(edit.path, positions.position(edit.start),
                                      positions.position(edit.end), edit.new_text))
        for earlier, later in zip(converted, converted[1:]):
            if earlier.path == later.path and later.start < earlier.end:
                return None  # two rewrites of one place: left to a person
        return Fix(kind, title, violation.light, violation.path, statement.lineno,
                   tuple(names), tuple(converted), tuple(blockers), note=note)


class _ImporterRewriter:
    """The direct-imports fix's rewrite of the modules that import the moved names from the package
    (``from light import name``, ``light.name``): the edits, and the blockers where it cannot."""

    def __init__(self, read: _Reader, project: _Project, light: str, star_bound: set[str]) -> None:
        self.read = read
        self.project = project
        self.light = light
        self.star_bound = star_bound  # the names a star import of the package bound

    def rewrite(self, path: Path, light: str, names: Mapping[str, _Moved],
                edits: list[_Edit], blockers: list[Importer]) -> None:
        """The edits of one module that may import the names (``names``: the moved names and the
        submodules the statement binds besides them), or its blockers."""
        try:
            data = self.read(path)
        except OSError:
            return
        if not any(name.encode() in data for name in names):
            return
        source = self.read.source(path)
        if source is None:
            if light.partition(".")[0].encode() in data:
                blockers.append(Importer(path, 1, self.project.module_name(path) or "",
                                         "it does not parse (or is not UTF-8): whether it imports "
                                         "the name is not known"))
            return
        module = self.project.module_name(path)
        blockers += _dynamic_accesses(source, light, names, module or "")
        is_package = path.name == "__init__.py"
        for node in ast.walk(source.tree):
            if isinstance(node, ast.ImportFrom) and _resolve_from(
                    module or "", node, is_package=is_package) == light:
                self._rewrite_from(source, node, names, edits, blockers, module or "")
        light_names = _package_names(source.tree, module or "", light, is_package=is_package)
        if light_names:
            self._rewrite_attributes(source, light, light_names, names, edits, blockers, module or "")

    def _rewrite_from(self, source: _Source, node: ast.ImportFrom, names: Mapping[str, _Moved],
                      edits: list[_Edit], blockers: list[Importer], module: str) -> None:
        # a submodule stays importable from the package (the import system loads it): only
        # the names of a submodule's attributes move
        ours = [a for a in node.names if a.name in names and names[a.name].attribute is not None]
        star = any(a.name == "*" for a in node.names)
        if star:
            # a submodule too, when the star import bound it (listed in __all__, or public)
            used = set(_used_names(source.tree, (node,))) & {
                n for n, m in names.items() if m.attribute or n in self.star_bound}
            if not used:
                return
            ours = [ast.alias(name=name) for name in sorted(used)]
        if not ours:
            return
        module_text = _from_module_text(source, node)
        lines = source.whole_lines(node)
        if module_text is None or lines is None:
            blockers.append(Importer(source.path, node.lineno, module,
                                     "the import shares its line with another statement"))
            return
        indent = source.indent(node)
        nl = source.newline
        light = self.light
        by_module: dict[str, list[ast.alias]] = {}
        for alias in ours:
            moved = names[alias.name]  # a submodule from the package: the import system loads it
            by_module.setdefault(moved.module if moved.attribute else light, []).append(alias)
        comments: dict[int, str] = {}  # a removed name's own line's comment goes with it

        def new_line(target: str, aliases: list[ast.alias]) -> str:
            said = [comments[id(a)] for a in aliases if comments.get(id(a))]
            return (f"{indent}from {_relative_text(module_text, light, target)} import "
                    + ", ".join(_alias_text(a, names[a.name]) for a in aliases)
                    + "".join(f"  {comment}" for comment in said) + nl)

        if star or len(ours) < len(node.names):
            # the other names stay where they are; the moved ones get a statement of their own
            if not star:
                for alias in ours:
                    edit, comments[id(alias)] = _alias_removal(source, node, alias)
                    edits.append(edit)
            edits.append(_Edit(source.path, lines[1], lines[1], "".join(
                new_line(target, aliases) for target, aliases in sorted(by_module.items()))))
            return
        # every name moves: the statement stays, its parentheses, comments and layout with it; only
        # the module it names and the names the submodule calls otherwise change (the first name's
        # submodule; the names of another submodule move to a statement of their own after it)
        kept = names[node.names[0].name].module
        module_span = _from_module_span(source, node)
        assert module_span is not None  # the module text was read from the same tokens
        edits.append(_Edit(source.path, *module_span, _relative_text(module_text, light, kept)))
        for alias in node.names:
            moved = names[alias.name]
            if moved.module != kept:
                edit, comments[id(alias)] = _alias_removal(source, node, alias)
                edits.append(edit)
            elif (moved.attribute or alias.name) != alias.name:
                edits.append(_Edit(source.path, *_alias_span(source, alias), _alias_text(alias, moved)))
        others = [new_line(target, aliases) for target, aliases in sorted(by_module.items())
                  if target != kept]
        if others:
            edits.append(_Edit(source.path, lines[1], lines[1], "".join(others)))

    def _rewrite_attributes(self, source: _Source, light: str, bound: set[str],
                            names: Mapping[str, _Moved], edits: list[_Edit],
                            blockers: list[Importer], module: str) -> None:
        needed: dict[str, ast.Attribute] = {}  # submodule -> its first use
        tops = {name.partition(".")[0] for name in bound}
        shadowed = _shadowed_names(source.tree, tops, light)
        blockers += _aliases_of(source, bound, shadowed, light, module)
        for line in _module_level_rebindings(source.tree, tops, light):
            blockers.append(Importer(source.path, line, module,
                                     "the name bound to the package is bound again at the module's "
                                     "top level: which uses are the package's is not known"))
        for node in ast.walk(source.tree):
            if id(node) in shadowed:
                continue  # a local name (a parameter, an assignment in a function) of that spelling
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in ("getattr", "hasattr", "setattr", "delattr") and node.args:
                if _dotted(node.args[0]) in bound and not (
                        len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
                        and isinstance(node.args[1].value, str)
                        and node.args[1].value not in names):
                    blockers.append(Importer(source.path, node.lineno, module,
                                             f"{node.func.id}({_dotted(node.args[0])}, ...): an "
                                             "access the fix cannot rewrite"))
            if not isinstance(node, ast.Attribute) or node.attr not in names:
                continue
            owner = _dotted(node.value)
            if owner not in bound:
                continue
            target = names[node.attr]
            if owner == light:
                if target.attribute is not None and target.module != light:
                    # only the submodule's name is added (``.x`` after the package's name) and a
                    # name the submodule calls otherwise changed: ``(pkg\n .a)`` keeps its layout
                    after_owner = source.span(node.value)[1]
                    edits.append(_Edit(source.path, after_owner, after_owner,
                                       target.module[len(light):]))
                    end = source.span(node)[1]
                    if target.attribute != node.attr:
                        edits.append(_Edit(source.path, end - len(node.attr), end, target.attribute))
                first = needed.setdefault(target.module, node)
                if (node.lineno, node.col_offset) < (first.lineno, first.col_offset):
                    needed[target.module] = node
            else:
                blockers.append(Importer(source.path, node.lineno, module,
                                         f"{owner}.{node.attr} through an alias of {light}"))
        for needed_module, use in sorted(needed.items()):
            anchor = next((n for n in source.tree.body if isinstance(n, ast.Import)
                           and any(_related(a.name, light) for a in n.names)), None)
            lines = source.whole_lines(anchor) if anchor is not None else None
            if anchor is None or lines is None:
                blockers.append(Importer(source.path, use.lineno, module,
                                         f"uses {light}.{use.attr} without a top-level import of "
                                         f"{light}: import {needed_module} has no place"))
                continue
            edits.append(_Edit(source.path, lines[1], lines[1],
                               f"{source.indent(anchor)}import {needed_module}{source.newline}"))


# -- syntax helpers ----------------------------------------------------------------------------------


def _package_names(tree: ast.Module, module: str, light: str, *, is_package: bool) -> set[str]:
    """The names a module binds to the light package: ``from parent import light`` (``as``
    too), ``import light as p``, and ``light`` itself, dotted, after ``import light`` or an import
    of a module related to it (``import light.x``: a dotted use ``pkg.ops.name``)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = _resolve_from(module, node, is_package=is_package)
            if base is not None and base == light.rpartition(".")[0]:
                found.update(a.asname or a.name for a in node.names if f"{base}.{a.name}" == light)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == light and alias.asname:
                    found.add(alias.asname)
                elif not alias.asname and _related(alias.name, light):
                    found.add(light)
    return found


def _namespace_dict_reads(tree: ast.Module, bound: set[str], names: Mapping[str, _Moved]) -> list[int]:
    """The lines where a module reads the package's namespace dictionary, ``vars(pkg)`` or
    ``pkg.__dict__`` (``pkg`` one of ``bound``), other than by a literal key that is not one of
    ``names`` (``pkg.__dict__["VERSION"]``, ``.get``, ``in``): a module's dict never asks its
    ``__getattr__`` (PEP 562), so a moved name is missing from it until its first access after the
    lazy fix, and always after direct imports."""
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    lines: list[int] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars" \
                and len(node.args) == 1 and _dotted(node.args[0]) in bound:
            pass
        elif not (isinstance(node, ast.Attribute) and node.attr == "__dict__"
                  and _dotted(node.value) in bound):
            continue
        parent = parents.get(node)
        key: ast.expr | None = None
        if isinstance(parent, ast.Subscript) and parent.value is node:
            key = parent.slice
        elif isinstance(parent, ast.Attribute) and parent.attr in ("get", "__getitem__", "pop") \
                and isinstance(parents.get(parent), ast.Call):
            call = parents[parent]
            key = call.args[0] if isinstance(call, ast.Call) and call.args else None
        elif isinstance(parent, ast.Compare) and node in parent.comparators:
            key = parent.left
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value not in names:
            continue
        lines.append(node.lineno)
    return sorted(set(lines))


def _resolve_from(module: str, node: ast.ImportFrom, *, is_package: bool = True) -> str | None:
    """The absolute module a from-import names, in ``module`` (a package's ``__init__`` when
    ``is_package``; PEP 328 / ``importlib._bootstrap._resolve_name``)."""
    if not node.level:
        return node.module
    if not module:
        return None
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]
    if node.level - 1 > len(parts) - (0 if parts else 0) or (node.level - 1 and len(parts) < node.level - 1):
        return None
    base = parts[:len(parts) - (node.level - 1)]
    if not base:
        return None
    return ".".join([*base, node.module] if node.module else base)


def _top_level_bindings(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    names.add(alias.asname or alias.name.partition(".")[0])
        else:
            for child in ast.walk(node):
                if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                    names.add(child.id)
    return names


_Scope = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp,
          ast.DictComp, ast.GeneratorExp)


def _scope_bindings(node: ast.AST, light: str) -> set[str]:
    """The names a function, lambda, class body or comprehension binds in its own scope (Language
    reference 4.2.2: a binding anywhere in a block makes the name local to it), but those it
    declares ``global`` or ``nonlocal``, and an import of the light package or a relative of it
    (it binds the same package)."""
    bound: set[str] = set()
    declared: set[str] = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        arguments = node.args
        bound.update(a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                                     arguments.vararg, arguments.kwarg] if a is not None)
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        pending: list[ast.AST] = [g.target for g in node.generators]
    elif isinstance(node, ast.Lambda):
        pending = [node.body]
    else:
        assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        pending = list(node.body)
    while pending:
        child = pending.pop()
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(child.name)
            continue
        if isinstance(child, _Scope):
            continue
        if isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
            bound.add(child.id)
        elif isinstance(child, (ast.Global, ast.Nonlocal)):
            declared.update(child.names)
        elif isinstance(child, ast.ExceptHandler) and child.name:
            bound.add(child.name)
        elif isinstance(child, ast.Import):
            bound.update((a.asname or a.name.partition(".")[0]) for a in child.names
                         if a.asname or not _related(a.name, light))
        elif isinstance(child, ast.ImportFrom):
            bound.update(a.asname or a.name for a in child.names if a.name != "*")
        pending.extend(ast.iter_child_nodes(child))
    return bound - declared


def _shadowed_names(tree: ast.Module, names: set[str], light: str) -> set[int]:
    """The ids of the nodes (every node under them) where one of ``names`` is a local name of a
    function, lambda, comprehension or class body, not the module's global: code there reads its
    own binding (``def f(pkg): pkg.name``). A function's decorators, defaults and annotations are
    evaluated in the enclosing scope; a class body's names are not seen by its methods."""
    shadowed: set[int] = set()

    def visit(node: ast.AST, hidden: frozenset[str], class_hidden: frozenset[str]) -> None:
        for child in ast.iter_child_nodes(node):
            visit_node(child, hidden, class_hidden)

    def enter(scope: ast.AST, hidden: frozenset[str], class_hidden: frozenset[str]) -> None:
        local = frozenset(_scope_bindings(scope, light) & names)
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            outer: list[ast.AST] = [*scope.decorator_list]
            if isinstance(scope, ast.ClassDef):
                outer += [*scope.bases, *(k.value for k in scope.keywords)]
            else:
                outer += [*scope.args.defaults, *(d for d in scope.args.kw_defaults if d)]
            for part in outer:
                visit_node(part, hidden | class_hidden, frozenset())
            for statement in scope.body:
                if isinstance(scope, ast.ClassDef):
                    visit_node(statement, hidden, local)
                else:  # a class body's names are not seen from its methods
                    visit_node(statement, hidden | local, frozenset())
        else:
            visit(scope, hidden | local, frozenset())

    def visit_node(node: ast.AST, hidden: frozenset[str], class_hidden: frozenset[str]) -> None:
        if isinstance(node, ast.Attribute):
            owner = _dotted(node)
            if owner is not None and owner.partition(".")[0] in hidden | class_hidden:
                shadowed.add(id(node))
        elif isinstance(node, ast.Call) and node.args:
            owner = _dotted(node.args[0])
            if owner is not None and owner.partition(".")[0] in hidden | class_hidden:
                shadowed.add(id(node))
        if isinstance(node, _Scope):
            enter(node, hidden, class_hidden)
        else:
            visit(node, hidden, class_hidden)

    visit(tree, frozenset(), frozenset())
    return shadowed


def _module_level_rebindings(tree: ast.Module, names: set[str], light: str) -> list[int]:
    """The lines where one of ``names`` is bound at the module's top level other than by an
    import of the light package or a relative of it."""
    lines = []
    for name in names:
        for line in module_level_binding_lines(tree, name):
            statement = next((n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                              and n.lineno == line), None)
            if statement is None:
                lines.append(line)
    return sorted(set(lines))


def _literal_all(tree: ast.Module) -> tuple[list[str], list[ast.Constant]] | None:
    """A top-level ``__all__ = [...]`` / ``(...)`` of string literals: (names, elements)."""
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                value = node.value
                if isinstance(value, (ast.List, ast.Tuple)) and all(
                        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts):
                    elements = [e for e in value.elts if isinstance(e, ast.Constant)]
                    return [str(e.value) for e in elements], elements
                return None
    return None


def _used_names(tree: ast.Module, skip: Sequence[ast.stmt]) -> dict[str, int]:
    """The names a module reads or deletes anywhere (function bodies too), but in the statements
    ``skip``, each with the line of its first use."""
    used: dict[str, int] = {}
    for node in ast.walk(tree):
        if any(node is statement for statement in skip):
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            used[node.id] = min(used.get(node.id, node.lineno), node.lineno)
        elif isinstance(node, ast.Global):
            for name in node.names:
                used[name] = min(used.get(name, node.lineno), node.lineno)
    return used


def _namespace_reads(tree: ast.Module, names: Sequence[str]) -> dict[str, int]:
    """The names of ``names`` a module reads through its own namespace, each with its first line:
    ``globals()["a"]``, ``globals().get("a")`` (``pop``, ``setdefault``, ``__getitem__``),
    ``"a" in globals()``, the same with ``vars()`` (a string literal; a store, ``globals()["a"] =
    ...``, is not a read)."""
    def namespace(node: ast.expr) -> bool:
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("globals", "vars") and not node.args and not node.keywords)

    def literal(node: ast.expr) -> str | None:
        return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) \
            and node.value in names else None

    found: dict[str, int] = {}
    for node in ast.walk(tree):
        named: str | None = None
        if isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Store) \
                and namespace(node.value):
            named = literal(node.slice)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args \
                and node.func.attr in ("get", "pop", "setdefault", "__getitem__") \
                and namespace(node.func.value):
            named = literal(node.args[0])
        elif isinstance(node, ast.Compare) and any(isinstance(o, (ast.In, ast.NotIn)) for o in node.ops) \
                and any(namespace(c) for c in node.comparators):
            named = literal(node.left)
        if named is not None and isinstance(node, ast.expr):
            found[named] = min(found.get(named, node.lineno), node.lineno)
    return found


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
        and isinstance(node.value.value, str)


def _unused_name(name: str, taken: set[str]) -> str:
    candidate, number = name, 1
    while candidate in taken:
        number += 1
        candidate = f"{name}_{number}"
    return candidate


def _merge_into_getattr(source: _Source, existing: ast.FunctionDef,
                        maps: tuple[str | None, str | None]) -> _Edit:
    """The lines that serve the lazy names, inserted at the top of the package's own
    ``__getattr__`` (after its docstring); a one-line ``def __getattr__(name): ...`` gets them as
    a body of its own lines, the statement after the colon last."""
    parameter = (existing.args.posonlyargs + existing.args.args)[0].arg
    first = existing.body[0]
    taken = {n.id for n in ast.walk(existing) if isinstance(n, ast.Name)} | {
        a.arg for a in ast.walk(existing.args) if isinstance(a, ast.arg)}
    taken |= {alias.asname or alias.name.partition(".")[0] for n in ast.walk(existing)
              if isinstance(n, (ast.Import, ast.ImportFrom)) for alias in n.names}
    nl = source.newline
    if first.lineno == existing.lineno:  # def __getattr__(name): raise AttributeError(name)
        unit = source.indent_unit
        indent = source.indent(existing) + unit
        at = source.offset(first.lineno, first.col_offset)
        colon = len(source.text[:at].rstrip(" \t"))
        block = _getattr_block(parameter, *maps, indent, nl, taken, unit=unit)
        return _Edit(source.path, colon, at, nl + block + indent)
    indent = source.indent(first)
    # the function's own unit of indentation (its body's less its def's): a tab in a tab file
    unit = indent[len(source.indent(existing)):] or source.indent_unit
    if _is_docstring(first) and len(existing.body) > 1:
        first = existing.body[1]
    at = source.line_start(first.lineno)
    return _Edit(source.path, at, at, _getattr_block(parameter, *maps, indent, nl, taken, unit=unit))


def _own_uses(source: _Source, light: str, statements: Sequence[ast.ImportFrom],
              names: Sequence[str]) -> list[Importer]:
    """The package's own reads (and ``del``) of the names, and of the submodules the statements
    bind on it besides them (:func:`_side_bound`): a module's global lookups never call its
    ``__getattr__`` (PEP 562), and a removed name is gone for them too."""
    uses = _used_names(source.tree, statements)
    found = [Importer(source.path, uses[name], light, f"the package itself uses {name}")
             for name in names if name in uses]
    found += [Importer(source.path, line, light,
                       f"the package itself reads {name} through globals() or vars() (its own "
                       "namespace never calls its __getattr__, and a removed name is gone)")
              for name, line in _namespace_reads(source.tree, names).items()]
    return found + [
        Importer(source.path, uses[side.name], light,
                 f"the package itself uses {side.name}, the submodule {side.module} that the "
                 "re-export binds on it (importing a submodule sets it on its package)")
        for side in _side_bound(source, light, statements, names) if side.name in uses]


def _bound_before(source: _Source, light: str, statements: Sequence[ast.ImportFrom],
                  names: Sequence[str]) -> list[Importer]:
    """The package's top-level bindings of the names above the re-export (``a = None``, a fallback
    ``def a``, ``from ._fast import a`` under a ``try``): the lazy fix would leave that binding in
    the package's globals, and a module's ``__getattr__`` runs only for a name it does not bind
    (PEP 562), so ``pkg.a`` and ``from pkg import a`` would give it instead of the re-exported
    value."""
    first = min(s.lineno for s in statements)
    found: list[Importer] = []
    for name in names:
        lines = [line for line in module_level_binding_lines(source.tree, name) if line < first]
        if lines:
            found.append(Importer(source.path, lines[0], light, f"the package binds {name} before "
                                  "the re-export (its __getattr__ would never be asked for it)"))
    return found


def _side_bound(source: _Source, light: str, statements: Sequence[ast.ImportFrom],
                names: Iterable[str]) -> list[_Moved]:
    """The submodules the statements bind on the package besides their names: importing
    ``light.x`` (``from .x import a``, ``from .x.y import a``) sets ``x`` as an attribute of the
    package, a global of its ``__init__.py`` (the import system's ``setattr(parent, child,
    module)``, docs/semantics.md rule 2); none that the statements bind by name, or that another
    top-level statement of the package binds."""
    lines = {line for s in statements for line in range(s.lineno, (s.end_lineno or s.lineno) + 1)}
    found: dict[str, _Moved] = {}
    for statement in statements:
        base = _resolve_from(light, statement)
        if base is None or not base.startswith(light + "."):
            continue
        child = base[len(light) + 1:].partition(".")[0]
        if child not in names and not [line for line in module_level_binding_lines(
                source.tree, child) if line not in lines]:
            found.setdefault(child, _Moved(child, f"{light}.{child}", None))
    return list(found.values())


def _all_still_listing(source: _Source, light: str, names: Mapping[str, _Moved],
                       declared: tuple[list[str], list[ast.Constant]] | None) -> list[Importer]:
    """The lines of the package's ``__all__`` that would still list a removed name: ``__all__ +=
    ["name"]``, ``__all__ = [...] + ["name"]``, ``__all__.append("name")`` (only one literal list
    is edited): ``from light import *`` would then fail (AttributeError)."""
    edited = {id(e) for e in declared[1]} if declared is not None else set()
    found: list[Importer] = []
    for node in source.tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            targets = [node.value.func.value] if isinstance(node.value.func, ast.Attribute) else []
        if not any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            continue
        listed = sorted({c.value for c in ast.walk(node) if isinstance(c, ast.Constant)
                         and isinstance(c.value, str)
                         and c.value in names and id(c) not in edited})
        if listed:
            found.append(Importer(source.path, node.lineno, light,
                                  f"the package's __all__ would still list {', '.join(listed)} "
                                  f"(not one literal list): from {light} import * would fail"))
        elif any(m.attribute is not None for m in names.values()) and not _all_is_known(node):
            found.append(Importer(source.path, node.lineno, light,
                                  "the package's __all__ is computed here (not literal lists of "
                                  "strings): if it still lists a removed name, from "
                                  f"{light} import * fails"))
    return found


def _all_is_known(node: ast.stmt) -> bool:
    """Whether a statement binding or extending ``__all__`` says every name it adds as a string
    literal: a list or tuple of them, ``+`` of such and of ``__all__`` itself, ``__all__.append
    ("a")`` / ``.extend([...])`` / ``.remove("a")``."""
    def known(value: ast.expr | None) -> bool:
        if isinstance(value, (ast.List, ast.Tuple)):
            return all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts)
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
            return known(value.left) and known(value.right)
        if isinstance(value, ast.Constant):
            return isinstance(value.value, str)
        return isinstance(value, ast.Name) and value.id == "__all__"

    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        return known(node.value)
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        return all(known(a) for a in node.value.args) and not node.value.keywords
    return False


def _dynamic_accesses(source: _Source, light: str, names: Mapping[str, _Moved],
                      module: str) -> list[Importer]:
    """Reads of a moved name from the package found at run time: ``importlib.import_module("pkg")
    .name``, ``__import__("pkg").name``, ``sys.modules["pkg"].name`` (or ``getattr`` of them), and
    a string that names it (``mock.patch("pkg.name")``)."""
    found: list[Importer] = []
    for node in ast.walk(source.tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and any(
                node.value == f"{light}.{n}" or node.value.startswith(f"{light}.{n}.")
                for n, m in names.items() if m.attribute is not None):
            # mock.patch("pkg.name"), a string import path: resolved by getattr on the package
            found.append(Importer(source.path, node.lineno, module,
                                  f"{node.value!r} names the moved attribute (mock.patch, an import "
                                  "path in a string): the fix cannot rewrite it"))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and ">>>" in node.value:
            found += _doctest_reads(node.value, node.lineno, source.path, light, names, module)
        if isinstance(node, ast.Attribute) and node.attr in names:
            owner: ast.expr = node.value
        elif isinstance(node, ast.Call) and _dotted(node.func) == "getattr" and len(node.args) > 1:
            owner = node.args[0]
        else:
            continue
        named: ast.expr | None = None
        if isinstance(owner, ast.Call) and owner.args and (_dotted(owner.func) or "").rpartition(
                ".")[2] in ("import_module", "__import__"):
            named = owner.args[0]
        elif isinstance(owner, ast.Subscript) and (_dotted(owner.value) or "").endswith("modules"):
            named = owner.slice
        if isinstance(named, ast.Constant) and named.value == light:
            found.append(Importer(source.path, node.lineno, module,
                                  f"{ast.unparse(node)[:60]}: an access the fix cannot rewrite"))
    return found


def _doctest_reads(text: str, line: int, path: Path, light: str, names: Mapping[str, _Moved],
                   module: str) -> list[Importer]:
    """The examples of a doctest in a string (``>>> from pkg import name``, ``>>> pkg.name``, run
    by ``python -m doctest`` and ``pytest --doctest-modules``) that read a moved name from the
    package: the fix does not rewrite strings."""
    found: list[Importer] = []
    moved = {n for n, m in names.items() if m.attribute is not None}
    for offset, example in _doctest_examples(text):
        try:
            tree = ast.parse(example)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module == light and any(
                    a.name in moved for a in node.names):
                read = f"from {light} import {_shown(a.name for a in node.names if a.name in moved)}"
            elif isinstance(node, ast.Attribute) and node.attr in moved and _dotted(
                    node.value) == light:
                read = f"{light}.{node.attr}"
            else:
                continue
            found.append(Importer(path, line + offset + node.lineno - 1, module,
                                  f"a doctest's {read}: the fix cannot rewrite it"))
    return found


def _doctest_examples(text: str) -> Iterator[tuple[int, str]]:
    """Each example of a doctest in ``text`` (a ``>>>`` line and the ``...`` lines after it, as
    doctest reads them): its line's offset in the string and its source."""
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        stripped = lines[index].lstrip()
        if not (stripped == ">>>" or stripped.startswith(">>> ")):
            index += 1
            continue
        start, body = index, [stripped[4:]]
        index += 1
        while index < len(lines) and (lines[index].lstrip() == "..." or lines[index].lstrip()
                                      .startswith("... ")):
            body.append(lines[index].lstrip()[4:])
            index += 1
        yield start, "\n".join(body) + "\n"


def _aliases_of(source: _Source, bound: set[str], shadowed: set[int], light: str,
                module: str) -> list[Importer]:
    """Assignments of the package to another name (``p = pkg``, in a class body too): reads of a
    moved name through it cannot be followed."""
    found: list[Importer] = []
    for node in ast.walk(source.tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None \
                and _dotted(node.value) in bound and id(node.value) not in shadowed:
            found.append(Importer(source.path, node.lineno, module,
                                  f"{ast.unparse(node)[:60]}: an alias of {light} the fix cannot "
                                  "follow"))
    return found


def _generated_dir_end(source: _Source) -> int | None:
    """The offset after ``set(globals()) | set(_LAZY_IMPORTS)`` in the ``__dir__`` an earlier lazy
    fix wrote (``return sorted(set(globals()) | set(_LAZY_...))``, its one statement), where the
    next fix's maps go; None when the package has no such ``__dir__``."""
    for node in source.tree.body:
        if not isinstance(node, ast.FunctionDef) or node.name != "__dir__" or len(node.body) != 1:
            continue
        value = node.body[0].value if isinstance(node.body[0], ast.Return) else None
        if not isinstance(value, ast.Call) or _dotted(value.func) != "sorted" or len(value.args) != 1:
            return None
        parts, union = [], value.args[0]
        while isinstance(union, ast.BinOp) and isinstance(union.op, ast.BitOr):
            parts.append(union.right)
            union = union.left
        parts.append(union)
        texts = [ast.unparse(part) for part in reversed(parts)]
        if texts[0] == "set(globals())" and len(texts) > 1 and all(
                re.fullmatch(r"set\(_LAZY_(IMPORTS|SUBMODULES)(_\d+)?\)", t) for t in texts[1:]):
            return source.span(value.args[0])[1]
    return None


def _shown(items: Iterable[str]) -> str:
    """Up to three of ``items``, then ``...``."""
    listed = list(items)
    return ", ".join(listed[:3]) + (", ..." if len(listed) > 3 else "")


def _quote(text: str) -> str:
    return '"' + text + '"'


def _getattr_block(parameter: str, attributes: str | None, submodules: str | None, indent: str,
                   nl: str, taken: Iterable[str] = (), *, unit: str = "    ") -> str:
    """The lines that serve the lazy names in a ``__getattr__`` (the form the engine follows: a
    constant map's ``.get`` and a literal-free ``importlib.import_module``).

    The value is stored in the module's globals before it is returned: importing a submodule
    binds it on its package (the import system's ``setattr(parent, child, module)``, docs/semantics.md
    rule 2), so a name that is also its submodule's name (``from .norm import norm``) would read as
    the module from the second access on. No walrus and no annotation: valid on every Python 3
    (the oldest target version included). ``taken``: the names the function already uses, so
    that the block's locals shadow none of them (an ``import importlib`` inside the function would
    make a global ``importlib`` of its other lines a local, unbound); ``unit``: one level of
    indentation, the function's own (a tab in a file indented with tabs)."""
    module = _unused_name("module", set(taken))
    value = _unused_name("value", set(taken) | {module})
    importlib = "importlib" if "importlib" not in taken else _unused_name(
        "_importlib", set(taken) | {module, value})
    import_line = "import importlib" + ("" if importlib == "importlib" else f" as {importlib}")
    out = []
    inner = indent + unit
    for table, loaded in ((submodules, f"{importlib}.import_module({module})"),
                          (attributes, f"getattr({importlib}.import_module({module}), {parameter})")):
        if table is None:
            continue
        out.append(f"{indent}{module} = {table}.get({parameter}){nl}"
                   f"{indent}if {module} is not None:{nl}"
                   f"{inner}{import_line}{nl}{nl}"
                   f"{inner}{value} = {loaded}{nl}"
                   f"{inner}globals()[{parameter}] = {value}{nl}"
                   f"{inner}return {value}{nl}")
    return "".join(out)


def _related(imported: str, light: str) -> bool:
    """Whether ``import imported`` binds a name through which ``light.name`` can be read: the light
    package, one of its submodules or one of its parent packages (``import pkg``, then
    ``pkg.ops.name``)."""
    return imported == light or imported.startswith(light + ".") or light.startswith(imported + ".")


def _within(module: str, package: str) -> bool:
    """Whether ``module`` is ``package`` or a module inside it."""
    return module == package or module.startswith(package + ".")


def _alias_text(alias: ast.alias, moved: _Moved) -> str:
    """How an importer's ``name [as other]`` reads when imported from the submodule: the
    submodule's own name for it, bound as the importer bound it (``from .x import a as b`` in the
    package: ``from pkg import b`` becomes ``from pkg.x import a as b``)."""
    attribute = moved.attribute or alias.name
    bound = alias.asname or alias.name
    return attribute if bound == attribute else f"{attribute} as {bound}"


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        owner = _dotted(node.value)
        return f"{owner}.{node.attr}" if owner is not None else None
    return None


def _from_module_tokens(source: _Source, node: ast.ImportFrom) -> list[tokenize.TokenInfo] | None:
    """The tokens between ``from`` and ``import`` of a from-import, positioned in the statement's
    text (``tokenize`` rows and columns from its first character); None when it does not tokenize."""
    start, end = source.span(node)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source.text[start:end]).readline))
    except (tokenize.TokenError, IndentationError):
        return None
    parts = []
    for token in tokens[1:]:
        if token.type == tokenize.NAME and token.string == "import":
            break
        if token.type in (tokenize.NAME, tokenize.OP):
            parts.append(token)
    return parts or None


def _from_module_text(source: _Source, node: ast.ImportFrom) -> str | None:
    """The text between ``from`` and ``import`` of a from-import (``.``, ``..pkg``, ``pkg.ops``)."""
    tokens = _from_module_tokens(source, node)
    return "".join(token.string for token in tokens) if tokens is not None else None


def _from_module_span(source: _Source, node: ast.ImportFrom) -> tuple[int, int] | None:
    """The character offsets of the module text of a from-import (:func:`_from_module_text`), as
    written (``from  . pkg import`` spans ``. pkg``)."""
    tokens = _from_module_tokens(source, node)
    if tokens is None:
        return None
    start = source.offset(node.lineno, node.col_offset)

    def offset(row: int, col: int) -> int:  # tokenize counts from the statement's first character
        return start + col if row == 1 else source.line_start(node.lineno + row - 1) + col

    return offset(*tokens[0].start), offset(*tokens[-1].end)


def _alias_span(source: _Source, alias: ast.alias) -> tuple[int, int]:
    """The character offsets of one ``name [as other]`` of an import."""
    assert alias.end_lineno is not None and alias.end_col_offset is not None
    return (source.offset(alias.lineno, alias.col_offset),
            source.offset(alias.end_lineno, alias.end_col_offset))


def _relative_text(module_text: str, light: str, target: str) -> str:
    """The module text of a rewritten import: ``target`` (``light`` or inside it) written as the
    original ``module_text`` named ``light`` (relative stays relative)."""
    remainder = target[len(light) + 1:] if target != light else ""
    if not remainder:
        return module_text
    return module_text + remainder if module_text.endswith(".") else f"{module_text}.{remainder}"


def _alias_removal(source: _Source, node: ast.ImportFrom, alias: ast.alias) -> tuple[_Edit, str]:
    """Remove one name of a from-import with the comma that goes with it, every other character
    kept: its whole line when it has one of its own in parentheses (then its comment is returned,
    to go with it: ``""`` when none), else the comma before it (a comment between kept), or for the
    first name the comma after it."""
    start, end = _alias_span(source, alias)
    text = source.text
    own_line = re.match(r"[ \t]*,?[ \t]*(#[^\r\n]*)?(\r\n|\n|\r)", text[end:])
    line_start = max(text.rfind("\n", 0, start), text.rfind("\r", 0, start)) + 1
    inside = line_start > source.span(node)[0] and not text[:line_start].rstrip("\r\n").endswith("\\")
    if own_line is not None and inside and not text[line_start:start].strip():  # in parentheses
        return _Edit(source.path, line_start, end + own_line.end(), ""), own_line.group(1) or ""
    index = next(i for i, other in enumerate(node.names) if other is alias)
    if index:
        previous = _alias_span(source, node.names[index - 1])[1]
        between = text[previous:start]  # ", ", ",  # comment\n    ", ", \\\n    "
        kept = between.replace(",", "", 1).rstrip(" \t") if "#" in between else ""
        return _Edit(source.path, previous, end, kept), ""
    after = re.match(r"[ \t]*,", text[end:])
    assert after is not None  # a first name that is not the only one
    spaces = re.match(r"[ \t]*", text[end + after.end():])
    assert spaces is not None
    follows = text[end + after.end() + spaces.end():end + after.end() + spaces.end() + 1]
    stop = end + after.end() + (spaces.end() if follows not in ("#", "\r", "\n", "") else 0)
    return _Edit(source.path, start, stop, ""), ""


def _all_removal(source: _Source, elements: Sequence[ast.Constant],
                 names: Mapping[str, _Moved]) -> list[_Edit]:
    """Remove the moved names from a literal ``__all__`` (its ``elements``), a tuple kept a tuple:
    ``("a", "b")`` less ``a`` is ``("b",)``, not the string ``("b")``; ``"a", "b"`` less ``a`` is
    ``"b",``; every name of an unparenthesized tuple removed is ``()``."""
    removed = [e for e in elements if e.value in names]
    edits = [_list_element_removal(source, element, elements, removed) for element in removed]
    statement = next(n for n in source.tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                     and n.value is not None and any(e is elements[0] for e in ast.walk(n.value)))
    value = statement.value
    if not removed or not isinstance(value, ast.Tuple):
        return edits
    start, end = source.span(value)
    text = source.text[start:end]
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        text = text[:edit.start - start] + edit.new_text + text[edit.end - start:]
    try:
        kept = ast.parse("(" + text + "\n)", mode="eval").body
    except SyntaxError:
        kept = None
    if isinstance(kept, ast.Tuple) and (kept.elts or text.lstrip().startswith("(")):
        return edits
    if len(removed) == len(elements):
        return [_Edit(source.path, start, end, "()")]
    last = source.span([e for e in elements if e not in removed][-1])[1]
    return [*edits, _Edit(source.path, last, last, ",")]


def _list_element_removal(source: _Source, element: ast.Constant,
                          elements: Sequence[ast.Constant], removed: Sequence[ast.Constant]) -> _Edit:
    """Remove one string of a literal ``__all__`` with its comma: its whole line when it has one of
    its own (a comment after it goes too), else just the element. ``removed``: every element
    removed with it (the last one's comma before it is the previous one's, when that one goes too:
    removing every element leaves ``[]``)."""
    start, end = source.span(element)
    text = source.text
    own_line = re.match(r"[ \t]*,?[ \t]*(#[^\r\n]*)?(\r\n|\n|\r)", text[end:])
    line_start = max(text.rfind("\n", 0, start), text.rfind("\r", 0, start)) + 1
    if own_line is not None and not text[line_start:start].strip():
        return _Edit(source.path, line_start, end + own_line.end(), "")
    after = re.match(r"\s*,[ \t]*", text[end:])
    if after is not None:
        return _Edit(source.path, start, end + after.end(), "")
    before = re.search(r",\s*$", text[:start])
    index = elements.index(element)
    if before is not None and index and elements[index - 1] not in removed:
        return _Edit(source.path, before.start(), end, "")
    return _Edit(source.path, start, end, "")


def _is_site(path: str) -> bool:
    return "site-packages" in path or "dist-packages" in path


@dataclass(frozen=True)
class FixOutcome:
    """What ``importpolicy fix`` did for one finding.

    Attributes:
        violation: the finding (as first reported, before any fix).
        fix: the fix chosen (applied in memory), or None.
        reason: why no fix was chosen (``""`` when one was), or why it was forced.
        offered: every fix found for it (verified ones, and the direct-imports fix with blockers).
    """

    violation: Violation
    fix: Fix | None
    reason: str
    offered: tuple[Fix, ...] = ()


def find_fixes_at(
    policy: Policy,
    *,
    path: Path,
    line: int,
    overrides: Mapping[Path, bytes] | None = None,
    facts_cache: FactsCache | None = None,
) -> list[Fix]:
    """The verified fixes, without blockers, of the IPL001 whose first hop is a re-export at
    ``path:line`` (an editor's code actions for the diagnostic at that line).

    Args:
        policy: the policy of ``path``.
        path: the light package's ``__init__.py`` (absolute).
        line: the 1-based line of the diagnostic (the re-export's first line).
        overrides: ``{path: bytes}`` of unsaved editor buffers, read instead of the files.
        facts_cache: as for :class:`~flake8_importpolicy.analysis.engine.PolicyEngine`.

    Returns:
        What :func:`find_fixes` offers for that finding, less the fixes it could not verify or that
        would break an importer (an editor applies a code action without review); empty when no
        such finding is at that line.

    Raises:
        flake8_importpolicy.model.errors.InterpreterError: the interpreter cannot be queried.
    """
    with PolicyEngine(policy, overrides=overrides, facts_cache=facts_cache) as engine:
        report = engine.check()
        info = engine.interpreter
    where = os.path.abspath(path)
    for violation in report.violations:
        hop = find_reexport_hop(violation)
        if (hop is None or hop.line != line or hop.path is None
                or os.path.abspath(hop.path) != where):
            continue
        return [fix for fix in find_fixes(policy, violation, report=report, overrides=overrides,
                                          facts_cache=facts_cache, interpreter_info=info)
                if fix.verified and not fix.blockers]
    return []


def fix_findings(
    policy: Policy,
    *,
    targets: Sequence[str] = (),
    kind: FixKind = FixKind.LAZY_REEXPORT,
    force: bool = False,
    facts_cache: FactsCache | None = None,
    interpreter: str | None = None,
    target_versions: Iterable[tuple[int, int]] = (),
) -> tuple[list[FixOutcome], dict[Path, bytes]]:
    """Fix the policy's re-export findings one after the other, in memory.

    Each fix is planned and verified on the tree the earlier ones patched (a second re-export of
    the same package is merged into the ``__getattr__`` the first one wrote).

    Args:
        policy: the loaded policy.
        targets: which findings: light modules, or ``path:line`` of their statements (paths as
            given, relative to the working directory or absolute); empty: every finding whose first
            hop is a re-export.
        kind: the fix to use.
        force: apply a fix even when it lists importers it cannot keep working (its blockers).
        facts_cache, interpreter, target_versions: as for ``importpolicy check``.

    Returns:
        ``(outcomes, patched)``: one outcome per finding tried, and the new bytes of every file the
        chosen fixes change.
    """
    patched: dict[Path, bytes] = {}
    tried: set[tuple[str, ...]] = set()
    outcomes: list[FixOutcome] = []
    info: InterpreterInfo | None = None
    versions = tuple(target_versions)
    applied: list[tuple[TextEdit, ...]] = []  # the chosen fixes' edits, in order

    def as_first_reported(found: Violation) -> Violation:
        """The finding at its line before any fix of this run (the patched tree's lines moved)."""
        line = found.line
        for edits in reversed(applied):
            line = _line_before(edits, found.path, line)
        return found if line == found.line else dataclasses.replace(found, line=line)

    while True:
        with PolicyEngine(policy, overrides=patched, facts_cache=facts_cache, interpreter=interpreter,
                          target_versions=versions, interpreter_info=info) as engine:
            report = engine.check()
            info = engine.interpreter
        pending = [v for v in report.violations
                   if find_reexport_hop(v) is not None and _statement_identity(v) not in tried
                   and _is_target(as_first_reported(v), targets)]
        if not pending:
            break
        violation = pending[0]
        tried.add(_statement_identity(violation))
        why_not: dict[FixKind, str] = {}
        offered = find_fixes(policy, violation, report=report, overrides=patched,
                             facts_cache=facts_cache, interpreter_info=info,
                             interpreter=interpreter, target_versions=versions, why_not=why_not)
        chosen = next((f for f in offered if f.kind is kind), None)
        reason = ""
        if chosen is None:
            others = [f.kind for f in offered if not f.blockers]
            reason = (f"no {kind} fix: {why_not[kind]}" if kind in why_not
                      else f"no {kind} fix passes verification") + (
                f" (importpolicy fix --kind {_OPTION[others[0]]} does)" if others else "")
        elif chosen.blockers and not force:
            others = [f.kind for f in offered if not f.blockers]
            reason = "importers cannot be kept working (--force applies the fix anyway" + (
                f"; importpolicy fix --kind {_OPTION[others[0]]} keeps them)" if others else ")")
            chosen = None
        elif chosen.blockers:
            reason = "forced: importers that cannot be rewritten remain"
        outcomes.append(FixOutcome(as_first_reported(violation), chosen, reason, tuple(offered)))
        if chosen is not None:
            reader = _Reader(patched)
            patched.update(apply_edits(chosen.edits, reader))
            applied.append(chosen.edits)
    return outcomes, patched


_OPTION = {FixKind.LAZY_REEXPORT: "lazy", FixKind.DIRECT_IMPORTS: "direct"}
"""The ``--kind`` value of each fix."""


def _statement_identity(violation: Violation) -> tuple[str, ...]:
    """A finding's statement across edits that move lines: the light module and the node its
    first hop runs."""
    return (violation.light, str(violation.chain[0].imported) if violation.chain else "")


def _is_target(violation: Violation, targets: Sequence[str]) -> bool:
    if not targets:
        return True
    for target in targets:
        if target == violation.light:
            return True
        path, _, line = target.rpartition(":")
        if path and line.isdigit() and int(line) == violation.line:
            try:
                if Path(path).resolve() == violation.path.resolve():
                    return True
            except OSError:
                continue
    return False
