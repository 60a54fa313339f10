"""The policy as values: heavy, light and ignore rules, settings, and which rules apply to a module.

:mod:`flake8_importpolicy.config.load` builds a :class:`Policy` from ``policy.toml``; everything else
reads it. :meth:`Policy.rules_for` is the one place that decides which rules apply to a module.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from flake8_importpolicy.model.graph import CallNode
from flake8_importpolicy.model.paths import relpath_under
from flake8_importpolicy.model.patterns import ModulePattern, PatternIndex

__all__ = [
    "External",
    "HeavyRule",
    "IgnoreRule",
    "LightRule",
    "ModuleRules",
    "Policy",
    "Settings",
]

External = Literal["auto", "follow", "stop"]


@dataclass(frozen=True)
class HeavyRule:
    """A module pattern that light modules must not import at import time, and why.

    Attributes:
        pattern: the heavy pattern; it also matches every submodule of what it matches.
        reason: why importing it is heavy (a non-empty string from the policy).
        call: True for a ``[heavy-calls]`` rule: the pattern names functions (``torch.cuda.init``)
            that must not be *called* at import time, matched against call nodes ``"name()"``.
    """

    pattern: ModulePattern
    reason: str
    call: bool = False

    def matches_node(self, node: str) -> bool:
        """True if this rule matches a graph node: a module name, or a :class:`CallNode` for a call
        (``[heavy-calls]`` rules match calls only, ``[heavy]`` rules modules only)."""
        if isinstance(node, CallNode):
            return self.call and self.pattern.matches(node.callee)
        return not self.call and self.pattern.matches(node)


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
    """

    pattern: ModulePattern
    reason: str
    forbid: tuple[HeavyRule, ...]
    allow: tuple[ModulePattern, ...]
    after_import: tuple[str, ...]


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
    """

    module: str
    light: tuple[LightRule, ...]
    forbid: tuple[HeavyRule, ...]
    allow: tuple[ModulePattern, ...] = ()
    after_import: tuple[str, ...] = ()

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
class IgnoreRule:
    """An ``[[ignore]]`` entry: accepted import edges, removed from the graph before any check.

    Attributes:
        importer: the pattern left of ``->``.
        imported: the pattern right of ``->``.
        reason: why the import is accepted.
        text: the ``import`` value as written, e.g. ``"mypkg.a -> mypkg.b"``.
        line: 1-based line of the entry's ``import = ...`` key in the policy file (best effort;
            1 if not found).
    """

    importer: ModulePattern
    imported: ModulePattern
    reason: str
    text: str
    line: int

    def matches(self, importer: str, imported: str) -> bool:
        """Return True if the edge ``importer -> imported`` (dotted names) is ignored.

        Both sides match exactly (:meth:`ModulePattern.matches_exactly`, as import-linter's
        ``ignore_imports``): ``"a -> b"`` does not ignore ``a -> b.c``; write ``"a -> b.**"``.
        """
        return self.importer.matches_exactly(importer) and self.imported.matches_exactly(imported)


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
        call_depth: how many nested calls of first-party functions made at import time are
            followed (docs/semantics.md rule 16); default 3.
        lazy_imports: which PEP 810 world to check: ``normal`` (``lazy`` keywords and
            ``__lazy_modules__`` as written), ``all`` (``-X lazy_imports=all``) or ``none``
            (``-X lazy_imports=none``: every import eager); default ``normal``.
    """

    source_roots: tuple[Path, ...]
    interpreter: Path | None
    target_versions: tuple[tuple[int, int], ...]
    platform: str
    external: External
    cache_dir: Path
    call_depth: int
    lazy_imports: str = "normal"

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
        ignores: the ``[[ignore]]`` rules, in file order.
        digest: the sha256 hex digest of the file's bytes (for caches).
    """

    path: Path
    root: Path
    settings: Settings
    heavy: tuple[HeavyRule, ...]
    light: tuple[LightRule, ...]
    ignores: tuple[IgnoreRule, ...]
    digest: str
    heavy_calls: tuple[HeavyRule, ...] = ()

    def relpath(self, path: Path) -> str:
        """Return ``path`` relative to :attr:`root` with ``/`` separators when it is inside it,
        else ``str`` of the absolute path (see :func:`relpath_under`)."""
        return relpath_under((self.root,), path)

    @functools.cached_property
    def _light_index(self) -> PatternIndex[LightRule]:
        return PatternIndex((rule.pattern, rule) for rule in self.light)

    def rules_for(self, module: str) -> ModuleRules:
        """The rules that apply to ``module``: every ``[light]`` rule whose pattern names it exactly,
        merged (see :class:`ModuleRules`); for a module no ``[light]`` rule names, every ``[heavy]``
        and ``[heavy-calls]`` rule.
        """
        light = tuple(self._light_index.find_exact(module))
        if not light:
            return ModuleRules(module, (), self.heavy + self.heavy_calls)
        if len(light) == 1:
            only = light[0]
            return ModuleRules(module, light, only.forbid, only.allow, only.after_import)
        forbid: dict[tuple[str, bool], HeavyRule] = {}
        for rule in light:
            for heavy in rule.forbid:
                forbid.setdefault((heavy.pattern.text, heavy.call), heavy)
        allowed = [{pattern.text for pattern in rule.allow} for rule in light]
        allow = tuple(p for p in light[0].allow if all(p.text in texts for texts in allowed))
        after = tuple(dict.fromkeys(e for rule in light for e in rule.after_import))
        return ModuleRules(module, light, tuple(forbid.values()), allow, after)
