"""The import-time walker (docs/semantics.md rules 8-13): which statements run when a module is
imported, dispatch, and the flow state they run under; their expressions are the scanner's
(:mod:`.expressions`), what they bind the binder's (:mod:`.names`), and what it finds is kept by the
recorders of this package. :mod:`flake8_importpolicy.analysis.extract` is its public face."""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import (
    Callable,
    Iterator,
    Mapping,
    MutableSet,
    Sequence,
    Set,
)
from typing import Any, Final, Literal

from flake8_importpolicy.analysis.conditions import (
    UNKNOWN,
    Anchored,
    ConditionEvaluator,
    ModuleLoading,
    dotted_name,
    entry_point_selection,
    own_modules_loop,
)
from flake8_importpolicy.analysis.conditions import Literal as Container
from flake8_importpolicy.analysis.importtime.bindings import (
    NO_VALUE,
    BindingKind,
    Scope,
    ScopeKind,
    stored_names,
)
from flake8_importpolicy.analysis.importtime.calls import CallRecorder, decorator_name, single_aliases
from flake8_importpolicy.analysis.importtime.dynamic import DynamicRecorder
from flake8_importpolicy.analysis.importtime.environ import EnvironWrites
from flake8_importpolicy.analysis.importtime.expressions import ExpressionScanner, loop_items
from flake8_importpolicy.analysis.importtime.flow import Flow, Requirement
from flake8_importpolicy.analysis.importtime.lazy import LazyRecorder
from flake8_importpolicy.analysis.importtime.names import NameBinder
from flake8_importpolicy.analysis.importtime.sites import SiteRecorder, literal_strings
from flake8_importpolicy.model.facts import FunctionFacts, Target, distribution_entry, own_modules_anchor
from flake8_importpolicy.model.graph import BoundArgument, Construct, Flag

__all__ = ["Decision", "Pending", "Returns", "_ImportTimeVisitor", "analyse_function", "analyse_functions"]


_DATACLASS_DECORATORS: Final = frozenset({
    "dataclass", "dataclasses.dataclass", "pydantic.dataclasses.dataclass", "attr.s", "attr.define",
    "attrs.define", "attr.dataclass",
})
"""Class decorators that evaluate the class body's annotations when they run (PEP 649 defers them
otherwise from Python 3.14)."""

_OPTIONAL: Final = frozenset({Flag.CONDITIONAL, Flag.GUARDED, Flag.FALLBACK})
"""The flags of an import of an optional dependency (under a condition, in a ``try``, in a handler):
the code expects the package may be missing, so whether it is installed decides what follows. An
unflagged import of a missing package is reported (IPL006 ``not-installed``) and what follows it is
still followed: the user checks code meant for an environment that has it."""

_CPYTHON_TRUE_FLAGS: Final[dict[str, tuple[int, int]]] = {"ssl.HAS_SNI": (3, 10)}
"""Feature flags of standard-library modules that CPython sets true from a version on, whenever the
module imports: ``ssl.HAS_SNI`` since 3.10, which requires OpenSSL 1.1.1 (PEP 644), whose SNI
cannot be compiled out (``Modules/_ssl.c`` adds it as a constant 1)."""


Returns = Literal["always", "maybe", "never"]
"""Whether a statement returns from the function it is in (rule 16: what follows it may not run)."""
Pending = tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]
"""A function whose body is analysed as if it were called: its qualified name and its ``def``."""
Decision = tuple[frozenset[bool] | None, tuple[str, ...]]
"""How a test was decided: the outcomes it may have (None: not known) and the ``[assume]`` entries
that decided it."""


class _ImportTimeVisitor:
    """Walks the statements that run at import time (docs/semantics.md rules 8-13) under its flow
    state, handing their expressions to its scanner (:mod:`.expressions`), the names they bind to
    its binder (:mod:`.names`) and what it finds to its recorders (import sites, dynamic imports,
    calls, lazy objects), none of which calls back into it (but the scanner, for the statements of
    a constant ``exec`` string).

    Its 12 attributes: the target, the scope, the flow state, the condition evaluator, the four
    recorders, the binder, the scanner, the functions to analyse and the ``if`` decisions. A plain
    class, not a dataclass: one is made per module and per function body analysed, never compared
    or shown."""

    def __init__(
        self,
        target: Target,
        *,
        scope: Scope | None = None,
        declared_global: frozenset[str] = frozenset(),
        decorated: MutableSet[str] | None = None,
        function_name: str = "",
        future_annotations: bool = False,
        in_function: bool = False,
        lazy_lines: dict[int, int] | None = None,
        star_bases: list[str] | None = None,
        walrus: bool = True,
        source: bytes | None = None,
    ) -> None:
        self.target = target
        # what each name is bound to (module or function body); the flow keeps the innermost
        # scope names are bound in (a class body's, or that one)
        self.scope: Scope = Scope() if scope is None else scope
        self.flow = Flow(self.scope, in_function=in_function, function_name=function_name)
        # evaluates ``if``/``while`` tests (rules 10, 11, 13); it reads the very mappings this
        # visitor keeps binding names in
        self.conditions = ConditionEvaluator(self.target, self.scope.aliases, self.scope.constants)
        self.environ = EnvironWrites(self.flow, self.scope.aliases, self.conditions, target)
        self.imports = SiteRecorder(target, self.flow, lazy_lines)
        self.dynamic = DynamicRecorder(self.flow, self.imports, self.scope, self.conditions)
        self.callees = CallRecorder(
            self.flow, self.scope, self.imports, self.dynamic,
            decorated=decorated, star_bases=star_bases, source=source,
        )
        self.lazy = LazyRecorder(
            self.flow, self.scope, self.conditions, self.dynamic, self.callees.classes.names
        )
        self.binder = NameBinder(
            self.scope, self.flow, self.conditions, self.imports, self.callees, self.lazy,
            declared_global=declared_global, walrus=walrus,
        )
        self.expressions = ExpressionScanner(
            self, target, self.flow, self.scope, self.conditions, self.binder,
            self.imports, self.dynamic, self.callees, self.lazy,
            future_annotations=future_annotations,
        )
        self.pending: list[Pending] = []
        # ``if`` branches whose test was evaluated: id(branch) -> (outcome, [assume] entries used)
        self.decisions: dict[int, Decision] = {}

    # -- statements --------------------------------------------------------------------------------

    def visit_body(self, body: Sequence[ast.stmt], flags: frozenset[Flag]) -> None:
        flow = self.flow
        assumed, after = flow.assumed, flow.after
        for stmt in body:
            flow.line = stmt.lineno
            self.visit_stmt(stmt, flags)
            if (type(stmt) is ast.Import or type(stmt) is ast.ImportFrom) and flags & _OPTIONAL:
                # an optional dependency: what follows in this block runs only if the import did
                # not raise (rule 12)
                required = self._required_packages(stmt)
                if required:
                    flow.after = (*flow.after, *required)
            if type(stmt) is ast.Assert:
                outcome, used = self.conditions.decide(stmt.test)
                if outcome == _FALSE:
                    break  # AssertionError: nothing after it runs
                if used:
                    flow.assumed = (*flow.assumed, *used)
            # In a function body, what follows a statement that may return runs only if it did not
            # (and not at all after one that always returns, also in a conditional block).
            if flow.in_function and (Flag.CONDITIONAL not in flags or isinstance(stmt, ast.If)):
                returns, used = _returns(stmt, self.decisions)
                if returns == "always":
                    break
                if returns == "maybe":
                    flags = flags | {Flag.CONDITIONAL}
                elif used:  # an early return that an [assume] entry rules out
                    flow.assumed = (*flow.assumed, *used)
        flow.assumed, flow.after = assumed, after

    def _required_packages(self, stmt: ast.Import | ast.ImportFrom) -> tuple[str, ...]:
        """The top-level packages an eager absolute import statement needs: if path search does not
        find one, the statement raises ``ModuleNotFoundError`` and nothing after it in its block
        runs (rule 12). None for a relative import (its own package is found), ``__future__``, a
        PEP 810 lazy import and the imports PEP 810 may make lazy (they do not raise there)."""
        if self.target.lazy_imports == "all" or self.imports.lazy_col(stmt) is not None:
            return ()
        if isinstance(stmt, ast.ImportFrom):
            if stmt.level or not stmt.module or stmt.module == "__future__":
                return ()
            names = [stmt.module]
        else:
            names = [alias.name for alias in stmt.names]
        lazy = self.imports.lazy_modules
        return tuple(dict.fromkeys(name.partition(".")[0] for name in names if name not in lazy))

    def visit_stmt(self, stmt: ast.stmt, flags: frozenset[Flag]) -> None:
        # One dictionary lookup instead of a chain of isinstance tests (ast.parse makes nodes of
        # exactly these classes): a def in a class body was the eleventh test.
        _STATEMENT_VISITORS.get(type(stmt), _ImportTimeVisitor._other_statement)(self, stmt, flags)

    def _with(self, stmt: ast.With | ast.AsyncWith, flags: frozenset[Flag]) -> None:
        for item in stmt.items:
            self.expressions.scan(item.context_expr, flags)
            if isinstance(item.context_expr, ast.Call) and isinstance(stmt, ast.With):
                # ``with C():`` enters and exits the instance: ``C.__enter__``, ``C.__exit__``
                self.callees.add(item.context_expr, item.context_expr.func, "with", flags)
            if item.optional_vars is not None:
                self.expressions.bind_target(item.optional_vars, flags)
        self.visit_body(stmt.body, flags)

    def _other_statement(self, stmt: ast.stmt, flags: frozenset[Flag]) -> None:
        """Expr, Return, Raise, Assert, Global, Pass, TypeAlias (a lazy value), ..."""
        if type(stmt).__name__ == "TypeAlias":
            self.flow.names.mark_bound(getattr(getattr(stmt, "name", None), "id", ""))
            return
        if self.flow.in_function and isinstance(stmt, ast.Return):
            self.callees.returned(stmt.value)
        self.flow.raises += isinstance(stmt, ast.Raise)
        if not self.flow.in_function and isinstance(stmt, ast.Return):
            self.expressions.compile_error(stmt, "'return' outside function")
        if type(stmt) is ast.Expr and type(stmt.value) is ast.Call:
            _statement_call(self, stmt.value, flags)
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.expr):
                self.expressions.scan(child, flags)

    def _import(self, stmt: ast.Import, flags: frozenset[Flag]) -> None:
        lazy_col = self.imports.lazy_col(stmt)
        for alias in stmt.names:
            bound = alias.asname or alias.name.split(".", 1)[0]
            self.imports.add(stmt, "import", alias.name, flags, col=lazy_col,
                             lazy_names=(bound,) if lazy_col is not None else None)
            if alias.asname:
                self.binder.bind(alias.asname, alias.name, BindingKind.IMPORT)
            else:
                self.binder.bind(bound, bound, BindingKind.IMPORT)

    def _import_from(self, stmt: ast.ImportFrom, flags: frozenset[Flag]) -> None:
        module = stmt.module or ""
        if module == "__future__" and stmt.level == 0:
            if any(alias.name == "annotations" for alias in stmt.names):
                self.expressions.future_annotations = True
            return
        names = tuple(alias.name for alias in stmt.names)
        if names == ("*",):
            self.imports.add(stmt, "star-import", module, flags, level=stmt.level)
            if self.flow.module_level():
                # Names it binds are looked up for calls; constants bound before it keep their
                # value (it rebinds them only in the rare module that exports the same name).
                self.callees.star_bases.append("." * stmt.level + module)
            return
        lazy_col = self.imports.lazy_col(stmt)
        bound = tuple(alias.asname or alias.name for alias in stmt.names)
        self.imports.add(stmt, "from-import", module, flags, level=stmt.level, names=names,
                         col=lazy_col, lazy_names=bound if lazy_col is not None else None)
        prefix = "." * stmt.level + (f"{module}." if module else "")
        for alias in stmt.names:
            self.binder.bind(alias.asname or alias.name, prefix + alias.name, BindingKind.IMPORT)
            if (alias.asname or alias.name) == "__getattr__" and self.flow.module_level():
                # a PEP 562 hook from elsewhere
                self.dynamic.unresolved(stmt, Construct.GETATTR_IMPORT, flags)

    def _if(self, stmt: ast.If, flags: frozenset[Flag]) -> None:
        """An ``if`` and its ``elif`` chain, walked in a loop (a chain of hundreds of branches must
        not recurse once per branch). After a test that cannot be evaluated, everything that
        follows in the chain is conditional."""
        branch: ast.If | None = stmt
        assumed = self.flow.assumed
        when = self.flow.when
        try:
            self._if_chain(branch, flags, assumed)
        finally:
            self.flow.when = when

    def _if_chain(self, branch: ast.If | None, flags: frozenset[Flag], assumed: tuple[str, ...]) -> None:
        """:meth:`_if`'s loop. A test undecided only by the truth of a name another module binds
        (``if TYPE_CHECKING or SLOW:`` after ``from .utils import SLOW``) adds that name to the
        ``when`` of what its branch runs, and its opposite to the rest of the chain's: the graph
        decides it from the defining module (docs/semantics.md rule 13)."""
        while branch is not None:
            self.expressions.scan(branch.test, flags)
            self.binder.bind_walrus(branch.test)
            guard = _guard_of(self, branch.test) if self.flow.requirement is None else None
            if guard is not None:
                self.flow.requirement = guard
                _branch(self, branch.body, flags)
                self.flow.requirement = (guard[0], not guard[1])
                _branch(self, branch.orelse, flags)
                self.flow.requirement = None
                return
            outcome, used = self.conditions.decide(branch.test)
            self.decisions[id(branch)] = (outcome, used)
            if outcome is None:
                flags = flags | {Flag.CONDITIONAL}
            if used:  # this branch, and what the chain runs instead, depend on the entries
                self.flow.assumed = (*self.flow.assumed, *used)
            imported = self.conditions.imported_truth(branch.test) if outcome is None else None
            if outcome is None or True in outcome:
                loaded, when = self.flow.loaded, self.flow.when
                if outcome is None:  # ``if "sphinx" in sys.modules:`` runs only after sphinx
                    self.flow.loaded = (*loaded, *_modules_tested_loaded(self, branch.test))
                if imported is not None:
                    self.flow.when = (*when, imported)
                _branch(self, branch.body, flags)
                self.flow.loaded, self.flow.when = loaded, when
            if imported is not None:  # the rest of the chain runs only if the name is the opposite
                self.flow.when = (*self.flow.when, (imported[0], not imported[1]))
            if outcome is not None and False not in outcome:
                self.flow.assumed = assumed
                return
            orelse = branch.orelse
            branch = orelse[0] if len(orelse) == 1 and isinstance(orelse[0], ast.If) else None
            if branch is None:
                _branch(self, orelse, flags)
            else:
                self.flow.line = branch.lineno
        self.flow.assumed = assumed

    def _try(self, stmt: ast.stmt, flags: frozenset[Flag]) -> None:
        """The body is guarded, handlers are fallbacks, ``else`` conditional after a ``raise`` in
        the body. A ``try`` of imports only (and constant assignments) with an ``except ImportError``
        handler: the handler runs only if one of the modules is missing, and a name the body and the
        handler bind to opposite constants says which ran (``HAS_X``); rule 12."""
        body = getattr(stmt, "body")
        handlers = getattr(stmt, "handlers")
        targets = _try_import_targets(body) if self.flow.requirement is None else None
        versions = _try_version_targets(self, body) if targets is None and self.flow.requirement \
            is None else None
        raises = _raises(self, body, flags | {Flag.GUARDED})
        then = _constant_bindings(body)
        modules = {  # names bound to modules (``import x``; a from-import binds a value)
            alias.asname or alias.name.partition(".")[0]
            for stmt in body if isinstance(stmt, ast.Import) for alias in stmt.names
        }
        for handler in handlers:
            if handler.type is not None:
                self.expressions.scan(handler.type, flags)
            guarded = targets is not None and _catches_import_error(handler.type, self.scope.aliases)
            if guarded:
                self.flow.requirement = (targets or (), False)
            elif versions and _catches_import_error(handler.type, self.scope.aliases, _NOT_FOUND):
                self.flow.requirement = (versions, False)
            imported = self.scope.imports_among(stored_names(handler.body))
            _branch(self, handler.body, flags | {Flag.FALLBACK})
            self.flow.requirement = None
            for name, binding in imported.items():  # ``np = None``: np may still be the import
                self.scope.keep_import(name, binding)
            if guarded and targets:
                handler_constants = _constant_bindings(handler.body)
                for name, value in handler_constants.items():
                    if name in then and bool(then[name]) != bool(value):
                        self.scope.set_guard(name, (targets, bool(then[name])))
                for name in imported:  # ``ssl = None``: ssl is true (a module) only if it imported
                    if name in modules and name in handler_constants and not handler_constants[name]:
                        self.scope.set_guard(name, (targets, True))
        _branch(self, getattr(stmt, "orelse"), flags | {Flag.CONDITIONAL} if raises else flags)
        _branch(self, getattr(stmt, "finalbody"), flags)

    def _class(self, stmt: ast.ClassDef, flags: frozenset[Flag]) -> None:
        for decorator in stmt.decorator_list:
            self.expressions.decorator(decorator, flags)
        for base in stmt.bases:
            self.expressions.scan(base, flags)
            self.callees.add(base, base, "subclass", flags)
        for keyword in stmt.keywords:
            self.expressions.scan(keyword.value, flags)
            if keyword.arg == "metaclass":
                self.callees.add(keyword.value, keyword.value, "metaclass", flags)
        # A class body runs when the class statement runs; its names bind in the class namespace.
        qualname = self.flow.scoped_name(stmt.name)
        self.callees.classes.names.add(qualname)
        if self.flow.in_function and not self.flow.class_depth:
            self.callees.nested_defs[stmt.name] = qualname
        if not self.flow.in_function:
            bases = (self.callees.base_name(base) for base in stmt.bases)
            self.callees.classes.bases[qualname] = tuple(base for base in bases if base is not None)
        saved, saved_defs = self.flow.names, self.callees.class_defs
        self.flow.names, self.callees.class_defs = Scope(ScopeKind.CLASS), set()
        self.flow.class_depth += 1
        self.flow.class_path.append(stmt.name)
        dataclass = any(
            decorator_name(d, self.scope.aliases) in _DATACLASS_DECORATORS for d in stmt.decorator_list
        )
        saved_dataclass = self.flow.dataclass_depth
        self.flow.dataclass_depth = 1 if dataclass else 0  # a nested class has decorators of its own
        self.visit_body(stmt.body, flags)
        self.flow.dataclass_depth = saved_dataclass
        self.flow.class_path.pop()
        self.flow.class_depth -= 1
        self.flow.names, self.callees.class_defs = saved, saved_defs
        self.binder.bind(stmt.name, None, BindingKind.CLASS)

    def _function(self, stmt: ast.FunctionDef | ast.AsyncFunctionDef, flags: frozenset[Flag]) -> None:
        args = stmt.args
        for decorator in stmt.decorator_list:
            self.expressions.decorator(decorator, flags)
        for expr in [*args.defaults, *(d for d in args.kw_defaults if d)]:
            self.expressions.scan(expr, flags)
        if self.expressions.annotations_evaluated():
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            for arg in every:
                if arg is not None and arg.annotation is not None:
                    self.expressions.scan(arg.annotation, flags)
            if stmt.returns is not None:
                self.expressions.scan(stmt.returns, flags)
        self.pending.append((self.flow.scoped_name(stmt.name), stmt))
        self.binder.bind(stmt.name, None, BindingKind.DEF)
        self.callees.record_def(stmt)
        if stmt.name == "__getattr__" and self.flow.module_level():
            self.lazy.defines_getattr = True

    def _assign(self, stmt: ast.Assign | ast.AnnAssign | ast.AugAssign, flags: frozenset[Flag]) -> None:
        if stmt.value is not None:
            self.expressions.scan(stmt.value, flags)
            if self.flow.in_function and isinstance(stmt.value, ast.Call):
                bound = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                self.lazy.function_call(bound, stmt.value)
            if self.flow.class_depth and isinstance(stmt.value, ast.Call):
                self.callees.add(stmt.value, stmt.value.func, "class-attribute", flags)
        if (
            isinstance(stmt, ast.AnnAssign)
            and (not self.flow.in_function or self.flow.class_depth > 0)
            and self.expressions.annotations_evaluated(class_body=self.flow.class_depth > 0)
        ):
            self.expressions.scan(stmt.annotation, flags)
        targets: list[ast.expr] = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if isinstance(stmt, ast.AnnAssign) and stmt.value is None:
            return  # ``x: int`` binds nothing
        self.environ.assigned(stmt, flags)  # ``os.environ["X"] = "1"``
        ever_bound = self.scope.ever_bound
        fresh = not any(
            isinstance(name, ast.Name) and name.id in ever_bound
            for t in targets for name in (t.elts if isinstance(t, ast.Tuple) else [t])
        )
        grown = self.binder.value_before(stmt)  # ``NAMES += ("x",)`` grows NAMES' value
        normalised = _normalised_constant(self, stmt, flags) if not fresh else UNKNOWN
        self.expressions.assign_targets(
            targets, flags, None if isinstance(stmt, ast.AugAssign) else stmt.value
        )
        if normalised is not UNKNOWN:
            assert isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)
            self.scope.set_value(stmt.targets[0].id, normalised)
        self.dynamic.assigned(targets, stmt.value, flags)
        if self.flow.in_function and isinstance(stmt, ast.Assign):
            self.lazy.record_self_parameter(targets, stmt.value)
            if not self.flow.class_depth:
                self.callees.bind_instance(stmt)
        if self.flow.in_function and not self.flow.class_depth:
            # ``module = _LAZY.get(name)`` in a __getattr__ run for one name (rule 15)
            self.binder.record_constant(stmt, fresh)
            self.binder.record_growth(stmt, grown, flags)
        if self.flow.module_level():
            self.imports.record_all(stmt, flags)
            augmented = isinstance(stmt, ast.AugAssign)
            self.callees.bind_value(targets, None if augmented else stmt.value, self.conditions)
            self.binder.record_constant(stmt, fresh)
            self.binder.record_growth(stmt, grown, flags)
            self.lazy.structures.assigned(stmt, flags)  # ``_import_structure[k] = [...]``
            if any(isinstance(t, ast.Name) and t.id == "__lazy_modules__" for t in targets):
                self.imports.lazy_modules = literal_strings(stmt.value) or []
            if isinstance(stmt.value, ast.Call):
                self.lazy.module_call(targets, stmt.value)
            elif isinstance(stmt.value, ast.Name):
                self.lazy.module_replaced(targets, stmt.value)
            # last: it keeps the binding the statements above made (``f = partial(g)`` is a call's)
            self.callees.assigned(stmt, flags)  # ``jit_fuser = torch.compile``

    def _delete(self, stmt: ast.Delete, flags: frozenset[Flag]) -> None:
        """``del name`` at module level unbinds ``name``: a later ``from module import name`` imports
        the submodule again (rule 2). A ``del`` that may not run (conditional, in an ``except``
        handler) leaves the name bound, as a binding that may not run counts as one."""
        for target in stmt.targets:
            self.expressions.scan(target, flags)
            self.environ.deleted(target, flags)  # ``del os.environ["X"]``
            if self.flow.module_level():
                self.lazy.structures.deleted(target)
        if not self.flow.module_level() or Flag.CONDITIONAL in flags or Flag.FALLBACK in flags:
            return
        self.binder.unbind(stmt.targets)


def _match(walker: _ImportTimeVisitor, stmt: ast.Match, flags: frozenset[Flag]) -> None:
    """Every case may run (conditional). Capture patterns bind names (``case sub:``,
    ``case [x, *rest]``, ``case {**rest}``, ``case _ as y``); like any binding that may not run,
    they count as bindings. Value patterns (``case mod.X:``), class patterns' classes and
    keys, and guards are evaluated while cases are tried (Language reference 8.6.4), so they
    are scanned, flagged conditional."""
    walker.expressions.scan(stmt.subject, flags)
    tried = flags | {Flag.CONDITIONAL}
    for case in stmt.cases:
        for node in ast.walk(case.pattern):
            if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name is not None:
                walker.binder.bind(node.name, None)
            elif isinstance(node, ast.MatchMapping) and node.rest is not None:
                walker.binder.bind(node.rest, None)
            if isinstance(node, ast.MatchValue):
                walker.expressions.scan(node.value, tried)
            elif isinstance(node, ast.MatchClass):
                walker.expressions.scan(node.cls, tried)
            elif isinstance(node, ast.MatchMapping):
                for key in node.keys:
                    walker.expressions.scan(key, tried)
        if case.guard is not None:
            walker.expressions.scan(case.guard, tried)
        _branch(walker, case.body, tried)


def _for(walker: _ImportTimeVisitor, stmt: ast.For | ast.AsyncFor, flags: frozenset[Flag]) -> None:
    """The body runs only over a non-empty iterable: conditional unless the iterable is a
    non-empty literal or ``range``. The ``else`` runs unless a ``break`` ends the loop. Over a
    constant sequence (a literal, or a name bound to one) with a simple target (or a tuple of
    names, each item a tuple of as many), the body is walked once per item, the loop variables
    bound to it (``for p in ("a", "b"): __import__(p)``, rule 14); over a group of installed
    entry points, once, the variable standing for each of them."""
    walker.expressions.scan(stmt.iter, flags)
    items, maybe = loop_items(walker.conditions, stmt.iter)
    names = _loop_names(stmt.target, items)
    if items is not None and names is not None and not isinstance(stmt, ast.AsyncFor):
        body_flags = flags if items else flags | {Flag.CONDITIONAL}
        always_breaks = any(isinstance(inner, ast.Break) for inner in stmt.body)
        may_break = _breaks(stmt.body)
        for number, item in enumerate(items):
            walker.expressions.bind_target(stmt.target)
            values = item if isinstance(stmt.target, ast.Tuple) else (item,)
            assert isinstance(values, tuple)
            for name, value in zip(names, values):
                walker.scope.set_value(name, value)
            # after a ``break`` that may have ended the loop, later items may not run
            # a Grown name's item that only some paths added may not be there
            later = (number and may_break) or number in maybe
            _branch(walker, stmt.body, body_flags | {Flag.CONDITIONAL} if later else body_flags)
            if always_breaks:
                break
        walker.expressions.bind_target(stmt.target)
        for name in names:
            walker.scope.set_value(name, NO_VALUE)
        _branch(walker, stmt.orelse, (flags | {Flag.CONDITIONAL}) if _breaks(stmt.body) else flags)
        return
    point = entry_point_selection(stmt.iter, walker.scope.aliases, walker.conditions)
    if point is not None and isinstance(stmt.target, ast.Name) and not isinstance(stmt, ast.AsyncFor):
        # the installed entry points of a group: the body is walked once, its variable one of
        # them (which, and whether any, is the interpreter's to say: the body stays conditional)
        walker.expressions.bind_target(stmt.target)
        walker.scope.set_value(stmt.target.id, point)
        _branch(walker, stmt.body, flags | {Flag.CONDITIONAL})
        walker.expressions.bind_target(stmt.target)
        walker.scope.set_value(stmt.target.id, NO_VALUE)
        _branch(walker, stmt.orelse, (flags | {Flag.CONDITIONAL}) if _breaks(stmt.body) else flags)
        return
    own = own_modules_loop(stmt.iter, stmt.target, walker.scope.aliases, walker.conditions)
    if own is not None and not isinstance(stmt, ast.AsyncFor):
        # the modules in the package's own directory: the body is walked for the subpackages,
        # then for the plain modules, ``ispkg`` known in each walk (which exist, the graph says)
        for packages in (True, False):
            walker.expressions.bind_target(stmt.target)
            values = (ModuleLoading("", "finder"), Anchored(own_modules_anchor(packages), ""), packages)
            for name, value in zip(own, values):
                walker.scope.set_value(name, value)
            _branch(walker, _until_continue(walker, stmt.body, own), flags | {Flag.CONDITIONAL})
        walker.expressions.bind_target(stmt.target)
        for name in own:
            walker.scope.set_value(name, NO_VALUE)
        _branch(walker, stmt.orelse, (flags | {Flag.CONDITIONAL}) if _breaks(stmt.body) else flags)
        return
    body_flags = flags if _non_empty(stmt.iter) else flags | {Flag.CONDITIONAL}
    walker.expressions.bind_target(stmt.target, body_flags)
    # ``for n in dir(mod):``: ``n`` is each name ``dir`` lists (a module's ``__dir__``'s, PEP 562)
    listed = stmt.target.id if isinstance(stmt.target, ast.Name) and isinstance(
        stmt.iter, ast.Call
    ) and dotted_name(stmt.iter.func, walker.scope.aliases) in ("dir", "builtins.dir") else None
    if listed is not None:
        walker.lazy.dir_names.add(listed)
    _branch(walker, stmt.body, body_flags)
    if listed is not None:
        walker.lazy.dir_names.discard(listed)
    _branch(walker, stmt.orelse, (flags | {Flag.CONDITIONAL}) if _breaks(stmt.body) else flags)


def _until_continue(
    walker: _ImportTimeVisitor, body: list[ast.stmt], variables: Sequence[str]
) -> list[ast.stmt]:
    """The statements of a loop body up to an ``if`` whose body is ``continue`` and whose test,
    of the loop's ``variables`` alone (as bound now), is known true: what follows it does not
    run for this item (``if not ispkg: continue``)."""
    for number, stmt in enumerate(body):
        if (
            isinstance(stmt, ast.If) and len(stmt.body) == 1 and isinstance(stmt.body[0], ast.Continue)
            and all(
                node.id in variables for node in ast.walk(stmt.test) if isinstance(node, ast.Name)
            )
            and walker.conditions.evaluate(stmt.test) == _TRUE
        ):
            return body[:number]
    return body


def _while(walker: _ImportTimeVisitor, stmt: ast.While, flags: frozenset[Flag]) -> None:
    """The body is conditional unless the test is known; the ``else`` runs unless a ``break``
    ends the loop."""
    walker.expressions.scan(stmt.test, flags)
    walker.binder.bind_walrus(stmt.test)
    outcome, used = walker.conditions.decide(stmt.test)
    runs = outcome is None or True in outcome
    if runs:
        assumed = walker.flow.assumed
        walker.flow.assumed = (*assumed, *used)
        _branch(walker, stmt.body, flags if outcome is not None else flags | {Flag.CONDITIONAL})
        walker.flow.assumed = assumed
    breaks = runs and _breaks(stmt.body)
    _branch(walker, stmt.orelse, (flags | {Flag.CONDITIONAL}) if breaks else flags)


def _modules_tested_loaded(walker: _ImportTimeVisitor, test: ast.expr) -> tuple[str, ...]:
    """The modules that ``test`` being true needs imported already: ``"X" in sys.modules``
    (a constant string), alone or as an operand of ``and`` (rule 13)."""
    operands = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) \
        else [test]
    names: list[str] = []
    for operand in operands:
        if (
            isinstance(operand, ast.Compare)
            and len(operand.ops) == 1
            and isinstance(operand.ops[0], ast.In)
            and isinstance(operand.left, ast.Constant)
            and isinstance(operand.left.value, str)
            and operand.left.value
            and dotted_name(operand.comparators[0], walker.scope.aliases) == "sys.modules"
        ):
            names.append(operand.left.value)
    return tuple(names)


def _flag_guard(walker: _ImportTimeVisitor, test: ast.Call) -> Requirement | None:
    """The guard of ``getattr(ssl, "HAS_SNI", False)`` with ``ssl`` an import guard (``except
    ImportError: ssl = None``) and ``ssl.HAS_SNI`` a flag every target version's CPython sets
    true (:data:`_CPYTHON_TRUE_FLAGS`): true exactly when the module imported (rule 12)."""
    if (
        dotted_name(test.func, walker.scope.aliases) != "getattr"
        or len(test.args) != 3
        or test.keywords
        or not isinstance(test.args[0], ast.Name)
        or not isinstance(test.args[1], ast.Constant)
        or not isinstance(test.args[1].value, str)
        or not isinstance(test.args[2], ast.Constant)
        or test.args[2].value
    ):
        return None
    guard = walker.scope.guard(test.args[0].id)
    binding = walker.scope.lookup(test.args[0].id)
    if guard is None or binding is None or binding.refers_to is None or not guard[1]:
        return None
    since = _CPYTHON_TRUE_FLAGS.get(f"{binding.refers_to}.{test.args[1].value}")
    if since is None or any(version < since for version in walker.target.versions):
        return None
    return guard


def _guard_of(walker: _ImportTimeVisitor, test: ast.expr) -> Requirement | None:
    """``(modules, whether they must be found)`` for the body of ``if HAS_X:`` / ``if not
    HAS_X:`` with ``HAS_X`` an import guard, else None."""
    negated = False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, not negated
    guard = walker.scope.guard(test.id) if isinstance(test, ast.Name) else None
    if guard is None and isinstance(test, ast.Call):
        guard = _flag_guard(walker, test)
    if guard is None:
        return None
    targets, truth_if_found = guard
    return targets, truth_if_found != negated


def _statement_call(walker: _ImportTimeVisitor, call: ast.Call, flags: frozenset[Flag]) -> None:
    """A call that is a statement of its own: a write to ``os.environ`` (``.setdefault("X", "1")``),
    or at module level a change of an import structure (``_import_structure[k].extend(...)``)."""
    walker.environ.called(call, flags)
    if walker.flow.module_level():
        walker.lazy.structures.called(call, flags)


def _raises(walker: _ImportTimeVisitor, body: Sequence[ast.stmt], flags: frozenset[Flag]) -> bool:
    """Walk a ``try`` body; whether it reached a ``raise`` (then its ``else`` may not run)."""
    before = walker.flow.raises
    _branch(walker, body, flags)
    return walker.flow.raises != before


def _normalised_constant(
    walker: _ImportTimeVisitor, stmt: ast.Assign | ast.AnnAssign | ast.AugAssign, flags: frozenset[Flag]
) -> object:
    """The value of a module-level constant rebound, on every path, to a constant computed from
    its own value (``SLOW = os.environ.get("SLOW", "0").upper()`` then ``SLOW = SLOW in
    TRUE_VALUES``, diffusers' ``DIFFUSERS_SLOW_IMPORT``), or UNKNOWN: any other rebinding forgets
    the value (a name bound once is the constant, :meth:`NameBinder.record_constant`)."""
    if (
        flags
        or not walker.flow.module_level()
        or not isinstance(stmt, ast.Assign)
        or len(stmt.targets) != 1
        or not isinstance(stmt.targets[0], ast.Name)
    ):
        return UNKNOWN
    name = stmt.targets[0].id
    if name not in walker.scope.constants or walker.binder.may_be_rebound(name, stmt.lineno):
        return UNKNOWN
    if not any(isinstance(node, ast.Name) and node.id == name for node in ast.walk(stmt.value)):
        return UNKNOWN
    value = walker.conditions.literal(stmt.value)
    return UNKNOWN if isinstance(value, Container) else value


def _branch(walker: _ImportTimeVisitor, body: Sequence[ast.stmt], flags: frozenset[Flag]) -> None:
    """Walk a branch's body (of an ``if``, ``try``, loop or ``match``) in a branch overlay of the
    scopes it binds names in: its writes are merged back, in order, when it ends (bindings.py), so
    the names end bound as by the last write. Outside the walker's class, which is big enough."""
    if not body:
        return
    scope, names = walker.scope, walker.flow.names
    with scope.branch():
        if names is scope:
            walker.visit_body(body, flags)
        else:
            with names.branch():
                walker.visit_body(body, flags)


def analyse_functions(walker: _ImportTimeVisitor) -> dict[str, FunctionFacts]:
    """Analyse every function recorded so far as if it were called (docs/semantics.md rule 16).

    A body sees the module's final import aliases, minus its own parameters and local bindings.
    Nested functions are analysed too (two levels deep), under ``outer.<locals>.inner``. Each
    body gets copy-on-write views of the module's names, so the cost is linear in the module.
    """
    out: dict[str, FunctionFacts] = {}
    queue = deque(walker.pending)
    while queue:
        qualname, node = queue.popleft()
        out[qualname], nested = analyse_function(walker, qualname, node)
        queue.extend(nested)
    return out


def analyse_function(
    walker: _ImportTimeVisitor,
    qualname: str,
    node: ast.FunctionDef | ast.AsyncFunctionDef,
    argument: BoundArgument = None,
) -> tuple[FunctionFacts, list[Pending]]:
    """One function body, as :func:`analyse_functions` sees it: its facts, and the nested
    functions to analyse next (none beyond two levels of ``<locals>``). With ``argument``, the
    first parameter is a constant of that value in the body (with a tuple, each positional
    parameter that has a string)."""
    child = _ImportTimeVisitor(
        walker.target,
        scope=walker.scope.child(),
        in_function=True,
        function_name=qualname,
        future_annotations=walker.expressions.future_annotations,
        star_bases=walker.callees.star_bases,
        walrus=walker.binder.walrus,
        decorated=_SetOverlay(walker.callees.decorated),
    )
    args = node.args
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if arg is not None:
            child.binder.bind(arg.arg, None)
    positional = [*args.posonlyargs, *args.args]
    bound = (argument,) if isinstance(argument, str) else argument or ()
    for parameter, value in zip(positional, bound):
        if value is not None:
            child.scope.set_value(parameter.arg, value)
    names = [arg.arg for arg in positional]
    method = child.lazy.method
    method.parameters = tuple(names[1:] if names[:1] == ["self"] else names)
    child.callees.local_aliases = single_aliases(node)
    # the module's variables as the body sees them (its own bindings shadow them)
    child.callees.own_defs.variables = walker.callees.module_variables()
    child.visit_body(node.body, frozenset())
    nested = {name.rsplit(".", 1)[-1] for name, _ in child.pending}
    facts = FunctionFacts(
        line=node.lineno,
        sites=tuple(child.imports.sites),
        calls=tuple(child.callees.calls),
        # A factory that returns ``functools.partial(itself, ...)`` when it is not given the function
        # (``@dis(recursive=False)``, torch's ``_disable_dynamo``): what ``@dis(...)`` calls is that
        # partial, which calls the factory again with the function, and that call returns its
        # closure without calling it; so no returned closure runs at decoration time.
        returns=child.callees.returns.closures(nested),
        attribute_reads=tuple(child.lazy.attribute_reads),
        self_imports=tuple(dict.fromkeys(child.dynamic.self_imports)),
        self_calls=tuple(dict.fromkeys(method.self_calls)),
        self_params=tuple(dict.fromkeys(method.self_params)),
        lazy_params=(
            tuple(dict.fromkeys(method.lazy_candidates)) if method.mentions_lazy_loader else ()
        ),
        unresolved=tuple(child.dynamic.unresolved_sites),
    )
    return facts, child.pending if qualname.count("<locals>") < 2 else []


_StatementVisitor = Callable[[_ImportTimeVisitor, Any, frozenset[Flag]], None]

_STATEMENT_VISITORS: Final[dict[type[ast.stmt], _StatementVisitor]] = {
    ast.Import: _ImportTimeVisitor._import,
    ast.ImportFrom: _ImportTimeVisitor._import_from,
    ast.If: _ImportTimeVisitor._if,
    ast.Try: _ImportTimeVisitor._try,
    ast.With: _ImportTimeVisitor._with,
    ast.AsyncWith: _ImportTimeVisitor._with,
    ast.For: _for,
    ast.AsyncFor: _for,
    ast.While: _while,
    ast.Match: _match,
    ast.ClassDef: _ImportTimeVisitor._class,
    ast.FunctionDef: _ImportTimeVisitor._function,
    ast.AsyncFunctionDef: _ImportTimeVisitor._function,
    ast.Assign: _ImportTimeVisitor._assign,
    ast.AnnAssign: _ImportTimeVisitor._assign,
    ast.AugAssign: _ImportTimeVisitor._assign,
    ast.Delete: _ImportTimeVisitor._delete,
    **({ast.TryStar: _ImportTimeVisitor._try} if hasattr(ast, "TryStar") else {}),
}
"""How :meth:`_ImportTimeVisitor.visit_stmt` visits each class of statement; any other (``Expr``,
``Return``, ``Raise``, ``Assert``, ``Global``, ``Pass``, ``TypeAlias``) by ``_other_statement``."""


def _returns(stmt: ast.stmt, decisions: Mapping[int, Decision]) -> tuple[Returns, tuple[str, ...]]:
    """Whether ``stmt`` returns from the function it is in: ``"always"``, ``"maybe"`` or
    ``"never"``, with the ``[assume]`` entries that decided an ``if`` chain's tests (an early
    return whose guard is known: ``if current_platform.is_rocm(): return``)."""
    if not isinstance(stmt, ast.If):
        return ("maybe" if _may_return(stmt) else "never"), ()
    used: list[str] = []
    branch: ast.If | None = stmt
    while branch is not None:
        outcome, decided_by = decisions.get(id(branch), (None, ()))
        if outcome is None or outcome == _BOTH:
            return ("maybe" if _may_return(branch) else "never"), ()
        used.extend(decided_by)
        if outcome == _TRUE:
            return _block_returns(branch.body), tuple(dict.fromkeys(used))
        orelse = branch.orelse
        if len(orelse) == 1 and isinstance(orelse[0], ast.If):
            branch = orelse[0]
        else:
            return _block_returns(orelse), tuple(dict.fromkeys(used))
    return "never", ()


def _try_import_targets(body: Sequence[ast.stmt]) -> tuple[str, ...] | None:
    """The modules a ``try`` body imports (relative ones with their leading dots; a from-import as
    ``module:name,...``), when it does nothing else that may raise (imports, constant assignments,
    ``pass``); else None."""
    targets: list[str] = []
    for stmt in body:
        if isinstance(stmt, ast.Import):
            targets.extend(alias.name for alias in stmt.names)
        elif isinstance(stmt, ast.ImportFrom):
            if not stmt.module:
                return None  # ``from . import x``: x may be a submodule or a name
            names = ",".join(alias.name for alias in stmt.names if alias.name != "*")
            # ``module:name,...``: the names must exist too (``from warnings import deprecated``)
            targets.append("." * stmt.level + stmt.module + (f":{names}" if names else ""))
        elif isinstance(stmt, ast.Assign | ast.AnnAssign) and isinstance(stmt.value, ast.Constant):
            continue
        elif isinstance(stmt, ast.Pass) or (
            isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        ):
            continue
        else:
            return None
    return tuple(targets) or None


def _constant_bindings(body: Sequence[ast.stmt]) -> dict[str, object]:
    """``{name: value}`` of the ``NAME = <constant>`` statements directly in ``body``."""
    found: dict[str, object] = {}
    for stmt in body:
        if (
            isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Constant)
        ):
            found[stmt.targets[0].id] = stmt.value.value
    return found


def _catches_import_error(
    handler_type: ast.expr | None, aliases: Mapping[str, str], errors: frozenset[str] | None = None
) -> bool:
    """Whether an ``except`` clause names ``ImportError`` or ``ModuleNotFoundError`` (or one of
    ``errors``)."""
    if handler_type is None:
        return False
    kinds = handler_type.elts if isinstance(handler_type, ast.Tuple) else [handler_type]
    return any(dotted_name(kind, aliases) in (errors or _IMPORT_ERRORS) for kind in kinds)


def _try_version_targets(walker: _ImportTimeVisitor, body: Sequence[ast.stmt]) -> tuple[str, ...] | None:
    """The :func:`~flake8_importpolicy.model.facts.distribution_entry` of each distribution a
    ``try`` body looks up, when it does nothing else that may raise: assignments of constants and
    of ``importlib.metadata.version("x")`` (``distribution``, ``metadata``; the backport too) of
    a known name. Such a call raises ``PackageNotFoundError`` exactly when no installed
    distribution has that name (``Distribution.from_name``; transformers'
    ``_is_package_available``); else None."""
    found: list[str] = []
    for stmt in body:
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Expr)) else None
        if isinstance(stmt, ast.Pass) or isinstance(value, ast.Constant):
            continue
        if not (
            isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords
            and dotted_name(value.func, walker.scope.aliases) in _DISTRIBUTION_LOOKUPS
        ):
            return None
        name = walker.conditions.constant(value.args[0])
        if not isinstance(name, str) or not name:
            return None
        found.append(distribution_entry(name))
    return tuple(found) or None


_DISTRIBUTION_LOOKUPS: Final = frozenset(
    f"{module}.{function}" for module in ("importlib.metadata", "importlib_metadata")
    for function in ("version", "distribution", "metadata")
)
_NOT_FOUND: Final = frozenset({
    "importlib.metadata.PackageNotFoundError", "importlib_metadata.PackageNotFoundError",
    "ImportError", "ModuleNotFoundError", "builtins.ImportError", "builtins.ModuleNotFoundError",
})
"""What catches ``PackageNotFoundError`` (a ``ModuleNotFoundError``)."""


_IMPORT_ERRORS: Final = frozenset({
    "ImportError", "ModuleNotFoundError", "builtins.ImportError", "builtins.ModuleNotFoundError",
})


class _SetOverlay(MutableSet[str]):
    """A copy-on-write view of a shared set: reads fall through to ``base`` (never modified),
    additions and removals stay in the view. A function body's view of the module's names."""

    __slots__ = ("_base", "_added", "_removed")

    def __init__(self, base: Set[str]) -> None:
        self._base = base
        self._added: set[str] = set()
        self._removed: set[str] = set()

    def __contains__(self, key: object) -> bool:
        return key in self._added or (key in self._base and key not in self._removed)

    def __iter__(self) -> Iterator[str]:
        yield from self._added
        yield from (k for k in self._base if k not in self._added and k not in self._removed)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def add(self, value: str) -> None:
        self._added.add(value)
        self._removed.discard(value)

    def discard(self, value: str) -> None:
        self._added.discard(value)
        self._removed.add(value)


def _loop_names(target: ast.expr, items: list[object] | None) -> list[str] | None:
    """The names a loop over constant ``items`` binds each item to: its variable, or the names of
    a tuple target when every item is a tuple of as many (``for name, version in [("a", "1"),
    ...]``); None for another target, or a tuple target over no constant item."""
    if isinstance(target, ast.Name):
        return [target.id]
    if not isinstance(target, ast.Tuple) or not items:
        return None  # none: a container filled after its binding (``d = {}``, ``d[k] = v``) may hold some
    names = [elt.id for elt in target.elts if isinstance(elt, ast.Name)]
    if len(names) != len(target.elts):
        return None
    if not all(isinstance(item, tuple) and len(item) == len(names) for item in items):
        return None
    return names


def _non_empty(iterable: ast.expr) -> bool:
    """True if ``iterable`` is certainly not empty: a literal with an element, a non-empty string,
    or ``range(...)`` of literal integers that is not empty."""
    if isinstance(iterable, (ast.Tuple, ast.List, ast.Set)):
        return any(not isinstance(element, ast.Starred) for element in iterable.elts)
    if isinstance(iterable, ast.Dict):
        return any(key is not None for key in iterable.keys)
    if isinstance(iterable, ast.Constant):
        return isinstance(iterable.value, (str, bytes)) and bool(iterable.value)
    if (
        isinstance(iterable, ast.Call)
        and isinstance(iterable.func, ast.Name)
        and iterable.func.id == "range"
        and not iterable.keywords
    ):
        try:
            bounds = [ast.literal_eval(arg) for arg in iterable.args]
            return all(type(bound) is int for bound in bounds) and bool(range(*bounds))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return False
    return False


_TRUE: Final = frozenset({True})
_FALSE: Final = frozenset({False})
_BOTH: Final = frozenset({True, False})


def _block_returns(body: Sequence[ast.stmt]) -> Returns:
    """Whether a block returns from its function: ``"always"`` when one of its own statements is a
    ``return`` (a statement before it may still return), ``"maybe"`` when a nested one may,
    ``"never"``."""
    if any(isinstance(stmt, ast.Return) for stmt in body):
        return "always"
    return "maybe" if any(_may_return(stmt) for stmt in body) else "never"


def _may_return(stmt: ast.stmt) -> bool:
    """True if ``stmt`` is or holds a ``return`` of the function it is in (not of a nested function
    or class; a ``return`` is a statement, so only blocks of statements are searched)."""
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            return True
        if node is not stmt and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for block in _BLOCKS:
            stack.extend(getattr(node, block, ()))
    return False


_BLOCKS: Final = ("body", "orelse", "finalbody", "handlers", "cases")
"""The fields of statements (and of ``except`` handlers and ``match`` cases) that hold statements."""


def _breaks(body: Sequence[ast.stmt]) -> bool:
    """True if a loop whose body is ``body`` may end by ``break``: one in the body itself, not in a
    nested loop's body (a nested loop's ``else`` counts), function or class."""
    stack = list(body)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ast.Break):
            return True
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            stack.extend(stmt.orelse)
        elif not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.stmt):
                    stack.append(child)
                elif isinstance(child, (ast.ExceptHandler, ast.match_case)):
                    stack.extend(child.body)
    return False
