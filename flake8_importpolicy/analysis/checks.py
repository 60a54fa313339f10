"""The checks of a report besides the import chains of light modules, one unit per code:

- IPL003 :func:`check_light_patterns`: a ``[light]`` pattern that names no module;
- IPL004 :func:`check_ignores_used`: an ``[[ignore]]`` entry that accepted nothing
  (:class:`IgnoreTracker` keeps which did);
- IPL005 :func:`check_unanalysable`: a module met whose source cannot be analysed;
- IPL007 :func:`check_entries`: a ``forbid``/``allow`` entry, a ``[heavy]`` or ``[heavy-calls]``
  key that names no module (or function);
- IPL008 :func:`check_budget`: an import-time closure over its ``max-modules``.

IPL001 (the chains) and IPL006 (what cannot be resolved) come from
:mod:`flake8_importpolicy.analysis.light_check`. Each code's wording is in
:mod:`flake8_importpolicy.codes`; a problem is reported where its entry is written (the policy
file, or the base it ``extends``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

from flake8_importpolicy import codes
from flake8_importpolicy.analysis.resolve import ModuleIndex
from flake8_importpolicy.model.errors import find_close_match
from flake8_importpolicy.model.facts import ModuleFacts, SourceProblem
from flake8_importpolicy.model.findings import Problem, Violation
from flake8_importpolicy.model.graph import CallNode, FunctionNode, Hop, module_of
from flake8_importpolicy.model.patterns import ModulePattern, normalize_name
from flake8_importpolicy.model.interpreter import ResolvedModule
from flake8_importpolicy.model.policy import HeavyRule, LightRule, ModuleRules, PatternEntry, Policy
from flake8_importpolicy.model.reading import read_regular_file

if TYPE_CHECKING:
    from flake8_importpolicy.model.ignore import IgnoreRule

__all__ = [
    "IgnoreTracker",
    "ProblemKey",
    "check_budget",
    "check_entries",
    "check_ignores_used",
    "check_light_patterns",
    "check_misplaced",
    "check_unanalysable",
    "count_closure",
    "find_misplaced_packages",
]

ProblemKey = tuple[str, str]
"""``(code, what it is about)``: a problem is reported once per key."""


class IgnoreTracker:
    """The policy's ``[[ignore]]`` entries, and which of them accepted something (IPL004 for the
    others). A plain class: one is made per engine, and a dataclass costs more to define than it
    saves here (docs/performance.md, "Value classes a run does not use are not created")."""

    def __init__(self, rules: tuple[IgnoreRule, ...]) -> None:
        self.rules = rules
        self.used: set[int] = set()

    def __call__(self, importer: str, imported: str) -> bool:
        for number, rule in enumerate(self.rules):
            if rule.matches(importer, imported):
                self.used.add(number)
                return True
        return False

    def accepts_unresolved(self, module: str) -> bool:
        """Whether an ``unresolved = ...`` entry accepts the unresolved code of ``module``."""
        for number, rule in enumerate(self.rules):
            if rule.accepts_unresolved(module):
                self.used.add(number)
                return True
        return False


def check_light_patterns(
    policy: Policy,
    find_light_modules: Callable[[LightRule], tuple[str, ...]],
    misplaced: Mapping[str, Path] | None = None,
) -> tuple[set[str], dict[ProblemKey, Problem]]:
    """IPL003: the light modules the policy's ``[light]`` patterns name, and a problem for each
    pattern that names none (at the line of the policy file that quotes it). A package of
    ``misplaced`` (:func:`find_misplaced_packages`) gives one problem for all its entries, at its
    first light pattern, naming the source root it needs."""
    found: set[str] = set()
    stale: list[str] = []
    for rule in policy.light:
        modules = find_light_modules(rule)
        if not modules and not (misplaced and rule.pattern.top_level in misplaced):
            stale.append(rule.pattern.text)
        found.update(modules)
    lines = _lines_of(policy.path, stale)
    problems = {
        (codes.IPL003.id, text): Problem.of(codes.IPL003, policy.path, lines.get(text), pattern=text)
        for text in stale
    }
    return found, problems


def check_misplaced(policy: Policy, misplaced: Mapping[str, Path]) -> dict[ProblemKey, Problem]:
    """One IPL003 per package of ``misplaced`` (:func:`find_misplaced_packages`, which finds them
    from ``[light]`` patterns), at its first light pattern, for all the policy's entries that name
    its modules (which :func:`check_light_patterns` and :func:`check_entries` then leave out),
    naming the source root it needs."""
    problems: dict[ProblemKey, Problem] = {}
    for package, root in sorted(misplaced.items()):
        named = [pattern for pattern in _named_patterns(policy) if pattern.top_level == package]
        rule = next(rule for rule in policy.light if rule.pattern.top_level == package)
        shown = policy.relpath(root)
        where = f"{shown}/" if shown != "." else "the policy's directory"
        more = f" ({len(named) - 1} more entries of the policy name modules of {package!r})" \
            if len(named) > 1 else ""
        hint = (f"; package {package!r} is in {where}, which is not a source root: set "
                f'source-roots = ["{shown}"] in [settings]{more}')
        path = _source_path(policy, rule.source)
        text = rule.pattern.text
        problems[(codes.IPL003.id, text)] = Problem.of(
            codes.IPL003, path, _lines_of(path, [text]).get(text), pattern=text, hint=hint
        )
    return problems


def _named_patterns(policy: Policy) -> Iterator[ModulePattern]:
    """Each module pattern the policy writes (presets' keys left out): ``[light]`` patterns, their
    ``forbid``/``allow`` entries, ``[heavy]`` and ``[heavy-calls]`` keys."""
    for rule in policy.light:
        yield rule.pattern
        yield from (entry.pattern for entry in rule.entries)
    for heavy in (*policy.heavy, *policy.heavy_calls):
        if not heavy.source.startswith("preset "):
            yield heavy.pattern


def find_misplaced_packages(policy: Policy, index: ModuleIndex) -> dict[str, Path]:
    """The top-level packages of the policy's ``[light]`` patterns that the interpreter cannot
    find but that are in a directory under the policy's that is not a source root
    (``python/app/`` with the default ``source-roots``), each with that directory: the source root
    the policy most likely needs. Only the file system is read, and only for such packages (a
    light pattern whose package is not found matches no module: IPL003 in any case)."""
    roots = {os.path.realpath(root) for root in policy.settings.source_roots}
    found: dict[str, Path] = {}
    seen: set[str] = set()
    for rule in policy.light:
        top = rule.pattern.top_level
        if not top or top in seen:
            continue
        seen.add(top)
        if index.resolve_module(top).kind != "unresolved":
            continue
        root = _find_package_root(policy.root, top)
        if root is not None and os.path.realpath(root) not in roots:
            found[top] = root
    return found


_NOT_SOURCE_DIRS: Final = frozenset({"__pycache__", "build", "dist", "node_modules", "site-packages"})
_SEARCH_DEPTH: Final = 3
_SEARCH_DIRECTORIES: Final = 2000
"""At most this many directories are listed: the search runs only when a check has a problem."""


def _find_package_root(root: Path, package: str) -> Path | None:
    """The directory under ``root`` (``root`` itself included, at most three levels below it) that
    holds the top-level package or module ``package`` (``package/__init__.py`` or ``package.py``):
    the source root a policy whose modules are not found most likely needs (``python/`` for
    ``python/app/__init__.py``). Breadth first, in sorted order, so the answer is the shallowest
    and deterministic; hidden directories, virtual environments (``pyvenv.cfg``) and build, cache
    and ``site-packages`` directories are not searched. None if there is none. Nothing is
    imported; a directory that cannot be listed is skipped.
    """
    level = [root]
    listed = 0
    for _ in range(_SEARCH_DEPTH + 1):
        below: list[Path] = []
        for directory in level:
            if (directory / package / "__init__.py").is_file() or (
                directory / f"{package}.py"
            ).is_file():
                return directory
            listed += 1
            if listed > _SEARCH_DIRECTORIES:
                return None
            try:
                names = sorted(os.listdir(directory))
            except OSError:
                continue
            for name in names:
                child = directory / name
                if name.startswith(".") or name in _NOT_SOURCE_DIRS:
                    continue
                if child.is_dir() and not child.is_symlink() and not (child / "pyvenv.cfg").exists():
                    below.append(child)
        level = below
    return None


def check_unanalysable(
    bad: Iterable[tuple[str, SourceProblem]], index: ModuleIndex
) -> dict[ProblemKey, Problem]:
    """IPL005: one problem per module whose source cannot be analysed, at the line of its file
    that keeps it from being analysed."""
    problems: dict[ProblemKey, Problem] = {}
    for module, problem in bad:
        path = index.resolve_module(module).path
        problems[(codes.IPL005.id, module)] = Problem.of(
            codes.IPL005, path, problem.line,
            module=module, problem=f"line {problem.line}: {problem.message}",
        )
    return problems


def check_entries(
    policy: Policy, index: ModuleIndex, facts: FactsOf | None = None,
    misplaced: Mapping[str, Path] | None = None,
) -> tuple[dict[ProblemKey, Problem], dict[ProblemKey, Problem]]:
    """IPL007: ``(problems, notes)`` for the policy's entries that name nothing the engine can see,
    each entry once: the ``forbid``/``allow`` entries of ``[light]`` rules that name no module
    (:func:`_check_entry`), and the ``[heavy]`` and ``[heavy-calls]`` keys that name no module or
    function (:func:`_check_heavy_key`). Keys of a built-in preset are not checked (the preset
    names packages this interpreter need not have), nor entries of a package of ``misplaced``
    (:func:`check_misplaced` reports them all at once). ``facts`` gives a first-party module's facts,
    to look a ``[heavy-calls]`` function up in; without it only the module part is checked."""
    problems: dict[ProblemKey, Problem] = {}
    notes: dict[ProblemKey, Problem] = {}
    for rule in policy.light:
        for entry in rule.entries:
            if misplaced and entry.pattern.top_level in misplaced:
                continue
            stale = _check_entry(entry, index, _source_path(policy, rule.source))
            if stale is not None:
                (notes if stale[1] else problems).setdefault((codes.IPL007.id, entry.key), stale[0])
    written = [heavy for heavy in (*policy.heavy, *policy.heavy_calls)
               if not heavy.source.startswith("preset ")
               and not (misplaced and heavy.pattern.top_level in misplaced)]
    lines: dict[Path, dict[str, int]] = {}
    for heavy in written:
        path = _source_path(policy, heavy.source)
        if path not in lines:
            lines[path] = _key_lines_of(path, [other.pattern.text for other in written
                                               if _source_path(policy, other.source) == path])
        stale = _check_heavy_key(heavy, index, facts, path, lines[path].get(heavy.pattern.text))
        if stale is not None:
            key = ("heavy-calls" if heavy.call else "heavy") + f".{heavy.pattern.text!r}"
            (notes if stale[1] else problems).setdefault((codes.IPL007.id, key), stale[0])
    return problems, notes


FactsOf = Callable[[ResolvedModule], ModuleFacts]
"""A module's import-time facts (:meth:`FactsSource.module_facts
<flake8_importpolicy.analysis.sources.FactsSource.module_facts>`)."""

_ENTRY_NAMES: Final = "[heavy] or [heavy-calls] key and no module"


def _check_entry(entry: PatternEntry, index: ModuleIndex, path: Path) -> tuple[Problem, bool] | None:
    """A ``forbid``/``allow`` entry that names no module: IPL007 (with a "did you mean" when a
    known name is close), or, when its top-level package is simply not installed here (heavy GPU
    packages on CI), a note: ``(problem, is_note)``; None when it names a module (a wildcard
    pattern: when its part before the first wildcard does)."""
    missing = _missing_module(entry.pattern, index)
    if missing is None:
        return None
    hint, is_note = missing
    problem = Problem.of(codes.IPL007, path, entry.line, key=entry.key, entry=entry.pattern.text,
                         names=_ENTRY_NAMES, hint=hint)
    return problem, is_note


def _missing_module(pattern: ModulePattern, index: ModuleIndex) -> tuple[str, bool] | None:
    """Why the module part of ``pattern`` (before its first wildcard) names no module: ``(hint,
    is_note)``, the hint a "did you mean" when a known name is close, and ``is_note`` when its
    top-level package is not installed here and no installed name is close; None when it names
    a module (or starts with a wildcard)."""
    prefix = pattern.static_prefix
    if not prefix or index.resolve_module(prefix).kind != "unresolved":
        return None
    parts = prefix.split(".")
    known = next((".".join(parts[:n]) for n in range(len(parts) - 1, 0, -1)
                  if index.resolve_module(".".join(parts[:n])).kind != "unresolved"), None)
    if known is not None:
        candidates = list(index.find_children(known))
        missing = ".".join(parts[:known.count(".") + 2])
    else:
        candidates = list(index.find_top_levels())
        missing = parts[0]
    close = find_close_match(missing, candidates, cutoff=0.8)
    if close:
        return f"; did you mean {_replaced(pattern.text, missing, close)!r}?", False
    if known is None:
        return f"; package {missing!r} is not installed for this interpreter", True
    return "", False


def _check_heavy_key(
    rule: HeavyRule, index: ModuleIndex, facts: FactsOf | None, path: Path, line: int | None
) -> tuple[Problem, bool] | None:
    """A ``[heavy]`` key that names no module, or a ``[heavy-calls]`` key whose module part names
    no module or whose function is not bound in its first-party module: ``(IPL007, is_note)``
    as for :func:`_check_entry`; None when it names what it should.

    A call key ``a.b.f`` (or ``a.b.C.m``) is split at its longest prefix that names a module;
    the first name after it must be a submodule of it or, for a first-party module with source,
    a name its import-time code binds (``def``, ``class``, an assignment or an import, also
    through a first-party star import). A module with a PEP 562 ``__getattr__``, a star import
    of other code, or outside the source roots may bind any name: not checked."""
    pattern = rule.pattern
    section = "heavy-calls" if rule.call else "heavy"
    key = f"[{section}]"
    if not rule.call or not pattern.static_prefix:
        missing = _missing_module(pattern, index)
        if missing is None:
            return None
        return Problem.of(codes.IPL007, path, line, key=key, entry=pattern.text,
                          names="module", hint=missing[0]), missing[1]
    parts = pattern.static_prefix.split(".")
    module = next((".".join(parts[:n]) for n in range(len(parts), 0, -1)
                   if index.resolve_module(".".join(parts[:n])).kind != "unresolved"), None)
    if module is None or module == pattern.static_prefix:
        missing = None if module else _missing_module(pattern, index)
        if missing is None:
            return None
        return Problem.of(codes.IPL007, path, line, key=key, entry=pattern.text,
                          names="module or function", hint=missing[0]), missing[1]
    name = parts[module.count(".") + 1]
    children = {child.rpartition(".")[2] for child in index.find_children(module)}
    bound = _bound_names(module, index, facts)
    if name in children or bound is None or name in bound:
        return None
    close = find_close_match(name, {*children, *bound}, cutoff=0.8)
    hint = f"; did you mean {_replaced(pattern.text, f'{module}.{name}', f'{module}.{close}')!r}?" \
        if close else f"; {module} binds no {name!r}"
    return Problem.of(codes.IPL007, path, line, key=key, entry=pattern.text,
                      names="module or function", hint=hint), False


def _bound_names(module: str, index: ModuleIndex, facts: FactsOf | None) -> set[str] | None:
    """The names ``module``'s import-time code binds, with those its first-party star imports
    bring (``__all__``, else their bindings); None when any name may be bound (no facts for it,
    not first-party, a PEP 562 ``__getattr__``, a star import of other code)."""
    from flake8_importpolicy.analysis.hops.lookup import resolve_relative

    names: set[str] = set()
    seen: set[str] = set()
    stack = [module]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        resolved = index.resolve_module(current)
        if facts is None or resolved.origin != "first-party" or not resolved.has_source:
            return None
        found = facts(resolved)
        if found.problem is not None or found.defines_getattr:
            return None
        names.update(found.bindings if current == module or found.all_names is None
                     else found.all_names)
        for site in found.sites:
            if site.kind == "star-import":
                target = resolve_relative(site, current, resolved.is_package)
                if target is None:
                    return None
                stack.append(target)
    return names


def _replaced(text: str, missing: str, close: str) -> str:
    """``text`` with its leading ``missing`` part replaced by ``close``."""
    return close + text[len(missing):] if text.startswith(missing) else text.replace(missing, close, 1)


def check_ignores_used(
    policy: Policy, index: ModuleIndex, ignores: IgnoreTracker
) -> tuple[dict[ProblemKey, Problem], dict[ProblemKey, Problem]]:
    """IPL004: ``(problems, notes)`` for the ``[[ignore]]`` entries that accepted nothing (asked
    once every light module is checked). An accepted blind spot of a package not installed here
    (an optional dependency, a compiled module of another platform) is a note, as IPL007's are."""
    problems: dict[ProblemKey, Problem] = {}
    notes: dict[ProblemKey, Problem] = {}
    for number, ignore in enumerate(policy.ignores):
        if number in ignores.used:
            continue
        unused = Problem.of(
            codes.IPL004, _source_path(policy, ignore.source), ignore.line, import_=ignore.text
        )
        from flake8_importpolicy.model.ignore import NodePattern  # loaded with the entry

        side = ignore.importer
        absent = ignore.unresolved and _is_absent(
            side.module if isinstance(side, NodePattern) else side, index
        )
        (notes if absent else problems)[(codes.IPL004.id, ignore.text)] = unused
    return problems, notes


def check_budget(
    light: str, rules: ModuleRules, closure: Mapping[str, tuple[Hop, ...]], index: ModuleIndex,
    path: Path, edges: Callable[[str], Iterable[Hop]],
) -> Violation | None:
    """IPL008 when ``light``'s import-time ``closure`` (followed as its check follows it) counts
    more units than ``max-modules`` (:func:`count_closure`); None when within it or when no budget
    applies. ``path`` is the light module's file; ``edges`` gives a node's import-time hops."""
    limit = rules.max_modules
    if limit is None:
        return None
    units = count_closure(closure, index, edges)
    if len(units) <= limit:
        return None
    through: dict[str, int] = {}
    for chain in units.values():
        if chain:
            first = str(chain[0].imported)
            through[first] = through.get(first, 0) + 1
    biggest = sorted(through.items(), key=lambda item: (-item[1], item[0]))[:3]
    from flake8_importpolicy.model.budget import Budget  # most policies set no budget

    return Violation(
        light=light, heavy="", pattern="", reason=rules.reason, path=path, line=1, col=0,
        kind="", also=(), chain=(), code=codes.IPL008,
        budget=Budget(len(units), limit, tuple(biggest)),
    )


def count_closure(
    closure: Mapping[str, tuple[Hop, ...]], index: ModuleIndex, edges: Callable[[str], Iterable[Hop]]
) -> dict[str, tuple[Hop, ...]]:
    """The units a ``max-modules`` budget counts in ``closure``
    (:func:`~flake8_importpolicy.model.budget.counts`: each first-party module, and each top-level
    package of other code that a first-party node of the closure imports, per ``edges``, the node's
    import-time hops), each with the shortest chain that first reaches it. Function bodies, heavy
    calls, modules preloaded at start-up, unresolved names and what outside code imports do not
    count."""
    from flake8_importpolicy.model.budget import counts, unit_of  # most policies set no budget

    def is_first_party(node: str) -> bool:
        return index.resolve_module(module_of(node)).origin == "first-party"

    by_first_party = {
        hop.imported
        for node in closure if not isinstance(node, CallNode) and is_first_party(node)
        for hop in edges(node)
    }
    units: dict[str, tuple[Hop, ...]] = {}
    for name, chain in closure.items():
        if isinstance(name, (FunctionNode, CallNode)):
            continue
        resolved = index.resolve_module(name)
        if resolved.preloaded or resolved.kind == "unresolved":
            continue
        first_party = resolved.origin == "first-party"
        imported = name in by_first_party or bool(chain and is_first_party(chain[-1].module))
        if not counts(first_party, imported):
            continue
        unit = unit_of(name, first_party)
        if unit not in units or len(chain) < len(units[unit]):
            units[unit] = chain
    return units


def _source_path(policy: Policy, source: str) -> Path:
    """The file an entry of the policy came from: the policy file, or the base it ``extends``."""
    return next((s.path for s in policy.sources if s.label == source and source), policy.path)


def _is_absent(pattern: ModulePattern, index: ModuleIndex) -> bool:
    """Whether the top-level package a pattern names is not installed here."""
    top = pattern.top_level
    return top is not None and index.resolve_module(top).kind == "unresolved"


_QUOTED = re.compile(r'"((?:[^"\\\n]|\\.)*)"|\'([^\'\n]*)\'')
_KEY = re.compile(r'(?:"((?:[^"\\\n]|\\.)*)"|\'([^\'\n]*)\'|(?<![\w"\'.-])([\w-]+))[ \t]*=(?!=)')


def _lines_of(path: Path, needles: Iterable[str], pattern: re.Pattern[str] = _QUOTED) -> dict[str, int]:
    """The 1-based line of the first line of ``path`` that quotes each needle (a key of the policy,
    NFKC-normalised as patterns are), read once (best effort: needles not found are left out).
    ``pattern`` finds the candidates of a line (its first non-empty group is one)."""
    wanted = set(needles)
    found: dict[str, int] = {}
    if not wanted:
        return found
    try:
        text = read_regular_file(path)[1].decode("utf-8", "replace")
    except OSError:
        return found
    for number, line in enumerate(text.splitlines(), start=1):
        for match in pattern.finditer(line):
            quoted = normalize_name(next(group for group in match.groups() if group is not None))
            if quoted in wanted and quoted not in found:
                found[quoted] = number
    return found


def _key_lines_of(path: Path, keys: Iterable[str]) -> dict[str, int]:
    """As :func:`_lines_of`, for keys: the first line that writes each as a key (``"a.b" =``, or a
    bare ``torch =``), not as a value in a list."""
    return _lines_of(path, keys, _KEY)
