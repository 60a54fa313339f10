"""Environment variables the code sets before a call (issue 25 item 6): ``os.environ["X"] = "1"``,
``os.environ.setdefault("X", "1")``, ``os.environ.update({...})``, ``del os.environ["X"]`` and
``os.environ.pop("X")`` in a scope (a module's own code, or one function body) are written into the
walker's :class:`~flake8_importpolicy.analysis.importtime.flow.Flow`, and every call recorded
afterwards in the same scope carries them (``CallSite.environ``): a ``[heavy-calls]`` rule's
``unless-environ`` (``torch.cuda.is_available`` with ``PYTORCH_NVML_BASED_CUDA_CHECK=1``) reads them
as it reads ``[assume.environ]``, and so do the scope's later conditions (``if
os.environ.get("X") == "1":``). ``os.putenv`` changes the process environment only, not
``os.environ``, and torch reads ``os.getenv``: it is not a write here. Another scope's writes (a
function the module calls, another module) are not followed."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Final

from flake8_importpolicy.analysis.conditions import ConditionEvaluator, Literal, dotted_name
from flake8_importpolicy.analysis.importtime.flow import Flow
from flake8_importpolicy.model.facts import UNKNOWN_ENVIRON_VALUE, Target
from flake8_importpolicy.model.graph import Flag

__all__ = ["EnvironWrites"]

_MAY_NOT_RUN: Final = frozenset({Flag.CONDITIONAL, Flag.FALLBACK, Flag.GUARDED})
"""Flags of code that may not run: a write there may have happened or not."""


class EnvironWrites:
    """Records the writes to ``os.environ`` of one scope into ``flow.environ``.

    Args:
        flow: the walker's flow (its ``environ`` is updated).
        aliases: the scope's import aliases (``from os import environ``).
        conditions: the scope's evaluator: its ``constant`` computes keys and values, and its
            ``written`` is kept equal to ``flow.environ`` (a later ``os.environ.get("X")`` in a
            condition reads what the code set).
        target: whose ``[assume.environ]`` says what is set before the code runs (a variable the
            policy does not name is unset).
    """

    def __init__(
        self, flow: Flow, aliases: Mapping[str, str], conditions: ConditionEvaluator, target: Target,
    ) -> None:
        self._flow = flow
        self._aliases = aliases
        self._conditions = conditions
        self._constant = conditions.constant
        self._assumed: dict[str, str | None] = dict(target.environ)

    def assigned(self, stmt: ast.Assign | ast.AnnAssign | ast.AugAssign, flags: frozenset[Flag]) -> None:
        """``os.environ["X"] = value`` (``+=`` appends to a value: not a constant here)."""
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for target in targets:
            name = self._key(target)
            if name is not None and stmt.value is not None:
                known = not isinstance(stmt, ast.AugAssign)
                self._write(name, self._value(stmt.value) if known else UNKNOWN_ENVIRON_VALUE, flags)

    def deleted(self, target: ast.expr, flags: frozenset[Flag]) -> None:
        """``del os.environ["X"]``."""
        name = self._key(target)
        if name is not None:
            self._write(name, None, flags)

    def called(self, call: ast.Call, flags: frozenset[Flag]) -> None:
        """``os.environ.setdefault("X", v)``, ``.pop("X"[, d])``, ``.update({...})``."""
        func = call.func
        if not isinstance(func, ast.Attribute) or not self._is_environ(func.value) or call.keywords:
            return
        name = self._string(call.args[0]) if call.args else None
        if func.attr == "pop" and name is not None:
            self._write(name, None, flags)
        elif func.attr == "setdefault" and name is not None and len(call.args) == 2:
            known, value = self._current(name)
            if value is None:  # only a variable that is not set takes the default
                self._write(name, self._value(call.args[1]),
                            flags if known else flags | {Flag.CONDITIONAL})
        elif func.attr == "update" and len(call.args) == 1:
            mapping = self._constant(call.args[0])
            if isinstance(mapping, Literal):
                mapping = mapping.value
            if isinstance(mapping, dict):
                for key, value in mapping.items():
                    if isinstance(key, str):
                        self._write(key, value if isinstance(value, str) else UNKNOWN_ENVIRON_VALUE,
                                    flags)

    def _current(self, name: str) -> tuple[bool, str | None]:
        """``(known, value)`` of the variable before a ``setdefault`` (None: unset); after a write
        that may not have run, not known and taken as unset."""
        for written, value, certain in self._flow.environ:
            if written == name:
                return (True, value) if certain else (False, None)
        return True, self._assumed.get(name)

    def _write(self, name: str, value: str | None, flags: frozenset[Flag]) -> None:
        kept = tuple(w for w in self._flow.environ if w[0] != name)
        self._flow.environ = (*kept, (name, value, not _MAY_NOT_RUN & flags))
        self._conditions.written = self._flow.environ

    def _key(self, target: ast.expr) -> str | None:
        if isinstance(target, ast.Subscript) and self._is_environ(target.value):
            return self._string(target.slice)
        return None

    def _is_environ(self, node: ast.expr) -> bool:
        return dotted_name(node, self._aliases) == "os.environ"

    def _string(self, node: ast.expr) -> str | None:
        value = self._constant(node)
        if isinstance(value, Literal):
            value = value.value
        return value if isinstance(value, str) else None

    def _value(self, node: ast.expr) -> str:
        value = self._string(node)
        return UNKNOWN_ENVIRON_VALUE if value is None else value
