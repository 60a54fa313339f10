"""The fixes ``importpolicy fix`` offers for an IPL001 whose first hop is a re-export in a light
package's ``__init__.py`` (docs/bisect-and-fix.md): values, and which fixes a finding's shape
admits. :mod:`flake8_importpolicy.analysis.fixes` plans and verifies them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from flake8_importpolicy.model.findings import Violation
from flake8_importpolicy.model.graph import Hop, HopKind

__all__ = [
    "NOT_AT_TOP_LEVEL", "Fix", "FixKind", "Importer", "TextEdit", "find_reexport_hop",
    "offered_fix_kinds",
]


class FixKind(StrEnum):
    """The fixes real projects use for a heavy re-export (the value is what JSON and text show).

    - ``lazy-reexport``: the name stays importable from the package, loaded on first access: a
      PEP 562 module ``__getattr__`` with an explicit map (``__all__`` and ``__dir__`` kept), or
      ``lazy from .x import name`` (PEP 810) when every target version is 3.15 or newer;
    - ``direct-imports``: the re-export is removed and every first-party importer of the name
      imports it from the submodule that defines it.
    """

    LAZY_REEXPORT = "lazy-reexport"
    DIRECT_IMPORTS = "direct-imports"


@dataclass(frozen=True, order=True)
class TextEdit:
    """Replace a range of a file's text by ``new_text``.

    Attributes:
        path: the file (absolute).
        start, end: ``(line, column)`` of the range's first character and of the character after
            it: lines 1-based as every finding's line, columns 0-based and counted in characters
            (code points) of the line as decoded from UTF-8. ``start == end`` inserts.
        new_text: the text put there (its line breaks are the file's own).
    """

    path: Path
    start: tuple[int, int]
    end: tuple[int, int]
    new_text: str


@dataclass(frozen=True)
class Importer:
    """An importer of a re-exported name that the direct-imports fix cannot rewrite.

    Attributes:
        path: its file; line: the 1-based line of the use.
        module: its module name when known (else ``""``).
        why: what the use is (``getattr(pkg, name) with a name that is not a literal``, ``outside
            the source roots and the project``).
    """

    path: Path
    line: int
    module: str
    why: str


@dataclass(frozen=True)
class Fix:
    """One way to remove an IPL001 re-export, as edits of files.

    Attributes:
        kind: which fix.
        title: one line for a person (an editor's code action title).
        light: the light package; path, line: its ``__init__.py`` and the re-export's first line.
        names: the names the re-export binds that the fix moves.
        edits: the edits, sorted, none overlapping; applied together they are the fix.
        blockers: for ``direct-imports``: the importers it cannot rewrite (the fix refuses to
            remove the names while any remain, unless forced).
        verified: the engine checked the patched tree in memory: the finding is gone and no
            finding or unanalysable module is new.
        note: what the fix keeps as it was (an existing ``__dir__``), or ``""``.
    """

    kind: FixKind
    title: str
    light: str
    path: Path
    line: int
    names: tuple[str, ...]
    edits: tuple[TextEdit, ...]
    blockers: tuple[Importer, ...] = ()
    verified: bool = False
    note: str = ""


def find_reexport_hop(violation: Violation) -> Hop | None:
    """The first hop of an IPL001 when it is a re-export in a light package's ``__init__.py``: a
    from-import or star import of one of the package's own submodules (``from .x import name``,
    ``from .x import *``, ``from . import x``); else None."""
    if violation.budget is not None or violation.is_call or not violation.chain:
        return None
    hop = violation.chain[0]
    if violation.path.name != "__init__.py" or hop.module != violation.light:
        return None
    if hop.kind not in (HopKind.FROM_IMPORT, HopKind.STAR_IMPORT):
        return None
    if not str(hop.imported).startswith(violation.light + "."):
        return None
    return hop


NOT_AT_TOP_LEVEL = ("the re-export is not a statement of the module's top level (under an if or "
                    "a try, or after a semicolon)")
"""Why a re-export of the right shape gets no fix (:func:`offered_fix_kinds`)."""


def offered_fix_kinds(violation: Violation) -> tuple[FixKind, ...]:
    """The fixes ``importpolicy fix`` can offer for a finding of this shape: both, for a re-export
    in a light package's ``__init__.py`` (:func:`find_reexport_hop`) that is a statement of the
    module's top level, starting its line (column 0); none otherwise. The one decision whether a fix
    is offered: ``check``'s "use instead" text and SARIF ``fixes``, ``importpolicy fix`` and the
    editor's code actions all ask it. A re-export under an ``if`` or a ``try`` is left to a person
    (:data:`NOT_AT_TOP_LEVEL`): which branch binds the name is the package's decision. ``fix``
    verifies each offered fix before writing it: a name the package itself uses, or an importer it
    cannot rewrite, rules one out."""
    hop = find_reexport_hop(violation)
    if hop is None or hop.col != 0:
        return ()
    return (FixKind.LAZY_REEXPORT, FixKind.DIRECT_IMPORTS)
