"""Static evaluation of the conditions that decide which import-time statements run.

The tests of ``if``/``elif`` and ``while`` statements are evaluated for every target version and the
target platform (docs/semantics.md rules 10, 11 and 13):

- ``TYPE_CHECKING`` under any alias (``typing.TYPE_CHECKING``, ``t.TYPE_CHECKING``) is False at
  runtime (rule 10); a module-level name bound once to a literal has that value (``MYPY = False``);
- ``__name__`` of an imported module is never ``"__main__"`` (rule 11);
- ``sys.version_info`` (compared with tuples, indexed, sliced, ``.major``/``.minor``),
  ``sys.platform`` and ``os.name`` take the target's values (rule 13); the micro release is unknown,
  so a comparison that depends on it cannot be evaluated;
- the policy's ``[assume]`` entries (docs/policy.md): a dotted name, or a call of one with constant
  arguments, that resolves through the module's imports and aliases to an ``[assume]`` key has the
  assumed value; ``os.environ[...]``, ``os.environ.get(...)``, ``os.getenv(...)`` and ``"X" in
  os.environ`` of a variable in ``[assume.environ]`` read the assumed environment. Which entries an
  evaluation used is kept in :attr:`ConditionEvaluator.used`, so that what depends on them can name
  them.

Anything else cannot be evaluated statically: then both branches may run (the visitor in
:mod:`flake8_importpolicy.analysis.extract` flags what they import ``conditional``).
"""

from __future__ import annotations

import ast
import json
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, cast

from flake8_importpolicy.model.facts import (
    UNKNOWN_ENVIRON_VALUE,
    EnvironWrite,
    Target,
    assumption_text,
    entry_point_anchor,
    parse_own_modules_anchor,
)
from flake8_importpolicy.model.patterns import is_constant_argument

__all__ = [
    "UNKNOWN", "Anchored", "ConditionEvaluator", "EntryPointOf", "Grown", "Literal", "ModuleLoading",
    "dotted_name", "entry_point_selection", "own_modules_loop",
]


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
    """Evaluates import-time conditions for a target (docs/semantics.md rules 10, 11 and 13).

    Args:
        target: the versions and platform the conditions are evaluated for.
        aliases: the module's (or function body's) import aliases, ``{local name: dotted name}``.
        constants: module-level names bound once to a literal (``{"MYPY": False}``).

    Both mappings are read at every evaluation, never copied or modified: the visitor that owns them
    keeps binding names while it walks the module, and each test sees the bindings made before it.
    """

    __slots__ = (
        "target", "aliases", "constants", "used", "written", "overrides", "_assume", "_environ",
        "_assumed_callees",
    )

    def __init__(
        self, target: Target, aliases: Mapping[str, str], constants: Mapping[str, object]
    ) -> None:
        self.target = target
        self.aliases = aliases
        self.constants = constants
        # the [assume] entries that evaluations used since the last reset (texts, in order)
        self.used: list[str] = []
        self._assume: dict[str, bool | int | str] = dict(target.assume)
        self._environ: dict[str, str | None] = dict(target.environ)
        # what the scope's own code set in os.environ so far (EnvironWrites keeps it up to date)
        self.written: tuple[EnvironWrite, ...] = ()
        # values given to name nodes (by id) for one evaluation (:meth:`imported_truth`)
        self.overrides: dict[int, object] = {}
        self._assumed_callees = frozenset(key.partition("(")[0] for key in self._assume if "(" in key)

    def decide(self, test: ast.expr) -> tuple[frozenset[bool] | None, tuple[str, ...]]:
        """:meth:`evaluate`, and the ``[assume]`` entries that decided it (empty when the outcome
        is unknown or no entry was used)."""
        self.used = []
        outcome = self.evaluate(test)
        used = tuple(dict.fromkeys(self.used)) if outcome is not None else ()
        self.used = []
        return outcome, used

    def imported_truth(self, test: ast.expr) -> tuple[str, bool] | None:
        """For an undecided ``test`` whose outcome is the truth of one name another module binds
        (``TYPE_CHECKING or SLOW`` after ``from .utils import SLOW``, ``not settings.STRICT``):
        ``(the name as written through the imports, the truth that makes the test true)``; None
        otherwise. The name counts only where its truth alone is read (the test itself, an
        operand of ``and``/``or``/``not``): ``SLOW == 1`` is no test of its truth."""
        nodes: list[ast.expr] = []
        stack = [test]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.BoolOp):
                stack.extend(node.values)
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                stack.append(node.operand)
            elif isinstance(node, (ast.Name, ast.Attribute)):
                nodes.append(node)
        found: dict[str, list[ast.expr]] = {}
        for node in nodes:
            root = node
            while isinstance(root, ast.Attribute):
                root = root.value
            name = dotted_name(node, self.aliases)
            if (
                name is None or not isinstance(root, ast.Name) or root.id not in self.aliases
                or self._same_value(node) is not _UNKNOWN
            ):
                continue
            found.setdefault(name, []).append(node)
        if len(found) != 1:
            return None
        (name, same), = found.items()
        outcomes: list[frozenset[bool] | None] = []
        for truth in (True, False):
            self.overrides = {id(node): truth for node in same}
            try:
                outcomes.append(self.evaluate(test))
            finally:
                self.overrides = {}
        when_true, when_false = outcomes
        if (
            when_true is None or when_false is None or len(when_true) != 1 or len(when_false) != 1
            or when_true == when_false
        ):
            return None
        return name, True in when_true

    def _assumed(self, key: str) -> object:
        """The value of ``[assume]`` entry ``key`` (recorded as used), or :data:`UNKNOWN`."""
        if key not in self._assume:
            return _UNKNOWN
        value = self._assume[key]
        self.used.append(assumption_text(key, value))
        return value

    def _environment(self, name: object) -> tuple[bool, str | None]:
        """``(known, value)`` of environment variable ``name``: what the scope's code set before
        (:attr:`written`; not known after a write that may not have run), else its
        ``[assume.environ]`` value, and for a variable the policy does not name the default world,
        unset (what CI and a user's shell have unless they set it; docs/policy.md). Known whenever
        the name is a constant string; an assumption is recorded as used either way, so that a
        chain names the variable."""
        if not isinstance(name, str):
            return False, None
        for written, value, certain in self.written:  # the code's own write decides, if certain
            if written == name:
                return (True, value) if certain and value != UNKNOWN_ENVIRON_VALUE else (False, None)
        if name not in self._environ:
            self.used.append(f"environ.{json.dumps(name, ensure_ascii=False)} unset")
            return True, None
        value = self._environ[name]
        self.used.append(assumption_text(name, value, environ=True))
        return True, value

    def constant(self, node: ast.expr) -> object:
        """The value of an expression that is the same for every target version, or
        :data:`UNKNOWN`: literals and literal containers, comprehensions over them, f-strings and
        concatenations of strings, names bound to such values (module-level constants, a loop's
        variable, a bound parameter), ``MAP[key]``, ``MAP.get(key)``, ``MAP.items()``; ``__name__``,
        ``__package__`` and ``__spec__.parent`` are :class:`Anchored` (names resolved against the
        module, docs/semantics.md rule 14)."""
        value = self._same_value(node)
        if isinstance(value, Literal):
            return value.value
        return UNKNOWN if value is _UNKNOWN or isinstance(value, _NotMain) else value

    def literal(self, node: ast.expr) -> object:
        """:meth:`constant`, with a list, set or dict kept as a :class:`Literal` (to bind to a name:
        looked up later, its truth unknown)."""
        value = self._same_value(node)
        return UNKNOWN if value is _UNKNOWN or isinstance(value, _NotMain) else value

    def _same_value(self, node: ast.expr) -> object:
        """The value of ``node`` if it is the same for every target version, else ``_UNKNOWN``
        (one version, the common case, needs no comparison)."""
        versions = self.target.versions
        if len(versions) == 1:
            return self._value(node, versions[0])
        values = {repr(value): value for value in (self._value(node, v) for v in versions)}
        return next(iter(values.values())) if len(values) == 1 else _UNKNOWN

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
        if isinstance(node, ast.BoolOp):
            return self._bool_op_truth(node, version)
        return _truth_of(self._value(node, version))

    def _value(self, node: ast.expr, version: tuple[int, int]) -> object:
        # identity tests of the node's class first: the commonest nodes, and cheaper than isinstance
        if type(node) is ast.Constant:
            return node.value
        if type(node) is ast.Lambda:
            return _UNKNOWN  # a function: the values of vLLM's ``envs`` map, hundreds of them
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = [_plain(self._value(item, version)) for item in node.elts]
            if any(item is _UNKNOWN for item in items):
                return _UNKNOWN
            if isinstance(node, ast.Tuple):
                return tuple(items)
            return Literal(items if isinstance(node, ast.List) else _frozen(items))
        if isinstance(node, ast.Dict):
            return _dict_value(self, node, version)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp)):
            return _comprehension_value(self, node, version)
        if isinstance(node, ast.JoinedStr):
            return _joined_value(self, node, version)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return _add(self._value(node.left, version), self._value(node.right, version))
        if isinstance(node, ast.NamedExpr):
            return self._value(node.value, version)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            truth = self._truth(node.operand, version)
            return _UNKNOWN if truth is None else not truth
        if isinstance(node, ast.BoolOp):
            return self._bool_op(node, version)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = self._value(node.operand, version)  # ``-1`` (a step, an index)
            if type(operand) not in (int, float) or not isinstance(operand, (int, float)):
                return _UNKNOWN
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            if (
                isinstance(node.ops[0], (ast.In, ast.NotIn))
                and dotted_name(node.comparators[0], self.aliases) == "os.environ"
            ):
                known, value = self._environment(_plain(self._value(node.left, version)))
                if not known:
                    return _UNKNOWN
                return (value is not None) == isinstance(node.ops[0], ast.In)
            return _compare(
                self._value(node.left, version), node.ops[0], self._value(node.comparators[0], version)
            )
        if isinstance(node, ast.Subscript):
            return self._subscript(node, version)
        if isinstance(node, ast.Call):
            return self._call_value(node, version)
        if isinstance(node, ast.Name) and node.id == "__name__":
            return _NOT_MAIN
        if isinstance(node, ast.Name) and node.id == "__package__":
            return Anchored("__package__", "")
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "parent"
            and isinstance(node.value, ast.Name)
            and node.value.id == "__spec__"
        ):
            return Anchored("__package__", "")
        if self.overrides and id(node) in self.overrides:
            return self.overrides[id(node)]
        if (
            type(node) is ast.Attribute and node.attr in _ENTRY_POINT_FIELDS
            and isinstance(node.value, ast.Name)
        ):
            point = self.constants.get(node.value.id)
            if isinstance(point, EntryPointOf):  # ``ep.value`` of a loop over a group's entry points
                return Anchored(entry_point_anchor(point.group, point.name, node.attr), "")
        name = dotted_name(node, self.aliases)
        if name is None:
            return _UNKNOWN
        if self._assume and "." in name:
            assumed = self._assumed(name)
            if assumed is not _UNKNOWN:
                return assumed
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
            bound = self.constants[node.id]
            return _UNKNOWN if isinstance(bound, Grown) else bound  # only what it may hold is known
        return _UNKNOWN

    def grown(self, node: ast.expr) -> Grown | None:
        """What a name bound to a :class:`Grown` sequence may hold, else None."""
        if isinstance(node, ast.Name):
            found = self.constants.get(node.id)
            if isinstance(found, Grown):
                return found
        return None

    def _bool_op(self, node: ast.BoolOp, version: tuple[int, int]) -> object:
        """The value of ``a or b`` / ``a and b`` as Python gives it: the first operand that decides
        (``os.environ.get("X") or "torch"`` is unknown, not ``True``)."""
        is_and = isinstance(node.op, ast.And)
        for operand in node.values[:-1]:
            value = self._value(operand, version)
            truth = _truth_of(value)
            if truth is None:
                return _UNKNOWN
            if truth is not is_and:
                return value  # short-circuit: a false operand of ``and``, a true one of ``or``
        return self._value(node.values[-1], version)

    def _bool_op_truth(self, node: ast.BoolOp, version: tuple[int, int]) -> bool | None:
        """The truth of ``a or b`` / ``a and b``, known even when its value is not (``x or "y"``
        is true whatever ``x`` is)."""
        is_and = isinstance(node.op, ast.And)
        unknown = False
        for operand in node.values:
            truth = self._truth(operand, version)
            if truth is None:
                unknown = True
            elif truth is not is_and:
                return truth  # short-circuit: a False in ``and``, a True in ``or``
        return None if unknown else is_and

    def _subscript(self, node: ast.Subscript, version: tuple[int, int]) -> object:
        base = self._value(node.value, version)
        if isinstance(base, Literal):
            base = base.value
        if isinstance(base, (dict, tuple, list)) and not isinstance(node.slice, ast.Slice):
            key = _plain(self._value(node.slice, version))
            if key is _UNKNOWN:
                return _UNKNOWN
            try:
                if isinstance(base, dict):
                    return _item(base[key])
                if isinstance(key, int):  # any other index of a tuple or list raises TypeError
                    return _item(base[key])
            except (KeyError, IndexError, TypeError):
                pass
            return _UNKNOWN
        if isinstance(base, (str, tuple)) and not isinstance(base, _NotMain):  # ``"abc"[::-1]``
            return _sliced(self, base, node.slice, version)
        if not isinstance(base, _VersionInfo):
            if dotted_name(node.value, self.aliases) == "os.environ":
                known, value = self._environment(_plain(self._value(node.slice, version)))
                return value if known and value is not None else _UNKNOWN  # unset: KeyError
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

    def may_compute(self, call: ast.Call) -> bool:
        """Whether :meth:`literal` may know the value of ``call`` (a conversion of a constant, or a
        method of a constant such as ``MAP.get(name)``): cheap, for callers that skip other calls."""
        func = call.func
        name = dotted_name(func, self.aliases) or ""
        if name in _CONVERTERS or name in self._assumed_callees:
            return True
        if name in _ENVIRON_GETTERS or name in _LOADING_CALLS:
            return True
        if isinstance(func, ast.Attribute):
            base = func.value
            if isinstance(base, ast.Name):
                return base.id in self.constants
            if isinstance(base, ast.Call):  # ``os.environ.get("X", "0").upper()``
                return func.attr in _STRING_METHODS and self.may_compute(base)
            return isinstance(base, (ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set,
                                     ast.JoinedStr, ast.Subscript))
        return False

    def _call_value(self, node: ast.Call, version: tuple[int, int]) -> object:
        func = node.func
        if self._assume or dotted_name(func, self.aliases) in _ENVIRON_GETTERS:
            found = _assumed_call(self, node, version)
            if found is not _UNKNOWN:
                return found
        if len(node.args) == 1 and not node.keywords:
            converter = _CONVERTERS.get(dotted_name(func, self.aliases) or "")
            if converter is not None:
                argument = _plain(self._value(node.args[0], version))
                if argument is _UNKNOWN or isinstance(argument, Anchored):
                    return _UNKNOWN
                try:
                    return _item(converter(argument))
                except (TypeError, ValueError):
                    return _UNKNOWN
        if isinstance(func, ast.Attribute) and not node.keywords:
            base = self._value(func.value, version)
            if isinstance(base, Literal):
                base = base.value
            if isinstance(base, dict):
                if func.attr in ("items", "keys", "values") and not node.args:
                    return Literal(list(getattr(base, func.attr)()))
                if func.attr == "get" and 1 <= len(node.args) <= 2:
                    key = _plain(self._value(node.args[0], version))
                    if key is _UNKNOWN:
                        return _UNKNOWN
                    if key in base:
                        return _item(base[key])
                    return None if len(node.args) == 1 else self._value(node.args[1], version)
        if len(node.args) == 1 and not node.keywords and (
            (isinstance(func, ast.Attribute) and func.attr == "find_spec")
            or dotted_name(func, self.aliases) in _LOADING_CALLS
        ):  # the argument is evaluated only for these (a nested call would cost twice per level)
            loading = _module_loading(self, func, self._value(node.args[0], version))
            if loading is not None:
                return loading
        if isinstance(func, ast.Attribute) and func.attr in _STRING_METHODS and not node.args \
                and not node.keywords:
            base = self._value(func.value, version)
            if isinstance(base, str) and not isinstance(base, _NotMain):  # ``"x"[::-1].upper()``
                return str(getattr(base, func.attr)())
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


def _assumed_call(evaluator: ConditionEvaluator, node: ast.Call, version: tuple[int, int]) -> object:
    """An ``[assume]``-d call (``current_platform.is_rocm()``) or a read of an
    ``[assume.environ]`` variable (``os.environ.get("X")``, ``os.getenv("X", "0")``)."""
    name = dotted_name(node.func, evaluator.aliases)
    if name is None or node.keywords:
        return _UNKNOWN
    if name in _ENVIRON_GETTERS and 1 <= len(node.args) <= 2:
        known, value = evaluator._environment(_plain(evaluator._value(node.args[0], version)))
        if not known:
            return _UNKNOWN
        if value is not None:
            return value
        return None if len(node.args) == 1 else evaluator._value(node.args[1], version)
    if not evaluator._assume or not all(is_constant_argument(arg) for arg in node.args):
        return _UNKNOWN
    return evaluator._assumed(f"{name}({', '.join(ast.unparse(arg) for arg in node.args)})")


def _truth_of(value: object) -> bool | None:
    """The truth of a computed value, or None: unknown, a mutable container (it may have changed
    since it was bound), or a value whose ``__bool__`` raises."""
    if value is _UNKNOWN or isinstance(value, (Literal, Anchored, EntryPointOf, ModuleLoading)):
        return None
    try:
        return bool(value)
    except Exception:  # noqa: BLE001 - a literal whose truth raises is unknown
        return None


def _sliced(
    evaluator: ConditionEvaluator, base: str | tuple[object, ...], index: ast.expr,
    version: tuple[int, int],
) -> object:
    """``base[index]`` of a constant string or tuple: an integer index or a slice whose bounds are
    integer constants or absent (an index out of range raises: unknown)."""
    if not isinstance(index, ast.Slice):
        key = _plain(evaluator._value(index, version))
        if type(key) is not int or not -len(base) <= key < len(base):
            return _UNKNOWN
        return _item(base[key])
    bounds = [
        None if bound is None else _plain(evaluator._value(bound, version))
        for bound in (index.lower, index.upper, index.step)
    ]
    if any(bound is not None and type(bound) is not int for bound in bounds) or bounds[2] == 0:
        return _UNKNOWN
    lower, upper, step = (cast("int | None", bound) for bound in bounds)
    return base[lower:upper:step]


def _dict_value(evaluator: ConditionEvaluator, node: ast.Dict, version: tuple[int, int]) -> object:
    """A dict display of constant keys and values (``**other`` of a constant dict included)."""
    out: dict[object, object] = {}
    for key_node, value_node in zip(node.keys, node.values):
        if key_node is None:  # ``**other``
            other = evaluator._value(value_node, version)
            other = other.value if isinstance(other, Literal) else other
            if not isinstance(other, dict):
                return _UNKNOWN
            out.update(other)
            continue
        key = _plain(evaluator._value(key_node, version))
        if key is _UNKNOWN:
            return _UNKNOWN
        try:
            out[key] = _plain(evaluator._value(value_node, version))
        except TypeError:
            return _UNKNOWN
    return Literal(out)


def _comprehension_value(
    evaluator: ConditionEvaluator, node: ast.ListComp | ast.SetComp | ast.DictComp,
    version: tuple[int, int],
) -> object:
    """A comprehension over constant iterables, with constant conditions (at most
    :data:`_MAX_ITEMS` items in all); the loop variables are bound to each item in turn, in a scope
    of their own over the module's constants."""
    scope: dict[str, object] = dict(evaluator.constants)
    inner = ConditionEvaluator(evaluator.target, evaluator.aliases, scope)
    rows: list[object] = []
    pairs: list[tuple[object, object]] = []
    steps = [0]

    def walk(index: int) -> bool:
        if index == len(node.generators):
            if isinstance(node, ast.DictComp):
                key = _plain(inner._value(node.key, version))
                value = _plain(inner._value(node.value, version))
                pairs.append((key, value))
                return key is not _UNKNOWN
            item = _plain(inner._value(node.elt, version))
            rows.append(item)
            return item is not _UNKNOWN
        generator = node.generators[index]
        iterable = inner._value(generator.iter, version)
        items = _iterate(iterable)
        if items is None or generator.is_async or len(items) > _MAX_ITEMS:
            return False
        for item in items:
            steps[0] += 1
            if steps[0] > _MAX_STEPS or not _assign(generator.target, item, scope):
                return False
            for condition in generator.ifs:
                if inner._truth(condition, version) is None:
                    return False
            if all(inner._truth(c, version) for c in generator.ifs):
                if not walk(index + 1) or len(rows) + len(pairs) > _MAX_ITEMS:
                    return False
        return True

    if not walk(0):
        return _UNKNOWN
    if isinstance(node, ast.DictComp):
        try:
            return Literal(dict(pairs))
        except TypeError:
            return _UNKNOWN
    return Literal(rows if isinstance(node, ast.ListComp) else _frozen(rows))


def _joined_value(evaluator: ConditionEvaluator, node: ast.JoinedStr, version: tuple[int, int]) -> object:
    """An f-string whose fields are constants (``__name__``/``__package__`` first: anchored)."""
    out: object = ""
    for part in node.values:
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            value: object = part.value
        elif isinstance(part, ast.FormattedValue) and part.format_spec is None:
            value = evaluator._value(part.value, version)
            if isinstance(value, _NotMain):
                value = Anchored("__name__", "")
            elif not isinstance(value, (str, Anchored)):
                return _UNKNOWN
        else:
            return _UNKNOWN
        out = _add(out, value)
        if out is _UNKNOWN:
            return _UNKNOWN
    return out


_CONVERTERS: Final[dict[str, Callable[[Any], object]]] = {
    "types.MappingProxyType": dict, "dict": dict, "list": list, "tuple": tuple, "set": set,
    "frozenset": frozenset, "sorted": sorted, "int": int,
}
"""Calls of one constant argument whose value is known: a read-only view of a dict is the dict,
``int(os.environ.get("X", "0"))`` of an assumed variable a number."""

_ENVIRON_GETTERS: Final = frozenset({"os.environ.get", "os.getenv"})
"""Calls that read an environment variable: ``[assume.environ]`` answers them."""

_STRING_METHODS: Final = frozenset(
    {"upper", "lower", "casefold", "strip", "lstrip", "rstrip", "title", "capitalize", "swapcase"}
)
"""Methods of a constant string, called without arguments, whose result is known
(``os.environ.get("X", "false").upper()``)."""


_MAX_ITEMS: Final = 4096
"""Items a comprehension may produce before it counts as unknown."""

_MAX_STEPS: Final = 16384
"""Iterations a comprehension may take (over all its ``for`` clauses, filtered or not) before it
counts as unknown: the cost stays bounded whatever the product of its iterables."""


@dataclass(frozen=True)
class Anchored:
    """A string computed from the importing module's own name: ``__name__ + ".x"`` is
    ``Anchored("__name__", ".x")``, ``f"{__package__}.y"`` is ``Anchored("__package__", ".y")``.

    Attributes:
        anchor: ``"__name__"`` or ``"__package__"``.
        rest: the text that follows it.
    """

    anchor: str
    rest: str


@dataclass(frozen=True)
class EntryPointOf:
    """The variable of a loop over the installed entry points of a group (``for ep in
    entry_points().select(group="triton.backends")``, :func:`entry_point_selection`): which ones
    the interpreter has is for the graph to say. Its ``value`` and ``module`` are :class:`Anchored`
    strings (their anchor an :func:`~flake8_importpolicy.model.facts.entry_point_anchor`); its
    truth is unknown.

    Attributes:
        group: the entry point group.
        name: the one name selected (``select(group=..., name=...)``), or None for all of them.
    """

    group: str
    name: str | None = None


_ENTRY_POINT_FIELDS: Final = frozenset({"value", "module"})
"""The attributes of an ``importlib.metadata.EntryPoint`` that name a module: ``value``
(``"pkg.mod"`` or ``"pkg.mod:attr"``) and ``module`` (its part before ``:``)."""

_ENTRY_POINT_LISTERS: Final = frozenset({
    "importlib.metadata.entry_points", "importlib_metadata.entry_points",
})


def entry_point_selection(
    node: ast.expr, aliases: Mapping[str, str], evaluator: ConditionEvaluator
) -> EntryPointOf | None:
    """The group a loop's iterable selects from the installed entry points, or None:
    ``entry_points(group="g")``, ``entry_points().select(group="g")`` (optionally ``name=``) and
    the dict interface of Python 3.8-3.9, ``entry_points()["g"]`` and ``entry_points().get("g",
    ())``, where ``entry_points`` is ``importlib.metadata``'s or its backport's
    (``importlib.metadata.entry_points``: the distributions' ``entry_points.txt``, PEP 376 and the
    entry points specification)."""

    def lister(call: ast.expr) -> bool:
        return (
            isinstance(call, ast.Call) and not call.args
            and dotted_name(call.func, aliases) in _ENTRY_POINT_LISTERS
        )

    def keywords(call: ast.Call) -> EntryPointOf | None:
        found = {k.arg: evaluator.constant(k.value) for k in call.keywords}
        group, name = found.pop("group", None), found.pop("name", None)
        if found or call.args or not isinstance(group, str) or not (name is None or isinstance(name, str)):
            return None
        return EntryPointOf(group, name)

    if lister(node) and isinstance(node, ast.Call) and node.keywords:
        return keywords(node)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and lister(node.func.value):
        if node.func.attr == "select":
            return keywords(node)
        if node.func.attr == "get" and 1 <= len(node.args) <= 2 and not node.keywords:
            group = evaluator.constant(node.args[0])
            return EntryPointOf(group) if isinstance(group, str) else None
    if isinstance(node, ast.Subscript) and lister(node.value):
        group = evaluator.constant(node.slice)
        return EntryPointOf(group) if isinstance(group, str) else None
    return None


@dataclass(frozen=True)
class ModuleLoading:
    """A step of loading each module in a package's own directory by hand, in a loop over
    ``pkgutil.iter_modules(__path__, __name__ + ".")`` (:func:`own_modules_loop`): the loop's
    finder (``stage`` ``finder``), the spec its ``find_spec(name)`` or ``importlib.util.find_spec
    (name)`` gives (``spec``), the module ``importlib.util.module_from_spec(spec)`` makes
    (``module``); ``loader.exec_module`` of that module runs it (docs/semantics.md rule 14).

    Attributes:
        anchor: the :func:`~flake8_importpolicy.model.facts.own_modules_anchor` of the modules
            (empty for the finder).
        stage: ``finder``, ``spec`` or ``module``.
    """

    anchor: str
    stage: str


def _module_loading(evaluator: ConditionEvaluator, func: ast.expr, argument: object) -> ModuleLoading | None:
    """The :class:`ModuleLoading` step a call of one argument makes: ``finder.find_spec(name)``
    and ``importlib.util.find_spec(name)`` of an own module's name, ``module_from_spec(spec)``."""
    called = dotted_name(func, evaluator.aliases)
    if isinstance(argument, Anchored) and not argument.rest \
            and parse_own_modules_anchor(argument.anchor) is not None:
        if called == "importlib.util.find_spec":
            return ModuleLoading(argument.anchor, "spec")
        if isinstance(func, ast.Attribute) and func.attr == "find_spec" \
                and isinstance(func.value, ast.Name):
            finder = evaluator.constants.get(func.value.id)
            if isinstance(finder, ModuleLoading) and finder.stage == "finder":
                return ModuleLoading(argument.anchor, "spec")
    if called == "importlib.util.module_from_spec" and isinstance(argument, ModuleLoading) \
            and argument.stage == "spec":
        return ModuleLoading(argument.anchor, "module")
    return None


def own_modules_loop(
    node: ast.expr, target: ast.expr, aliases: Mapping[str, str], evaluator: ConditionEvaluator
) -> tuple[str, str, str] | None:
    """The names ``(finder, name, ispkg)`` a loop ``for finder, name, ispkg in
    pkgutil.iter_modules(__path__, __name__ + ".")`` binds (the prefix positional or
    ``prefix=``, also ``f"{__name__}."``), or None for another loop: it lists the modules
    directly in the package's own directory, each by its full name (``Lib/pkgutil.py``
    ``iter_modules``, ``_iter_file_finder_modules``)."""
    if not (
        isinstance(node, ast.Call) and dotted_name(node.func, aliases) == "pkgutil.iter_modules"
        and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "__path__"
        and isinstance(target, ast.Tuple) and len(target.elts) == 3
        and all(isinstance(element, ast.Name) for element in target.elts)
    ):
        return None
    prefix = node.args[1] if len(node.args) == 2 else None
    for keyword in node.keywords:
        if keyword.arg != "prefix" or prefix is not None:
            return None
        prefix = keyword.value
    if prefix is None or evaluator.constant(prefix) != Anchored("__name__", "."):
        return None
    finder, name, ispkg = (cast(ast.Name, element).id for element in target.elts)
    return finder, name, ispkg


@dataclass(frozen=True)
class Grown:
    """A tuple or list bound to a name and grown by ``+=`` in code that may not run (``NAMES +=
    ("x",)`` under a condition the engine cannot decide, docs/semantics.md rule 14): what every
    path may have put in it, in order, and the positions (``maybe``) that only some paths added.
    Its value is unknown (a test of it, ``len(NAMES)``, cannot be decided); a loop over it walks
    every item, those in ``maybe`` flagged conditional."""

    items: tuple[object, ...]
    maybe: frozenset[int]
    is_list: bool = False


@dataclass(frozen=True)
class Literal:
    """A mutable container (list, set, dict) bound to a name: its items can be looked up, but its
    truth is unknown (it may have been changed since it was bound)."""

    value: object


def _plain(value: object) -> object:
    """A container's value, unwrapped from :class:`Literal` (other values as they are)."""
    return value.value if isinstance(value, Literal) else value


def _item(value: object) -> object:
    """An item taken out of a container: mutable again if it is a list, set or dict."""
    return Literal(value) if isinstance(value, (list, dict, set, frozenset)) else value


def _frozen(items: list[object]) -> object:
    try:
        return frozenset(items)
    except TypeError:
        return _UNKNOWN


def _iterate(value: object) -> list[object] | None:
    value = _plain(value)
    if isinstance(value, (list, tuple, str)):
        return list(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    if isinstance(value, dict):
        return list(value)
    return None


def _assign(target: ast.expr, value: object, scope: dict[str, object]) -> bool:
    """Bind a comprehension's target (a name, or a tuple of names) to ``value`` in ``scope``."""
    if isinstance(target, ast.Name):
        scope[target.id] = _item(value)
        return True
    if isinstance(target, ast.Tuple):
        value = _plain(value)
        if not isinstance(value, (tuple, list)) or len(value) != len(target.elts):
            return False
        return all(_assign(element, item, scope) for element, item in zip(target.elts, value))
    return False


def _add(left: object, right: object) -> object:
    """``left + right`` for strings and anchored strings, tuples and lists; else unknown."""
    left, right = _plain(left), _plain(right)
    if isinstance(left, _NotMain):
        left = Anchored("__name__", "")
    if left == "" and isinstance(right, Anchored):
        return right
    if isinstance(left, Anchored) and isinstance(right, str):
        return Anchored(left.anchor, left.rest + right)
    if isinstance(left, str) and isinstance(right, str) and not isinstance(right, _NotMain):
        return left + right
    if isinstance(left, tuple) and isinstance(right, tuple) and type(left) is type(right):
        return left + right
    if isinstance(left, list) and isinstance(right, list) and type(left) is type(right):
        return left + right
    return _UNKNOWN


class _Unknown:
    def __repr__(self) -> str:
        return "<unknown>"


_UNKNOWN: Final = _Unknown()
UNKNOWN: Final = _UNKNOWN
"""What :meth:`ConditionEvaluator.constant` returns for a value it cannot know."""


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
    if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, Literal):
        right = right.value  # a lookup in a container bound to a name
    if isinstance(left, _OPAQUE) or isinstance(right, _OPAQUE):
        return _UNKNOWN
    apply = _OPERATORS.get(type(op))
    if apply is None:
        return _UNKNOWN
    try:
        return apply(left, right)
    except TypeError:
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
    apply = _OPERATORS.get(type(op)) if type(op) in _ORDERINGS else None
    return _UNKNOWN if apply is None else apply(order, 0)


_OPERATORS: Final[dict[type[ast.cmpop], Callable[[Any, Any], object]]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
    ast.In: lambda left, right: left in right, ast.NotIn: lambda left, right: left not in right,
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Is: operator.is_, ast.IsNot: operator.is_not,
}
"""What each comparison operator computes (``Any``: the operands are whatever the module's
constants are; an operator they do not support raises TypeError, which makes it unknown)."""

_ORDERINGS: Final = frozenset({ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE})
"""The comparisons that order ``sys.version_info`` against a tuple."""


_LOADING_CALLS: Final = frozenset({"importlib.util.find_spec", "importlib.util.module_from_spec"})
"""Calls that make a :class:`ModuleLoading` step of a name or spec the engine knows."""

_OPAQUE: Final = (Literal, Anchored, EntryPointOf, ModuleLoading)
"""Values whose comparisons are unknown (a container that may have changed, a name computed from
the module's own, a stand-in for what the interpreter or the directories hold)."""
