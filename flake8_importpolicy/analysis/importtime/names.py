"""What binding a name does for the import-time walker (docs/semantics.md rules 2, 15): the
binding in the innermost scope, what a rebinding, a ``del`` or a write through ``globals()`` makes
the recorders forget, the constants conditions and computed import names read, and the walrus in a
test. Below the expression scanner and the walker, above the recorders; it never calls back up."""

from __future__ import annotations

import ast
from collections.abc import Sequence

from flake8_importpolicy.analysis.conditions import UNKNOWN, ConditionEvaluator, Grown, Literal
from flake8_importpolicy.analysis.importtime.bindings import (
    DEFINITIONS,
    NO_VALUE,
    BindingKind,
    Scope,
)
from flake8_importpolicy.analysis.importtime.calls import _MAY_NOT_RUN, CallRecorder
from flake8_importpolicy.analysis.importtime.flow import Flow
from flake8_importpolicy.analysis.importtime.lazy import LazyRecorder
from flake8_importpolicy.analysis.importtime.sites import SiteRecorder
from flake8_importpolicy.model.graph import Flag

__all__ = ["NameBinder", "NamespaceWrites"]


class NameBinder:
    """Binds names where the walker is and keeps the recorders in step with what is bound.

    Its 8 attributes: the scope, the flow state, the condition evaluator, the three recorders a
    binding changes (import sites for ``__all__``, calls for nested definitions, lazy objects for
    ``__getattr__``), and two options (the names some function declares ``global``, whether the
    source has a walrus)."""

    def __init__(
        self,
        scope: Scope,
        flow: Flow,
        conditions: ConditionEvaluator,
        imports: SiteRecorder,
        callees: CallRecorder,
        lazy: LazyRecorder,
        *,
        declared_global: frozenset[str],
        walrus: bool,
    ) -> None:
        self.scope = scope
        self.flow = flow
        self.conditions = conditions
        self.imports = imports
        self.callees = callees
        self.lazy = lazy
        # names a ``global`` statement in some function declares (they may be rebound at any time);
        # every name at module level in a module that writes ``globals()[...]``, whose elements are
        # still the declared names: those alone are not a function's own locals
        self.declared_global: frozenset[str] = declared_global
        self.declared_in_functions: frozenset[str] = frozenset(declared_global)
        # False when the source has no ``:=`` at all: no test is then walked for walrus bindings
        self.walrus: bool = walrus

    def bind(self, name: str, refers_to: str | None, how: BindingKind = BindingKind.OTHER) -> None:
        """Bind ``name`` (``refers_to``: the dotted name an import binds it to) in the innermost
        scope; a class body's bindings do not change what the module's names refer to."""
        if how not in DEFINITIONS:
            self.callees.nested_defs.pop(name, None)
        self.scope.ever_bound.add(name)
        if self.flow.class_depth:
            self.flow.names.bind(name, how, refers_to, None)
        else:
            self.scope.bind(name, how, refers_to, None if self.flow.in_function else self.flow.line)

    def bind_walrus(self, test: ast.expr) -> None:
        """``if (x := MAP.get(name)):``: ``x`` is the constant value, when it is known (rule 15)."""
        if not self.walrus:
            return
        for node in ast.walk(test):
            if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
                value = self.conditions.literal(node.value)
                self.scope.set_value(node.target.id, NO_VALUE if value is UNKNOWN else value)

    def forget_values(self) -> None:
        """Forget every known value of the module's names: code bound names the engine cannot see
        (``globals()[...] = ...``, ``globals().update(...)``)."""
        if not self.flow.in_function:
            self.scope.forget_values()

    def bind_namespace_key(
        self, key: ast.expr, value: ast.expr | None, flags: frozenset[Flag]
    ) -> bool:
        """``globals()[key] = value`` in module-level code with ``key`` a constant string (celery's
        ``globals()['kcah_acitats'[::-1].upper()] = False``): binds that name, to ``value``'s
        constant when it has one, the write certainly runs (no flag of code that may not run) and
        no function declares the name ``global``; other names keep their values. False (nothing
        done) for any other write."""
        if self.flow.in_function or self.flow.class_depth:
            return False
        name = self.conditions.constant(key)
        if not isinstance(name, str) or not name.isidentifier():
            return False
        self.bind(name, None)
        constant = UNKNOWN if value is None else _constant_value(value, self.conditions)
        if constant is not UNKNOWN and not flags & _MAY_NOT_RUN and (
            name not in self.declared_in_functions
        ):
            self.scope.set_value(name, constant)
        self.scope.seen_constants.add(name)
        return True

    def unbind(self, targets: Sequence[ast.expr]) -> None:
        """Forget the module-level names ``del targets`` deletes; a later binding records its own
        line."""
        stack = list(targets)
        while stack:
            target = stack.pop()
            if isinstance(target, (ast.Tuple, ast.List)):
                stack.extend(target.elts)
            elif isinstance(target, ast.Name):
                name = target.id
                self.scope.unbind(name)
                if name == "__getattr__":
                    self.lazy.defines_getattr = False
                elif name == "__all__":
                    self.imports.forget_all()

    def record_constant(self, stmt: ast.Assign | ast.AnnAssign | ast.AugAssign, fresh: bool) -> None:
        """``NAME = <constant>`` as the first binding of ``NAME`` makes it a constant for conditions
        (``MYPY = False``) and for computed import names (``PACKAGES = ("a", "b")``, a literal dict
        looked up by a PEP 562 ``__getattr__``), unless a function declares it ``global`` (and may
        rebind it). A list, set or dict counts for lookups, not for its truth (it may change). In a
        function body the same holds for its locals: a second binding forgets the value."""
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else (
            stmt.target if isinstance(stmt, ast.AnnAssign) else None
        )
        if isinstance(target, ast.Tuple) and stmt.value is not None:
            self._unpack_constant(target, stmt.value, fresh)
            return
        if (
            fresh
            and stmt.value is not None
            and isinstance(target, ast.Name)
            and target.id not in self.scope.seen_constants
            and not self.may_be_rebound(target.id, stmt.lineno)
        ):
            value = _constant_value(stmt.value, self.conditions)
            if value is UNKNOWN:
                return
            self.scope.set_value(target.id, value)
            self.scope.seen_constants.add(target.id)

    def value_before(self, stmt: ast.Assign | ast.AnnAssign | ast.AugAssign) -> object:
        """The value ``NAME`` holds before ``NAME += ...`` rebinds it (what
        :meth:`record_growth` grows), else :data:`NO_VALUE`."""
        if not isinstance(stmt, ast.AugAssign) or not isinstance(stmt.target, ast.Name):
            return NO_VALUE
        found = self.scope.lookup(stmt.target.id)
        return NO_VALUE if found is None else found.value

    def record_growth(
        self, stmt: ast.Assign | ast.AnnAssign | ast.AugAssign, before: object, flags: frozenset[Flag]
    ) -> None:
        """``NAMES += ("x",)`` of a name bound to a constant tuple or list (or one already grown):
        its value is the concatenation when the statement always runs; in code that may not run,
        a :class:`Grown` sequence of every item, the added ones only maybe there (rule 14)."""
        if before is NO_VALUE or not isinstance(stmt, ast.AugAssign) or not isinstance(stmt.op, ast.Add):
            return
        assert isinstance(stmt.target, ast.Name)  # value_before gave a value
        name = stmt.target.id
        if self.may_be_rebound(name, stmt.lineno):
            return
        if isinstance(before, Grown):
            items, maybe, is_list = before.items, before.maybe, before.is_list
        else:
            plain = before.value if isinstance(before, Literal) else before
            if not isinstance(plain, (tuple, list)):
                return
            items, maybe, is_list = tuple(plain), frozenset(), isinstance(plain, list)
        added = self.conditions.constant(stmt.value)
        if not isinstance(added, tuple) and not (is_list and isinstance(added, list)):
            return  # unknown, or ``tuple += list`` (a TypeError)
        grown = (*items, *added)
        if _MAY_NOT_RUN & flags:
            maybe = maybe | frozenset(range(len(items), len(grown)))
        if maybe:
            self.scope.set_value(name, Grown(grown, maybe, is_list))
        else:
            self.scope.set_value(name, Literal(list(grown)) if is_list else grown)

    def _unpack_constant(self, target: ast.Tuple, value: ast.expr, fresh: bool) -> None:
        """``package, module = MAP[name]`` (a tuple value of a map a PEP 562 ``__getattr__`` run
        for one name looks up, rule 15), or ``a, b = "x", "y"``: each name of a first binding is
        the item's constant; a name bound again forgets its value."""
        names = [elt.id if isinstance(elt, ast.Name) else None for elt in target.elts]
        items = self.conditions.constant(value) if fresh and None not in names else UNKNOWN
        known = isinstance(items, (tuple, list)) and len(items) == len(names)
        for number, name in enumerate(names):
            if name is None:
                continue
            if not known or name in self.scope.seen_constants or self.may_be_rebound(
                name, target.lineno
            ):
                if self.flow.in_function:
                    self.scope.set_value(name, NO_VALUE)
                continue
            assert isinstance(items, (tuple, list))
            self.scope.set_value(name, items[number])
            self.scope.seen_constants.add(name)

    def may_be_rebound(self, name: str, line: int) -> bool:
        """Whether code other than its own bindings may rebind ``name`` bound at ``line``: a
        ``global`` declaration of it; at module level also a ``globals()`` write that runs after
        ``line`` (every one, when one is in a function)."""
        declared = self.declared_global
        if self.flow.in_function or (
            isinstance(declared, NamespaceWrites) and declared.last_line is not None
            and line > declared.last_line
        ):
            return name in self.declared_in_functions
        return name in declared


class NamespaceWrites(frozenset[str]):
    """What a module that writes its namespace (``globals()[name] = ...``) declares global: every
    name. Its elements are the names ``global`` statements declare (those alone can change under a
    function body's locals), and ``last_line`` the line of its last write when every write is in
    module-level code (a name first bound after it keeps its value), else None."""

    last_line: int | None

    def __new__(cls, declared: frozenset[str], last_line: int | None) -> NamespaceWrites:
        self = super().__new__(cls, declared)
        self.last_line = last_line
        return self

    def __contains__(self, name: object) -> bool:
        return True


def _constant_value(value: ast.expr, conditions: ConditionEvaluator) -> object:
    """The constant ``value`` evaluates to, or UNKNOWN: a name or attribute stays what it is (not a
    literal), and most calls compute nothing the engine knows (they are not evaluated)."""
    if isinstance(value, ast.Constant):
        return value.value
    if isinstance(value, (ast.Name, ast.Attribute)):
        return UNKNOWN
    if isinstance(value, ast.Call) and not conditions.may_compute(value):
        return UNKNOWN
    return conditions.literal(value)
