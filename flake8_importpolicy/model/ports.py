"""What the analysis needs from the outside, as protocols: the analysis layer defines no storage.

:mod:`flake8_importpolicy.answers.facts_cache` implements :class:`FactsCache` on disk; the command line,
the adapters and the runtime proof hand one to the engine (or none).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from flake8_importpolicy.model.facts import FunctionFacts, ModuleFacts, Target
from flake8_importpolicy.model.graph import BoundArgument

__all__ = ["FactsCache"]


class FactsCache(Protocol):
    """A cache of per-file import facts, keyed by the SHA-256 of the file's bytes and the target.

    Every method is best effort: a miss, a broken entry or an unwritable store is never an error. An
    engine with worker processes sends the cache to each (pickled, between its own processes), so an
    implementation is a small handle on its store, not the store itself.
    """

    def get(self, digest: str, target: Target, path: Path | None = None) -> ModuleFacts | None:
        """Cached facts for the source with SHA-256 hex ``digest`` and this target, or None.

        ``path`` (the file the source was read from, if any) says only where the entry is kept
        (a file outside the project's source roots may be kept in a cache shared by projects); the
        key never depends on it."""

    def put(
        self, digest: str, target: Target, facts: ModuleFacts, path: Path | None = None
    ) -> None:
        """Store facts (best effort; never raises)."""

    def get_function(
        self,
        digest: str,
        target: Target,
        qualname: str,
        argument: BoundArgument = None,
        path: Path | None = None,
    ) -> tuple[FunctionFacts | None] | None:
        """Cached facts of one function body (its first parameter bound to ``argument``, if given):
        ``(facts,)``, ``(None,)`` for no such function, or None if not cached."""

    def put_function(
        self,
        digest: str,
        target: Target,
        qualname: str,
        facts: FunctionFacts | None,
        argument: BoundArgument = None,
        path: Path | None = None,
    ) -> None:
        """Store one function body's facts (best effort; never raises)."""
