"""``importpolicy suggest``: which modules should stay light and which are heavy, read from the
sources (never imported), for a draft policy.

A whole project must cost about as much as a cold ``check`` of a few light modules, and ``check``
parses only their closures; so ``suggest`` does not parse. It scans every first-party file for its
module-level imports: the statements that start a line (``import x``, ``from x import y``, with
parenthesised continuation lines), found with one regular expression. Imports inside functions,
classes, ``if`` and ``try`` blocks are indented and so not seen, and neither are calls at import
time: the numbers are predictions from module-level imports,
and ``importpolicy why MODULE --format json`` gives the count ``check`` makes. From this graph come
each module's importers and closure, for every module at once (bit sets over the strongly
connected components, in reverse topological order), and each light candidate's closure with the
heavy candidates as leaves, as ``check`` will traverse it with the draft.

Candidates and the score are documented in docs/adopt.md.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Final

from flake8_importpolicy.analysis.engine import PolicyEngine
from flake8_importpolicy.model.patterns import PatternError, parse_pattern
from flake8_importpolicy.model.policy import HeavyRule
from flake8_importpolicy.model.reading import read_regular_file
from flake8_importpolicy.model.suggestion import HeavyCandidate, LightCandidate, Suggestion

__all__ = ["ImportScan", "find_first_party_modules", "is_auxiliary", "scan_imports", "suggest_policy"]

MANY_IMPORTERS: Final = 3
"""A module imported at module level by at least this many others is a light candidate."""
ENTRY_POINT_WEIGHT: Final = 4
TOP_LEVEL_WEIGHT: Final = 2
MAX_HEAVY: Final = 10
"""At most this many first-party heavy candidates."""


AUXILIARY: Final = frozenset(
    ("test", "tests", "testing", "example", "examples", "doc", "docs", "benchmark", "benchmarks"))
"""Package names whose modules are never candidates: tests, examples, docs and benchmarks run beside
the product, not inside it."""


def is_auxiliary(module: str) -> bool:
    """True for a module of a test, example, documentation or benchmark package (a segment in
    :data:`AUXILIARY`), or a test module or package (a segment ``test_*``, ``*_test`` or
    ``conftest``, anywhere in the name: ``accelerate.test_utils.scripts`` too): never a candidate
    unless a console script or entry point names it, and its imports do not count as importers."""
    return any(part in AUXILIARY or part.startswith("test_") or part.endswith("_test")
               or part == "conftest" for part in module.split("."))


def heavy_threshold(modules: int) -> int:
    """The estimated closure from which a first-party module is a heavy candidate: a tenth of the
    project's modules, and at least 20."""
    return max(20, modules // 10)


def score(importers: int, closure: int, *, entry_point: bool, top_level: bool) -> float:
    """A light candidate's score (docs/adopt.md): ``(1 + importers) × weight / (1 + closure)``,
    weight 4 for a module a console script or entry point names, 2 for a top-level package, else 1;
    rounded to 3 decimals so that the order is the same on every machine."""
    weight = ENTRY_POINT_WEIGHT if entry_point else TOP_LEVEL_WEIGHT if top_level else 1
    return round((1 + importers) * weight / (1 + closure), 3)


class ImportScan:
    """The module-level import graph of the first-party modules.

    Args:
        modules: ``{module: (file, is_package)}`` of every first-party module.

    Attributes:
        modules: as given.
        imports: ``{module: sorted first-party modules and external top-level names it imports at
            module level, parent packages included}``.
        importers: ``{module: how many first-party modules import it at module level}``, not
            counting test, example, doc and benchmark modules (:func:`is_auxiliary`).
    """

    def __init__(self, modules: Mapping[str, tuple[Path | None, bool]]) -> None:
        self.modules = dict(modules)
        self.imports: dict[str, tuple[str, ...]] = {}
        self.importers: dict[str, int] = {}
        self._absolute: dict[str, frozenset[str]] = {}  # absolute statements repeat across files
        for module in sorted(self.modules):
            targets = self.imports[module] = self.module_imports(module)
            parent = module.rpartition(".")[0]
            if is_auxiliary(module):
                continue
            for target in targets:
                if target in self.modules and target != parent:
                    self.importers[target] = self.importers.get(target, 0) + 1

    def module_imports(self, module: str) -> tuple[str, ...]:
        """What ``module``'s module-level imports run (sorted), its parent package included."""
        path, is_package = self.modules[module]
        found: set[str] = set()
        if path is not None:
            try:
                data = read_regular_file(path)[1]
            except OSError:
                data = b""
            for statement in scan_imports(data):
                if statement.startswith("from ."):
                    found.update(self._targets(statement, module, is_package))
                    continue
                targets = self._absolute.get(statement)
                if targets is None:
                    targets = self._absolute[statement] = frozenset(
                        self._targets(statement, module, is_package))
                found.update(targets)
        parent = module.rpartition(".")[0]
        if parent:
            found.add(parent)
        found.discard(module)
        return tuple(sorted(found))

    def _targets(self, statement: str, module: str, is_package: bool) -> set[str]:
        """What one import statement runs: first-party modules (with their parent packages) and
        external top-level names."""
        found: set[str] = set()
        if statement.startswith("import"):
            for item in statement[6:].split(","):
                name = item.split(" as ")[0].strip()
                if name:
                    found.add(self._unit(name))
            return found
        head, _, names = statement[4:].partition(" import ")
        base = head.strip()
        level = len(base) - len(base.lstrip("."))
        if level:
            package = module if is_package else module.rpartition(".")[0]
            parts = package.split(".") if package else []
            if level - 1 > len(parts):
                return found
            parts = parts[:len(parts) - (level - 1)]
            rest = base[level:]
            base = ".".join([*parts, rest] if rest else parts)
        if not base:
            return found
        found.add(self._unit(base))
        for item in names.replace("(", " ").replace(")", " ").split(","):
            name = item.split(" as ")[0].strip()
            if name and name != "*" and f"{base}.{name}" in self.modules:
                found.add(f"{base}.{name}")
        return found

    def _unit(self, name: str) -> str:
        """A first-party module as itself (its nearest known parent when the name is an
        attribute); anything else as its top-level name."""
        while name not in self.modules and "." in name:
            name = name.rpartition(".")[0]
        return name

    def closures(self, ignore: frozenset[str]) -> dict[str, int]:
        """Every first-party module's estimated closure: how many first-party modules and external
        top-level names (except ``ignore``: those preloaded at start-up) its module-level imports
        reach, itself and its parent packages included."""
        nodes = sorted({*self.modules, *(t for ts in self.imports.values() for t in ts)} - ignore)
        number = {node: index for index, node in enumerate(nodes)}
        edges = {node: [number[t] for t in self.imports.get(node, ()) if t in number] for node in nodes}
        bits: dict[int, int] = {}
        for component in _components(len(nodes), [edges[node] for node in nodes]):
            members = 0
            for index in component:
                members |= 1 << index
            reach = members
            inside = set(component)
            for index in component:
                for target in edges[nodes[index]]:
                    if target not in inside:
                        reach |= bits[target]
            for index in component:
                bits[index] = reach
        return {module: bits[number[module]].bit_count() for module in self.modules}


def find_first_party_modules(source_roots: Sequence[Path]) -> dict[str, tuple[Path | None, bool]]:
    """``{module: (file or None, is_package)}`` of every module under the source roots, found from
    directory listings as path search finds them (a regular package beats a module of the same
    name; a directory without ``__init__`` holding modules is a namespace package; extension
    modules have no file to read). ``site-packages`` directories and names that are not
    identifiers are skipped; an earlier root wins."""
    found: dict[str, tuple[Path | None, bool]] = {}

    def walk(directory: Path, prefix: str, top: bool) -> bool:
        """Add what ``directory`` holds; True if it holds any module."""
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            return False
        any_module = False
        files = {e.name for e in entries if e.is_file()}
        for entry in entries:
            name = entry.name
            if entry.is_dir(follow_symlinks=False):
                if not name.isidentifier() or name in ("site-packages", "dist-packages"):
                    continue
                module = f"{prefix}{name}"
                if module in found:
                    continue
                init = Path(entry.path) / "__init__.py"
                regular = init.is_file()
                found[module] = (init if regular else None, True)
                if walk(Path(entry.path), f"{module}.", False) or regular:
                    any_module = True
                else:
                    del found[module]
                continue
            stem, dot, suffix = name.partition(".")
            if not dot or not stem.isidentifier() or stem == "__init__":
                continue
            module = f"{prefix}{stem}"
            if module in found:
                continue
            if suffix == "py":
                found[module] = (Path(entry.path), False)
                any_module = True
            elif suffix.endswith(("so", "pyd")) and f"{stem}.py" not in files:
                found[module] = (None, False)
                any_module = True
        return any_module

    for root in source_roots:
        walk(root, "", True)
    return found


_STATEMENT: Final = re.compile(
    rb"\n((?:import|from)[ \t]"  # a statement that starts a line, then: up to the closing
    rb"(?:[^\n(#\\]*\([^)]*\)[^\n]*"  # parenthesis of a bracketed name list,
    rb"|[^\n#\\]*\\\n[^\n]*"  # or over one explicit line join,
    rb"|[^\n]*))"  # or the rest of its line
)


def scan_imports(data: bytes) -> list[str]:
    """The import statements that start a line of ``data`` (module level), each on one line:
    ``import a.b as c, d`` or ``from .x import (y, z)`` with comments and line breaks removed."""
    found: list[str] = []
    for raw in _STATEMENT.findall(b"\n" + data):
        if b"\n" in raw:
            code = b" ".join(part.partition(b"#")[0] for part in raw.split(b"\n")).replace(b"\\", b" ")
        else:
            code = raw.partition(b"#")[0]
        found.append(" ".join(code.decode("utf-8", "replace").split()))
    return found


def _components(count: int, edges: Sequence[Sequence[int]]) -> list[list[int]]:
    """Strongly connected components of a graph (Tarjan, iterative), each before the components
    that reach it (reverse topological order)."""
    index_of = [-1] * count
    low = [0] * count
    on_stack = [False] * count
    stack: list[int] = []
    result: list[list[int]] = []
    counter = 0
    for root in range(count):
        if index_of[root] != -1:
            continue
        work = [(root, 0)]
        while work:
            node, position = work.pop()
            if position == 0:
                index_of[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack[node] = True
            recurse = False
            targets = edges[node]
            while position < len(targets):
                target = targets[position]
                position += 1
                if index_of[target] == -1:
                    work.append((node, position))
                    work.append((target, 0))
                    recurse = True
                    break
                if on_stack[target]:
                    low[node] = min(low[node], index_of[target])
            if recurse:
                continue
            if low[node] == index_of[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack[member] = False
                    component.append(member)
                    if member == node:
                        break
                result.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return result


def suggest_policy(
    engine: PolicyEngine,
    scan: ImportScan,
    *,
    limit: int,
    entry_points: Mapping[str, tuple[str, ...]],
    heavy_ml: Sequence[tuple[str, str]],
    root: Path,
) -> Suggestion:
    """Light and heavy candidates for ``engine``'s project (see the module docstring).

    Args:
        engine: an engine over the project (an existing policy's, or a default one): its policy's
            ``[heavy]`` rules stay heavy, its light modules are not proposed again, its path search
            tells which names are preloaded at start-up.
        scan: the module-level imports of the project's modules (made before the engine, while
            the interpreter is queried).
        limit: how many light candidates to keep (>= 0).
        entry_points: ``{module: declarations}`` of the project's console scripts and entry points.
        heavy_ml: ``(module pattern, reason)`` of the built-in ``heavy-ml`` preset.
        root: the directory the draft is for.
    """
    index = engine.index
    policy = engine.policy
    modules = scan.modules
    preloaded = frozenset(
        name for name in {t for ts in scan.imports.values() for t in ts} - modules.keys()
        if index.resolve_module(name).preloaded
    )
    closures = scan.closures(preloaded)
    known_light = sorted({m for rule in policy.light for m in engine.find_light_modules(rule)})
    reached_names = {t for ts in scan.imports.values() for t in ts}

    # a preset entry never applies to the project's own packages (Policy.applies): left out, and said
    preset = [HeavyRule(parse_pattern(text), reason, source="preset heavy-ml")
              for text, reason in heavy_ml]
    dropped = {(r.source.removeprefix("preset "), r.pattern.text)
               for r in (*policy.heavy, *preset) if not policy.applies(r)}
    heavy_rules = [r for r in policy.heavy if policy.applies(r)]
    threshold = heavy_threshold(len(modules))
    first_party_heavy = _pick_heavy(scan, closures, threshold, entry_points, known_light, heavy_rules)
    heavy: list[HeavyCandidate] = [
        HeavyCandidate(m, "large-closure", closures[m], scan.importers.get(m, 0))
        for m in first_party_heavy
    ]
    for rule in sorted(preset, key=lambda r: r.pattern.text):
        pattern_text = rule.pattern.text
        if rule.pattern.top_level in reached_names and policy.applies(rule) and not any(
            r.pattern.matches(pattern_text) for r in policy.heavy
        ):
            heavy.append(HeavyCandidate(pattern_text, "heavy-ml", reason=rule.reason))
    for candidate in heavy:
        try:
            heavy_rules.append(HeavyRule(parse_pattern(candidate.module), candidate.why))
        except PatternError:
            continue
    heavy_names = {candidate.module for candidate in heavy}

    ranked: list[tuple[int, float, str, tuple[str, ...]]] = []
    for module in sorted(modules):
        if module in known_light or module in heavy_names or any(
            rule.matches_node(module) for rule in heavy_rules
        ):
            continue
        if modules[module][0] is None or (is_auxiliary(module) and module not in entry_points):
            continue
        why = []
        if modules[module][1]:
            why.append("package")
        if module in entry_points:
            why.append("entry-point")
        if scan.importers.get(module, 0) >= MANY_IMPORTERS:
            why.append("imported")
        if not why:
            continue
        top_level = "." not in module and modules[module][1]
        value = score(scan.importers.get(module, 0), closures[module],
                      entry_point=module in entry_points, top_level=top_level)
        # the top-level packages, then the console-script modules: always candidates, first
        rank = 0 if top_level else 1 if module in entry_points else 2
        ranked.append((rank, value, module, tuple(sorted(why))))
    ranked.sort(key=lambda item: (item[0], -item[1], item[2]))
    always = sum(1 for item in ranked if item[0] < 2)
    draft_forbid = not policy.heavy_calls  # a forbid list would leave the [heavy-calls] rules out
    light: list[LightCandidate] = []
    for _, value, module, reasons in ranked[:max(always, limit)]:
        units, reaches = _closure_until(scan, module, heavy_rules, preloaded)
        forbid = tuple(dict.fromkeys(r.pattern.text for r in heavy_rules)) if (
            reaches and draft_forbid) else ()
        light.append(LightCandidate(
            module, modules[module][0], reasons, scan.importers.get(module, 0), value, units,
            reaches, entry_points.get(module, ()), forbid,
        ))
    return Suggestion(
        root=root,
        source_roots=policy.settings.source_roots,
        modules=len(modules),
        light=tuple(light),
        heavy=tuple(heavy),
        policy=policy.path if policy.path.exists() else None,
        known_light=tuple(known_light),
        threshold=threshold,
        dropped=tuple(sorted(dropped)),
    )


def _closure_until(
    scan: ImportScan, module: str, heavy: Sequence[HeavyRule], preloaded: frozenset[str]
) -> tuple[int, tuple[str, ...]]:
    """``module``'s closure from module-level imports with the heavy modules as leaves, counted as
    ``max-modules`` counts (first-party modules, other top-level names, not the preloaded ones),
    and the heavy patterns it reaches, sorted."""
    seen = {module}
    order = [module]
    reaches: set[str] = set()
    for name in order:
        rule = next((r for r in heavy if r.matches_node(name)), None) if name != module else None
        if rule is not None:
            reaches.add(rule.pattern.text)
            continue
        for target in scan.imports.get(name, ()):
            if target not in seen and target not in preloaded:
                seen.add(target)
                order.append(target)
    return len(seen), tuple(sorted(reaches))


def _pick_heavy(
    scan: ImportScan,
    closures: Mapping[str, int],
    threshold: int,
    entry_points: Mapping[str, object],
    known_light: Iterable[str],
    existing: Sequence[HeavyRule],
) -> list[str]:
    """First-party heavy candidates: modules whose estimated closure reaches ``threshold``, most
    imported first, skipping a module whose closure contains one already picked or that one
    picked reaches (one heavy module per heavy region); never an entry-point, a top-level package
    or a light module of the existing policy; at most :data:`MAX_HEAVY`, largest closure first."""
    excluded = set(known_light) | set(entry_points)
    big = sorted(
        (m for m, size in closures.items()
         if size >= threshold and "." in m and m not in excluded and not is_auxiliary(m)
         and not any(rule.matches_node(m) for rule in existing)),
        key=lambda m: (-scan.importers.get(m, 0), -closures[m], m),
    )
    picked: list[str] = []
    reach_of: dict[str, set[str]] = {}
    for module in big:
        reach = _reach(scan, module)
        if any(p in reach or module in reach_of[p] for p in picked):
            continue
        picked.append(module)
        reach_of[module] = reach
        if len(picked) == MAX_HEAVY:
            break
    return sorted(picked, key=lambda m: (-closures[m], m))


def _reach(scan: ImportScan, module: str) -> set[str]:
    """The first-party modules ``module``'s module-level imports reach (itself included)."""
    seen = {module}
    todo = [module]
    while todo:
        for target in scan.imports.get(todo.pop(), ()):
            if target in scan.modules and target not in seen:
                seen.add(target)
                todo.append(target)
    return seen
