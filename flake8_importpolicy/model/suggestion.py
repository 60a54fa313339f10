"""What ``importpolicy suggest`` proposes: light and heavy candidates with the numbers behind them.

:mod:`flake8_importpolicy.analysis.suggest` finds them; :mod:`flake8_importpolicy.output.suggest`
writes the draft ``policy.toml`` (or JSON). The score is documented in docs/adopt.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["HeavyCandidate", "LightCandidate", "Suggestion"]


@dataclass(frozen=True)
class LightCandidate:
    """A module that should probably stay light at import time.

    Attributes:
        module: the module.
        path: its file.
        why: sorted subset of ``package`` (a package ``__init__``), ``entry-point`` (a console
            script or entry point names it) and ``imported`` (at least three modules import it).
        importers: how many first-party modules import it at module level.
        score: the ranking score (docs/adopt.md): higher first.
        closure: its import-time closure predicted from module-level imports, counted as
            ``max-modules`` counts it, with the draft's heavy modules as leaves (``importpolicy why
            MODULE --format json`` gives the count ``check`` makes).
        reaches: the heavy candidates (and existing ``[heavy]`` patterns) its import reaches today,
            sorted.
        entry_points: the console scripts and entry points that name it (``group:name``), sorted.
        forbid: the draft's ``forbid`` for it when it reaches a heavy candidate today: every heavy
            pattern of the draft, in order, for the user to delete what it may import; empty for
            none (every ``[heavy]`` rule applies).
    """

    module: str
    path: Path | None
    why: tuple[str, ...]
    importers: int
    score: float
    closure: int
    reaches: tuple[str, ...] = ()
    entry_points: tuple[str, ...] = ()
    forbid: tuple[str, ...] = ()


@dataclass(frozen=True)
class HeavyCandidate:
    """A module that light modules should probably not import at import time.

    Attributes:
        module: the module (a pattern: it also stands for its submodules).
        why: ``heavy-ml`` (an entry of the built-in ``heavy-ml`` preset that the project's
            closures reach) or ``large-closure`` (a first-party module whose own import-time
            closure is large).
        closure: for ``large-closure``: its closure estimated from module-level imports (the
            count ``max-modules`` would make); 0 for ``heavy-ml``.
        importers: how many first-party modules import it at module level.
        reason: for ``heavy-ml``: the preset's reason.
    """

    module: str
    why: str
    closure: int = 0
    importers: int = 0
    reason: str = ""


@dataclass(frozen=True)
class Suggestion:
    """A draft policy's content.

    Attributes:
        root: the directory the draft is for (the policy file's, or the working directory).
        source_roots: the first-party source roots, absolute.
        modules: how many first-party modules were read.
        light: the light candidates: the top-level packages, then the modules console scripts
            and entry points name (always), then the others, each group best score first (at most
            ``--limit`` in all, unless the first two groups hold more).
        heavy: the heavy candidates: first-party ones (largest closure first), then ``heavy-ml``
            entries (by name).
        policy: the existing policy it was made with, or None.
        known_light: light modules the existing policy already has (left out of ``light``).
        threshold: the closure size from which a first-party module is a heavy candidate.
        dropped: ``(preset, entry)`` of the preset entries that name one of the project's own
            packages, sorted: they never apply to its modules
            (:meth:`~flake8_importpolicy.model.policy.Policy.applies`), so the draft leaves them
            out of its candidates and says so.
        interpreter: the project's interpreter the draft names (``settings.interpreter``) and that
            the analysis used, absolute
            (:func:`~flake8_importpolicy.config.project.find_project_interpreter`), or None for the
            one running importpolicy.
    """

    root: Path
    source_roots: tuple[Path, ...]
    modules: int
    light: tuple[LightCandidate, ...]
    heavy: tuple[HeavyCandidate, ...]
    policy: Path | None = None
    known_light: tuple[str, ...] = ()
    threshold: int = 0
    dropped: tuple[tuple[str, str], ...] = ()
    interpreter: Path | None = None
