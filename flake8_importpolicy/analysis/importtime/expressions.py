"""The expressions that run at import time, scanned for the import-time walker (docs/semantics.md
rules 9, 14, 16, 19): which parts of an expression run now (not a lambda's body, not a generator
nobody iterates yet, only the branch a known test selects), the calls, dynamic imports and attribute
reads in them, the names a walrus or an assignment target binds, decorators, and the constant code
``exec``/``eval`` run. Below the walker, above :mod:`.names` and the recorders; the one way back up
is the walker's ``visit_body`` for the statements of a constant ``exec`` string, through a weak
reference (the walker holds the scanner)."""

from __future__ import annotations

import ast
import copy
import weakref
from collections.abc import Callable, Sequence
from typing import Final, Protocol

from flake8_importpolicy.analysis.conditions import ConditionEvaluator, dotted_name
from flake8_importpolicy.analysis.importtime.bindings import BindingKind, Scope
from flake8_importpolicy.analysis.importtime.calls import CallRecorder
from flake8_importpolicy.analysis.importtime.dynamic import (
    DYNAMIC_IMPORTERS,
    MODULE_READERS,
    DynamicRecorder,
    unparse,
)
from flake8_importpolicy.analysis.importtime.flow import Flow
from flake8_importpolicy.analysis.importtime.lazy import LazyRecorder
from flake8_importpolicy.analysis.importtime.names import NameBinder
from flake8_importpolicy.analysis.importtime.sites import SiteRecorder
from flake8_importpolicy.analysis.syspath import FINDER_ADDERS, SYS_PATH_CHANGERS
from flake8_importpolicy.model.facts import SourceProblem, Target
from flake8_importpolicy.model.graph import Construct, Flag

__all__ = ["BodyWalker", "ExpressionScanner", "constant_items", "loop_items"]


class BodyWalker(Protocol):
    """What the scanner asks of the walker that holds it: walk the statements of a constant
    ``exec`` string where the call is."""

    def visit_body(self, body: Sequence[ast.stmt], flags: frozenset[Flag]) -> None: ...


_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


_MAX_LOOP_ITEMS: Final = 64
"""A loop over more constant items than this is walked once, its variable unknown."""


def constant_items(value: object) -> list[object] | None:
    """The items of a constant sequence a loop or comprehension walks (strings, numbers, tuples of
    them), or None."""
    if isinstance(value, dict):
        value = list(value)
    if not isinstance(value, (list, tuple)) or len(value) > _MAX_LOOP_ITEMS:
        return None
    if not all(isinstance(item, (str, int, float, bool, tuple)) or item is None for item in value):
        return None
    return list(value)


def loop_items(
    conditions: ConditionEvaluator, iterable: ast.expr
) -> tuple[list[object] | None, frozenset[int]]:
    """The items a loop or comprehension over ``iterable`` walks (:func:`constant_items` of its
    constant value, or of what a :class:`Grown` name may hold), and the positions of those that
    only may be there (flagged conditional)."""
    grown = conditions.grown(iterable)
    if grown is None:
        return constant_items(conditions.constant(iterable)), frozenset()
    return constant_items(list(grown.items)), grown.maybe


class _Substitute(ast.NodeTransformer):
    """Replaces the loads of one name by a constant (a comprehension's variable by an item), in a
    copy of the element; nested comprehensions or lambdas binding the same name keep theirs."""

    def __init__(self, name: str, value: str | int | float | bool) -> None:
        self.name = name
        self.value = value

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id != self.name or not isinstance(node.ctx, ast.Load):
            return node
        return ast.copy_location(ast.Constant(self.value), node)

    def _shadowing(self, node: ast.AST) -> ast.AST:
        names = {
            target.id for target in ast.walk(node)
            if isinstance(target, ast.Name) and isinstance(target.ctx, ast.Store)
        } | {arg.arg for arg in ast.walk(node) if isinstance(arg, ast.arg)}
        return node if self.name in names else self.generic_visit(node)

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _shadowing
    visit_Lambda = _shadowing


def _push_children(stack: list[ast.AST], node: ast.AST) -> None:
    """``stack.extend(ast.iter_child_nodes(node))`` without the ``ctx`` markers (``Load``,
    ``Store``) and about twice as fast: the fields to look at are listed once per node class."""
    fields = _CHILD_FIELDS.get(type(node))
    if fields is None:
        fields = _CHILD_FIELDS[type(node)] = tuple(f for f in node._fields if f != "ctx")
    for name in fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            stack.append(value)
        elif isinstance(value, list):
            stack.extend(item for item in value if isinstance(item, ast.AST))


_ATTRIBUTE_GETTERS: Final = frozenset({"getattr", "hasattr", "builtins.getattr", "builtins.hasattr"})
_EXECUTORS: Final = frozenset({"exec", "eval", "builtins.exec", "builtins.eval"})
_SPECIAL_CALLS: Final = (
    _EXECUTORS | SYS_PATH_CHANGERS | FINDER_ADDERS | MODULE_READERS | {"site.addsitedir"}
)


class ExpressionScanner:
    """Scans the expressions a walker meets and hands what runs in them to the recorders.

    Its 12 attributes: the target, the flow state, the scope, the condition evaluator, the four
    recorders, the name binder, the first compile-time problem found, the walker (a weak
    reference) and one option (future annotations)."""

    def __init__(
        self,
        walker: BodyWalker,
        target: Target,
        flow: Flow,
        scope: Scope,
        conditions: ConditionEvaluator,
        binder: NameBinder,
        imports: SiteRecorder,
        dynamic: DynamicRecorder,
        callees: CallRecorder,
        lazy: LazyRecorder,
        *,
        future_annotations: bool,
    ) -> None:
        self.target = target
        self.flow = flow
        self.scope = scope
        self.conditions = conditions
        self.binder = binder
        self.imports = imports
        self.dynamic = dynamic
        self.callees = callees
        self.lazy = lazy
        # the first compile-time error that ast.parse lets through (``return``/``await`` at module level)
        self.problem: SourceProblem | None = None
        self._walker: Callable[[], BodyWalker | None] = weakref.ref(walker)
        # ``from __future__ import annotations`` was seen: annotations are strings (PEP 563)
        self.future_annotations = future_annotations

    def scan(self, node: ast.expr, flags: frozenset[Flag]) -> None:
        """Record dynamic imports (rule 14) and walrus bindings in an import-time expression.

        Lambda bodies are deferred and skipped.
        """
        stack: list[ast.AST] = [node]
        used = self.imports.used_names
        in_function = self.flow.in_function
        aliases = self.scope.aliases
        consumed: set[int] = set()  # generator expressions a builtin iterates at once
        while stack:
            current = stack.pop()
            kind = type(current)
            # Fast paths for the most common nodes (most of an expression tree is these). mypy does
            # not narrow on ``type(x) is``, hence the ignores: isinstance costs more on this path.
            if kind is ast.Constant:
                continue
            if kind is ast.Name:
                if type(current.ctx) is ast.Load:  # type: ignore[attr-defined]
                    used.setdefault(current.id, []).append(current.lineno)  # type: ignore[attr-defined]
                continue
            if kind is ast.Attribute:
                value = current.value  # type: ignore[attr-defined]
                if type(value) is ast.Name:
                    self.lazy.attribute_read(current, value, flags)  # type: ignore[arg-type]
                elif type(value) is ast.Attribute:
                    self.lazy.attribute_chain(current, flags)  # type: ignore[arg-type]
                stack.append(value)
                continue
            # Annotations are mostly these: nothing to record but what they hold.
            if kind is ast.Subscript:
                stack.append(current.value)  # type: ignore[attr-defined]
                stack.append(current.slice)  # type: ignore[attr-defined]
                continue
            if kind is ast.Tuple:
                stack.extend(current.elts)  # type: ignore[attr-defined]
                continue
            if kind is ast.BinOp:
                stack.append(current.left)  # type: ignore[attr-defined]
                stack.append(current.right)  # type: ignore[attr-defined]
                continue
            if isinstance(current, ast.Lambda):
                stack.extend(current.args.defaults)
                stack.extend(d for d in current.args.kw_defaults if d)
                continue
            if isinstance(current, (ast.ListComp, ast.SetComp, ast.DictComp)) or (
                isinstance(current, ast.GeneratorExp) and id(current) in consumed
            ):
                items = self._per_item(current)
                if items is not None:  # ``tuple(import_module(m) for m in ("a", "b"))``
                    self.scan(current.generators[0].iter, flags)
                    each = flags | {Flag.CONDITIONAL} if current.generators[0].ifs else flags
                    for item, maybe in items:
                        self.scan(item, each | {Flag.CONDITIONAL} if maybe else each)
                    continue
            if isinstance(current, ast.GeneratorExp):
                if id(current) in consumed:  # ``list(f(x) for x in xs)``: runs now
                    _push_children(stack, current)
                else:
                    stack.append(current.generators[0].iter)  # the rest runs when it is iterated
                continue
            if isinstance(current, ast.IfExp):
                self._scan_if_expression(current, flags)
                continue
            if isinstance(current, ast.BoolOp):
                self._scan_bool_op(current, flags)
                continue
            if not in_function:
                self._check_outside_function(current)
            if isinstance(current, ast.Call):
                if isinstance(current.func, ast.Lambda):
                    stack.append(current.func.body)  # ``(lambda: ...)()`` runs its body now
                name = dotted_name(current.func, aliases)  # once for the three below
                if in_function and _is_super_method(current.func):
                    self.callees.super_call(current, flags)
                if self.callees.consumes(current.func, name):
                    consumed.update(id(a) for a in current.args if isinstance(a, ast.GeneratorExp))
                    self.callees.callbacks(current, name, flags)
                if name in _ATTRIBUTE_GETTERS:
                    self.lazy.attribute_getter(current, flags, name)
                if name in DYNAMIC_IMPORTERS:
                    self.dynamic.import_call(current, flags, name)
                elif self.dynamic.runs_loaded_module(current, flags):
                    pass
                elif self.lazy.imports_unknown(current, name):
                    self.imports.add(current, "importlib", None, flags, detail=unparse(current))
                else:
                    self.callees.add(current, current.func, "call", flags, name)
                    if name in _SPECIAL_CALLS:
                        self._special_call(current, name, flags)
                    elif isinstance(current.func, ast.Attribute) and _is_namespace_call(
                        current.func.value
                    ):
                        self.binder.forget_values()  # ``globals().update(...)``
                self.imports.all_mutation(current)
                if in_function:
                    self.lazy.self_facts(current)
            elif isinstance(current, ast.NamedExpr) and isinstance(current.target, ast.Name):
                self.binder.bind(current.target.id, None)  # also inside a comprehension (PEP 572)
            _push_children(stack, current)

    def _per_item(
        self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp
    ) -> list[tuple[ast.expr, bool]] | None:
        """A comprehension that runs now over a constant sequence with one variable (``for m in
        NAMES``): its element (and tests), once per item with the variable replaced by the item
        (rule 14), each with whether the item only may be there (a :class:`Grown` name's); or None
        when it is not one (over no item: a container filled after its binding may hold some, so
        the element is scanned once as before)."""
        if len(node.generators) != 1:
            return None
        generator = node.generators[0]
        if generator.is_async or not isinstance(generator.target, ast.Name):
            return None
        items, maybe = loop_items(self.conditions, generator.iter)
        if not items or not all(isinstance(item, (str, int, float, bool)) for item in items):
            return None
        parts: list[ast.expr] = (
            [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        ) + list(generator.ifs)
        variable = generator.target.id
        if any(
            isinstance(inner, ast.NamedExpr) for part in parts for inner in ast.walk(part)
        ):
            return None  # a walrus may rebind names the element reads
        return [
            (_Substitute(variable, item).visit(copy.deepcopy(part)), number in maybe)
            for number, item in enumerate(items) if isinstance(item, (str, int, float, bool))
            for part in parts
        ]

    def _scan_if_expression(self, node: ast.IfExp, flags: frozenset[Flag]) -> None:
        """``a if test else b``: only the branch a known test selects runs."""
        self.scan(node.test, flags)
        outcome, used = self.conditions.decide(node.test)
        assumed = self.flow.assumed
        self.flow.assumed = (*assumed, *used)
        if outcome is None or True in outcome:
            self.scan(node.body, flags)
        if outcome is None or False in outcome:
            self.scan(node.orelse, flags)
        self.flow.assumed = assumed

    def _scan_bool_op(self, node: ast.BoolOp, flags: frozenset[Flag]) -> None:
        """``a and b`` / ``a or b``: an operand runs only if the ones before it did not decide the
        result (a known false operand of ``and``, a known true one of ``or``, stops it)."""
        stops = False if isinstance(node.op, ast.And) else True
        assumed = self.flow.assumed
        for operand in node.values:
            self.scan(operand, flags)
            outcome, used = self.conditions.decide(operand)
            if outcome == frozenset({stops}):
                break
            if outcome is not None and stops not in outcome:
                self.flow.assumed = (*self.flow.assumed, *used)
        self.flow.assumed = assumed

    def annotations_evaluated(self, *, class_body: bool = False) -> bool:
        """Annotations run at definition time up to Python 3.13; PEP 649 defers them from 3.14,
        except a class body's under a decorator that evaluates them when it runs (a dataclass's).
        ``from __future__ import annotations`` makes them strings nobody evaluates (PEP 563)."""
        if self.future_annotations:
            return False
        if class_body and self.flow.dataclass_depth:
            return True
        return any(version < (3, 14) for version in self.target.versions)

    def decorator(self, decorator: ast.expr, flags: frozenset[Flag]) -> None:
        """``@f`` calls ``f`` with the function; ``@f(...)`` calls ``f`` and then what it returns."""
        if isinstance(decorator, ast.Call):
            for expr in [decorator.func, *decorator.args, *(kw.value for kw in decorator.keywords)]:
                self.scan(expr, flags)
            if not self.dynamic.dynamic_import(decorator, flags):
                self.callees.add(decorator, decorator.func, "decorator-factory", flags)
        else:
            self.scan(decorator, flags)
            if isinstance(decorator, ast.Lambda):
                self.scan(decorator.body, flags)  # ``@(lambda f: ...)`` runs its body now
            self.callees.add(decorator, decorator, "call", flags)

    def bind_target(self, target: ast.expr, flags: frozenset[Flag] | None = None) -> None:
        """Bind the names of an assignment target; with ``flags``, also scan what the target
        evaluates when it is assigned: the object and key of ``D[key()] = v``, the object of
        ``obj().x = v`` (Language reference 7.2, "Assignment statements")."""
        if isinstance(target, ast.Name):
            self.binder.bind(target.id, None)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self.bind_target(element, flags)
        elif isinstance(target, ast.Starred):
            self.bind_target(target.value, flags)
        elif flags is not None and isinstance(target, ast.Subscript):
            self.scan(target.value, flags)
            self.scan(target.slice, flags)
        elif flags is not None and isinstance(target, ast.Attribute):
            self.scan(target.value, flags)

    def assign_targets(
        self, targets: Sequence[ast.expr], flags: frozenset[Flag], value: ast.expr | None = None
    ) -> None:
        """Bind an assignment's targets (``value``: what is assigned, None for an augmented
        assignment): a class attribute is a value calls may name, a write through ``globals()``
        forgets every value (at module level, one whose key is a constant string binds that name
        alone), and ``sys.path[...] = ...`` is the dynamic recorder's."""
        flow = self.flow
        for target in targets:
            self.bind_target(target, flags)
            if flow.class_depth and not flow.in_function and isinstance(target, ast.Name):
                self.callees.class_values.add(".".join([*flow.class_path, target.id]))
            if isinstance(target, ast.Subscript) and _is_namespace_call(target.value):
                # ``globals()["NAME"] = ...``
                if not self.binder.bind_namespace_key(target.slice, value, flags):
                    self.binder.forget_values()
            if not isinstance(target, ast.Name):
                self.dynamic.assigned_target(target, flags)
        if len(targets) == 1 and isinstance(targets[0], ast.Name) and isinstance(value, ast.Call):
            module = self._imported_module(value)
            if module is not None:  # ``mod = importlib.import_module("numpy")``: as ``import numpy as mod``
                self.binder.bind(targets[0].id, module, BindingKind.IMPORT)

    def _imported_module(self, call: ast.Call) -> str | None:
        """The module ``importlib.import_module(name)`` returns when ``name`` is an absolute
        constant (a literal, a constant, a bound parameter) and no ``package`` is given: the
        module named itself, not its top-level package as ``__import__`` returns (Library
        Reference, ``importlib.import_module``); else None."""
        if dotted_name(call.func, self.scope.aliases) != "importlib.import_module":
            return None
        if len(call.args) != 1 or call.keywords:
            return None
        name = self.conditions.constant(call.args[0])
        if not isinstance(name, str) or not name or name.startswith("."):
            return None
        return name if all(part.isidentifier() for part in name.split(".")) else None

    def _check_outside_function(self, node: ast.AST) -> None:
        """Record the compile-time errors of expressions outside any function (the compiler rejects
        them; ``ast.parse`` does not)."""
        if isinstance(node, ast.Await):
            self.compile_error(node, "'await' outside function")
        elif isinstance(node, (ast.Yield, ast.YieldFrom)):
            self.compile_error(node, "'yield' outside function")
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp)) and any(
            generator.is_async for generator in node.generators
        ):
            self.compile_error(node, "asynchronous comprehension outside of an asynchronous function")

    def compile_error(self, node: ast.stmt | ast.expr, message: str) -> None:
        """Keep the first compile-time error found."""
        if self.problem is None:
            self.problem = SourceProblem(node.lineno, message)

    def _special_call(self, call: ast.Call, name: str, flags: frozenset[Flag]) -> None:
        """``exec``/``eval``: a constant string is analysed where it runs; another is unresolved.
        The other special calls are the dynamic recorder's."""
        if name not in _EXECUTORS:
            self.dynamic.special_call(call, name, flags)
        elif call.args and not (
            isinstance(call.func, ast.Name) and self.scope.is_definition(call.func.id)
        ):
            text = self.conditions.constant(call.args[0])
            if not isinstance(text, str) or not self._run_constant_code(call, text, name, flags):
                self.dynamic.unresolved(call, Construct.EXEC, flags)

    def _run_constant_code(self, call: ast.Call, text: str, name: str, flags: frozenset[Flag]) -> bool:
        """Analyse the constant string ``exec``/``eval`` runs as if it were written at the call
        (every node at the call's position); False if it does not parse."""
        if self.dynamic.exec_budget <= 0:
            return False  # nested or repeated exec beyond what is worth analysing: unresolved
        self.dynamic.exec_budget -= 1
        tree = _constant_code(text, name.rpartition(".")[2] == "exec", call)
        if isinstance(tree, bool):
            return tree
        walker = self._walker()
        if isinstance(tree, ast.Module) and walker is not None:
            line = self.flow.line
            walker.visit_body(tree.body, flags)
            self.flow.line = line
        elif isinstance(tree, ast.Expression):
            self.scan(tree.body, flags)
        return True


def _constant_code(text: str, is_exec: bool, call: ast.Call) -> ast.AST | bool:
    """The tree of the constant string ``exec``/``eval`` runs at ``call``, every node at the call's
    position and without its future imports (they are that code's own); True if CPython rejects it
    when it compiles (it raises before it imports anything), False if it does not parse."""
    mode = "exec" if is_exec else "eval"
    try:
        tree = ast.parse(text, mode=mode)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    try:
        # compiled, never run: a string CPython rejects raises before it imports anything
        compile(text, "<exec>", mode, dont_inherit=True)
    except (SyntaxError, ValueError):
        return True
    except (RecursionError, MemoryError):
        return False
    if isinstance(tree, ast.Module):  # a future import in exec'd code is that code's own
        tree.body = [
            stmt for stmt in tree.body
            if not (isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__")
        ]
    for node in ast.walk(tree):
        if isinstance(node, (ast.stmt, ast.expr, ast.excepthandler, ast.arg, ast.keyword)):
            node.lineno = node.end_lineno = call.lineno
            node.col_offset = node.end_col_offset = call.col_offset
    return tree


def _is_super_method(func: ast.expr) -> bool:
    """``super().m`` or ``super(C, self).m``."""
    return (
        isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name) and func.value.func.id == "super"
    )


def _is_namespace_call(node: ast.expr) -> bool:
    """``globals()``, ``vars()`` or ``locals()`` (a module's namespace, written through)."""
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        and node.func.id in ("globals", "vars", "locals") and not node.args
    )
