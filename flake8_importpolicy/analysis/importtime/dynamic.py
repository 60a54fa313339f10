"""Dynamic imports and ``sys.path`` changes (docs/semantics.md rules 7 and 14), and what the engine
cannot resolve (IPL006), recorded for the import-time walker; it never calls back into the walker."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Final

from flake8_importpolicy.analysis.conditions import (
    UNKNOWN,
    Anchored,
    ConditionEvaluator,
    EntryPointOf,
    ModuleLoading,
    dotted_name,
)
from flake8_importpolicy.analysis.importtime.bindings import Scope
from flake8_importpolicy.analysis.importtime.flow import Flow
from flake8_importpolicy.analysis.importtime.sites import SiteRecorder, literal_strings
from flake8_importpolicy.analysis.syspath import (
    FINDER_ADDERS,
    SYS_PATH_CHANGERS,
    evaluate_path,
    find_added_paths,
    may_be_path,
)
from flake8_importpolicy.model.facts import (
    EXPANDED_ANCHOR_MARKS,
    PathChange,
    UnresolvedSite,
    entry_point_anchor,
)
from flake8_importpolicy.model.graph import Construct, Flag

__all__ = [
    "DYNAMIC_IMPORTERS", "MODULE_READERS", "DynamicRecorder", "keyword_value", "unparse",
]

DYNAMIC_IMPORTERS: Final = frozenset({
    "importlib.import_module", "__import__", "builtins.__import__", "importlib.__import__",
    "importlib._bootstrap._gcd_import",
})
MODULE_READERS: Final = frozenset({
    "importlib.resources.files", "importlib.resources.read_text", "importlib.resources.read_binary",
    "importlib.resources.open_text", "importlib.resources.open_binary", "importlib.resources.path",
    "importlib.resources.contents", "importlib.resources.is_resource",
    "importlib.util.find_spec", "pkgutil.resolve_name",
})
"""Standard-library functions that import the module they are given: ``find_spec("a.b")`` imports
``a`` (its parent), ``importlib.resources.files("pkg")`` imports ``pkg``, ``pkgutil.resolve_name
("a.b:c")`` imports ``a.b``."""


class DynamicRecorder:
    """The import sites of ``importlib.import_module``/``__import__`` and of the standard-library
    functions that import the module they are given, the computable ``sys.path`` additions, and
    the constructs whose effect is unknown."""

    def __init__(
        self, flow: Flow, imports: SiteRecorder, scope: Scope, conditions: ConditionEvaluator
    ) -> None:
        self.flow = flow
        self.imports = imports
        self.scope = scope
        self.aliases: Mapping[str, str] = scope.aliases
        self.conditions = conditions
        # what cannot be resolved (IPL006), and the computable sys.path additions (rule 7)
        self.unresolved_sites: list[UnresolvedSite] = []
        self.path_changes: list[PathChange] = []
        self.self_imports: list[str] = []  # in a method: ``import_module(self.attr)``'s attributes
        # how many more constant strings passed to exec/eval are analysed (their nesting can grow
        # exponentially under conditions the engine cannot evaluate)
        self.exec_budget: int = 64

    def unresolved(
        self, node: ast.expr | ast.stmt, construct: Construct, flags: frozenset[Flag]
    ) -> None:
        self.unresolved_sites.append(UnresolvedSite(
            node.lineno, node.col_offset, construct, unparse(node), tuple(sorted(flags))
        ))

    def assigned_target(self, target: ast.expr, flags: frozenset[Flag]) -> None:
        """An assignment to ``target`` (not a name): ``sys.path[...] = ...`` or ``sys.path = ...``
        changes the path in a way the engine does not follow (rule 7)."""
        if dotted_name(
            target.value if isinstance(target, ast.Subscript) else target, self.aliases
        ) == "sys.path":
            self.unresolved(target, Construct.SYS_PATH, flags)

    def assigned(self, targets: list[ast.expr], value: ast.expr | None, flags: frozenset[Flag]) -> None:
        """``targets = value``: ``sys.path`` or ``sys.modules`` bound to another name (changed
        through it, rule 7), a module-level ``__getattr__`` bound to a value (a PEP 562 hook from
        elsewhere), and a name bound to a path the engine computes (rule 7)."""
        if value is not None and dotted_name(value, self.aliases) in ("sys.path", "sys.modules"):
            self.unresolved(value, Construct.SYS_PATH, flags)  # changed through another name
        if (
            self.flow.module_level()
            and value is not None
            and not isinstance(value, ast.Call)
            and any(isinstance(t, ast.Name) and t.id == "__getattr__" for t in targets)
        ):
            self.unresolved(value, Construct.GETATTR_IMPORT, flags)  # a hook bound by name
        if (
            not self.flow.in_function
            and value is not None
            and len(targets) == 1
            and isinstance(targets[0], ast.Name)
            and may_be_path(value)
        ):
            path = evaluate_path(value, self.aliases, self.conditions.constant, self.scope.path_names)
            if path is not None:
                self.scope.set_path(targets[0].id, path)

    def import_call(self, call: ast.Call, flags: frozenset[Flag], name: str) -> None:
        """Record ``importlib.import_module(...)`` / ``__import__(...)`` at the call's position.

        The call's own line is used (not its statement's) so that a call in a decorator is reported,
        and can be suppressed with ``# noqa``, on the decorator's line.
        """
        first = call.args[0] if call.args else keyword_value(call, "name")
        if (
            self.flow.in_function
            and isinstance(first, ast.Attribute)
            and isinstance(first.value, ast.Name)
            and first.value.id == "self"
        ):
            self.self_imports.append(first.attr)
        value = self.conditions.constant(first) if first is not None else UNKNOWN
        if isinstance(value, Anchored) and value.anchor.startswith(EXPANDED_ANCHOR_MARKS):
            # ``f"{ep.value}.compiler"`` of an installed entry point, a name ``pkgutil.iter_modules``
            # gave: the graph puts each one in
            rest = value.rest[1:]
            if not value.rest or (
                value.rest.startswith(".") and all(part.isidentifier() for part in rest.split("."))
            ):
                self.imports.add(call, "importlib", rest, flags, level=1, anchor=value.anchor)
            else:
                self.imports.add(call, "importlib", None, flags, detail=unparse(call))
            return
        if isinstance(value, Anchored) and value.rest.startswith(".") and value.rest.strip("."):
            # ``__name__ + ".x"``, ``f"{__package__}.y"``: relative to the module (rule 14)
            self.imports.add(call, "importlib", value.rest.lstrip("."), flags, level=1,
                             anchor=value.anchor)
            return
        literal = value if isinstance(value, str) else None
        if literal is None or not literal.strip("."):
            self.imports.add(call, "importlib", None, flags, detail=unparse(call))
            return
        level = len(literal) - len(literal.lstrip("."))
        anchor = "__package__"
        if name == "importlib._bootstrap._gcd_import":
            if level or len(call.args) > 1 or call.keywords:  # its package and level: not followed
                self.imports.add(call, "importlib", None, flags, detail=unparse(call))
            else:
                self.imports.add(call, "importlib", literal, flags)
            return
        if name == "importlib.import_module" and level:
            package = call.args[1] if len(call.args) > 1 else keyword_value(call, "package")
            module = self._module_name_of(package)
            if module is not None and module.startswith(".") and level == 1:
                # ``package=polyfills.__name__`` after ``from .. import polyfills``: relative to
                # this module's package, as the from-import was
                dots = len(module) - len(module.lstrip("."))
                self.imports.add(call, "importlib", f"{module[dots:]}.{literal[1:]}", flags,
                                 level=dots)
                return
            anchor_or_none = module if module is not None and not module.startswith(".") \
                else self._anchor(package)
            if anchor_or_none is None:
                self.imports.add(call, "importlib", None, flags, detail=unparse(call))
                return
            anchor = anchor_or_none
        fromlist: tuple[str, ...] = ()
        if name != "importlib.import_module":
            dunder_level = _dunder_import_level(call)
            if dunder_level is None:
                self.imports.add(call, "importlib", None, flags, detail=unparse(call))
                return
            level = dunder_level
            names = call.args[3] if len(call.args) > 3 else keyword_value(call, "fromlist")
            fromlist = tuple(literal_strings(names) or ()) if names is not None else ()
        self.imports.add(call, "importlib", literal.lstrip("."), flags, level=level, anchor=anchor,
                         names=fromlist)

    def _module_name_of(self, node: ast.expr | None) -> str | None:
        """``m.__name__`` of a name an import bound to module ``m``: its dotted name (relative,
        with its leading dots, when the import was), else None."""
        if (
            isinstance(node, ast.Attribute) and node.attr == "__name__"
            and isinstance(node.value, ast.Name) and node.value.id in self.aliases
        ):
            return self.aliases[node.value.id]
        return None

    def _anchor(self, node: ast.expr | None) -> str | None:
        if node is None:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name) and node.id in ("__name__", "__package__"):
            return node.id
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            return self._anchor(node.values[0])
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            if isinstance(node.value, ast.Name) and node.value.id == "__spec__":
                return "__package__"
        if isinstance(node, ast.Name):  # a name bound to a known value (``package, m = MAP[k]``)
            value = self.conditions.constant(node)
            if isinstance(value, str) and value:
                return value
            if isinstance(value, Anchored) and not value.rest:
                return value.anchor
        return None

    def _module_reader(self, call: ast.Call, name: str, flags: frozenset[Flag]) -> None:
        """The import ``find_spec``/``importlib.resources``/``pkgutil.resolve_name`` makes."""
        first = call.args[0] if call.args else None
        if first is None and name in ("importlib.util.find_spec", "pkgutil.resolve_name"):
            first = keyword_value(call, "name")
        value = self.conditions.constant(first) if first is not None else UNKNOWN
        if name == "importlib.util.find_spec" and isinstance(value, Anchored):
            if value.rest.startswith(".") and not value.rest.startswith(".."):  # f"{__name__}.a.b"
                self._find_spec_relative(call, value.rest, value.anchor, flags)
            return
        if isinstance(value, Anchored) or (
            isinstance(first, ast.Name) and first.id in self.aliases  # a module object: imported
        ):
            return
        if name == "importlib.util.find_spec" and isinstance(value, str) and value.startswith("."):
            package = call.args[1] if len(call.args) > 1 else keyword_value(call, "package")
            self._find_spec_relative(call, value, self._anchor(package), flags)
            return
        if not isinstance(value, str) or value.startswith("."):
            self.unresolved(call, Construct.DYNAMIC_IMPORT, flags)
            return
        if name == "importlib.util.find_spec":
            target = value.rpartition(".")[0]  # finding ``a.b`` imports the package ``a``
        elif name == "pkgutil.resolve_name":
            target, colon, _ = value.partition(":")
            if not colon:  # imports as many leading parts as are modules
                flags = flags | {Flag.CONDITIONAL}
        else:
            target = value
        if target:
            self.imports.add(call, "importlib", target, flags)

    def _find_spec_relative(
        self, call: ast.Call, value: str, anchor: str | None, flags: frozenset[Flag]
    ) -> None:
        """``find_spec(".b.c", package)``: the parent of the name ``importlib.util.resolve_name``
        makes of it is imported (rule 14); ``anchor`` is ``package`` (see :meth:`_anchor`). Relative
        to the module's own name or package (``__name__``, ``__package__``, ``__spec__.parent``) a
        name without a dot has a parent already imported."""
        level = len(value) - len(value.lstrip("."))
        rest = value[level:]
        if anchor is None or not all(part.isidentifier() for part in rest.split(".") if rest):
            self.unresolved(call, Construct.DYNAMIC_IMPORT, flags)
        elif anchor in ("__name__", "__package__"):
            if "." in rest:
                self.imports.add(call, "importlib", rest.rpartition(".")[0], flags, level=level,
                                 anchor=anchor)
        else:
            bits = anchor.rsplit(".", level - 1)
            if len(bits) < level:  # ImportError: beyond the top-level package
                self.unresolved(call, Construct.DYNAMIC_IMPORT, flags)
                return
            target = (f"{bits[0]}.{rest}" if rest else bits[0]).rpartition(".")[0]
            if target:
                self.imports.add(call, "importlib", target, flags)

    def runs_loaded_module(self, call: ast.Call, flags: frozenset[Flag]) -> bool:
        """Record ``loader.exec_module(module)`` of a module made from the spec of a module in
        the package's own directory (:class:`ModuleLoading`; triton's ``triton.language.extra``
        runs its subpackages so): it runs that module (its package is the one running); and
        ``ep.load()`` of a loop's entry point (:class:`EntryPointOf`): it imports the module of
        each (``importlib.metadata.EntryPoint.load``). False for another call."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "load" and not call.args \
                and not call.keywords and isinstance(func.value, ast.Name):
            point = self.conditions.constant(func.value)
            if not isinstance(point, EntryPointOf):
                return False
            # ``EntryPoint.load()`` imports the module part of the entry point's value
            anchor = entry_point_anchor(point.group, point.name, "module")
            self.imports.add(call, "importlib", "", flags, level=1, anchor=anchor)
            return True
        if not (isinstance(func, ast.Attribute) and func.attr == "exec_module"
                and len(call.args) == 1 and not call.keywords):
            return False
        module = self.conditions.constant(call.args[0])
        if not isinstance(module, ModuleLoading) or module.stage != "module":
            return False
        self.imports.add(call, "importlib", "", flags, level=1, anchor=module.anchor)
        return True

    def dynamic_import(self, call: ast.Call, flags: frozenset[Flag]) -> bool:
        """Record ``importlib.import_module``/``__import__``; False if ``call`` is another call."""
        name = dotted_name(call.func, self.aliases)
        if name is None or name not in DYNAMIC_IMPORTERS:
            return False
        self.import_call(call, flags, name)
        return True

    def held_importer(self, call: ast.Call, name: str, flags: frozenset[Flag]) -> bool:
        """``call`` calls ``name`` through a variable that holds it (``load =
        importlib.import_module`` then ``load("x")``, rule 16): recorded as a call of ``name``
        itself when it is an importer, a module reader or a ``sys.path`` changer; False (nothing
        recorded) for any other function."""
        if name in DYNAMIC_IMPORTERS:
            self.import_call(call, flags, name)
        elif name in MODULE_READERS or name in SYS_PATH_CHANGERS or name in FINDER_ADDERS or (
            name == "site.addsitedir"
        ):
            self.special_call(call, name, flags)
        else:
            return False
        return True

    def special_call(self, call: ast.Call, name: str, flags: frozenset[Flag]) -> None:
        """``sys.path`` changes (rule 7) and standard-library functions that import the module
        they are given (rule 14); ``name`` is the called name (not ``exec``/``eval``: the walker
        analyses a constant string where it runs)."""
        if name in MODULE_READERS:
            self._module_reader(call, name, flags)
        elif name == "site.addsitedir" or name in FINDER_ADDERS:
            # a finder or path hook added (toolz's ``sys.meta_path.append(TlzLoader())``): the
            # imports it serves are not found by path search, what it runs for them is not known
            self.unresolved(call, Construct.SYS_PATH, flags)
        elif name in SYS_PATH_CHANGERS:
            added = None
            if not self.flow.in_function:
                added = find_added_paths(
                    call, name.rpartition(".")[2], self.aliases, self.conditions.constant,
                    self.scope.path_names,
                )
            if added is None:
                self.unresolved(call, Construct.SYS_PATH, flags)
            else:
                self.path_changes.extend(
                    PathChange(call.lineno, call.col_offset, value.up, value.parts) for value in added
                )


def keyword_value(call: ast.Call, name: str) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    return None


def _dunder_import_level(call: ast.Call) -> int | None:
    level = call.args[4] if len(call.args) > 4 else keyword_value(call, "level")
    if level is None:
        return 0
    if isinstance(level, ast.Constant) and level.value == 0:
        return 0
    return None  # relative __import__ with globals(): not modelled, reported as unknown


def unparse(node: ast.AST) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001 - unparse of odd trees is best effort
        return "<dynamic import>"
    return text if len(text) <= 120 else text[:117] + "..."
