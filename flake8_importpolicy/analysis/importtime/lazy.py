"""Lazy module objects and attribute reads at import time (docs/semantics.md rules 15, 18 and 19):
a PEP 562 ``__getattr__`` and what it imports, lazy loaders, the names bound to a call's result, the
attributes read on imported or call-bound names, and what a method does with ``self`` and its
parameters; recorded for the import-time walker, which it never calls back."""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from typing import Final

from flake8_importpolicy.analysis.conditions import ConditionEvaluator, Literal, dotted_name
from flake8_importpolicy.analysis.importtime.bindings import Scope
from flake8_importpolicy.analysis.importtime.dynamic import (
    DYNAMIC_IMPORTERS,
    MODULE_READERS,
    DynamicRecorder,
    keyword_value,
)
from flake8_importpolicy.analysis.importtime.flow import Flow
from flake8_importpolicy.analysis.importtime.structures import ImportStructures
from flake8_importpolicy.model.facts import ANY_ATTRIBUTE, AttributeRead, CallBinding, LazyAttach
from flake8_importpolicy.model.graph import Construct, Flag

__all__ = ["IMPORTING_METHODS", "LazyRecorder", "MethodUse"]

IMPORTING_METHODS: Final = frozenset({
    "import_module", "__import__", "_gcd_import", "exec_module", "load_module", "run_module",
    "run_path",
})
"""Names of functions and methods that import or run a module they are given (``importlib``'s,
loaders' ``exec_module``/``load_module``, ``runpy``'s): a call of one that is not resolved to a
known importer (``sys.modules["importlib"].import_module(n)``, ``spec.loader.exec_module(m)``)
runs code the engine cannot name (IPL006 ``dynamic-import``)."""
_LAZY_SPEC_MAKERS: Final = frozenset({"importlib.util.find_spec", "lazy_loader.load"})
"""Calls whose first argument names the module a lazy module object is made for (rule 19)."""


class MethodUse:
    """What a function body does with ``self`` and its positional parameters (rule 19): the
    methods it calls on ``self``, where it keeps a parameter (``self.attr = param``, or
    ``__name__`` through ``super().__init__(param)``), and the parameters it makes a lazy module
    for (``find_spec(param)``, when it mentions a lazy loader)."""

    __slots__ = ("lazy_candidates", "mentions_lazy_loader", "parameters", "self_calls", "self_params")

    def __init__(self) -> None:
        self.parameters: tuple[str, ...] = ()  # positional, ``self`` not counted
        self.self_calls: list[str] = []
        self.self_params: list[tuple[str, int]] = []
        self.lazy_candidates: list[int] = []
        self.mentions_lazy_loader: bool = False


class LazyRecorder:
    """What a walker found that makes attribute reads import modules (rules 15, 18, 19)."""

    def __init__(
        self,
        flow: Flow,
        scope: Scope,
        conditions: ConditionEvaluator,
        dynamic: DynamicRecorder,
        classes: set[str],
    ) -> None:
        self.flow = flow
        self.scope = scope
        self.aliases: Mapping[str, str] = scope.aliases
        self.conditions = conditions
        self.dynamic = dynamic
        self.classes = classes  # the module's classes (the walker's), by qualified name
        self.defines_getattr: bool = False
        self.lazy_attach: LazyAttach | None = None
        # attribute reads on names bound by imports or calls (rule 19), each (name, attr) once
        self.attribute_reads: list[AttributeRead] = []
        self.read_keys: set[tuple[str, str, bool]] = set()
        self.lazy_loaders: set[str] = set()  # ``loader``, ``spec.loader``: a LazyLoader was bound
        self.dir_names: set[str] = set()  # the variables of the ``for n in dir(x):`` being walked
        self.method = MethodUse()  # in a function body: what it does with ``self``
        # module-level dicts built as import structures (``_import_structure["x"] = [...]``)
        self.structures = ImportStructures(scope, conditions.constant)

    def module_call(self, targets: list[ast.expr], call: ast.Call) -> None:
        """A module-level ``targets = call``: a candidate lazy module object, a lazy_loader attach,
        or the module replacing itself in ``sys.modules`` (rules 15, 19)."""
        self._call_binding(targets, call)
        if any(self._is_own_sys_modules_entry(t) for t in targets):
            self._lazy_module_replacement(call)

    def module_replaced(self, targets: list[ast.expr], value: ast.expr) -> None:
        """A module-level ``sys.modules[__name__] = name`` where ``name`` was bound to a call's
        result (pygments.lexers: ``newmod = _automodule(__name__)``, an instance of a
        ``ModuleType`` subclass whose ``__getattr__`` imports): an object of behaviour the engine
        does not follow stands for the module from now on, and reading its names may run its
        class's code (IPL006 ``getattr-import``, rule 19)."""
        if (
            isinstance(value, ast.Name)
            and self.scope.is_call_bound(value.id)
            and any(self._is_own_sys_modules_entry(t) for t in targets)
        ):
            self.dynamic.unresolved(value, Construct.GETATTR_IMPORT, frozenset())

    def function_call(self, targets: Sequence[ast.expr], call: ast.Call) -> None:
        """``targets = call`` in a function body: a name bound to a LazyLoader (rule 18)."""
        if _makes_lazy_loader(call):
            self.lazy_loaders.update(filter(None, (dotted_name(t, {}) for t in targets)))

    def attribute_read(
        self,
        node: ast.Attribute,
        value: ast.Name,
        flags: frozenset[Flag],
        then: tuple[str, ...] = (),
    ) -> None:
        """Record ``name.attr`` when ``name`` was bound by an import or by a call (rule 19), with
        the attributes ``then`` read in turn on its value."""
        if type(value.ctx) is not ast.Load or type(node.ctx) is ast.Store:
            return  # setting an attribute runs ``__setattr__``: neither a lazy load nor ``__getattr__``
        name = value.id
        target = self.aliases.get(name)
        if target is None and not self.scope.is_call_bound(name):
            return
        deleted = type(node.ctx) is ast.Del
        key = (name, ".".join((node.attr, *then)), deleted)
        if key in self.read_keys:
            return
        self.read_keys.add(key)
        self.attribute_reads.append(AttributeRead(
            node.lineno, node.col_offset, name, target, node.attr, tuple(sorted(flags)), deleted,
            then,
        ))

    def attribute_getter(self, call: ast.Call, flags: frozenset[Flag], name: str) -> None:
        """``getattr(mod, attr)`` / ``hasattr(mod, attr)`` (``name``: which builtin): a read of
        ``attr`` on ``mod``, as ``mod.attr`` is (both call ``type(mod).__getattribute__``, whose
        miss on a module calls its PEP 562 ``__getattr__``; Library Reference, ``getattr``; rule
        19). The variable of a loop over ``dir(...)`` (``for n in dir(mod): hasattr(mod, n)``,
        scipy's ``clone_module``: a module's ``__dir__`` may list names it does not bind, PEP 562)
        is any name (:data:`ANY_ATTRIBUTE`): the read may run ``__getattr__`` for any, flagged
        ``conditional``; another attribute that is not a constant is not recorded."""
        if len(call.args) < 2 or call.keywords or not isinstance(call.args[0], ast.Name):
            return
        if name in ("getattr", "builtins.getattr") and len(call.args) > 3:
            return
        value = call.args[0]
        target = self.aliases.get(value.id)
        if target is None and not self.scope.is_call_bound(value.id):
            return
        attr = self.conditions.constant(call.args[1])
        if not isinstance(attr, str):
            name_node = call.args[1]
            if not (isinstance(name_node, ast.Name) and name_node.id in self.dir_names):
                return
            attr, flags = ANY_ATTRIBUTE, flags | {Flag.CONDITIONAL}
        elif not attr.isidentifier():
            return
        key = (value.id, attr, False)
        if key in self.read_keys:
            return
        self.read_keys.add(key)
        self.attribute_reads.append(AttributeRead(
            call.lineno, call.col_offset, value.id, target, attr, tuple(sorted(flags)),
        ))

    def attribute_chain(self, node: ast.Attribute, flags: frozenset[Flag]) -> None:
        """``name.a.b...`` (``node`` is the outermost attribute of a chain of two or more on a
        name): record ``name.a`` with the attributes read in turn on it; the last one is not
        read when the chain is set or deleted (rule 19)."""
        attrs: list[str] = []
        current: ast.expr = node
        while isinstance(current, ast.Attribute):
            attrs.append(current.attr)
            inner = current.value
            if isinstance(inner, ast.Name):
                break
            current = inner
        if not isinstance(current, ast.Attribute) or not isinstance(current.value, ast.Name):
            return
        attrs.reverse()  # attrs[0] is current.attr
        then = attrs[1:] if type(node.ctx) is ast.Load else attrs[1:-1]
        if then:
            self.attribute_read(current, current.value, flags, tuple(then))

    def self_facts(self, call: ast.Call) -> None:
        """What a method does with ``self`` and its parameters: ``self.m()`` calls,
        ``super().__init__(param)``, ``find_spec(param)``/``lazy_loader.load(param)`` (rule 19)."""
        func = call.func
        if isinstance(func, ast.Attribute):
            owner = func.value
            if isinstance(owner, ast.Name) and owner.id == "self":
                self.method.self_calls.append(func.attr)
            elif func.attr == "__init__" and call.args:
                first = call.args[0]
                is_super = isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) \
                    and owner.func.id == "super"
                if not is_super and isinstance(first, ast.Name) and first.id == "self":
                    first = call.args[1] if len(call.args) > 1 else first  # ModuleType.__init__(self, n)
                if (
                    isinstance(first, ast.Call) and isinstance(first.func, ast.Name)
                    and first.func.id == "str" and len(first.args) == 1 and not first.keywords
                ):
                    first = first.args[0]  # vLLM's ``super().__init__(str(name))``
                if isinstance(first, ast.Name) and first.id in self.method.parameters:
                    self.method.self_params.append(("__name__", self.method.parameters.index(first.id)))
        name = dotted_name(func, self.aliases) or ""
        if "LazyLoader" in name or name == "lazy_loader.load":
            self.method.mentions_lazy_loader = True
        if name in _LAZY_SPEC_MAKERS and call.args:
            first = call.args[0]
            if isinstance(first, ast.Name) and first.id in self.method.parameters:
                self.method.lazy_candidates.append(self.method.parameters.index(first.id))

    def record_self_parameter(self, targets: list[ast.expr], value: ast.expr) -> None:
        """``self.attr = param`` in a method: where the parameter is kept (rule 19)."""
        if not isinstance(value, ast.Name) or value.id not in self.method.parameters:
            return
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                    and target.value.id == "self":
                self.method.self_params.append((target.attr, self.method.parameters.index(value.id)))

    def imports_unknown(self, call: ast.Call, name: str | None) -> bool:
        """Whether ``call`` calls a method named like an importer (:data:`IMPORTING_METHODS`) that
        is not a known importer: what it imports or runs is not known. A lazy loader's
        ``exec_module`` in a function body is the lazy-import recipe that rule 19 models."""
        func = call.func
        if not isinstance(func, ast.Attribute) or func.attr not in IMPORTING_METHODS:
            return False
        if name in DYNAMIC_IMPORTERS or name in MODULE_READERS:
            return False
        return not (
            self.flow.in_function and func.attr == "exec_module"
            and dotted_name(func.value, {}) in self.lazy_loaders
        )

    def _call_binding(self, targets: list[ast.expr], call: ast.Call) -> None:
        """``name = callee(...)`` (a candidate lazy module object) and ``__getattr__[, ...] =
        attach(__name__, submodules=..., submod_attrs=...)`` (a lazy_loader attach), rule 19."""
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        names += [
            e.id for t in targets if isinstance(t, ast.Tuple) for e in t.elts if isinstance(e, ast.Name)
        ]
        if "__getattr__" in names:
            self.defines_getattr = True
            self.lazy_attach = self._attach(call)
            if self.lazy_attach is None:  # a mapping that is not constant: what it imports is unknown
                self.dynamic.unresolved(call, Construct.GETATTR_IMPORT, frozenset())
            return
        callee = dotted_name(call.func, self.aliases)
        bound = [t.id for t in targets if isinstance(t, ast.Name)]  # ``a = b = f(...)`` binds both
        if not bound or callee is None:
            return
        # kept without arguments too: ``client = Client()`` then ``client.setup()`` runs
        # ``Client.setup`` (rule 16), an instance may have a ``__getattr__`` (rule 19)
        args = tuple(_string(self.conditions.constant(arg)) for arg in call.args)
        keywords = tuple(
            (kw.arg, value) for kw in call.keywords
            if kw.arg is not None and (value := _string(self.conditions.constant(kw.value))) is not None
        )
        first = call.func
        while isinstance(first, ast.Attribute):
            first = first.value
        local = isinstance(first, ast.Name) and self.scope.is_definition(first.id)
        for name in bound:
            self.scope.set_call(name, CallBinding(call.lineno, callee, local, args, keywords))

    def _attach(self, call: ast.Call) -> LazyAttach | None:
        """The mapping of ``attach(__name__, submodules=..., submod_attrs=...)`` when its arguments
        are constants, else None (``lazy_loader.attach``'s signature; vendored copies share it)."""
        args = list(call.args)
        if not args or not (isinstance(args[0], ast.Name) and args[0].id == "__name__"):
            return None
        if (dotted_name(call.func, self.aliases) or "").rpartition(".")[2] == "relative_import":
            return self._relative_import(call)
        submodules_node = args[1] if len(args) > 1 else keyword_value(call, "submodules")
        attrs_node = args[2] if len(args) > 2 else keyword_value(call, "submod_attrs")
        if submodules_node is None and attrs_node is None:
            return None
        submodules = self.conditions.constant(submodules_node) if submodules_node is not None else ()
        attrs = self.conditions.constant(attrs_node) if attrs_node is not None else {}
        if submodules is None:
            submodules = ()
        if attrs is None:
            attrs = {}
        if not isinstance(submodules, (list, tuple, set, frozenset)) or not isinstance(attrs, dict):
            return None
        if not all(isinstance(s, str) for s in submodules):
            return None
        mapping: dict[str, tuple[str, ...]] = {}
        for sub, names in attrs.items():
            if not isinstance(sub, str) or not isinstance(names, (list, tuple, set, frozenset)):
                return None
            mapping[sub] = tuple(sorted(str(n) for n in names))
        return LazyAttach(tuple(sorted(submodules)), mapping)

    def _relative_import(self, call: ast.Call) -> LazyAttach | None:
        """The mapping of plotly's ``relative_import(__name__, rel_modules, rel_classes)`` when its
        arguments are constant lists of relative names, else None: the ``__getattr__`` closure it
        returns imports ``.sub`` (``..pkg.sub``) when ``sub`` is read, and ``._mod`` when ``Name``
        of ``._mod.Name`` is (``importlib.import_module(rel, __name__)``; rule 19). A key of
        ``submod_attrs`` is relative to the package: one leading dot per level above it."""
        modules_node = call.args[1] if len(call.args) > 1 else keyword_value(call, "rel_modules")
        classes_node = call.args[2] if len(call.args) > 2 else keyword_value(call, "rel_classes")
        found: list[tuple[str, str]] = []  # (attribute, relative module), modules first
        for node, is_class in ((modules_node, False), (classes_node, True)):
            value = () if node is None else self.conditions.constant(node)
            if not isinstance(value, (list, tuple)):
                return None
            for rel in value:
                if not isinstance(rel, str) or not rel.startswith("."):
                    return None
                body = rel.lstrip(".")
                parts = body.split(".")
                if not all(parts) or (is_class and len(parts) < 2):
                    return None
                module = ".".join(parts[:-1]) if is_class else body
                found.append((parts[-1], "." * (len(rel) - len(body) - 1) + module))
        submodules: list[str] = []
        mapping: dict[str, list[str]] = {}
        taken: set[str] = set()
        for attribute, module in found:
            if attribute in taken:
                continue  # the closure looks up modules first, then classes: the first one wins
            taken.add(attribute)
            if module == attribute:
                submodules.append(module)
            else:
                mapping.setdefault(module, []).append(attribute)
        return LazyAttach(
            tuple(sorted(submodules)), {sub: tuple(sorted(names)) for sub, names in mapping.items()}
        )

    def _is_own_sys_modules_entry(self, target: ast.expr) -> bool:
        """``sys.modules[__name__]`` (the module replacing itself)."""
        if not (
            isinstance(target, ast.Subscript)
            and dotted_name(target.value, self.aliases) == "sys.modules"
        ):
            return False
        key = target.slice
        return (isinstance(key, ast.Name) and key.id == "__name__") or (  # or __spec__.name
            isinstance(key, ast.Attribute) and key.attr == "name"
            and isinstance(key.value, ast.Name) and key.value.id == "__spec__"
        )

    def _lazy_module_replacement(self, call: ast.Call) -> None:
        """``sys.modules[__name__] = _LazyModule(__name__, ..., structure, ...)`` (transformers):
        reading a name of ``structure`` (``{submodule: names}``, a constant, or
        ``define_import_structure(...)``: each submodule's ``__all__``) imports its submodule, as a
        ``lazy_loader.attach`` mapping does (rule 19)."""
        for arg in [*call.args, *(kw.value for kw in call.keywords)]:
            if isinstance(arg, ast.Call) and (dotted_name(arg.func, self.aliases) or "").endswith(
                "define_import_structure"
            ):
                self.defines_getattr = True
                self.lazy_attach = LazyAttach(scan_package=True)
                return
            built = self.structures.structure(arg)  # a dict changed since it was bound
            if built is False:
                break  # changed in a way not followed: not computable
            if isinstance(built, LazyAttach):
                self.defines_getattr = True
                self.lazy_attach = built
                return
            value = self.conditions.literal(arg)
            if isinstance(value, Literal):  # a constant container, looked up (rule 15)
                value = value.value
            if not isinstance(value, dict) or not value:
                continue
            mapping: dict[str, tuple[str, ...]] = {}
            for sub, names in value.items():
                if not isinstance(sub, str) or not isinstance(names, (list, tuple, set, frozenset)):
                    break
                mapping[sub] = tuple(sorted(str(n) for n in names))
            else:
                self.defines_getattr = True
                self.lazy_attach = LazyAttach(tuple(sorted(mapping)), mapping)
                return
        # an object of unknown behaviour stands for the module from now on
        self.dynamic.unresolved(call, Construct.GETATTR_IMPORT, frozenset())


def _makes_lazy_loader(call: ast.Call) -> bool:
    """Whether ``call`` makes an ``importlib.util.LazyLoader`` (``LazyLoader(loader)``,
    ``LazyLoader.factory(cls)(...)``), as the lazy-import recipe does (rule 19)."""
    func: ast.expr = call.func
    while isinstance(func, ast.Call):
        func = func.func
    while isinstance(func, ast.Attribute):
        if func.attr == "LazyLoader":
            return True
        func = func.value
    return isinstance(func, ast.Name) and func.id == "LazyLoader"


def _string(value: object) -> str | None:
    return value if isinstance(value, str) else None
