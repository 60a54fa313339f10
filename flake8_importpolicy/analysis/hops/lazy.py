"""Lazy modules and attribute reads: PEP 562 ``__getattr__`` triggers (docs/semantics.md rule 15)
and the attribute reads at import time that import a module (rule 19).

- ``from p import name``, where ``p`` does not bind ``name`` and defines a module-level
  ``__getattr__``, runs that ``__getattr__`` (PEP 562; ``_handle_fromlist`` calls ``hasattr``), and
  so does reading ``p.name``: hop kind ``getattr-trigger``, or ``lazy-attr`` for a read; a
  ``lazy_loader.attach`` mapping names the submodule it imports instead;
- a read on a lazy module object (``xgr.GrammarMatcher`` after ``xgr = LazyLoader("xgr",
  globals(), "xgrammar")``) imports its module: hop kind ``lazy-attr``;
- a read on an instance of a class with a ``__getattr__`` may run it: a ``call`` hop, flagged
  ``conditional``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from flake8_importpolicy.analysis.hops.calls import CallResolver
from flake8_importpolicy.analysis.hops.lookup import FactsLookup, absolute
from flake8_importpolicy.model.facts import ANY_ATTRIBUTE, AttributeRead, CallBinding, ModuleFacts
from flake8_importpolicy.model.graph import (
    Construct,
    Flag,
    FunctionNode,
    Hop,
    HopKind,
    UnresolvedCode,
    module_of,
)
from flake8_importpolicy.model.interpreter import ResolvedModule

__all__ = ["AttributeReads", "ModuleGetattr"]

_MAX_GETATTR_NAMES: Final = 64
"""Names a module's ``__getattr__`` is analysed for one by one; beyond them it is analysed once
for any name (its conditions on the name unknown), so the cost stays bounded."""

_LAZY_MODULE_UNKNOWN: Final = -1
"""What :meth:`AttributeReads._lazy_class` returns for a class whose instances import a module on
attribute access when which module is not computable (a stored argument it cannot follow)."""
_NOT_COMPUTABLE: Final = "<not computable>"
"""What :meth:`AttributeReads._lazy_module_bound` returns for a lazy module object whose module is
not computable (never a module name: it is not an identifier)."""


def packages_between(base: str, target: object) -> Iterator[str]:
    """The packages of ``target`` that ``base`` does not already have run: those between ``base``
    and its submodule ``target`` (``base.models`` and ``base.models.auto`` for
    ``base.models.auto.modeling_auto``, a deep import structure's entry), or, for a module beside
    ``base`` (plotly's ``relative_import`` of ``..graph_objs.layout`` in ``plotly.graph_objects``),
    its packages below the ancestors they share (``plotly.graph_objs``): importing ``target`` runs
    them first (rule 1)."""
    if not isinstance(target, str) or "." not in target:
        return
    base_parts = base.split(".")
    parts = target.split(".")
    shared = 0
    while shared < min(len(base_parts), len(parts) - 1) and base_parts[shared] == parts[shared]:
        shared += 1
    if shared == 0:
        return  # another top-level package: not a structure's entry
    for i in range(shared + 1, len(parts)):
        yield ".".join(parts[:i])


def submodule_of(package: str, sub: str) -> str:
    """The module a lazy mapping's entry ``sub`` names in ``package``: ``package.sub``, or with
    leading dots one package up per dot (``.graph_objs.layout`` in ``plotly.graph_objects``:
    ``plotly.graph_objs.layout``, as ``import_module("..graph_objs.layout", package)``)."""
    body = sub.lstrip(".")
    up = len(sub) - len(body)
    if up:
        package = package.rsplit(".", up)[0]
    return f"{package}.{body}"


class ModuleGetattr:
    """Which node a module's PEP 562 ``__getattr__`` makes run for a name (rule 15).

    Args:
        lookup: the facts of the modules reached.
    """

    def __init__(self, lookup: FactsLookup) -> None:
        self.index = lookup.index
        self._lookup = lookup
        self._names: dict[str, set[str]] = {}  # names each module's __getattr__ is run for
        self._exports: dict[str, dict[str, str]] = {}  # scanned package -> {name: submodule}

    def find_trigger(
        self, package: str, name: str, importer: str, line: int | None = None
    ) -> str | None:
        """``from package import name`` calls ``package.__getattr__(name)`` when the module binds no
        ``name`` and defines a module-level ``__getattr__`` (PEP 562; ``_handle_fromlist`` calls
        ``hasattr(package, name)`` first); so does reading ``package.name`` (rule 19). Returns the
        function node run with ``name``, the submodule a ``lazy_loader.attach`` mapping imports for
        it, or None. With ``line`` (a from-import's), ``package`` may be the importer itself: its
        own ``__getattr__`` runs when bound before that line and ``name`` is not (plotly.io's
        ``from plotly.io import templates`` after ``relative_import``)."""
        facts = self._hooked(package, name, importer, line)
        if facts is None:
            return None
        attach = facts.lazy_attach
        if name == ANY_ATTRIBUTE:  # ``getattr(mod, n)``: any name, every branch may run
            return None if attach is not None else FunctionNode(package, "__getattr__")
        if attach is not None:
            if name in attach.submodules:
                return f"{package}.{name}"
            found = next((sub for sub, names in attach.submod_attrs.items() if name in names), None)
            if found is None and attach.scan_package:
                found = self._submodule_exporting(package, name, attach.scan_prefix)
            return submodule_of(package, found) if found is not None else None
        names = self._names.setdefault(package, set())
        if name not in names and len(names) >= _MAX_GETATTR_NAMES:
            return FunctionNode(package, "__getattr__")  # any name: every branch may run
        names.add(name)
        return FunctionNode(package, "__getattr__", name)

    def find_triggers(
        self, package: str, name: str, importer: str, line: int | None = None
    ) -> list[tuple[str, str]]:
        """``(owner, module)`` for each module reading ``name`` of ``package`` imports, in order:
        :meth:`find_trigger`'s, then, when that module was imported for one of its names (an
        entry of a lazy mapping's ``submod_attrs``), those its own ``getattr(module, name)`` runs
        in turn (plotly.graph_objects' ``..graph_objs.Layout`` imports plotly.graph_objs, whose
        ``__getattr__("Layout")`` imports its ``_layout``; ``lazy_loader.attach`` and
        transformers' ``_LazyModule`` read the name on the submodule the same way)."""
        found: list[tuple[str, str]] = []
        owner = package
        trigger = self.find_trigger(package, name, importer, line)
        while trigger is not None:
            found.append((owner, trigger))
            if isinstance(trigger, FunctionNode) or trigger == f"{owner}.{name}" or len(found) > 8:
                break  # a function's result, or the submodule itself: no further read
            owner = trigger
            trigger = self.find_trigger(owner, name, importer)
        return found

    def find_lazy_module(self, package: str, name: str) -> str | None:
        """The module reading ``package.name`` imports when a lazy mapping names one (a
        ``lazy_loader.attach`` or plotly's ``relative_import``: the submodule ``name``, or the one
        that exports it), else None (no ``__getattr__``, or one whose result is not a module it
        names). The importer is ``package`` itself, as for a read made outside it."""
        facts = self._hooked(package, name, "")
        if facts is None or facts.lazy_attach is None:
            return None
        found = self.find_trigger(package, name, "")
        return found if isinstance(found, str) and not isinstance(found, FunctionNode) else None

    def find_conditional_triggers(self, package: str, name: str, importer: str) -> tuple[str, ...]:
        """The submodules reading ``name`` of ``package`` may also import (besides
        :meth:`find_trigger`'s): those an import structure got ``name`` for in code that may not
        run, and those whose names are not computable (rule 19). Their hops are conditional."""
        facts = self._hooked(package, name, importer)
        attach = facts.lazy_attach if facts is not None else None
        if attach is None or not (attach.maybe_attrs or attach.any_name):
            return ()
        certain = next((sub for sub, names in attach.submod_attrs.items() if name in names), None)
        found = [sub for sub, names in attach.maybe_attrs.items() if name in names]
        found += attach.any_name
        return tuple(f"{package}.{sub}" for sub in dict.fromkeys(found) if sub != certain)

    def _hooked(
        self, package: str, name: str, importer: str, line: int | None = None
    ) -> ModuleFacts | None:
        """The facts of ``package`` when reading its ``name`` runs its ``__getattr__``, else None
        (``package`` is ``importer`` itself only for a from-import at ``line``: see
        :meth:`find_trigger`)."""
        lookup = self._lookup
        own = package == importer
        if (own and line is None) or not lookup.is_followed(
            package, self.index.resolve_module(package)
        ):
            return None
        facts = lookup.get_facts(package)
        if facts is None or not facts.defines_getattr:
            return None
        if own:
            hook_line = facts.binding_lines.get("__getattr__")
            name_line = facts.binding_lines.get(name)
            if hook_line is None or line is None or hook_line >= line or (
                name_line is not None and name_line < line
            ):
                return None
        elif name in facts.bindings:
            return None
        if lookup.imports_submodule(package, f"{package}.{name}", before=line if own else None):
            return None  # importing a submodule binds it on its package: no __getattr__ call
        if self._star_binds(package, facts, name):
            return None
        return facts

    def _star_binds(self, package: str, facts: ModuleFacts, name: str) -> bool:
        """Whether an unconditional ``from base import *`` of ``package`` binds ``name``: ``base``'s
        literal ``__all__`` lists it (made unconditionally), or it has none and binds the public
        ``name`` (torch.ao.nn.intrinsic's ``from .modules import *`` before its ``__getattr__``)."""
        is_package = self.index.resolve_module(package).is_package
        for site in facts.sites:
            if site.kind != "star-import" or site.flags or site.target is None:
                continue
            base = absolute("." * site.level + site.target, package, is_package)
            base_facts = self._lookup.get_facts(base) if base is not None else None
            if base_facts is None or base_facts.problem is not None:
                continue
            if base_facts.all_names is not None:
                if not base_facts.all_conditional and name in base_facts.all_names:
                    return True
            elif not name.startswith("_") and name in base_facts.bindings:
                return True
        return False

    def _submodule_exporting(self, package: str, name: str, prefix: str = "") -> str | None:
        """The submodule of ``package`` (of its subpackage ``prefix``, when given) that is ``name``
        or whose literal ``__all__`` lists it, at any depth, as transformers'
        ``define_import_structure`` reads every file under the directory: its dotted path from
        ``package`` (``models.auto.modeling_auto``), or None."""
        root = f"{package}.{prefix}" if prefix else package
        start = len(package) + 1
        if f"{root}.{name}" in self.index.find_children(root):
            return f"{root}.{name}"[start:]
        exports = self._exports.get(root)
        if exports is None:
            exports = self._exports[root] = {}
            for child in self.index.find_descendants(root):
                facts = self._lookup.get_facts(child)
                for exported in (facts.all_names or ()) if facts is not None else ():
                    exports.setdefault(exported, child[start:])
        return exports.get(name)


class AttributeReads:
    """The hops of attribute reads at import time that import a module (rule 19).

    Args:
        lookup: the facts of the modules reached.
        getattr_hooks: PEP 562 triggers (a read of ``np.random``).
        calls: the definitions names refer to (which callee makes a lazy module object; an
            instance's class and its ``__getattr__``).
    """

    def __init__(self, lookup: FactsLookup, getattr_hooks: ModuleGetattr, calls: CallResolver) -> None:
        self.index = lookup.index
        self._lookup = lookup
        self._getattr_hooks = getattr_hooks
        self._calls = calls
        self._lazy_makers: dict[str, int | None] = {}

    def find_hops(
        self, node: str, resolved: ResolvedModule, read: AttributeRead,
        unresolved: list[UnresolvedCode],
    ) -> Iterator[Hop]:
        """An attribute read at import time that imports a module (rule 19): on a lazy module
        object (``xgr.GrammarMatcher`` after ``xgr = LazyLoader("xgr", globals(), "xgrammar")``), or
        of a name a module's PEP 562 ``__getattr__`` serves (``np.random``). A lazy module object
        whose module is not computable is added to ``unresolved``."""
        module = module_of(node)
        if read.target is None:
            imported = self._lazy_module_bound(module, resolved.is_package, read.name)
            if imported is None:
                # a dunder (``obj.__dict__``) is found without ``__getattr__``, and ``del obj.x``
                # runs ``__delattr__``
                dunder = read.attr.startswith("__") and read.attr.endswith("__")
                hook = None if dunder or read.deleted else self._instance_getattr(
                    module, resolved.is_package, read.name
                )
                if hook is not None:  # ``obj.x`` may miss and run ``type(obj).__getattr__``
                    yield Hop(node, resolved.path, read.line, read.col, HopKind.CALL, hook,
                              tuple(sorted({*read.flags, Flag.CONDITIONAL})))
                return
            if imported is _NOT_COMPUTABLE:
                unresolved.append(UnresolvedCode(
                    node, resolved.path, read.line, read.col, Construct.GETATTR_IMPORT,
                    f"{read.name}.{read.attr} (a lazy module object of a module not computable)",
                    read.flags,
                ))
                return
        else:
            base = absolute(read.target, module, resolved.is_package)
            imported = None
            if base is not None and self.index.resolve_module(base).kind != "unresolved":
                found = self._getattr_hooks.find_triggers(base, read.attr, module)
                for owner, trigger in found[:-1]:  # those before the last one, whose hop follows
                    for parent in packages_between(owner, trigger):
                        yield Hop(node, resolved.path, read.line, read.col, HopKind.PARENT_PACKAGE,
                                  parent, read.flags)
                    yield Hop(node, resolved.path, read.line, read.col, HopKind.LAZY_ATTR, trigger,
                              read.flags)
                owner = base
                if found:
                    owner, imported = found[-1]
                for maybe in self._getattr_hooks.find_conditional_triggers(base, read.attr, module):
                    maybe_flags = tuple(sorted({*read.flags, Flag.CONDITIONAL}))
                    for parent in packages_between(base, maybe):
                        yield Hop(node, resolved.path, read.line, read.col, HopKind.PARENT_PACKAGE,
                                  parent, maybe_flags)
                    yield Hop(node, resolved.path, read.line, read.col, HopKind.LAZY_ATTR, maybe,
                              maybe_flags)
                for parent in packages_between(owner, imported):
                    yield Hop(node, resolved.path, read.line, read.col, HopKind.PARENT_PACKAGE,
                              parent, read.flags)
            elif base is not None and "." in base:  # ``from m import obj``: an object m made
                yield from self._hops_for_imported_object(node, resolved, read, base, unresolved)
                return
        if imported is not None:
            yield Hop(node, resolved.path, read.line, read.col, HopKind.LAZY_ATTR, imported, read.flags)
        # ``go.layout.template.Data``: each attribute read in turn on a module a lazy mapping
        # imported may run that module's own ``__getattr__`` (plotly's nested lazy packages)
        for attr in read.then:
            if not isinstance(imported, str) or isinstance(imported, FunctionNode):
                break
            found = self._getattr_hooks.find_triggers(imported, attr, module)
            if not found:
                break
            for owner, trigger in found:
                for parent in packages_between(owner, trigger):
                    yield Hop(node, resolved.path, read.line, read.col, HopKind.PARENT_PACKAGE,
                              parent, read.flags)
                yield Hop(node, resolved.path, read.line, read.col, HopKind.LAZY_ATTR, trigger,
                          read.flags)
            imported = found[-1][1]

    def _hops_for_imported_object(
        self, node: str, resolved: ResolvedModule, read: AttributeRead, base: str,
        unresolved: list[UnresolvedCode],
    ) -> Iterator[Hop]:
        """A read on an object another module bound (``from m import obj``, then ``obj.x``): a lazy
        module object m made, or an instance of a class with a ``__getattr__`` (rule 19), as for a
        name the reading module bound itself."""
        owner, _, name = base.rpartition(".")
        found = self.index.resolve_module(owner)
        if found.kind == "unresolved":
            return
        imported = self._lazy_module_bound(owner, found.is_package, name)
        if imported is _NOT_COMPUTABLE:
            unresolved.append(UnresolvedCode(
                node, resolved.path, read.line, read.col, Construct.GETATTR_IMPORT,
                f"{read.name}.{read.attr} (a lazy module object of a module not computable)",
                read.flags,
            ))
        elif imported is not None:
            yield Hop(node, resolved.path, read.line, read.col, HopKind.LAZY_ATTR, imported,
                      read.flags)
        elif not (read.attr.startswith("__") and read.attr.endswith("__")) and not read.deleted:
            hook = self._instance_getattr(owner, found.is_package, name)
            if hook is not None:
                yield Hop(node, resolved.path, read.line, read.col, HopKind.CALL, hook,
                          tuple(sorted({*read.flags, Flag.CONDITIONAL})))

    def _instance_getattr(self, module: str, is_package: bool, name: str) -> str | None:
        """The ``__getattr__`` of the class whose instance is bound to ``name`` in ``module``
        (``obj = C()``), own or inherited, in followed code; None if there is none. Python runs it
        when normal lookup of an attribute fails (Language reference 3.3.2.1)."""
        bound = self._call_binding(module, is_package, name)
        found = self._calls.find_definition(bound[1]) if bound is not None else None
        if found is None or not found[2]:
            return None
        owner, cls, _ = found
        hook = self._calls.find_member(owner, cls, "__getattr__")
        return hook[0] if hook else None

    def _call_binding(
        self, module: str, is_package: bool, name: str
    ) -> tuple[CallBinding, str] | None:
        """The call whose result ``module`` bound to ``name`` (``name = callee(...)``), with the
        callee's absolute dotted name; None if there is none."""
        facts = self._lookup.get_facts(module)
        binding = facts.call_bindings.get(name) if facts is not None else None
        if binding is None:
            return None
        if binding.local:
            return binding, f"{module}.{binding.callee}"
        callee = absolute(binding.callee, module, is_package)
        return None if callee is None else (binding, callee)

    def _lazy_module_bound(self, module: str, is_package: bool, name: str) -> str | None:
        """The module a lazy module object bound to ``name`` in ``module`` stands for, None if
        ``name`` is not one, :data:`_NOT_COMPUTABLE` if its module is not computable."""
        bound = self._call_binding(module, is_package, name)
        if bound is None:
            return None
        binding, callee = bound
        index = self._lazy_maker(callee)
        if index is None:
            return None
        made = binding.args[index] if 0 <= index < len(binding.args) else None
        if made is None or not all(part.isidentifier() for part in made.split(".")):
            return _NOT_COMPUTABLE
        return made

    def _lazy_maker(self, callee: str) -> int | None:
        """Which positional argument of ``callee`` names the module of the lazy module object it
        returns, or None if it makes none: ``lazy_loader.load``; a function that makes one with
        ``importlib.util.LazyLoader``; a class whose ``__getattr__`` (or a method it calls on
        ``self``) imports a module named by what its ``__init__`` stored (rule 19)."""
        if callee in self._lazy_makers:
            return self._lazy_makers[callee]
        self._lazy_makers[callee] = None  # a recursive definition makes nothing
        index: int | None = 0 if callee == "lazy_loader.load" else None
        found = self._calls.find_definition(callee)
        if index is None and found is not None:
            owner, qualname, is_class = found
            if is_class:
                index = self._lazy_class(owner, qualname)
            else:
                facts = self._lookup.get_function_facts(owner, qualname)
                index = facts.lazy_params[0] if facts is not None and facts.lazy_params else None
        self._lazy_makers[callee] = index
        return index

    def _lazy_class(self, module: str, cls: str) -> int | None:
        """The ``__init__`` parameter whose value a class's instances import on attribute access."""
        get_function_facts = self._lookup.get_function_facts
        imported: set[str] = set()
        dynamic = False  # an import of a name not computable: the object is lazy, its module unknown
        for hook in ("__getattr__", "__getattribute__"):
            facts = get_function_facts(module, f"{cls}.{hook}")
            if facts is None:
                continue
            bodies = [facts, *filter(None, (
                get_function_facts(module, f"{cls}.{method}") for method in facts.self_calls
            ))]
            for body in bodies:
                imported.update(body.self_imports)
                dynamic = dynamic or any(site.target is None for site in body.sites)
        if not imported and not dynamic:
            return None
        init = get_function_facts(module, f"{cls}.__init__")
        stored = dict(init.self_params) if init is not None else {}
        found = next((stored[attr] for attr in sorted(imported) if attr in stored), None)
        return _LAZY_MODULE_UNKNOWN if found is None else found
