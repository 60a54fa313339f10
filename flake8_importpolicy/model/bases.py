"""What a policy extends, as values: a base file or built-in preset it was merged from
(:class:`PolicySource`), and a built-in preset as ``importpolicy presets`` shows it (:class:`Preset`).

Their own module: a policy without ``extends`` never loads it (each frozen dataclass costs import
time on every cold run).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["PolicySource", "Preset"]


@dataclass(frozen=True)
class Preset:
    """A built-in preset as ``importpolicy presets`` shows it.

    Attributes:
        name: what ``extends`` names it by (``torch-cuda``).
        path: its data file in the package.
        header: the comment lines at the top of the data file (what it is, where it comes from),
            without the ``#``.
        entries: ``(table, key, reason)`` of every entry, in file order; each reason ends with the
            entry's source (torch version and file:line, or a measurement).
    """

    name: str
    path: Path
    header: tuple[str, ...]
    entries: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True)
class PolicySource:
    """A file the policy was merged from besides the policy file itself (``extends``).

    Attributes:
        label: how messages name it: its path relative to the policy file's directory (or absolute),
            or ``preset NAME`` for a built-in preset.
        path: the file (absolute): a base file, or the preset's data file in the package.
        digest: the SHA-256 hex digest of the bytes that were read.
    """

    label: str
    path: Path
    digest: str
