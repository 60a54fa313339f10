"""Calls at import time (docs/semantics.md rule 16): what each call runs, as far as the engine can
name it (a function or class of the module, an import, a star-imported name), and the calls it
cannot follow (a call through a variable, IPL006), recorded for the import-time walker; it never
calls back into the walker. A class a standard-library factory made runs only generated code
(:mod:`.generated`)."""

from __future__ import annotations

import ast
import builtins
import dataclasses
from collections.abc import Container, Mapping, MutableSet
from typing import Final

from flake8_importpolicy.analysis.conditions import Anchored, ConditionEvaluator, dotted_name
from flake8_importpolicy.analysis.importtime.bindings import DEFINITIONS, Binding, BindingKind, Scope
from flake8_importpolicy.analysis.importtime.dynamic import DYNAMIC_IMPORTERS, DynamicRecorder, unparse
from flake8_importpolicy.analysis.importtime.flow import Flow
from flake8_importpolicy.analysis.importtime.generated import makes_generated_class
from flake8_importpolicy.analysis.importtime.sites import SiteRecorder
from flake8_importpolicy.model.facts import CallKind, CallSite, Guard, anchored_argument
from flake8_importpolicy.model.graph import Construct, Flag

__all__ = [
    "CallRecorder", "ClassTree", "FunctionReturns", "HeldCallables", "decorator_name", "single_aliases",
]

HeldCallables = tuple[tuple[tuple[str, bool], ...], bool]
"""The known callables a module-level name may hold (``(dotted name, local)`` each, ``""`` for one
that calls nothing), and whether it certainly holds the one (a single callable, bound by code that
always runs)."""

_CONSUMERS: Final = frozenset({
    "list", "tuple", "set", "frozenset", "dict", "sorted", "sum", "min", "max", "any", "all",
})
"""Builtins that iterate a generator expression given to them before they return (so its body
runs at import time, unlike a generator expression kept for later, rule 9); ``str.join`` too."""
_KEYED: Final = frozenset({"sorted", "min", "max"})
"""Consumers that call their ``key=`` function on the items."""
_FACTORY_BUILTINS: Final = frozenset({"super", "type", "property", "classmethod", "staticmethod"})
"""Builtins whose result is commonly called at once (``super().__init__`` is an attribute, but
``type(self)(...)`` calls a class): not a call through a variable."""
_BUILTIN_NAMES: Final = frozenset(dir(builtins))
_RUNS_CODE: Final = frozenset({"exec", "eval", "compile", "breakpoint", "help", "input"})
"""Builtins that may run code the engine does not see (a string, ``pdb``, ``pydoc``): a variable
bound to one is not a known callable."""


_TRANSPARENT_DECORATORS: Final = frozenset({
    "functools.cache", "functools.lru_cache", "functools.wraps", "functools.singledispatchmethod",
    "staticmethod", "classmethod", "property", "abc.abstractmethod",
    "typing.overload", "typing.final", "typing.override", "typing.no_type_check",
    "typing_extensions.overload", "typing_extensions.final", "typing_extensions.override",
    "contextlib.contextmanager", "contextlib.asynccontextmanager", "atexit.register",
})
"""Decorators whose result runs the decorated function's own body when called (or, for a context
manager, when entered): a call of a function decorated only by these is followed into that body
without an IPL006 (any other decorator may return a function of its own)."""


class CallRecorder:
    """The calls a walker found, in order, and what decides where each goes."""

    def __init__(
        self,
        flow: Flow,
        scope: Scope,
        imports: SiteRecorder,
        dynamic: DynamicRecorder,
        *,
        decorated: MutableSet[str] | None,
        star_bases: list[str] | None,
        source: bytes | None,
    ) -> None:
        self.flow = flow
        self.scope = scope
        self.imports = imports
        self.dynamic = dynamic
        self.calls: list[CallSite] = []
        self.classes = ClassTree()  # the module's classes, by qualified name, and their bases
        self.returns = FunctionReturns()  # in a function body: what its ``return``s give back
        self.own_defs = _OwnDefs(source)  # module-level ``def``s (an identity decorator?), callables
        # functions whose decorator may have replaced them: a call runs what the decorator returned
        self.decorated: MutableSet[str] = set() if decorated is None else decorated
        # functions defined in the class body being visited (callable from that body)
        self.class_defs: set[str] = set()
        self.class_values: set[str] = set()  # ``K.x`` of a class body's ``x = <value>``
        # in a function body, its own ``def``s and ``class``es: ``{name: outer.<locals>.name}``
        self.nested_defs: dict[str, str] = {}
        # in a function body, its names bound once, by ``name = <dotted name>`` (``emit =
        # code.append``, ``_len = len``): a call of one is a call of that name (:func:`single_aliases`)
        self.local_aliases: Mapping[str, ast.expr] = {}
        # modules star-imported at module level (a call of a name they may bind is looked up there)
        self.star_bases: list[str] = [] if star_bases is None else star_bases
        self.instances = _Instances(scope)  # in a function body, its names bound to ``C(...)``

    @property
    def aliases(self) -> Mapping[str, str]:
        """The scope's names an import binds (:attr:`Scope.aliases`)."""
        return self.scope.aliases

    def bind_instance(self, stmt: ast.Assign) -> None:
        """``name = C(...)`` in a function body, ``C`` a known callable (a class of the module or
        an imported name): a later ``name.m(...)`` calls ``C.m`` while ``name`` keeps that binding
        (pydantic's ``gen = GenerateSchema(...)`` then ``gen.generate_schema(cls)``, rule 16)."""
        if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            call = stmt.value
            known = _known_callable(call.func, self.scope) if isinstance(call, ast.Call) else None
            self.instances.bind(stmt.targets[0].id, known)

    def _append(self, call: CallSite) -> None:
        """Record ``call``, with the import guard of the statements being visited (rule 12: the
        call is made only where the guard lets the code run)."""
        guard = Guard.of(self.flow.requirement)
        if guard is not None:
            call = dataclasses.replace(call, guard=guard)
        self.calls.append(call)

    def assigned(self, stmt: ast.Assign | ast.AnnAssign | ast.AugAssign, flags: frozenset[Flag]) -> None:
        """A module-level assignment: ``name = <known callable>`` adds the callable to what a call
        of ``name`` may call (code that always runs replaces what it held); any other binding of
        ``name`` makes it a variable of unknown value again."""
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        value = None if isinstance(stmt, ast.AugAssign) or len(targets) != 1 else stmt.value
        callees = self.own_defs.known_values(value, self.scope, bool(self.star_bases))
        for target in targets:
            if not isinstance(target, ast.Name):
                continue
            name = target.id
            binding = self.scope.lookup(name)
            self.own_defs.remember(name, callees, binding, stmt.lineno)
            if callees is None or binding is None:
                self.own_defs.callables.pop(name, None)
                continue
            known = self.own_defs.callables.get(name)
            if not flags & _MAY_NOT_RUN:
                known = _CallableValues(binding, [], every_path=True)  # what it held is gone
            elif known is None:
                if binding.line != stmt.lineno:
                    continue  # bound before to something unknown: it may still hold that
                known = _CallableValues(binding, [], every_path=False)  # else it may be unbound
            known.binding = binding
            known.callees.extend(callee for callee in callees if callee not in known.callees)
            self.own_defs.callables[name] = known

    def returned(self, value: ast.expr | None) -> None:
        """A ``return value`` in the function body being walked (:class:`FunctionReturns`)."""
        self.returns.add(value, self.flow.function_name.rpartition(".")[2], self.aliases)

    def _values_called(self, func: ast.expr) -> HeldCallables | None:
        """What a call of module-level ``func`` may call, when it is bound to known callables only
        (and not rebound since), else None; in a function body that does not bind it, any of them
        (:meth:`module_variables`: the body may run before the last binding)."""
        if not isinstance(func, ast.Name):
            return None
        name = func.id
        if not self.flow.module_level() and self.flow.names.binds(name):
            return None  # the class body's or the function's own name
        if self.flow.in_function:
            if self.scope.binds(name):
                return None  # a parameter or a local of the function
            return self.module_variables().get(name)
        known = self.own_defs.callables.get(name)
        if known is None or self.scope.lookup(name) is not known.binding:
            return None
        return tuple(known.callees), known.every_path and len(known.callees) == 1

    def _module_variable(self, func: ast.expr) -> bool:
        """Whether ``func``, in a function or class body that does not bind it, names a module-level
        variable (not a ``def``, ``class`` or import): ``loader = _load`` then ``def setup():
        loader("x")`` calls what it holds (rule 16)."""
        if not isinstance(func, ast.Name) or self.flow.module_level():
            return False
        name = func.id
        if self.flow.names.binds(name) or name in self.aliases:
            return False
        if self.flow.in_function:
            return not self.scope.binds(name) and name in self.module_variables()
        binding = self.scope.lookup(name)
        return (
            binding is not None and binding.bound and binding.kind not in DEFINITIONS
            and binding.kind is not BindingKind.IMPORT
        )

    def module_variables(self) -> Mapping[str, HeldCallables | None]:
        """The module's variables as its function bodies see them (:meth:`_OwnDefs.variables_of`),
        made from its walk once, or given by a ``FunctionIndex``."""
        return self.own_defs.variables_of(self.scope)

    def base_name(self, base: ast.expr) -> str | None:
        """A base class as :attr:`ModuleFacts.class_bases` keeps it: a class of this module by its
        qualified name, another by its dotted name through the module's imports."""
        name = dotted_name(base, {})
        if name is None:
            return None
        scoped = ".".join([*self.flow.class_path, name])
        if scoped in self.classes.names:
            return scoped
        if name in self.classes.names:
            return name
        return dotted_name(base, self.aliases)

    def record_def(self, stmt: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """A ``def`` where the walker is: what a call of it runs (its body, or what a decorator
        returned) and, for a function defined in a function body or a class body, where a call
        of it from there goes."""
        flow = self.flow
        if flow.in_function and not flow.class_depth:
            self.nested_defs[stmt.name] = flow.scoped_name(stmt.name)
        if not flow.class_depth:
            if all(self.keeps_body(d) for d in stmt.decorator_list):
                self.decorated.discard(stmt.name)
            else:
                self.decorated.add(stmt.name)
            if not flow.in_function:
                self.own_defs.spans[stmt.name] = (stmt.lineno, stmt.end_lineno or stmt.lineno)
        if flow.class_depth:
            self.class_defs.add(stmt.name)

    def add(
        self, where: ast.expr, func: ast.expr, kind: CallKind, flags: frozenset[Flag],
        name: str | None = None,
    ) -> None:
        """Record a call of ``func`` (``name``: its dotted name, when the caller has it)."""
        value = _local_alias(func, self.local_aliases, self.aliases) if kind == "call" else None
        if value is not None:
            # ``emit = code.append`` then ``emit(0)``: the call ``code.append(0)`` (resolved once:
            # an alias of an alias is not looked through)
            aliases, self.local_aliases = self.local_aliases, {}
            try:
                self.add(where, value, kind, flags)
            finally:
                self.local_aliases = aliases
            return
        if isinstance(func, ast.Subscript) and self._names_a_definition(func.value):
            func = func.value  # ``Key[int]()``: a generic class, instantiated
            name = None
        if isinstance(func, ast.Name) and func.id in self.nested_defs:
            # a function or class defined in this function body (it wins over a module-level name)
            if kind == "call" and func.id in self.decorated:
                self.dynamic.unresolved(where, Construct.CALL_THROUGH_VARIABLE, flags)
            self._append(CallSite(where.lineno, where.col_offset, self.nested_defs[func.id],
                                  True, kind, tuple(sorted(flags)), self.flow.assumed_once(),
                                  self.flow.environ))
            return
        if isinstance(func, ast.Name) and func.id in self.class_defs:
            # a function of the class body being run, called from that body
            self._append(CallSite(where.lineno, where.col_offset, self.flow.scoped_name(func.id),
                                  True, kind, tuple(sorted(flags)), self.flow.assumed_once(),
                                  self.flow.environ))
            return
        if isinstance(func, ast.Name) and self._names_generated_class(func.id):
            return  # ``Point = namedtuple(...)``: calling it runs its generated ``__new__`` only
        if kind == "call" and self.flow.in_function:
            method = self.instances.method(func)
            if method is not None:
                self.calls.append(CallSite(where.lineno, where.col_offset, method[0], method[1], kind,
                                           tuple(sorted(flags)), self.flow.assumed_once()))
                return
        if name is None:
            name = dotted_name(func, self.aliases)
        if kind == "call" and self._calls_what_a_factory_returns(where, func, flags):
            return
        through_module = kind == "call" and self._module_variable(func)
        if kind == "call" and (
            through_module or self._calls_a_value(func)
            or isinstance(func, ast.Name) and func.id in self.decorated
        ):
            known = self._values_called(func)
            if known is None:
                self.dynamic.unresolved(where, Construct.CALL_THROUGH_VARIABLE, flags)
            else:
                # a call of each callable the name may hold; conditional when which is not known
                self._call_each(where, known, kind, flags)
            if through_module:  # the variable's own name is no definition to look up
                return
        if name is None:
            return
        first = func
        while isinstance(first, ast.Attribute):
            first = first.value
        local = isinstance(first, ast.Name) and self.scope.is_definition(first.id)
        names = [name]
        if (
            self.star_bases and isinstance(first, ast.Name) and not local
            and first.id not in self.aliases and not self.flow.names.binds(first.id)
            and first.id not in _BUILTIN_NAMES
        ):
            # a name a star import may have bound: looked up in each star-imported module
            names = [f"{base}.{name}" if base.strip(".") else f"{base}{name}"
                     for base in self.star_bases]
        arguments = _arguments(where, self.dynamic.conditions) if kind == "call" else ()
        for called in names:
            self._append(
                CallSite(where.lineno, where.col_offset, called, local, kind, tuple(sorted(flags)),
                         self.flow.assumed_once(), self.flow.environ, arguments)
            )

    def _calls_what_a_factory_returns(
        self, where: ast.expr, func: ast.expr, flags: frozenset[Flag]
    ) -> bool:
        """``factory(...)(f)``, the call a decorator ``@factory(...)`` makes, written out
        (``array_function_dispatch()(loadtxt)``): what ``factory`` returns runs, as for a decorator
        factory, when ``factory`` is a name of a function, a class or an import, or a module-level
        name bound to known callables (``functools.partial(g, ...)``). False for anything else (a
        call through a variable, an attribute's result)."""
        if not isinstance(func, ast.Call):
            return False
        factory = func.func
        if isinstance(factory, ast.Name):
            if factory.id in _FACTORY_BUILTINS or factory.id in self.decorated:
                return False
            if factory.id in self.nested_defs or factory.id in self.class_defs:
                return False
            if self._calls_a_value(factory) or self._module_variable(factory):
                known = self._values_called(factory)
                if known is None:
                    return False
                self._call_each(where, known, "decorator-factory", flags)
                return True
        else:
            return False  # ``obj.m(...)(f)``, ``LazyLoader.factory(...)(...)``: a call through a value
        self.add(where, factory, "decorator-factory", flags)
        return True

    def _call_each(
        self, where: ast.expr, known: HeldCallables, kind: CallKind, flags: frozenset[Flag]
    ) -> None:
        """A call of each callable a name may hold; conditional when which is not known."""
        callees, certain = known
        choice = flags if certain else flags | {Flag.CONDITIONAL}
        arguments = _arguments(where, self.dynamic.conditions) if kind == "call" else ()
        for callee, local in callees:
            if kind == "call" and isinstance(where, ast.Call) and not local and (
                self.dynamic.held_importer(where, callee, choice)  # an importer held in a variable
            ):
                continue
            if callee:  # a lambda that calls nothing is no call
                self._append(CallSite(
                    where.lineno, where.col_offset, callee, local, kind, tuple(sorted(choice)),
                    self.flow.assumed_once(), self.flow.environ, arguments,
                ))

    def bind_value(
        self, targets: list[ast.expr], value: ast.expr | None, conditions: ConditionEvaluator
    ) -> None:
        """A module-level ``f = g``, ``f = g if test else h`` (``g``, ``h`` names, dotted or not) or
        ``f = functools.partial(g, ...)``: a call of ``f``, also from another module, runs what
        ``f`` holds, the branch the target decides or both when it does not (``lazy_importer =
        nothing if sys.version_info >= (3, 15) else backport``, rule 16), kept in ``f``'s binding
        (any other binding forgets it)."""
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if value is None or len(names) != len(targets):
            return
        wrapped = _partial_of(value, self.aliases)  # ``f = functools.partial(g, ...)`` calls ``g``
        if wrapped is not None:
            value = wrapped
        choices = _choices(value, conditions, False)
        if choices:
            for name in names:
                self.scope.set_choices(name, choices)

    def super_call(self, call: ast.Call, flags: frozenset[Flag]) -> None:
        """``super().m(...)`` in a method of a module-level class ``C``: ``C.m`` as the bases
        define it (kind ``super``: looked up in ``C``'s bases, in order; docs/semantics.md rule 16)."""
        owner = self.flow.function_name.rpartition(".")[0]
        if not owner or "<locals>" in owner or not isinstance(call.func, ast.Attribute):
            return
        self._append(CallSite(call.lineno, call.col_offset, f"{owner}.{call.func.attr}", True,
                              "super", tuple(sorted(flags)), self.flow.assumed_once(),
                              self.flow.environ))

    def callbacks(self, call: ast.Call, name: str | None, flags: frozenset[Flag]) -> None:
        """The functions a consuming builtin calls before it returns: ``key=f`` of ``sorted``,
        ``min`` and ``max``, and ``f`` of a ``map(f, ...)``/``filter(f, ...)`` it iterates; each is
        a call of ``f`` (an importer given this way imports names the engine does not know)."""
        functions = [kw.value for kw in call.keywords if kw.arg == "key" and name in _KEYED]
        for argument in call.args:
            if (
                isinstance(argument, ast.Call) and argument.args
                and isinstance(argument.func, ast.Name) and argument.func.id in ("map", "filter")
                and not self.flow.names.binds(argument.func.id)
            ):
                functions.append(argument.args[0])
        for function in functions:
            if dotted_name(function, self.aliases) in DYNAMIC_IMPORTERS:
                self.imports.add(call, "importlib", None, flags, detail=unparse(call))
            elif isinstance(function, (ast.Name, ast.Attribute)):
                self.add(call, function, "call", flags)

    def consumes(self, func: ast.expr, name: str | None) -> bool:
        """Whether calling ``func`` iterates a generator expression argument before it returns: a
        builtin of :data:`_CONSUMERS` (not rebound here), or a ``join`` method."""
        if isinstance(func, ast.Attribute):
            return func.attr == "join"
        return name in _CONSUMERS and isinstance(func, ast.Name) and not self.flow.names.binds(func.id)

    def keeps_body(self, decorator: ast.expr) -> bool:
        """Whether a function decorated by ``decorator`` still runs its own body when called: a
        decorator of :data:`_TRANSPARENT_DECORATORS`, or a function of this module that returns
        the function it was given (``def mark(fn): fn.x = 1; return fn``)."""
        if decorator_name(decorator, self.aliases) in _TRANSPARENT_DECORATORS:
            return True
        if not isinstance(decorator, ast.Name) or decorator.id not in self.own_defs.spans:
            return False
        return self.own_defs.returns_its_argument(decorator.id)

    def _names_a_definition(self, node: ast.expr) -> bool:
        """Whether ``node`` names an import, a ``def`` or a ``class`` (not a variable): ``Key``,
        ``typing.Generic``; not an attribute of a local definition, nor a namespace dictionary
        (``K.__dict__``, ``builtins.__dict__``)."""
        if isinstance(node, ast.Attribute) and (
            node.attr.startswith("__") or self._is_local_definition(node)
        ):
            return False
        while isinstance(node, ast.Attribute):
            node = node.value
        if not isinstance(node, ast.Name):
            return False
        name = node.id
        return name in self.aliases or self.scope.is_definition(name) or name in self.class_defs or (
            not self.flow.names.binds(name) and name != "__builtins__"  # a builtin (``type[int]``)
        )

    def _is_local_definition(self, node: ast.Attribute) -> bool:
        """Whether the dotted ``node`` starts at a ``def`` or ``class`` of this module."""
        first: ast.expr = node
        while isinstance(first, ast.Attribute):
            first = first.value
        return isinstance(first, ast.Name) and (
            self.scope.is_definition(first.id) or first.id in self.class_defs
        )

    def _names_generated_class(self, name: str) -> bool:
        """Whether ``name`` is a module-level name bound to a class a standard-library factory
        made (:func:`~flake8_importpolicy.analysis.importtime.generated.makes_generated_class`)."""
        if self.flow.class_depth and self.flow.names.binds(name):
            return False
        binding = self.scope.lookup(name)
        return binding is not None and makes_generated_class(binding.call)

    def _calls_a_value(self, func: ast.expr) -> bool:
        """Whether calling ``func`` calls what a variable, a container item or another call holds
        (not a function, class or import the engine can follow; not a method of an object)."""
        if isinstance(func, ast.Subscript):
            return True
        if isinstance(func, ast.Call):
            return not (isinstance(func.func, ast.Name) and func.func.id in _FACTORY_BUILTINS)
        if isinstance(func, ast.Name):
            name = func.id
            return (
                self.flow.names.binds(name)
                and not self.scope.is_definition(name)
                and name not in self.aliases
                and not self.scope.is_import(name)
            )
        if isinstance(func, ast.Attribute):
            # ``K.im()`` where the class body bound ``im = staticmethod(importlib.import_module)``
            return dotted_name(func, self.aliases) in self.class_values
        return False


def _known_callable(value: ast.expr, scope: Scope, star: bool = False) -> tuple[str, bool] | None:
    """``(dotted name, local)`` of a value that is a known callable in ``scope``: a function or
    class of the module, an imported name (``torch.compile``), a builtin the module does not bind
    (``int_ = int``; ``builtins.__import__``; not when a star import, ``star``, may bind it);
    ``("", False)`` for a lambda that calls nothing (``lambda f: f``) and for ``None`` (calling
    it raises ``TypeError``); None for anything else."""
    if isinstance(value, ast.Lambda):
        body = value.body
        return ("", False) if isinstance(body, (ast.Name, ast.Constant)) else None
    if isinstance(value, ast.Constant) and value.value is None:
        return ("", False)
    wrapped = _partial_of(value, scope.aliases)
    if wrapped is not None:
        return _known_callable(wrapped, scope, star)
    if _inert_method(value, scope):
        return ("", False)
    if not isinstance(value, (ast.Name, ast.Attribute)):
        return None
    first: ast.expr = value
    while isinstance(first, ast.Attribute):
        first = first.value
    if not isinstance(first, ast.Name):
        return None
    binding = scope.lookup(first.id)
    if binding is None:
        builtin = value is first and first.id in _BUILTIN_NAMES and first.id not in _RUNS_CODE
        return (f"builtins.{first.id}", False) if builtin and not star else None
    if scope.is_definition(first.id):
        name = dotted_name(value, {})
        return (name, True) if name is not None else None
    if binding.refers_to is None:
        return None
    name = dotted_name(value, scope.aliases)
    return (name, False) if name is not None else None


_INERT_METHODS: Final = frozenset({("itertools.count", "__next__")})
"""``(class, method)`` of builtin classes whose method, on an instance made from integer
constants, runs no Python code: ``count(1).__next__`` adds C integers (Modules/itertoolsmodule.c
``count_next``: ``PyNumber_Add`` of ints; any other start or step may run its ``__add__``)."""


def _inert_method(value: ast.expr, scope: Scope) -> bool:
    """Whether ``value`` is a bound method that calls nothing (:data:`_INERT_METHODS`), as in
    threading's ``_counter = _count(1).__next__``."""
    if not (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Call)):
        return False
    made = value.value
    if made.keywords or not all(
        isinstance(a, ast.Constant) and type(a.value) is int for a in made.args
    ):
        return False
    first = made.func
    while isinstance(first, ast.Attribute):
        first = first.value
    if not isinstance(first, ast.Name) or scope.lookup(first.id) is None:
        return False  # a class the module's imports do not name
    return (dotted_name(made.func, scope.aliases), value.attr) in _INERT_METHODS


def _getattr_choices(value: ast.expr, scope: Scope, star: bool) -> list[tuple[str, bool]] | None:
    """Both callables ``getattr(obj, "name", default)`` may give, each a known callable
    (:func:`_known_callable`): ``obj.name`` when ``obj`` has the attribute, else ``default``
    (``getattr(torch._C, "_cuda_isInBadFork", lambda: False)``); which one is not known statically,
    so a call of the name is a conditional call of each. ``getattr(obj, "name")`` is ``obj.name``.
    None for any other value, a ``getattr`` the module (or a star import) may bind, a name that is
    not a string constant. The builtin's rule: Python/bltinmodule.c ``builtin_getattr`` (the
    default is returned only when the lookup raises ``AttributeError``)."""
    if not (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "getattr"
        and scope.lookup("getattr") is None and not star and not value.keywords
        and len(value.args) in (2, 3) and not any(isinstance(a, ast.Starred) for a in value.args)
    ):
        return None
    attribute = value.args[1]
    if not (isinstance(attribute, ast.Constant) and isinstance(attribute.value, str)
            and attribute.value.isidentifier()):
        return None
    held = _known_callable(ast.Attribute(value.args[0], attribute.value, ast.Load()), scope, star)
    if held is None:
        return None
    if len(value.args) == 2:
        return [held]
    default = _known_callable(value.args[2], scope, star)
    return None if default is None else list(dict.fromkeys([held, default]))


def _arguments(where: ast.expr, conditions: ConditionEvaluator) -> tuple[str | None, ...]:
    """:attr:`CallSite.arguments` of a call: its positional arguments' known string values."""
    if not isinstance(where, ast.Call) or not where.args:
        return ()
    found: list[str | None] = []
    for argument in where.args:
        if isinstance(argument, ast.Starred):
            break
        value = conditions.constant(argument)
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, Anchored) and value.anchor in ("__name__", "__package__"):
            found.append(anchored_argument(value.anchor, value.rest))
        else:
            found.append(None)
    while found and found[-1] is None:
        found.pop()
    return tuple(found)


def _partial_of(value: ast.expr, aliases: Mapping[str, str]) -> ast.expr | None:
    """``f`` of ``functools.partial(f, ...)``: calling the partial calls ``f`` (with the bound
    arguments first), nothing else; None for any other value."""
    if (
        isinstance(value, ast.Call) and value.args
        and not isinstance(value.args[0], ast.Starred)
        and dotted_name(value.func, aliases) == "functools.partial"
    ):
        return value.args[0]
    return None


def _choices(
    value: ast.expr, conditions: ConditionEvaluator, undecided: bool
) -> tuple[tuple[str, bool], ...]:
    """The dotted names (as written) a value of names and conditional expressions may be, each with
    whether a test on the way was undecided; () when a branch that may run is anything else."""
    if isinstance(value, ast.IfExp):
        outcome, _ = conditions.decide(value.test)
        branches = [
            branch for branch, truth in ((value.body, True), (value.orelse, False))
            if outcome is None or truth in outcome
        ]
        found: list[tuple[str, bool]] = []
        for branch in branches:
            more = _choices(branch, conditions, undecided or outcome is None or len(outcome) > 1)
            if not more:
                return ()
            found.extend(more)
        return tuple(found)
    name = dotted_name(value, {})
    return () if name is None else ((name, undecided),)


_MAY_NOT_RUN: Final = frozenset({Flag.CONDITIONAL, Flag.FALLBACK, Flag.GUARDED})
"""Flags of code that may not run: a callable it binds is one of the name's possible values."""


class ClassTree:
    """The module's classes, by qualified name, as the walker meets them, and the bases of its
    module-level ones (:class:`~flake8_importpolicy.model.facts.ModuleClasses` once walked)."""

    __slots__ = ("bases", "names")

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.bases: dict[str, tuple[str, ...]] = {}


class FunctionReturns:
    """What the ``return``s of a function body give back, as far as the walker names it: the names
    returned (a nested function by name), and whether one hands back the function itself,
    partially applied (``return functools.partial(<this function>, ...)``: a factory called
    without the function to wrap, so no returned closure runs at decoration time)."""

    __slots__ = ("names", "self_partial")

    def __init__(self) -> None:
        self.names: list[str] = []
        self.self_partial = False

    def add(self, value: ast.expr | None, function: str, aliases: Mapping[str, str]) -> None:
        """A ``return value`` in the body of ``function`` (its own name, unqualified)."""
        if isinstance(value, ast.Name):
            self.names.append(value.id)
        elif (
            isinstance(value, ast.Call) and value.args and isinstance(value.args[0], ast.Name)
            and value.args[0].id == function
            and dotted_name(value.func, aliases) == "functools.partial"
        ):
            self.self_partial = True

    def closures(self, nested: Container[str]) -> tuple[str, ...]:
        """The nested functions of the body it returns, once each, in order; none when it returns
        itself partially applied."""
        if self.self_partial:
            return ()
        return tuple(dict.fromkeys(name for name in self.names if name in nested))


class _Instances:
    """In a function body, its names bound to ``C(...)`` of a known callable ``C`` (a class of the
    module or an imported name): ``{name: (binding, dotted C, local)}``, while the binding lasts
    (``gen.generate()`` runs ``C``'s)."""

    __slots__ = ("bound", "scope")

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.bound: dict[str, tuple[Binding, str, bool]] = {}

    def bind(self, name: str, known: tuple[str, bool] | None) -> None:
        """``name = C(...)``, ``known`` what ``C`` is (None: not a known callable, or not a call)."""
        self.bound.pop(name, None)
        binding = self.scope.lookup(name)
        if known is None or not known[0] or binding is None:
            return
        self.bound[name] = (binding, known[0], known[1])

    def method(self, func: ast.expr) -> tuple[str, bool] | None:
        """``(C.m, local)`` for ``name.m`` where :meth:`bind` saw ``name = C(...)`` and ``name``
        still has that binding, else None."""
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
            return None
        found = self.bound.get(func.value.id)
        if found is None or self.scope.lookup(func.value.id) is not found[0]:
            return None
        return f"{found[1]}.{func.attr}", found[2]


class _CallableValues:
    """The known callables a module-level name may hold (``(dotted name, local)`` each, ``""`` for
    a lambda that calls nothing), the binding that made the last of them (a name rebound since is
    a variable again), and whether code that always runs bound one (else it may be unbound)."""

    __slots__ = ("binding", "callees", "every_path")

    def __init__(self, binding: Binding, callees: list[tuple[str, bool]], *, every_path: bool) -> None:
        self.binding = binding
        self.callees = callees
        self.every_path = every_path


class _OwnDefs:
    """A module's own ``def``s by name (first and last line) and, asked once each, whether one
    returns the function it decorates (``def mark(fn): fn.x = 1; return fn``); and its names bound
    to known callables on every path (``fuser = torch.compile``)."""

    __slots__ = ("callables", "history", "identity", "source", "spans", "variables")

    def __init__(self, source: bytes | None) -> None:
        self.source = source  # the module's text (module level only)
        self.spans: dict[str, tuple[int, int]] = {}
        self.identity: dict[str, bool] = {}
        self.callables: dict[str, _CallableValues] = {}
        # every known callable a module-level assignment bound each name to, with the line the
        # name was first bound on (a ``del`` since makes it another binding); None once one
        # assignment bound it to something else
        self.history: dict[str, tuple[int | None, list[tuple[str, bool]]] | None] = {}
        # what function bodies see (CallRecorder.module_variables), once the module is walked
        self.variables: Mapping[str, HeldCallables | None] | None = None

    def remember(
        self, name: str, callees: list[tuple[str, bool]] | None, binding: Binding | None, line: int
    ) -> None:
        """A module-level assignment on ``line`` bound ``name`` to one of ``callees`` (None: not a
        known callable); a name something else bound first (an import, a ``def``) may still hold
        that."""
        if callees is None or binding is None:
            self.history[name] = None
        elif name not in self.history:
            self.history[name] = (binding.line, list(callees)) if binding.line == line else None
        else:
            held = self.history[name]
            if held is not None:
                held[1].extend(callee for callee in callees if callee not in held[1])

    def known_values(
        self, value: ast.expr | None, scope: Scope, star: bool
    ) -> list[tuple[str, bool]] | None:
        """The known callables a module-level assignment may bind (:func:`_known_callable`; both
        of ``getattr(obj, "name", default)``, :func:`_getattr_choices`), also the one another such
        name certainly holds (``Lock = _allocate_lock``); None for another value."""
        if value is None:
            return None
        found = _known_callable(value, scope, star)
        if found is None and isinstance(value, ast.Name):
            found = self._certain(value.id, scope)
        if found is not None:
            return [found]
        return _getattr_choices(value, scope, star)

    def _certain(self, name: str, scope: Scope) -> tuple[str, bool] | None:
        """The one known callable module-level ``name`` holds, bound by code that always runs and
        not rebound since, else None."""
        known = self.callables.get(name)
        if known is None or scope.lookup(name) is not known.binding or not known.every_path:
            return None
        return known.callees[0] if len(known.callees) == 1 else None

    def variables_of(self, scope: Scope) -> Mapping[str, HeldCallables | None]:
        """The module's variables (bound by anything but a ``def``, a ``class`` or an import in
        ``scope``, the module's, once walked), by name: the known callables each held at any time
        (:meth:`remember`), or None when one of its bindings was something else. Kept once made."""
        if self.variables is None:
            found: dict[str, HeldCallables | None] = {}
            for name, binding in scope.items():
                if not binding.bound or binding.kind in DEFINITIONS or binding.kind is BindingKind.IMPORT:
                    continue
                known = self.callables.get(name)
                held = self.history.get(name)
                if makes_generated_class(binding.call):
                    found[name] = ((("", False),), True)  # ``Row = namedtuple(...)``: generated code
                elif known is None or known.binding is not binding or held is None or held[0] != binding.line:
                    found[name] = None
                else:
                    found[name] = (tuple(held[1]), known.every_path and len(held[1]) == 1)
            self.variables = found
        return self.variables

    def returns_its_argument(self, name: str) -> bool:
        if name not in self.identity:
            start, end = self.spans[name]
            self.identity[name] = _returns_its_argument(self.source, start, end)
        return self.identity[name]


def _returns_its_argument(source: bytes | None, start: int, end: int) -> bool:
    """Whether the module-level function on lines ``start``-``end`` of ``source`` returns its first
    parameter at every ``return`` (and has one): a decorator that hands back the function it
    decorates. False when unsure (no source, lines that do not parse on their own)."""
    if source is None:
        return False
    lines = source.split(b"\n")[start - 1:end]
    try:
        tree = ast.parse(b"\n".join(lines))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    node = tree.body[0] if tree.body else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not node.args.args:
        return False
    parameter = node.args.args[0].arg
    returns: list[ast.Return] = []
    stack: list[ast.AST] = list(node.body)
    while stack:
        current = stack.pop()
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue  # a nested scope's returns are its own
        if isinstance(current, ast.Return):
            returns.append(current)
        stack.extend(ast.iter_child_nodes(current))
    return bool(returns) and all(
        isinstance(r.value, ast.Name) and r.value.id == parameter for r in returns
    )


def single_aliases(node: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, ast.expr]:
    """The names of a function body that are bound exactly once in it, by an assignment
    ``name = <dotted name>`` (``emit = code.append``, ``_len = len``) or ``name =
    functools.partial(<dotted name>, ...)`` (inspect's ``_get_signature_of``; whether it is
    ``functools.partial`` is decided where it is called, :func:`_partial_of`), with that value: neither
    parameters, nor declared ``global``/``nonlocal``, nor bound by any other statement (a loop, a
    ``with``, an import, a ``def``, a walrus, ``except ... as``, a pattern, ``del``)."""
    stores: dict[str, int] = {}
    values: dict[str, ast.expr] = {}
    args = node.args
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if arg is not None:
            stores[arg.arg] = 2
    stack: list[ast.AST] = list(node.body)
    while stack:
        current = stack.pop()
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stores[current.name] = 2
            stack.extend(current.decorator_list)
            continue  # its body is a scope of its own
        if isinstance(current, ast.Lambda):
            continue
        if isinstance(current, (ast.Global, ast.Nonlocal)):
            for name in current.names:
                stores[name] = 2
        elif isinstance(current, (ast.Import, ast.ImportFrom)):
            for alias in current.names:
                stores[(alias.asname or alias.name).partition(".")[0]] = 2
        elif isinstance(current, ast.ExceptHandler) and current.name:
            stores[current.name] = 2
        elif isinstance(current, (ast.MatchAs, ast.MatchStar)) and current.name:
            stores[current.name] = 2
        elif isinstance(current, ast.MatchMapping) and current.rest:
            stores[current.rest] = 2
        elif isinstance(current, ast.Name) and not isinstance(current.ctx, ast.Load):
            stores[current.id] = stores.get(current.id, 0) + 1
        if (
            isinstance(current, ast.Assign) and len(current.targets) == 1
            and isinstance(current.targets[0], ast.Name)
            and (_names_partial(current.value) or isinstance(current.value, (ast.Name, ast.Attribute))
                 and dotted_name(current.value, {}) is not None)
        ):
            values[current.targets[0].id] = current.value
        stack.extend(ast.iter_child_nodes(current))
    return {
        name: value for name, value in values.items()
        if stores.get(name) == 1 and not (isinstance(value, ast.Name) and value.id == name)
    }


def _local_alias(
    func: ast.expr, local_aliases: Mapping[str, ast.expr], aliases: Mapping[str, str]
) -> ast.expr | None:
    """What a call of ``func``, a body's name bound once (:func:`single_aliases`), calls: its
    dotted value, or ``g`` of ``functools.partial(g, ...)``; None for anything else."""
    value = local_aliases.get(func.id) if isinstance(func, ast.Name) else None
    return _partial_of(value, aliases) if isinstance(value, ast.Call) else value


def _names_partial(value: ast.expr) -> bool:
    """Whether ``value`` is written ``partial(<dotted name>, ...)`` (any qualifier)."""
    return (
        isinstance(value, ast.Call) and bool(value.args)
        and isinstance(value.args[0], (ast.Name, ast.Attribute))
        and dotted_name(value.args[0], {}) is not None
        and (dotted_name(value.func, {}) or "").rpartition(".")[2] == "partial"
    )


def decorator_name(decorator: ast.expr, aliases: Mapping[str, str]) -> str | None:
    """The dotted name of a decorator, or of the factory it calls (``@lru_cache(maxsize=8)``)."""
    return dotted_name(decorator.func if isinstance(decorator, ast.Call) else decorator, aliases)
