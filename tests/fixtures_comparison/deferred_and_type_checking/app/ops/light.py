"""Needs app.heavy only for annotations and inside a function: nothing heavy runs at import time."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.heavy import Model


def load() -> Model:
    from app.heavy import Model

    return Model()
