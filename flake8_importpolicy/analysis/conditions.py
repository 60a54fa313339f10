"""Static evaluation of the conditions that decide which import-time statements run.

The tests of ``if``/``elif`` and ``while`` statements are evaluated for every target version and the
target platform (``shared/SEMANTICS.md`` rules 10, 11 and 13):

- ``TYPE_CHECKING`` under any alias (``typing.TYPE_CHECKING``, ``t.TYPE_CHECKING``) is False at
  runtime (rule 10); a module-level name bound once to a literal has that value (``MYPY = False``);
- ``__name__`` of an imported module is never ``"__main__"`` (rule 11);
- ``sys.version_info`` (compared with tuples, indexed, sliced, ``.major``/``.minor``),
  ``sys.platform`` and ``os.name`` take the target's values (rule 13); the micro release is unknown,
  so a comparison that depends on it cannot be evaluated.

Anything else cannot be evaluated statically: then both branches may run (the visitor in
:mod:`flake8_importpolicy.analysis.extract` flags what they import ``conditional``).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from flake8_importpolicy.model.facts import Target

__all__ = ["ConditionEvaluator", "dotted_name"]


def dotted_name(node: ast.expr, aliases: Mapping[str, str]) -> str | None:
    """The dotted name an expression refers to, through import aliases (``np.x`` -> ``numpy.x``).

    Args:
        node: a name or a chain of attributes on a name (anything else has no dotted name).
        aliases: ``{local name: dotted name it refers to}`` (``np`` -> ``numpy``); names not in it
            stand for themselves.

    Returns:
        The dotted name, or None if ``node`` is not a name or an attribute chain on one.
    """
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(aliases.get(node.id, node.id))
    return ".".join(reversed(parts))


class ConditionEvaluator:
    """Evaluates import-time conditions for a target (``SEMANTICS.md`` rules 10, 11 and 13).

    Args:
        target: the versions and platform the conditions are evaluated for.
        aliases: the module's (or function body's) import aliases, ``{local name: dotted name}``.
        constants: module-level names bound once to a literal (``{"MYPY": False}``).

    Both mappings are read at every evaluation, never copied or modified: the visitor that owns them
    keeps binding names while it walks the module, and each test sees the bindings made before it.
    """

    __slots__ = ("target", "aliases", "constants")

    def __init__(
        self, target: Target, aliases: Mapping[str, str], constants: Mapping[str, object]
    ) -> None:
        self.target = target
        self.aliases = aliases
        self.constants = constants

    def evaluate(self, test: ast.expr) -> frozenset[bool] | None:
        """Evaluate an ``if`` test for every target version.

        Returns:
            The set of outcomes over the target versions (``{True}``, ``{False}`` or both), or ``None``
            if the test cannot be evaluated statically.
        """
        outcomes: set[bool] = set()
        for version in self.target.versions:
            value = self._truth(test, version)
            if value is None:
                return None
            outcomes.add(value)
        return frozenset(outcomes)

    def _truth(self, node: ast.expr, version: tuple[int, int]) -> bool | None:
        value = self._value(node, version)
        if value is _UNKNOWN:
            return None
        try:
            return bool(value)
        except Exception:  # noqa: BLE001 - a literal whose truth raises is unknown
            return None

    def _value(self, node: ast.expr, version: tuple[int, int]) -> object:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Tuple):
            items = [self._value(item, version) for item in node.elts]
            return _UNKNOWN if _UNKNOWN in items else tuple(items)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            truth = self._truth(node.operand, version)
            return _UNKNOWN if truth is None else not truth
        if isinstance(node, ast.BoolOp):
            return self._bool_op(node, version)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return _compare(
                self._value(node.left, version), node.ops[0], self._value(node.comparators[0], version)
            )
        if isinstance(node, ast.Subscript):
            return self._subscript(node, version)
        if isinstance(node, ast.Call):
            return self._call_value(node, version)
        if isinstance(node, ast.Name) and node.id == "__name__":
            return _NOT_MAIN
        name = dotted_name(node, self.aliases)
        if name is None:
            return _UNKNOWN
        if name == "TYPE_CHECKING" or name.endswith(".TYPE_CHECKING"):
            return False  # rule 10: typing.TYPE_CHECKING is False at runtime
        if name in ("sys.version_info",):
            return _VersionInfo(version)
        if name in ("sys.version_info.major",):
            return version[0]
        if name in ("sys.version_info.minor",):
            return version[1]
        if name == "sys.platform":
            return self.target.platform
        if name == "os.name":
            return self.target.os_name
        if isinstance(node, ast.Name) and node.id in self.constants:
            return self.constants[node.id]
        return _UNKNOWN

    def _bool_op(self, node: ast.BoolOp, version: tuple[int, int]) -> object:
        is_and = isinstance(node.op, ast.And)
        unknown = False
        for operand in node.values:
            truth = self._truth(operand, version)
            if truth is None:
                unknown = True
            elif truth is not is_and:
                return truth  # short-circuit: a False in ``and``, a True in ``or``
        return _UNKNOWN if unknown else is_and

    def _subscript(self, node: ast.Subscript, version: tuple[int, int]) -> object:
        base = self._value(node.value, version)
        if not isinstance(base, _VersionInfo):
            return _UNKNOWN
        index = node.slice
        if isinstance(index, ast.Constant) and isinstance(index.value, int) and index.value in (0, 1):
            return version[index.value]
        if (
            isinstance(index, ast.Slice)
            and index.lower is None
            and index.step is None
            and isinstance(index.upper, ast.Constant)
            and index.upper.value in (1, 2)
        ):
            return version[:1] if index.upper.value == 1 else version
        return _UNKNOWN

    def _call_value(self, node: ast.Call, version: tuple[int, int]) -> object:
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "startswith"
            and len(node.args) == 1
            and not node.keywords
        ):
            base = self._value(func.value, version)
            prefix = self._value(node.args[0], version)
            if isinstance(base, str) and isinstance(prefix, (str, tuple)):
                try:
                    return base.startswith(prefix)
                except TypeError:
                    return _UNKNOWN
        return _UNKNOWN


class _Unknown:
    def __repr__(self) -> str:
        return "<unknown>"


_UNKNOWN: Final = _Unknown()


class _NotMain(str):
    """``__name__`` of an imported module: never ``"__main__"`` (rule 11)."""


_NOT_MAIN: Final = _NotMain("<imported module>")


@dataclass(frozen=True)
class _VersionInfo:
    """``sys.version_info`` for a target ``(major, minor)``; its micro release is unknown."""

    version: tuple[int, int]

    def compare(self, other: object) -> int | None:
        """-1/0/1 like ``cmp(sys.version_info, other)``, or None if it depends on the micro release."""
        if not isinstance(other, tuple) or not all(isinstance(x, int) for x in other):
            return None
        for mine, theirs in zip(self.version, other):
            if mine != theirs:
                return -1 if mine < theirs else 1
        if len(other) <= 2:
            return 1  # sys.version_info is a longer tuple with the same prefix
        return None


def _compare(left: object, op: ast.cmpop, right: object) -> object:
    """``left <op> right`` for evaluated operands, or ``_UNKNOWN`` if either is unknown or the
    outcome cannot be known (an ordering of ``__name__``, a version comparison that depends on the
    micro release, operands that do not support ``op``)."""
    if left is _UNKNOWN or right is _UNKNOWN:
        return _UNKNOWN
    if isinstance(left, _NotMain) or isinstance(right, _NotMain):
        if isinstance(op, (ast.Eq, ast.NotEq)) and "__main__" in (left, right):
            return isinstance(op, ast.NotEq)
        return _UNKNOWN
    if isinstance(left, _VersionInfo) or isinstance(right, _VersionInfo):
        return _compare_version(left, op, right)
    try:
        if isinstance(op, ast.Eq):
            return left == right
        if isinstance(op, ast.NotEq):
            return left != right
        if isinstance(op, ast.In):
            return left in right  # type: ignore[operator]
        if isinstance(op, ast.NotIn):
            return left not in right  # type: ignore[operator]
        if isinstance(op, ast.Lt):
            return left < right  # type: ignore[operator]
        if isinstance(op, ast.LtE):
            return left <= right  # type: ignore[operator]
        if isinstance(op, ast.Gt):
            return left > right  # type: ignore[operator]
        if isinstance(op, ast.GtE):
            return left >= right  # type: ignore[operator]
        if isinstance(op, ast.Is):
            return left is right
        if isinstance(op, ast.IsNot):
            return left is not right
    except TypeError:
        return _UNKNOWN
    return _UNKNOWN


def _compare_version(left: object, op: ast.cmpop, right: object) -> object:
    """A comparison with ``sys.version_info`` on either side (rule 13)."""
    flipped = not isinstance(left, _VersionInfo)
    info, other = (right, left) if flipped else (left, right)
    assert isinstance(info, _VersionInfo)
    order = info.compare(other)
    if order is None:
        return _UNKNOWN
    if flipped:
        order = -order
    if isinstance(op, ast.Eq):
        return order == 0
    if isinstance(op, ast.NotEq):
        return order != 0
    if isinstance(op, ast.Lt):
        return order < 0
    if isinstance(op, ast.LtE):
        return order <= 0
    if isinstance(op, ast.Gt):
        return order > 0
    if isinstance(op, ast.GtE):
        return order >= 0
    return _UNKNOWN
