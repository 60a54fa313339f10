"""Import statements' hops (docs/semantics.md rules 1-4, 12 and 17).

- ``import a.b.c`` runs ``a``, ``a.b`` and ``a.b.c`` (rule 1; the hops to ``a`` and ``a.b`` have kind
  ``parent-package``);
- ``from p import name`` runs ``p`` and, when ``p`` does not bind ``name`` and a submodule ``p.name``
  exists, ``p.name`` (rule 2, ``importlib._bootstrap._handle_fromlist``), or ``p``'s PEP 562
  ``__getattr__`` (rule 15);
- ``from p import *`` runs ``p`` and the submodules listed in ``p.__all__`` that ``p`` does not bind
  (rule 3);
- relative imports resolve against ``__package__`` (rule 4);
- the ``except ImportError`` fallback of a ``try`` of imports runs only when one of them may fail
  (rule 12: :meth:`ImportSites.guard_lets_run`);
- an import after one of a top-level package that is not installed, in the same block, never runs
  (rule 12: :meth:`ImportSites.raised_before`);
- a PEP 810 lazy import runs only where import-time code uses a name it binds: hop kind
  ``lazy-used`` at the use's line (rule 17).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from flake8_importpolicy.analysis.hops.lazy import ModuleGetattr, packages_between
from flake8_importpolicy.analysis.hops.lookup import FactsLookup, absolute, resolve_relative
from flake8_importpolicy.model.facts import (
    DISTRIBUTION_MARK,
    CallSite,
    ImportSite,
    ModuleFacts,
    parse_entry_point_anchor,
    parse_own_modules_anchor,
)
from flake8_importpolicy.model.graph import Flag, Hop, HopKind, module_of
from flake8_importpolicy.model.interpreter import ResolvedModule

__all__ = ["ImportSites"]


class ImportSites:
    """The hops of import statements, and whether a guarded import is found.

    Args:
        lookup: the facts of the modules reached.
        getattr_hooks: PEP 562 triggers (``from p import name`` that ``p`` does not bind).
    """

    def __init__(self, lookup: FactsLookup, getattr_hooks: ModuleGetattr) -> None:
        self.index = lookup.index
        self._lookup = lookup
        self._getattr_hooks = getattr_hooks
        self._first_star: dict[str, int] = {}  # package -> line of its first star import (or 1e9)

    def find_hops(self, node: str, resolved: ResolvedModule, site: ImportSite) -> Iterator[Hop]:
        """The hops from ``node`` (a module or a function body of ``resolved``) that the import
        ``site`` makes: its parent packages, its module, the submodules its fromlist runs; for an
        import relative to each installed entry point of a group, those of each one."""
        point = parse_entry_point_anchor(site.anchor)
        packages = parse_own_modules_anchor(site.anchor)
        if point is not None or packages is not None:
            anchors = (
                self._entry_point_modules(*point) if point is not None
                else self._own_modules(module_of(node), resolved, bool(packages))
            )
            for anchor in anchors:
                yield from self.find_hops(node, resolved, dataclasses.replace(site, anchor=anchor))
            return
        module = module_of(node)
        base = resolve_relative(site, module, resolved.is_package)
        if base is None:
            return
        path = resolved.path
        parts = base.split(".")
        kind = HopKind(site.kind)
        line, col = site.line, site.col
        if site.lazy_use_line is not None:
            kind, line, col = HopKind.LAZY_USED, site.lazy_use_line, 0
        for i in range(1, len(parts)):
            yield Hop(node, path, line, col, HopKind.PARENT_PACKAGE, ".".join(parts[:i]), site.flags)
        yield Hop(node, path, line, col, kind, base, site.flags)
        if site.kind == "from-import" or (site.kind == "importlib" and site.names):
            # ``__import__("p", fromlist=[...])`` handles its fromlist like ``from p import ...``
            fromlist_flags: tuple[Flag, ...] | None = None
            for name in site.names:
                found = self._submodule_run_by_fromlist(base, name, module, site.line)
                if found is not None:
                    if fromlist_flags is None:  # the base's facts are read only when needed
                        fromlist_flags = self._fromlist_flags(base, module, site.flags)
                    submodule, uncertain = found
                    hop_flags = (
                        tuple(sorted({*fromlist_flags, Flag.CONDITIONAL})) if uncertain else fromlist_flags
                    )
                    yield Hop(node, path, line, col, kind, submodule, hop_flags)
                triggers: list[tuple[str, str]] = []
                maybe: tuple[str, ...] = ()
                if not self._lookup.imports_submodule(node, f"{base}.{name}", before=site.line):
                    triggers = self._getattr_hooks.find_triggers(base, name, module, site.line)
                    maybe = self._getattr_hooks.find_conditional_triggers(base, name, module)
                for owner, trigger in triggers:
                    for parent in packages_between(owner, trigger):  # a deep structure's entry
                        yield Hop(node, path, line, col, HopKind.PARENT_PACKAGE, parent, site.flags)
                    yield Hop(node, path, line, col, HopKind.GETATTR_TRIGGER, trigger, site.flags)
                for other in maybe:  # an import structure's entries that may not have been made
                    other_flags = tuple(sorted({*site.flags, Flag.CONDITIONAL}))
                    for parent in packages_between(base, other):
                        yield Hop(node, path, line, col, HopKind.PARENT_PACKAGE, parent, other_flags)
                    yield Hop(node, path, line, col, HopKind.GETATTR_TRIGGER, other, other_flags)
        elif site.kind == "star-import":
            base_facts = self._lookup.get_facts(base)
            if base_facts is not None and base_facts.all_names:
                flags = site.flags
                if base_facts.all_conditional:
                    flags = tuple(sorted({*flags, Flag.CONDITIONAL}))
                for name in base_facts.all_names:
                    found = self._submodule_run_by_fromlist(base, name, module, site.line)
                    if found is not None:
                        submodule, uncertain = found
                        hop_flags = tuple(sorted({*flags, Flag.CONDITIONAL})) if uncertain else flags
                        yield Hop(node, path, line, col, kind, submodule, hop_flags)
            elif base_facts is not None and base_facts.all_names is None:
                all_trigger = self._getattr_hooks.find_trigger(base, "__all__", module)
                if all_trigger is not None:
                    for parent in packages_between(base, all_trigger):
                        yield Hop(node, path, line, col, HopKind.PARENT_PACKAGE, parent, site.flags)
                    yield Hop(node, path, line, col, HopKind.GETATTR_TRIGGER, all_trigger, site.flags)

    def _entry_point_modules(self, group: str, name: str | None, field: str) -> tuple[str, ...]:
        """The module names the ``field`` (``value`` or ``module``) of each entry point of ``group``
        the interpreter has installed gives (``importlib.metadata.EntryPoint``: ``value`` is
        ``module`` or ``module:attr``, and ``module`` its part before the colon); a value that is
        not a dotted name names no module and is left out."""
        found: list[str] = []
        for value in self.index.interpreter.entry_point_values(group, name):
            text = value.partition(":")[0].strip() if field == "module" else value.strip()
            if text and all(part.isidentifier() for part in text.split(".")):
                found.append(text)
        return tuple(dict.fromkeys(found))

    def _own_modules(self, module: str, resolved: ResolvedModule, packages: bool) -> tuple[str, ...]:
        """The subpackages (``packages``) or plain modules directly in package ``module``'s
        directories, as ``pkgutil.iter_modules(__path__)`` lists them (``pkgutil``
        ``_iter_file_finder_modules``: a directory is a package when it has an ``__init__``, and
        one without is left out; a module file of any suffix is a module)."""
        if not resolved.is_package:
            return ()
        found: list[str] = []
        for child in self.index.find_children(module):
            kind = self.index.resolve_module(child).kind
            if (kind == "package") if packages else kind in ("source", "extension", "bytecode"):
                found.append(child)
        return tuple(found)

    def _fromlist_flags(
        self, base: str, module: str, flags: tuple[Flag, ...]
    ) -> tuple[Flag, ...]:
        """The flags of a submodule run by a fromlist: ``conditional`` added when ``base`` has a
        star-import, which may bind the name first (then ``_handle_fromlist`` imports nothing)."""
        base_facts = self._lookup.get_facts(base) if base != module else None
        if base_facts is not None and any(s.kind == "star-import" for s in base_facts.sites):
            return tuple(sorted({*flags, Flag.CONDITIONAL}))
        return flags

    def _submodule_run_by_fromlist(
        self, package: str, name: str, importer: str, line: int = 0
    ) -> tuple[str, bool] | None:
        """``from package import name`` runs ``package.name`` if it is a submodule not bound by package.

        Source: ``importlib._bootstrap._handle_fromlist``, which imports ``package.name`` only when
        ``not hasattr(package, name)``. A package whose source is not analysed (not followed,
        extension, namespace) is assumed not to bind the name. A package path search does not find
        (not installed) runs nothing of the fromlist: importing it raises first, so ``from
        torch.nn import Linear`` without torch is never a module ``torch.nn.Linear``. In the package itself
        (``from . import name`` in its ``__init__``) the binding is made by this very import, so it
        does not count.

        Returns:
            ``(submodule, uncertain)``, or None when no submodule runs. ``uncertain`` is True when the
            answer depends on import order (a circular import may see the package half-initialised).
        """
        resolved_package = self.index.resolve_module(package)
        candidate = f"{package}.{name}"
        if resolved_package.kind == "unresolved" or not resolved_package.is_package:
            return None
        if self.index.resolve_module(candidate).kind == "unresolved":
            return None
        if package == importer:
            return self._self_fromlist(package, name, line, candidate)
        facts = self._lookup.get_facts(package)
        if facts is not None and name in facts.bindings:
            if self._bound_after_importer_runs(package, facts, name, importer):
                # Circular import: the package's __init__ may still be running, so ``name`` may not
                # be bound yet and the submodule runs. Flagged conditional: it depends on the
                # order of imports.
                return candidate, True
            return None
        return candidate, False

    def _bound_after_importer_runs(
        self, package: str, facts: ModuleFacts, name: str, importer: str
    ) -> bool:
        """True if ``importer`` may run while ``package``'s ``__init__`` has not bound ``name`` yet.

        Two shapes: ``importer`` is inside the package and ``name`` is bound at or after the
        package's first import of its own submodules (a binding made by an import statement exists
        only once that import returns); or the statement that binds ``name`` runs ``importer`` (it
        imports ``importer`` or a module inside it: ``from other.registry import name``, where
        ``other.registry`` does ``from package import name``).
        """
        line = facts.binding_lines.get(name, 0)
        if importer.startswith(package + ".") and line >= _first_internal_import(package, facts):
            return True
        for site in facts.sites:
            imported = resolve_relative(site, package, True) if site.line == line else None
            if imported is None:
                continue
            for module in (imported, *(f"{imported}.{sub}" for sub in site.names)):
                if module == importer or module.startswith(importer + "."):
                    return True
        return False

    def _self_fromlist(
        self, package: str, name: str, line: int, candidate: str
    ) -> tuple[str, bool] | None:
        """``from . import name`` in the package's own ``__init__`` at ``line``: the submodule runs
        unless ``name`` was bound by an earlier statement; an earlier star import may have bound it
        (uncertain)."""
        facts = self._lookup.get_facts(package)
        if facts is None:
            return candidate, False
        if facts.binding_lines.get(name, line) < line:
            return None
        first_star = self._first_star.get(package)
        if first_star is None:  # once per package: an __init__ of 10,000 from-imports asks 10,000 times
            lines = [site.line for site in facts.sites if site.kind == "star-import"]
            first_star = self._first_star[package] = min(lines, default=10**9)
        return candidate, first_star < line

    # -- rule 12: try / except ImportError ---------------------------------------------------------

    def guard_lets_run(
        self, site: ImportSite | CallSite, node: str, resolved: ResolvedModule
    ) -> bool:
        """Whether an import site or call under a guard runs: only if whether every module of its
        :class:`~flake8_importpolicy.model.facts.Guard` is found is the guard's ``resolves`` (an
        ``except ImportError`` fallback of a ``try`` of imports runs only if one is missing; rule
        12). One without a guard runs."""
        guard = site.guard
        return guard is None or self._all_found(guard.modules, node, resolved) == guard.resolves

    def raised_before(self, site: ImportSite) -> bool:
        """Whether an eager import before ``site`` in its block (or an enclosing one) names a
        top-level package that path search does not find: CPython raised ``ModuleNotFoundError``
        there, so ``site`` never runs (rule 12; ``import torch`` then ``from .modeling_utils import
        ...`` in ``if is_torch_available():`` without torch installed)."""
        return any(self.index.resolve_module(name).kind == "unresolved" for name in site.after)

    def _all_found(self, names: tuple[str, ...], node: str, resolved: ResolvedModule) -> bool:
        """Whether every module of ``names`` (relative to ``node``'s module) imports without an
        ImportError as far as can be told: path search finds it (an extension module counts) and
        none of its own unconditional imports names a module path search does not find."""
        module = module_of(node)
        for entry in names:
            if entry.startswith(DISTRIBUTION_MARK):  # ``importlib.metadata.version(name)``
                if not self.index.has_distribution(entry[len(DISTRIBUTION_MARK):]):
                    return False
                continue
            name, _, imported = entry.partition(":")
            found = absolute(name, module, resolved.is_package)
            if found is None or not self._imports_cleanly(found):
                return False
            if imported and not all(self._provides(found, n) for n in imported.split(",")):
                return False
        return True

    def _provides(self, module: str, name: str) -> bool:
        """Whether ``from module import name`` finds ``name``: bound by the module's code, or a
        submodule (rule 2). An extension module is taken to provide what is imported from it (its
        names cannot be read), and so is a module that star-imports one (``socket``'s ``from
        _socket import *`` gives ``SOCK_STREAM``); a module with a PEP 562 ``__getattr__`` or
        without analysable source otherwise is not known to provide it."""
        facts = self._lookup.get_facts(module)
        if facts is None:
            return self.index.resolve_module(module).kind == "extension"
        if facts.problem is not None or facts.defines_getattr:
            return False
        if name in facts.bindings:
            return True
        is_package = self.index.resolve_module(module).is_package
        for site in facts.sites:
            if site.kind == "star-import" and not site.flags:
                target = resolve_relative(site, module, is_package)
                if target is not None and self.index.resolve_module(target).kind == "extension":
                    return True
        return self.index.resolve_module(f"{module}.{name}").kind != "unresolved"

    def _imports_cleanly(self, name: str) -> bool:
        found = self.index.resolve_module(name)
        if found.kind == "unresolved":
            return False
        facts = self._lookup.get_facts(name)
        if facts is None or facts.problem is not None:
            return facts is None
        for site in facts.sites:
            if site.flags or site.target is None or site.guard:
                continue
            target = resolve_relative(site, name, found.is_package)
            if target is None or self.index.resolve_module(target).kind == "unresolved":
                return False
            if site.kind == "from-import":
                for imported in site.names:
                    if target == name:  # ``from . import x`` in the package itself: a submodule
                        if self.index.resolve_module(f"{name}.{imported}").kind == "unresolved":
                            return False
                    elif not self._provides(target, imported):
                        return False
        return True


def _first_internal_import(package: str, facts: ModuleFacts) -> int:
    """The first line at which ``package``'s own code imports one of its submodules (or 1e9)."""
    lines = [
        site.line for site in facts.sites
        if site.level > 0 or (site.target or "").startswith(package + ".")
    ]
    return min(lines, default=10**9)
