"""Import budgets (``max-modules``): how a light module's import-time closure is counted, one rule
for ``check`` (the predicted closure) and ``verify`` (what executed).

The count is every first-party module that runs, plus each top-level third-party or standard-library
package reached, once (``numpy`` counts 1 however many of its submodules run). Modules already
imported at interpreter start-up run nothing and are not counted; callers leave them out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Budget", "count_units", "unit_of"]


def unit_of(module: str, first_party: bool) -> str:
    """What ``module`` counts as: itself when first-party, else its top-level package."""
    return module if first_party else module.partition(".")[0]


def count_units(modules: Iterable[tuple[str, bool]]) -> tuple[str, ...]:
    """The counted units of a closure, sorted: ``modules`` is ``(name, is_first_party)`` of every
    module that runs (not preloaded); its length is the budget's count."""
    return tuple(sorted({unit_of(name, first_party) for name, first_party in modules}))


@dataclass(frozen=True)
class Budget:
    """The ``max-modules`` overrun an IPL008 violation reports.

    Attributes:
        count: the light module's import-time closure, counted as :func:`count_units` does.
        limit: the ``max-modules`` of its ``[light]`` rule.
        contributors: ``(node the first hop runs, units it brings in first)`` of the light module's
            statements that bring in the most counted units, most first (ties by name), at most
            three.
    """

    count: int
    limit: int
    contributors: tuple[tuple[str, int], ...] = ()
