"""Import budgets (``max-modules``): how a light module's import-time closure is counted, one rule
for ``check`` (the predicted closure) and ``verify`` (what executed).

The count is every first-party module that runs, plus each top-level third-party or standard-library
package that first-party code imports, once (``numpy`` counts 1 however many of its submodules run).
What code outside the project imports in turn is that package's own cost and is not counted
(``logging`` counts 1, not the dozen standard-library modules it imports itself): ``check`` often
does not follow that code and ``verify`` always sees it, so counting it would make the two disagree.
Modules already imported at interpreter start-up run nothing and are not counted; callers leave
them out. A forbidden module ends the chains a check reports, not the count: what it imports runs
(and ``verify`` sees it), so ``check`` counts the closure followed through forbidden modules too.
:func:`counts` is the rule; ``check`` (the predicted closure, each module with the first-party
nodes whose import-time code imports it) and ``verify`` (what executed, each module with the module
whose code imported it) both ask it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Budget", "count_units", "counts", "unit_of"]


def counts(first_party: bool, imported_by_first_party: bool) -> bool:
    """Whether a module that runs counts in a ``max-modules`` budget: a first-party module always;
    another module (third-party or standard library) only when first-party code imports it (it
    then counts as its top-level package, :func:`unit_of`); what outside code imports is that
    code's own cost."""
    return first_party or imported_by_first_party


def unit_of(module: str, first_party: bool) -> str:
    """What ``module`` counts as: itself when first-party, else its top-level package."""
    return module if first_party else module.partition(".")[0]


def count_units(modules: Iterable[tuple[str, bool, bool]]) -> tuple[str, ...]:
    """The counted units of a closure, sorted: ``modules`` is ``(name, is_first_party,
    imported_by_first_party)`` of every module that runs (not preloaded); its length is the
    budget's count (:func:`counts`)."""
    return tuple(sorted({unit_of(name, first_party) for name, first_party, by_first_party in modules
                         if counts(first_party, by_first_party)}))


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
