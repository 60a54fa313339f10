"""The policy as values: heavy and light rules, settings, and which rules apply to a module (the
``[[ignore]]`` entries are in :mod:`flake8_importpolicy.model.ignore`).

:mod:`flake8_importpolicy.config.load` builds a :class:`Policy` from ``policy.toml``; everything else
reads it. :meth:`Policy.rules_for` is the one place that decides which rules apply to a module.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from flake8_importpolicy.model.graph import CallNode
from flake8_importpolicy.model.paths import relpath_under
from flake8_importpolicy.model.patterns import ModulePattern, PatternIndex

if TYPE_CHECKING:  # built when a policy has [assume], extends or [[ignore]] (class creation costs time)
    from flake8_importpolicy.model.assume import Assumption
    from flake8_importpolicy.model.bases import PolicySource
    from flake8_importpolicy.model.facts import LazyImports
    from flake8_importpolicy.model.ignore import IgnoreRule

__all__ = [
    "External",
    "UnresolvedMode",
    "HeavyRule",
    "LightRule",
    "ModuleRules",
    "PatternEntry",
    "Policy",
    "Settings",
]

External = Literal["auto", "follow", "stop"]
UnresolvedMode = Literal["info", "error"]


@dataclass(frozen=True)
class HeavyRule:
    """A module pattern that light modules must not import at import time, and why.

    Attributes:
        pattern: the heavy pattern; it also matches every submodule of what it matches.
        reason: why importing it is heavy (a non-empty string from the policy).
        call: True for a ``[heavy-calls]`` rule: the pattern names functions (``torch.cuda.init``)
            that must not be *called* at import time, matched against call nodes ``"name()"``.
        source: where the entry came from when not from the policy file itself: a base file of
            ``extends`` (``"base.toml"``) or a built-in preset (``"preset torch-cuda"``); else ``""``.
        unless_environ: for a ``[heavy-calls]`` rule, ``(variable, value)`` pairs under which the
            call is not heavy (``PYTORCH_NVML_BASED_CUDA_CHECK=1`` for ``torch.cuda.is_available``):
            when every variable has its value, in ``[assume.environ]`` or set by the code before
            the call; else the call's hop names the variables it assumes.
    """

    pattern: ModulePattern
    reason: str
    call: bool = False
    source: str = ""
    unless_environ: tuple[tuple[str, str], ...] = ()

    @property
    def shown_reason(self) -> str:
        """The reason as every message shows it: with ``[from <source>]`` for an entry of a base."""
        return f"{self.reason} [from {self.source}]" if self.source else self.reason

    def matches_node(self, node: str) -> bool:
        """True if this rule matches a graph node: a module name, or a :class:`CallNode` for a call
        (``[heavy-calls]`` rules match calls only, ``[heavy]`` rules modules only)."""
        if isinstance(node, CallNode):
            return self.call and self.pattern.matches(node.callee)
        return not self.call and self.pattern.matches(node)


@dataclass(frozen=True)
class PatternEntry:
    """A ``forbid`` or ``allow`` entry of a ``[light]`` rule that names no ``[heavy]`` or
    ``[heavy-calls]`` key: a module pattern that should name a module (IPL007 when it names none).

    Attributes:
        key: its key path, e.g. ``light."mypkg.cli".forbid[0]``.
        pattern: the pattern.
        line: 1-based line of the entry in the policy file, when known.
    """

    key: str
    pattern: ModulePattern
    line: int | None = None


@dataclass(frozen=True)
class LightRule:
    """A ``[light]`` entry: modules that must stay light at import time.

    Attributes:
        pattern: the light pattern; it matches modules exactly
            (:meth:`ModulePattern.matches_exactly`).
        reason: why these modules must stay light.
        forbid: the heavy rules this light module must not reach, resolved: every ``[heavy]`` rule
            (in file order) when ``forbid`` is absent; an entry naming a ``[heavy]`` key is that
            rule, any other entry is a new rule carrying this light rule's ``reason``.
        allow: patterns subtracted from ``forbid``; traversal continues through allowed modules.
        after_import: Python expressions (each valid for ``ast.parse(mode="eval")``) that must be
            true after importing the module, for the runtime proof.
        entries: the ``forbid`` and ``allow`` entries that name no ``[heavy]``/``[heavy-calls]``
            key, in file order (checked against the modules that exist: IPL007).
        source: as :attr:`HeavyRule.source`.
        max_modules: the import budget (``max-modules``): how many modules the import-time closure
            may count (:func:`~flake8_importpolicy.model.budget.count_units`), or None.
        max_import_ms: ``max-import-ms``: the import time ``verify`` reports against (milliseconds,
            the median of its runs), or None.
    """

    pattern: ModulePattern
    reason: str
    forbid: tuple[HeavyRule, ...]
    allow: tuple[ModulePattern, ...]
    after_import: tuple[str, ...]
    entries: tuple[PatternEntry, ...] = ()
    source: str = ""
    max_modules: int | None = None
    max_import_ms: float | None = None


@dataclass(frozen=True)
class ModuleRules:
    """Every rule that applies to one module, merged: the one answer to "what may this module not
    run at import time" (:meth:`Policy.rules_for`), used by check, why, verify and the pytest plugin.

    Attributes:
        module: the module.
        light: the ``[light]`` rules whose pattern names it exactly, in policy order (empty when it
            is not a light module).
        forbid: every ``forbid`` rule of those rules, in order, without repeats (same pattern and
            kind), so no rule's prohibition is lost; without a ``[light]`` rule, every ``[heavy]`` and
            ``[heavy-calls]`` rule.
        allow: the ``allow`` patterns that every one of those rules allows.
        after_import: every rule's ``after-import`` expressions, in order, without repeats.
        max_modules: the smallest ``max-modules`` of those rules, or None.
        max_import_ms: the smallest ``max-import-ms`` of those rules, or None.
    """

    module: str
    light: tuple[LightRule, ...]
    forbid: tuple[HeavyRule, ...]
    allow: tuple[ModulePattern, ...] = ()
    after_import: tuple[str, ...] = ()
    max_modules: int | None = None
    max_import_ms: float | None = None

    @property
    def reason(self) -> str:
        """Why the module must stay light (the first ``[light]`` rule's reason; empty if none)."""
        return self.light[0].reason if self.light else ""

    def forbidden_rule(self, node: str) -> HeavyRule | None:
        """The first ``forbid`` rule matching a graph node (a module name, or a :class:`CallNode`),
        or None, also when an ``allow`` pattern matches it (both with submodule semantics)."""
        for rule in self.forbid:
            if rule.matches_node(node):
                name = node.callee if isinstance(node, CallNode) else node
                if any(allowed.matches(name) for allowed in self.allow):
                    return None
                return rule
        return None


@dataclass(frozen=True)
class Settings:
    """The ``[settings]`` table with defaults applied.

    Attributes:
        source_roots: absolute, resolved directories holding first-party top-level packages;
            default ``src`` if it is a directory, else the policy file's directory.
        interpreter: absolute path of the Python to analyse for, or None for the one running
            importpolicy. Not resolved (a virtualenv's ``bin/python`` symlink is kept).
        target_versions: sorted, unique ``(major, minor)`` pairs; empty means the interpreter's
            version.
        platform: a ``sys.platform`` value; default ``sys.platform``.
        external: what to do with imports of third-party modules: ``"auto"``, ``"follow"`` or
            ``"stop"``; default ``"auto"``.
        cache_dir: absolute cache directory; default ``.importpolicy_cache`` next to the policy.
        user_cache_dir: ``settings.user-cache-dir``: the user-level cache directory (absolute),
            False for none (``""``), None when not set (``$IMPORTPOLICY_CACHE_DIR`` or the
            platform's user cache directory then decides:
            :func:`~flake8_importpolicy.answers.cache_dir.find_user_cache_dir`).
        call_depth: how many nested calls of first-party functions made at import time are
            followed (docs/semantics.md rule 16); default 3.
        lazy_imports: which PEP 810 world to check: ``normal`` (``lazy`` keywords and
            ``__lazy_modules__`` as written), ``all`` (``-X lazy_imports=all``) or ``none``
            (``-X lazy_imports=none``: every import eager); default ``normal``.
        unresolved: ``"info"`` (default: unresolved import-time code, IPL006, is reported and does
            not change the exit status) or ``"error"`` (it fails the check).
        baseline: the baseline file (absolute; ``settings.baseline``, relative to the policy file):
            findings recorded there are not reported (docs/policy.md, "Baseline"); None for none.
        source_roots_as_written: the source roots as the policy names them, absolute but not
            resolved (a symbolic link kept), in the order of :attr:`source_roots`: the answer
            indexes check that each still resolves to its root.
    """

    source_roots: tuple[Path, ...]
    interpreter: Path | None
    target_versions: tuple[tuple[int, int], ...]
    platform: str
    external: External
    cache_dir: Path
    call_depth: int
    lazy_imports: LazyImports = "normal"
    unresolved: UnresolvedMode = "info"
    baseline: Path | None = None
    source_roots_as_written: tuple[Path, ...] = ()
    user_cache_dir: Path | Literal[False] | None = None

    def interpreter_executable(self, override: str | None = None) -> str:
        """The Python the project runs on: ``override`` (``--interpreter``), else :attr:`interpreter`,
        else the one running importpolicy (``sys.executable``)."""
        return override or (str(self.interpreter) if self.interpreter else sys.executable)


@dataclass(frozen=True)
class Policy:
    """A loaded, valid policy.

    Attributes:
        path: the policy file (``policy.toml`` or ``pyproject.toml``), absolute and resolved.
        root: its directory; relative paths in the policy are relative to it.
        settings: the settings, defaults applied.
        heavy: the ``[heavy]`` rules, in file order.
        light: the ``[light]`` rules, in file order.
        heavy_calls: the ``[heavy-calls]`` rules (``call=True``), in file order.
        ignores: the ``[[ignore]]`` rules, in file order (a base's first, ``extends``).
        digest: the sha256 hex digest of the file's bytes, combined with those of every base file
            and preset it extends (for caches: any change of what the policy is made of changes it).
        file_digest: the sha256 hex digest of the policy file's own bytes.
        assumptions: the ``[assume]`` and ``[assume.environ]`` entries.
        sources: the base files and presets merged in (``extends``, transitively), in the order
            they were read.
    """

    path: Path
    root: Path
    settings: Settings
    heavy: tuple[HeavyRule, ...]
    light: tuple[LightRule, ...]
    ignores: tuple[IgnoreRule, ...]
    digest: str
    heavy_calls: tuple[HeavyRule, ...] = ()
    file_digest: str = ""
    assumptions: tuple[Assumption, ...] = ()
    sources: tuple[PolicySource, ...] = ()

    @property
    def presets(self) -> tuple[str, ...]:
        """The names of the built-in presets in effect (``extends``, transitively)."""
        return tuple(s.label.removeprefix("preset ") for s in self.sources if s.label.startswith("preset "))

    def relpath(self, path: Path) -> str:
        """Return ``path`` relative to :attr:`root` with ``/`` separators when it is inside it,
        else ``str`` of the absolute path (see :func:`relpath_under`)."""
        return relpath_under((self.root,), path)

    @functools.cached_property
    def _light_index(self) -> PatternIndex[LightRule]:
        return PatternIndex((rule.pattern, rule) for rule in self.light)

    @functools.cached_property
    def first_party_tops(self) -> frozenset[str]:
        """The top-level modules and packages found directly in the source roots (a directory
        named as an identifier, ``name.py``, or an extension module ``name.*.so``/``.pyd``): the
        project's own packages. Read from the directory listings once per policy."""
        names: set[str] = set()
        for root in self.settings.source_roots:
            try:
                entries = list(os.scandir(root))
            except OSError:
                continue
            for entry in entries:
                stem, dot, suffix = entry.name.partition(".")
                if not stem.isidentifier() or stem in ("site-packages", "dist-packages"):
                    continue
                try:
                    if not dot and entry.is_dir():
                        names.add(stem)
                    elif suffix == "py" or (dot and suffix.endswith(("so", "pyd"))):
                        names.add(stem)
                except OSError:
                    continue
        return frozenset(names)

    def applies(self, rule: HeavyRule, module: str | None = None) -> bool:
        """Whether ``rule`` applies to ``module`` (None: to some module of the project). An entry of
        a built-in preset never applies to the project's own packages (:attr:`first_party_tops`)
        nor to the package ``module`` belongs to: ``heavy-ml`` lists ``accelerate``, and
        accelerate's own light modules import accelerate's submodules. Every other rule applies.
        """
        if not rule.source.startswith("preset "):
            return True
        top = rule.pattern.top_level
        if top is None:
            return True
        return top not in self.first_party_tops and (module is None or top != module.partition(".")[0])

    def rules_for(self, module: str) -> ModuleRules:
        """The rules that apply to ``module``: every ``[light]`` rule whose pattern names it exactly,
        merged (see :class:`ModuleRules`); for a module no ``[light]`` rule names, every ``[heavy]``
        and ``[heavy-calls]`` rule. Either way without the preset entries that do not apply to it
        (:meth:`applies`).
        """
        light = tuple(self._light_index.find_exact(module))
        if not light:
            every = self.heavy + self.heavy_calls
            return ModuleRules(module, (), tuple(r for r in every if self.applies(r, module)))
        budgets = [rule.max_modules for rule in light if rule.max_modules is not None]
        times = [rule.max_import_ms for rule in light if rule.max_import_ms is not None]
        max_modules = min(budgets) if budgets else None
        max_import_ms = min(times) if times else None
        if len(light) == 1:
            only = light[0]
            return ModuleRules(module, light, tuple(r for r in only.forbid if self.applies(r, module)),
                               only.allow, only.after_import, max_modules, max_import_ms)
        forbid: dict[tuple[str, bool], HeavyRule] = {}
        for rule in light:
            for heavy in rule.forbid:
                if self.applies(heavy, module):
                    forbid.setdefault((heavy.pattern.text, heavy.call), heavy)
        allowed = [{pattern.text for pattern in rule.allow} for rule in light]
        allow = tuple(p for p in light[0].allow if all(p.text in texts for texts in allowed))
        after = tuple(dict.fromkeys(e for rule in light for e in rule.after_import))
        return ModuleRules(module, light, tuple(forbid.values()), allow, after, max_modules,
                           max_import_ms)
