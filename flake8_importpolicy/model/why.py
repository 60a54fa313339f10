"""What ``importpolicy why MODULE`` shows: the closure, with its forbidden, unresolved and unanalysable
nodes and its lazy attachments.

Its own module: a check never creates these classes (each frozen dataclass costs its creation at
every import on Python 3.11: docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flake8_importpolicy.model.facts import SourceProblem
    from flake8_importpolicy.model.graph import Hop, UnresolvedCode
    from flake8_importpolicy.model.interpreter import ResolvedModule
    from flake8_importpolicy.model.policy import HeavyRule

__all__ = ["UnknownImport", "WhyResult"]


@dataclass(frozen=True)
class UnknownImport:
    """A lazy attachment (``lazy_loader.attach``) whose targets are not run at import time.

    Attributes:
        module: the node that runs it; path, line, col: where; detail: the called name.
    """

    module: str
    path: Path | None
    line: int
    col: int
    detail: str


@dataclass(frozen=True)
class WhyResult:
    """What ``importpolicy why MODULE`` shows.

    Attributes:
        module: the module asked about.
        resolved: where it was found.
        closure: every node its import runs (``{node: shortest chain}``; forbidden modules are
            leaves, so the closure stops there).
        paths: the file of each node's module in the closure (``None`` if it has none).
        forbidden: ``(node, heavy rule)`` for each forbidden node reached, in breadth-first order;
            a submodule of a forbidden module also reached is left out (as ``check``'s ``also``).
        unresolved: import-time code in the closure that cannot be resolved (IPL006's sites),
            in breadth-first order.
        problems: modules in the closure that could not be analysed, with why.
        lazy: lazy attachments in the closure (``lazy_loader.attach``/``attach_stub``, a
            transformers-style ``_LazyModule``): their targets are *not* run at import time
            (docs/semantics.md rule 18); ``detail`` is the called name.
        count: the closure counted as a ``max-modules`` budget counts it
            (:func:`~flake8_importpolicy.model.budget.count_units`).
    """

    module: str
    resolved: ResolvedModule
    closure: Mapping[str, tuple[Hop, ...]]
    paths: Mapping[str, Path | None]
    forbidden: tuple[tuple[str, HeavyRule], ...]
    unresolved: tuple[UnresolvedCode, ...]
    problems: tuple[tuple[str, SourceProblem], ...]
    lazy: tuple[UnknownImport, ...] = ()
    count: int = 0
