"""The built-in presets: policy files shipped as data in ``flake8_importpolicy/presets/``.

A policy names one in ``extends = ["torch-cuda"]`` (docs/presets.md); the loader reads it like a base
file. This module answers which presets exist and where each one's data is, for the loader and for
``importpolicy presets``. Standard library only; nothing here imports the presets' subjects.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Final

from flake8_importpolicy.model.bases import Preset

__all__ = ["PRESET_DIR", "preset_names", "preset_path", "read_preset"]

PRESET_DIR: Final = Path(__file__).resolve().parent.parent / "presets"
"""The directory of the preset data files (``<name>.toml``)."""


def preset_names() -> tuple[str, ...]:
    """The names of the built-in presets, sorted (the data files' names without ``.toml``)."""
    try:
        return tuple(sorted(p.stem for p in PRESET_DIR.glob("*.toml") if p.is_file()))
    except OSError:
        return ()


def preset_path(name: str) -> Path | None:
    """The data file of the built-in preset ``name``, or None if there is no such preset."""
    return PRESET_DIR / f"{name}.toml" if name in preset_names() else None


def read_preset(name: str) -> Preset | None:
    """The built-in preset ``name`` (its header comments and entries), or None if there is none.

    Raises:
        OSError, UnicodeDecodeError, tomllib.TOMLDecodeError: only if the installed data file is
            damaged (the files are tested: tests/test_presets_data.py).
    """
    path = preset_path(name)
    if path is None:
        return None
    text = path.read_text(encoding="utf-8")
    header: list[str] = []
    for line in text.splitlines():
        if line.startswith("#"):
            header.append(line[1:].strip())
        elif line.strip():
            break
    entries: list[tuple[str, str, str]] = []
    for table, values in tomllib.loads(text).items():
        if isinstance(values, dict):
            entries.extend((table, str(key), _reason(value)) for key, value in values.items())
    return Preset(name, path, tuple(header), tuple(entries))


def _reason(value: object) -> str:
    """An entry's reason: the value, or a table's ``reason`` (whose text already says when the
    ``unless-environ`` variables make the call harmless)."""
    return str(value.get("reason", "")) if isinstance(value, dict) else str(value)
