"""``[[ignore]]`` entries: accepted import edges and accepted unresolved import-time code.

Apart from :mod:`flake8_importpolicy.model.policy` because most policies have no ``[[ignore]]``
entry, and each frozen dataclass costs its creation at every import (docs/performance.md, "Value
classes a run does not use are not created"): the loader imports this module when it reads one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from flake8_importpolicy.model.graph import CallNode, FunctionNode
from flake8_importpolicy.model.patterns import ModulePattern, PatternError, parse_pattern

__all__ = ["IgnoreRule", "NodePattern", "parse_node_pattern"]


@dataclass(frozen=True)
class NodePattern:
    """One side of an ``[[ignore]]`` entry: a module pattern (``mypkg.a``, ``mypkg.**``), a function
    body run at import time (``mypkg.env:patch``, ``mypkg.models:Model.__init__``) or a call of a
    ``[heavy-calls]`` function (``torch.cuda.init()``); build it with :func:`parse_node_pattern`.

    Attributes:
        module: the module pattern (for a call: the pattern of the called function's dotted name).
        qualname: the function's qualified name in that module (matched exactly), or None.
        call: True for a call node ``name()``.
    """

    module: ModulePattern
    qualname: str | None = None
    call: bool = False

    @property
    def text(self) -> str:
        """The side as written (without surrounding whitespace)."""
        if self.call:
            return f"{self.module.text}()"
        return f"{self.module.text}:{self.qualname}" if self.qualname is not None else self.module.text

    def matches_exactly(self, node: str) -> bool:
        """True if the graph node ``node`` is what this side names: a module (module patterns match
        modules only), a function node of a matching module with this qualified name, or a call
        whose callee matches."""
        if isinstance(node, CallNode):
            return self.call and self.module.matches_exactly(node.callee)
        if isinstance(node, FunctionNode):
            return self.qualname == node.qualname and self.module.matches_exactly(node.module)
        return not self.call and self.qualname is None and self.module.matches_exactly(node)


def parse_node_pattern(text: str) -> NodePattern:
    """Parse one side of an ``[[ignore]]`` entry (see :class:`NodePattern`): ``module.pattern``,
    ``module.pattern:qualified.name`` or ``function.pattern()``.

    Raises:
        PatternError: if the module pattern is invalid, or a segment of the qualified name is
            neither a Python identifier nor ``<locals>``.
    """
    if text.endswith("()"):
        return NodePattern(parse_pattern(text[:-2]), call=True)
    module, colon, qualname = text.partition(":")
    pattern = parse_pattern(module)
    if not colon:
        return NodePattern(pattern)
    for segment in qualname.split("."):
        if not (segment.isidentifier() or segment == "<locals>"):
            raise PatternError(
                text, f"{json.dumps(segment)} is not a Python identifier (after \":\", a function's "
                "qualified name in its module, e.g. \"mypkg.env:setup\")",
            )
    return NodePattern(pattern, qualname)


@dataclass(frozen=True)
class IgnoreRule:
    """An ``[[ignore]]`` entry: accepted import edges, removed from the graph before any check.

    Attributes:
        importer: the side left of ``->``: a module pattern, or a :class:`NodePattern` (which may
            also name a function body run at import time, ``mypkg.env:patch``).
        imported: the side right of ``->``: the same, or a ``[heavy-calls]`` call ``name()``.
        reason: why the import is accepted.
        text: the ``import`` value as written, e.g. ``"mypkg.a -> mypkg.b"``.
        line: 1-based line of the entry's ``import = ...`` key in the policy file (best effort;
            1 if not found).
        unresolved: an ``unresolved = "pattern"`` entry instead: it accepts the unresolved
            import-time code (IPL006) of the modules ``importer`` names, and matches no edge.
        source: as :attr:`flake8_importpolicy.model.policy.HeavyRule.source` (``line`` is then a
            line of that file).
    """

    importer: ModulePattern | NodePattern
    imported: ModulePattern | NodePattern
    reason: str
    text: str
    line: int
    unresolved: bool = False
    source: str = ""

    def matches(self, importer: str, imported: str) -> bool:
        """Return True if the edge ``importer -> imported`` (dotted names) is ignored.

        Both sides match exactly (:meth:`ModulePattern.matches_exactly`, as import-linter's
        ``ignore_imports``): ``"a -> b"`` does not ignore ``a -> b.c``; write ``"a -> b.**"``.
        """
        if self.unresolved:
            return False
        return self.importer.matches_exactly(importer) and self.imported.matches_exactly(imported)

    def accepts_unresolved(self, module: str) -> bool:
        """Return True if this ``unresolved = ...`` entry accepts the unresolved code of ``module``
        (a module, or a function body run at import time: its module counts)."""
        return self.unresolved and self.importer.matches_exactly(str(module).partition(":")[0])
