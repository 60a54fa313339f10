"""The facts the import-time graph reads: a module's, one function body's, and what is derived from
them once per module (the submodules its module-level code imports unconditionally).

Every concern of :mod:`flake8_importpolicy.analysis.hops` asks one :class:`FactsLookup`, so each
module's facts are asked of the provider once (:mod:`flake8_importpolicy.analysis.sources` parses
or reads a cache), whichever concern asks first. The name arithmetic every concern shares is here
too: relative names (docs/semantics.md rule 4) and what a module defines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from flake8_importpolicy.analysis.resolve import ModuleIndex
from flake8_importpolicy.model.facts import (
    EXPANDED_ANCHOR_MARKS,
    FunctionFacts,
    ImportSite,
    ModuleFacts,
    SourceProblem,
)
from flake8_importpolicy.model.graph import BoundArgument, CallNode, FunctionNode, module_of
from flake8_importpolicy.model.interpreter import ResolvedModule

__all__ = [
    "FactsLookup",
    "FactsProvider",
    "FunctionFactsProvider",
    "absolute",
    "defines",
    "is_compiled_only",
    "resolve_relative",
]

FactsProvider = Callable[[ResolvedModule], ModuleFacts]
"""Returns the import facts of a module with source (parses it, or reads a cache)."""

FunctionFactsProvider = Callable[
    [ResolvedModule, str, "BoundArgument"], FunctionFacts | SourceProblem | None
]
"""Returns the facts of one function body of a module (asked only when a call reaches it), with its
first parameter bound to the given string if any; None if the module has no function of that
qualified name, or why the module's source cannot be analysed (a syntax error inside that body:
module facts come from a parse without function bodies)."""


class FactsLookup:
    """The facts of the modules and function bodies the graph reaches, each asked for once.

    The arguments are :class:`~flake8_importpolicy.analysis.graph.ImportGraph`'s of the same
    names, ``None`` for its defaults (the graph makes the one lookup its concerns share).
    """

    def __init__(
        self,
        index: ModuleIndex,
        facts: FactsProvider,
        function_facts: FunctionFactsProvider | None,
        follows: Callable[[str], bool] | None,
    ) -> None:
        self.index = index
        self._provider = facts
        self._function_provider = function_facts
        self._follows = follows
        self._facts: dict[str, ModuleFacts | None] = {}
        self._function_facts: dict[tuple[str, str, BoundArgument], FunctionFacts | None] = {}
        self._function_problems: dict[tuple[str, str, BoundArgument], SourceProblem] = {}
        self._unconditional: dict[str, dict[str, int]] = {}

    def get_facts(self, module: str) -> ModuleFacts | None:
        """The import facts of ``module``, or None if it has no analysable source."""
        module = module_of(module)
        if module not in self._facts:
            resolved = self.index.resolve_module(module)
            if resolved.has_source:
                self._facts[module] = self._provider(resolved)
            elif is_compiled_only(resolved):  # runs code nobody can read: unanalysable (IPL005)
                self._facts[module] = ModuleFacts(problem=SourceProblem(1, _COMPILED_ONLY))
            else:
                self._facts[module] = None
        return self._facts[module]

    def get_function_facts(
        self, module: str, qualname: str, argument: BoundArgument = None
    ) -> FunctionFacts | None:
        """The facts of the function body ``qualname`` of ``module`` (None if it has no such
        function, or no analysable source), with its first parameter bound to ``argument`` when
        that is given (a PEP 562 ``__getattr__`` run for one name)."""
        module = module_of(module)
        key = (module, qualname, argument)
        if key in self._function_facts:
            return self._function_facts[key]
        facts = self.get_facts(module)
        found: FunctionFacts | None = None
        if facts is not None and facts.problem is None:
            if self._function_provider is None or (facts.functions and argument is None):
                found = facts.functions.get(qualname)
            else:
                provided = self._function_provider(
                    self.index.resolve_module(module), qualname, argument
                )
                if isinstance(provided, SourceProblem):
                    self._function_problems[key] = provided
                else:
                    found = provided
        self._function_facts[key] = found
        return found

    def find_problem(self, module: str) -> SourceProblem | None:
        """Why ``module``'s source could not be analysed, or None. For a function node
        (``"a.b:f"``): also a syntax error in that function's body, which the module-level
        extraction does not parse (so the call's chain stops there)."""
        if isinstance(module, CallNode):
            return None
        facts = self.get_facts(module_of(module))
        if facts is None or facts.problem is not None or not isinstance(module, FunctionNode):
            return facts.problem if facts is not None else None
        key = (module.module, module.qualname, module.argument)
        self.get_function_facts(*key)
        return self._function_problems.get(key)

    def is_followed(self, module: str, resolved: ResolvedModule) -> bool:
        """Whether calls into ``module`` and its PEP 562 ``__getattr__`` are followed."""
        if self._follows is not None:
            return self._follows(module)
        return resolved.origin == "first-party"

    def when_lets_run(self, site: ImportSite, module: str, is_package: bool) -> bool:
        """Whether the names of ``site.when`` (:attr:`ImportSite.when`) may have the truths the
        site runs under: False only when one's defining module, found through the imports that
        bound it, gives it the other truth when it has run."""
        for written, truth in site.when:
            if self.truth_of(written, module, is_package) is (not truth):
                return False
        return True

    def truth_of(self, written: str, module: str, is_package: bool) -> bool | None:
        """The truth of the value name ``written`` (through ``module``'s imports: ``.utils.SLOW``,
        ``app.settings.STRICT``) has once its defining module has run, or None if unknown: the
        module that binds it to a constant (:attr:`ModuleValues.truths`), followed through the
        from-imports that re-export it (at most :data:`_REEXPORTS` of them)."""
        for _ in range(_REEXPORTS):
            level = len(written) - len(written.lstrip("."))
            base, _, name = written[level:].rpartition(".")
            owner = absolute("." * level + base, module, is_package) if level else base
            if not owner or not name:
                return None
            facts = self.get_facts(owner)
            if facts is None or facts.problem is not None:
                return None
            if name in facts.values.truths:
                return facts.values.truths[name]
            written = facts.aliases.get(name, "")
            if not written or name not in facts.bindings:
                return None
            module, is_package = owner, self.index.resolve_module(owner).is_package
        return None

    def imports_submodule(self, node: str, submodule: str, before: int | None = None) -> bool:
        """Whether ``node``'s module-level code imports ``submodule`` unconditionally (before line
        ``before``, when given): its package then has the attribute (rule 2)."""
        if isinstance(node, FunctionNode):
            return False
        line = self._unconditional_imports(module_of(node)).get(submodule)
        return line is not None and (before is None or line < before)

    def _unconditional_imports(self, module: str) -> dict[str, int]:
        """Each module that ``module``'s module-level code imports unconditionally (an ``import``'s
        module, a from-import's base and ``base.name`` for each name), with its first line; computed
        once per module."""
        found = self._unconditional.get(module)
        if found is not None:
            return found
        found = {}
        facts = self.get_facts(module)
        if facts is not None and facts.problem is None:
            is_package = self.index.resolve_module(module).is_package
            for site in facts.sites:
                if site.flags or site.target is None:
                    continue
                base = resolve_relative(site, module, is_package)
                if base is None:
                    continue
                names = [f"{base}.{name}" for name in site.names] if site.kind == "from-import" else []
                for imported in (base, *names):
                    if site.line < found.get(imported, site.line + 1):
                        found[imported] = site.line
        self._unconditional[module] = found
        return found


_COMPILED_ONLY: Final = "no source, only compiled bytecode (.pyc)"

_REEXPORTS: Final = 8
"""From-imports :meth:`FactsLookup.truth_of` follows from the name as written to its definition."""


def is_compiled_only(resolved: ResolvedModule) -> bool:
    """A first-party module found as a ``.pyc`` file without its source: it runs, but what it imports
    cannot be known (reported as unanalysable, not taken to import nothing)."""
    return resolved.kind == "bytecode" and resolved.origin == "first-party" and resolved.path is not None


def defines(facts: ModuleFacts, qualname: str) -> bool:
    """Whether the module defines the function ``qualname`` (``"f"``, ``"C.m"``)."""
    return qualname in facts.function_names or qualname in facts.functions


def absolute(dotted: str, module: str, is_package: bool) -> str | None:
    """Resolve a possibly relative dotted name (``.helpers.setup``) against ``module``."""
    level = len(dotted) - len(dotted.lstrip("."))
    if not level:
        return dotted
    site = ImportSite(line=0, col=0, kind="import", target=dotted[level:], level=level)
    return resolve_relative(site, module, is_package)


def resolve_relative(site: ImportSite, module: str, is_package: bool) -> str | None:
    """The absolute module name an import site names, or None if it climbs above the top level.

    Relative imports resolve against ``__package__`` — ``module`` itself for a package's
    ``__init__``, its parent otherwise — climbing one package per extra dot (PEP 328;
    ``importlib._bootstrap._resolve_name``; docs/semantics.md rule 4). ``import_module(".x",
    __name__)`` resolves against the module's own name.
    """
    target = site.target or ""
    if site.level == 0:
        return target or None
    if site.anchor.startswith(EXPANDED_ANCHOR_MARKS):  # one per module it stands for: ImportSites
        return None
    if site.anchor == "__name__":
        anchor = module
    elif site.anchor == "__package__":
        anchor = module if is_package else module.rpartition(".")[0]
    else:
        anchor = site.anchor
    bits = anchor.rsplit(".", site.level - 1) if anchor else []
    if not anchor or len(bits) < site.level:
        return None
    base = bits[0]
    return f"{base}.{target}" if target else base
