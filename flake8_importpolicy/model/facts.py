"""What a module does at import time: the facts extraction finds in one module's source.

Value objects only (frozen dataclasses and enums); :mod:`flake8_importpolicy.analysis.extract` computes
them, caches store them as JSON, and the graph turns them into hops.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:
    from flake8_importpolicy.model.graph import Construct, Flag

__all__ = [
    "ANY_ATTRIBUTE",
    "UNKNOWN_ENVIRON_VALUE",
    "AttributeRead",
    "CallBinding",
    "EnvironWrite",
    "LazyAttach",
    "CallKind",
    "CallSite",
    "FunctionFacts",
    "Guard",
    "ImportSite",
    "LazyImports",
    "ModuleAll",
    "ModuleClasses",
    "ModuleFacts",
    "ModuleGetattr",
    "ModuleValues",
    "PathChange",
    "SiteKind",
    "SourceProblem",
    "SourceRead",
    "Target",
    "UnresolvedSite",
    "anchored_argument",
    "assumption_text",
    "distribution_entry",
    "entry_point_anchor",
    "own_modules_anchor",
    "parse_entry_point_anchor",
    "parse_own_modules_anchor",
    "resolve_argument",
]


SiteKind = Literal["import", "from-import", "star-import", "importlib"]

LazyImports = Literal["normal", "all", "none"]
"""The PEP 810 world an analysis is for (``settings.lazy-imports``): ``lazy`` keywords and
``__lazy_modules__`` as written, every eligible import lazy (``-X lazy_imports=all``), or every
import eager (``-X lazy_imports=none``)."""


def assumption_text(key: str, value: bool | int | str | None, environ: bool = False) -> str:
    """An ``[assume]`` entry as a policy writes it and chains name it: ``"a.f()" = false``,
    ``"a.B" = "x"``, ``environ."VAR" = "1"`` (``false`` for a variable that is not set)."""
    if isinstance(value, bool) or value is None:
        shown = "true" if value else "false"
    elif isinstance(value, str):
        shown = json.dumps(value, ensure_ascii=False)
    else:
        shown = str(value)
    name = json.dumps(key, ensure_ascii=False)
    return f"environ.{name} = {shown}" if environ else f"{name} = {shown}"


@dataclass(frozen=True)
class Target:
    """The interpreter(s) an analysis is for.

    Attributes:
        versions: ``(major, minor)`` pairs; conditions on ``sys.version_info`` are evaluated for each and
            a branch runs if it runs for any of them (the union). Must not be empty.
        platform: a ``sys.platform`` value (``"linux"``, ``"win32"``, ``"darwin"``); ``os.name`` is
            derived from it (``"nt"`` for ``win32``, else ``"posix"``).
        lazy_imports: the PEP 810 world (``settings.lazy-imports``).
        assume: the policy's ``[assume]`` entries, ``(canonical key, value)`` sorted by key
            (:func:`~flake8_importpolicy.model.patterns.canonical_assumption_key`).
        environ: the policy's ``[assume.environ]`` entries, ``(variable, value or None for not
            set)``, sorted.
    """

    versions: tuple[tuple[int, int], ...]
    platform: str
    lazy_imports: LazyImports = "normal"
    assume: tuple[tuple[str, bool | int | str], ...] = ()
    environ: tuple[tuple[str, str | None], ...] = ()

    @classmethod
    def running(cls) -> Target:
        """Return the target of the running interpreter."""
        return cls(versions=(sys.version_info[:2],), platform=sys.platform)

    @property
    def os_name(self) -> str:
        """``os.name`` on this platform."""
        return "nt" if self.platform == "win32" else "posix"

    def key(self) -> str:
        """A short stable string identifying the target (for cache keys)."""
        versions = ",".join(f"{major}.{minor}" for major, minor in self.versions)
        key = f"{versions};{self.platform};{self.lazy_imports}"
        if self.assume or self.environ:  # facts depend on what the conditions are assumed to be
            key += ";" + json.dumps([self.assume, self.environ], sort_keys=True)
        return key


@dataclass(frozen=True)
class Guard:
    """The import guard a site or call runs under (docs/semantics.md rule 12): it runs only if
    whether every module of ``modules`` is found (relative names keep their leading dots; an
    entry ``"name:a,b"`` also needs ``a`` and ``b`` to be importable from it) is ``resolves``. An
    ``except ImportError`` fallback of a ``try`` of imports runs only if one is missing
    (``resolves`` False), as does the ``except PackageNotFoundError`` handler of a ``try`` of
    ``importlib.metadata.version(...)`` calls (its entries are :func:`distribution_entry`), and
    ``if HAS_X:`` after ``try: import x; HAS_X = True`` / ``except
    ImportError: HAS_X = False`` only if ``x`` is found (``resolves`` True).

    Attributes:
        modules: the modules of the guard, never empty.
        resolves: whether they must all be found for the guarded code to run.
    """

    modules: tuple[str, ...]
    resolves: bool = True

    @classmethod
    def of(cls, requirement: tuple[tuple[str, ...], bool] | None) -> Guard | None:
        """The guard of a walker's ``(modules, resolves)`` requirement, or None for none (or for
        one without modules: nothing to decide)."""
        if requirement is None or not requirement[0]:
            return None
        return cls(*requirement)


@dataclass(frozen=True)
class ImportSite:
    """One import that runs when its module is imported.

    Attributes:
        line: 1-based first line of the statement that contains the import.
        col: 0-based column of that statement.
        kind: ``import`` (``import a.b``), ``from-import`` (``from a import b``), ``star-import``
            (``from a import *``) or ``importlib`` (``importlib.import_module("a")`` / ``__import__``).
        target: the dotted module name as written, without leading dots (``""`` for ``from . import x``);
            ``None`` for a dynamic import whose argument is not a literal (an unknown import).
        level: number of leading dots of a relative import (PEP 328); 0 for absolute imports.
        anchor: what a relative import is relative to: ``"__package__"`` for import statements and
            ``import_module(".x", __package__)``, ``"__name__"`` for ``import_module(".x", __name__)``,
            or a literal package name given as ``import_module``'s ``package`` argument, or
            an :func:`entry_point_anchor` (each installed entry point of a group) or an
            :func:`own_modules_anchor` (each module in the package's own directory).
        names: for ``from-import``, the imported names (``from a import b, c`` gives ``("b", "c")``).
        flags: sorted :class:`Flag` values (``guarded``, ``conditional``, ``fallback``,
            ``eager-before-3.15``).
        detail: for unknown imports, the source text of the call (shown by ``importpolicy why``).
        lazy_use_line: for a PEP 810 lazy import that import-time code uses, the line of that use.
        guard: the import guard the site runs under (:class:`Guard`; docs/semantics.md rule
            12), or None.
        after: the top-level packages of the eager imports that come before the site in its own
            block or an enclosing one (``import torch`` above ``from .x import y`` in ``if
            is_torch_available():``): if path search does not find one, CPython raised
            ``ModuleNotFoundError`` there and the site never runs (docs/semantics.md rule 12).
        loaded: the modules a ``"X" in sys.modules`` test the site runs under needs imported
            already (scipy's ``if "sphinx" in sys.modules: from sphinx.ext.autodoc import ALL``):
            the site runs only if the closure imports them (docs/semantics.md rule 13).
        assumed: the ``[assume]`` entries (:func:`assumption_text`) that decided a condition this
            site runs under: without them it would not run, or only conditionally.
        when: ``(name as written, truth)`` of names another module binds (``from .utils import
            SLOW``, ``settings.STRICT``) that the undecided tests the site runs under depend on
            alone: the site runs only if each name's value has that truth. The graph decides it
            from the defining module's :attr:`ModuleValues.truths` (docs/semantics.md rule 13);
            unknown there, the site stays ``conditional``.
    """

    line: int
    col: int
    kind: SiteKind
    target: str | None
    level: int = 0
    anchor: str = "__package__"
    names: tuple[str, ...] = ()
    flags: tuple[Flag, ...] = ()
    detail: str = ""
    lazy_use_line: int | None = None
    guard: Guard | None = None
    assumed: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    loaded: tuple[str, ...] = ()
    when: tuple[tuple[str, bool], ...] = ()


CallKind = Literal[
    "call", "decorator-factory", "metaclass", "subclass", "class-attribute", "super", "with"
]


EnvironWrite = tuple[str, str | None, bool]
"""An environment variable the code set before a call: ``(name, value or None, certain)``."""

UNKNOWN_ENVIRON_VALUE: Final = "\0"
"""The value of a write whose value is not a constant (no environment variable holds NUL)."""


@dataclass(frozen=True)
class CallSite:
    """A call made when its scope runs (at import time for a module, when called for a function).

    Attributes:
        line, col: the call's position (1-based line, 0-based column).
        callee: the called name as a dotted path through the scope's import aliases: ``helpers.setup``
            after ``from mypkg import helpers`` is ``mypkg.helpers.setup``; a relative import keeps its
            leading dots (``.helpers.setup``).
        local: the first segment is a ``def`` or ``class`` of this module (not an import).
        kind: ``call``; ``decorator-factory`` (``@f(...)``: ``f`` runs, then the function it returns);
            ``metaclass`` (a class statement's ``metaclass=``); ``subclass`` (a base class: its
            ``__init_subclass__`` runs); ``class-attribute`` (an instance created in a class body:
            its ``__set_name__`` runs too); ``super`` (``super().m()`` in a method of ``C``: the
            callee is ``C.m``, looked up in ``C``'s bases); ``with`` (``with C():``: ``__enter__``
            and ``__exit__`` run).
        flags: as for :class:`ImportSite`.
        assumed: as for :class:`ImportSite`.
        environ: the environment variables the scope's code set or removed before the call
            (``os.environ["X"] = "1"``, ``.setdefault``, ``del os.environ["X"]``, ``.pop``), each
            ``(name, value or None for removed, certain)``: ``certain`` False for a write that may
            not run (in a branch, a handler, a ``try`` body); :data:`UNKNOWN_ENVIRON_VALUE` for a
            value that is not a constant. A ``[heavy-calls]`` rule's ``unless-environ`` reads it.
        arguments: for a ``call``, its positional arguments up to the last whose value is a known
            string (None for the others): a literal, a constant, a bound parameter; one computed
            from the module's own name is :func:`anchored_argument` text (docs/semantics.md rule
            16: the called body is analysed with its parameters bound to them).
        guard: as for :class:`ImportSite`: the call is made only where its :class:`Guard` lets
            the code run (``if HAS_X:``, an ``except ImportError`` handler of a ``try`` of imports).
    """

    line: int
    col: int
    callee: str
    local: bool
    kind: CallKind = "call"
    flags: tuple[Flag, ...] = ()
    assumed: tuple[str, ...] = ()
    environ: tuple[EnvironWrite, ...] = ()
    arguments: tuple[str | None, ...] = ()
    guard: Guard | None = None


ANCHOR_MARK: Final = "\x00"
"""Starts a :attr:`CallSite.arguments` value computed from the calling module's name:
``"\\x00__package__\\x00.rest"`` is ``__package__ + ".rest"`` (no string a module name is made of
holds a NUL)."""


def anchored_argument(anchor: str, rest: str) -> str:
    """A :attr:`CallSite.arguments` value for ``anchor + rest`` (``anchor``: ``__name__`` or
    ``__package__``)."""
    return f"{ANCHOR_MARK}{anchor}{ANCHOR_MARK}{rest}"


def resolve_argument(value: str, module: str, is_package: bool) -> str:
    """A :attr:`CallSite.arguments` value in the calling ``module``: an anchored one with the
    module's ``__name__`` or ``__package__`` put in."""
    if not value.startswith(ANCHOR_MARK):
        return value
    anchor, _, rest = value[1:].partition(ANCHOR_MARK)
    base = module if anchor == "__name__" or is_package else module.rpartition(".")[0]
    return base + rest


ENTRY_POINT_MARK: Final = "\x00entry-points\x00"
"""Starts an :attr:`ImportSite.anchor` that stands for each installed entry point of a group
(:func:`entry_point_anchor`); no package name holds a NUL."""


def entry_point_anchor(group: str, name: str | None, field: str) -> str:
    """The :attr:`ImportSite.anchor` of an import relative to a field (``value`` or ``module``) of
    every installed entry point of ``group`` (named ``name`` only, when given):
    ``importlib.import_module(f"{ep.value}.compiler")`` in ``for ep in
    entry_points().select(group="triton.backends")``. The graph puts in each entry point the
    interpreter reports (:attr:`~flake8_importpolicy.model.interpreter.InterpreterInfo.entry_points`;
    ``importlib.metadata.entry_points``, docs/semantics.md rule 14)."""
    return f"{ENTRY_POINT_MARK}{group}\x00{name or ''}\x00{field}"


DISTRIBUTION_MARK: Final = "\x00distribution\x00"
"""Starts a :attr:`Guard.modules` entry that names an installed distribution
(:func:`distribution_entry`), not a module."""


def distribution_entry(name: str) -> str:
    """The :attr:`Guard.modules` entry "distribution ``name`` is installed": the handler of
    ``try: v = importlib.metadata.version("x")`` / ``except PackageNotFoundError:`` runs only if
    it is not (``Guard(..., resolves=False)``; ``importlib.metadata.Distribution.from_name``)."""
    return f"{DISTRIBUTION_MARK}{name}"


OWN_MODULES_MARK: Final = "\x00own-modules\x00"
"""Starts an :attr:`ImportSite.anchor` that stands for each module directly in the package's own
directory (:func:`own_modules_anchor`)."""

EXPANDED_ANCHOR_MARKS: Final = (ENTRY_POINT_MARK, OWN_MODULES_MARK)
"""The anchors the graph expands into one import per module they stand for."""


def own_modules_anchor(packages: bool) -> str:
    """The :attr:`ImportSite.anchor` of an import of each subpackage (``packages``) or each plain
    module directly in the importing package's ``__path__``, as ``pkgutil.iter_modules(__path__,
    __name__ + ".")`` lists them with ``ispkg`` true or false (triton 3.6's
    ``triton.language.extra``, docs/semantics.md rule 14). The graph lists the directories."""
    return f"{OWN_MODULES_MARK}{'packages' if packages else 'modules'}"


def parse_own_modules_anchor(anchor: str) -> bool | None:
    """Whether an :func:`own_modules_anchor` stands for the subpackages (True) or the plain
    modules (False); None for another anchor."""
    if not anchor.startswith(OWN_MODULES_MARK):
        return None
    return anchor[len(OWN_MODULES_MARK):] == "packages"


def parse_entry_point_anchor(anchor: str) -> tuple[str, str | None, str] | None:
    """``(group, name or None, field)`` of an :func:`entry_point_anchor`, None for another anchor."""
    if not anchor.startswith(ENTRY_POINT_MARK):
        return None
    group, _, rest = anchor[len(ENTRY_POINT_MARK):].partition("\x00")
    name, _, field = rest.partition("\x00")
    return group, name or None, field


ANY_ATTRIBUTE: Final = "*"
"""The :attr:`AttributeRead.attr` of a read whose name is not a constant (``getattr(mod, n)``):
any name (never an identifier)."""


@dataclass(frozen=True)
class AttributeRead:
    """``name.attr`` read when its scope runs, where ``name`` was bound by an import or by a call
    (docs/semantics.md rule 19: a read can import a module, through a lazy module object or a PEP
    562 ``__getattr__``).

    Attributes:
        line, col: where the read is.
        name: the local name read from.
        target: the dotted name an import bound ``name`` to (through aliases), or None for a name
            bound by a call (a module-level ``name = callee(...)``: see :class:`CallBinding`).
        attr: the attribute read; :data:`ANY_ATTRIBUTE` when it is not a constant.
        flags: as for :class:`ImportSite`.
        deleted: the attribute is deleted (``del name.attr``), not read: a lazy module object loads
            then too, a class's ``__getattr__`` does not run.
        then: the attributes read in turn on what ``name.attr`` gives (``go.layout.template.Data``:
            ``("template", "Data")``): each may run a lazy module's ``__getattr__`` in turn.
    """

    line: int
    col: int
    name: str
    target: str | None
    attr: str
    flags: tuple[Flag, ...] = ()
    deleted: bool = False
    then: tuple[str, ...] = ()


@dataclass(frozen=True)
class CallBinding:
    """A module-level ``name = callee(...)``: a lazy module object when the callee makes one
    (``LazyLoader("xgr", globals(), "xgrammar")``, ``lazy_loader.load("numpy")``).

    Attributes:
        line: the assignment's line.
        callee: the called name through the module's aliases (relative ones keep their dots).
        local: the callee's first segment is a ``def`` or ``class`` of this module.
        args: each positional argument's value when it is a constant string, else None.
        keywords: ``(keyword, value)`` of keyword arguments with a constant string value.
    """

    line: int
    callee: str
    local: bool
    args: tuple[str | None, ...]
    keywords: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class LazyAttach:
    """A PEP 562 ``__getattr__`` made by ``lazy_loader.attach`` or a copy of it
    (``__getattr__, __dir__, __all__ = attach(__name__, submodules=..., submod_attrs=...)``).

    Also a module that replaces itself in ``sys.modules`` by a lazy module object built from an
    import structure (transformers' ``_LazyModule``).

    Attributes:
        submodules: submodules imported when read as attributes.
        submod_attrs: ``{submodule: names}``: reading one of the names imports the submodule.
        scan_package: the structure is each submodule's ``__all__`` (transformers'
            ``define_import_structure``), found by reading the package's submodules and, through
            its subpackages, their own (keys are dotted paths, ``auto.modeling_auto``).
        scan_prefix: the subpackage whose submodules are read when it is not the package itself
            (``define_import_structure(Path(__file__).parent / "models", prefix="models")``).
        maybe_attrs: ``{submodule: names}`` added to an import structure by code that may not run
            (under a condition, in a ``try`` body or an ``except`` handler): reading one of the
            names may import the submodule (conditional).
        any_name: submodules of an import structure whose names are not computable: reading any
            name may import them (conditional).
    """

    submodules: tuple[str, ...] = ()
    submod_attrs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    scan_package: bool = False
    maybe_attrs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    any_name: tuple[str, ...] = ()
    scan_prefix: str = ""


@dataclass(frozen=True)
class UnresolvedSite:
    """Code in a module or function body that runs when its scope runs and does something the
    engine cannot resolve statically (see :class:`Construct`).

    Attributes:
        line, col: where (1-based line, 0-based column).
        construct: what it is.
        detail: its source text, on one line.
        flags: as for :class:`ImportSite`.
    """

    line: int
    col: int
    construct: Construct
    detail: str
    flags: tuple[Flag, ...] = ()


@dataclass(frozen=True)
class PathChange:
    """``sys.path.append(d)``, ``sys.path.insert(i, d)`` or ``sys.path.extend([d, ...])`` at import
    time with ``d`` computable from ``__file__`` (docs/semantics.md rule 7).

    Attributes:
        line, col: where.
        up: how many directories above the module's own directory ``d`` starts.
        parts: the path below that, one name per part.
    """

    line: int
    col: int
    up: int
    parts: tuple[str, ...]


@dataclass(frozen=True)
class FunctionFacts:
    """What a function's body does when it is called.

    Attributes:
        line: the ``def`` line.
        sites: import sites of the body (nested function bodies excluded).
        calls: calls made by the body.
        returns: names of nested functions the body returns (a decorator factory's decorator).
        attribute_reads: attribute reads on names bound by imports or calls.
        self_imports: attributes of ``self`` the body imports a module by
            (``importlib.import_module(self._name)``; ``__name__`` for ``self.__name__``).
        self_calls: methods the body calls on ``self`` (``self._load()``).
        self_params: ``(attribute, index)``: the body stores its positional parameter ``index``
            (``self`` not counted) in ``self.attribute``; ``("__name__", index)`` for a parameter
            passed on to ``super().__init__`` (a ``types.ModuleType``'s name).
        lazy_params: positional parameters (``self`` not counted) the body makes a lazy module of
            (``importlib.util.find_spec(name)`` with ``LazyLoader``, ``lazy_loader.load(name)``).
        unresolved: what the body does that cannot be resolved (see :class:`UnresolvedSite`).
    """

    line: int
    sites: tuple[ImportSite, ...] = ()
    calls: tuple[CallSite, ...] = ()
    returns: tuple[str, ...] = ()
    attribute_reads: tuple[AttributeRead, ...] = ()
    self_imports: tuple[str, ...] = ()
    self_calls: tuple[str, ...] = ()
    self_params: tuple[tuple[str, int], ...] = ()
    lazy_params: tuple[int, ...] = ()
    unresolved: tuple[UnresolvedSite, ...] = ()


@dataclass(frozen=True)
class SourceProblem:
    """Why a module's source could not be analysed.

    Attributes:
        line: 1-based line of the problem, or 1 when the file could not be read or decoded at all.
        message: what went wrong (``"invalid syntax"``, ``"source code cannot contain null bytes"``).
    """

    line: int
    message: str


@dataclass(frozen=True)
class SourceRead:
    """A source file as the engine read it: what an answer computed from it depends on.

    Attributes:
        digest: the SHA-256 hex digest of the bytes analysed; ``""`` if the file could not be read.
        size, mtime_ns: the file's ``stat`` taken on the open file before its bytes were read
            (None for an editor's buffer, or a file that could not be read).
        read_ns: when it was read (``time.time_ns()``): a file modified within a timestamp tick of
            being read may change again without its ``stat`` changing.
    """

    digest: str
    size: int | None = None
    mtime_ns: int | None = None
    read_ns: int = 0


@dataclass(frozen=True)
class ModuleAll:
    """A module's literal ``__all__``.

    Attributes:
        names: the names (``None`` if absent or not a literal).
        conditional: ``__all__`` was (re)assigned under a condition the engine cannot evaluate, so
            ``names`` is the union of the branches.
    """

    names: tuple[str, ...] | None = None
    conditional: bool = False


@dataclass(frozen=True)
class ModuleGetattr:
    """A module's PEP 562 ``__getattr__``.

    Attributes:
        defined: the module defines a module-level ``__getattr__``.
        attach: the mapping of one made by ``lazy_loader.attach`` or a copy of it (then
            ``defined`` is set too).
    """

    defined: bool = False
    attach: LazyAttach | None = None


@dataclass(frozen=True)
class ModuleClasses:
    """The classes a module defines at import time.

    Attributes:
        names: their qualified names (``"C"``, ``"C.D"``).
        bases: ``{class qualified name: its bases}``, each a class of this module (its qualified
            name) or a dotted name resolved through the module's imports, in the order written; a
            base that is neither (an expression) is left out.
    """

    names: frozenset[str] = frozenset()
    bases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class ModuleValues:
    """What a module's names hold, where it decides what calls and attribute reads run.

    Attributes:
        call_bindings: ``{name: binding}`` of module-level names bound to a call's result
            (candidate lazy module objects, rule 19).
        name_values: ``{name: ((dotted name, undecided), ...)}`` of module-level names bound to
            other names (``f = g``) or to a conditional expression of names (``f = g if test else
            h``): the names as written that the target's branches give, each with whether a test
            on the way was undecided (a call of ``name`` runs what it holds, rule 16).
        truths: ``{name: truth}`` of module-level names whose value when the module has run is a
            known constant (``SLOW = os.environ.get("SLOW", "0").upper() in TRUE_VALUES``): what
            another module's test of the name decides (:attr:`ImportSite.when`).
    """

    call_bindings: Mapping[str, CallBinding] = field(default_factory=dict)
    name_values: Mapping[str, tuple[tuple[str, bool], ...]] = field(default_factory=dict)
    truths: Mapping[str, bool] = field(default_factory=dict)


_NO_ALL: Final = ModuleAll()
_NO_GETATTR: Final = ModuleGetattr()
_NO_CLASSES: Final = ModuleClasses()
_NO_VALUES: Final = ModuleValues()


@dataclass(frozen=True)
class ModuleFacts:
    """What a module does at import time, as far as imports are concerned.

    Attributes:
        sites: the import sites that run at import time, in source order.
        bindings: names bound in the module's namespace by import-time code (assignments, ``def``,
            ``class``, imports, ``for``/``with`` targets, ``match`` captures), less those a later
            module-level ``del`` unbinds. Used for ``from p import name``: CPython imports the
            submodule ``p.name`` only when ``p`` did not bind ``name``
            (``importlib._bootstrap._handle_fromlist``).
        exports: the module's literal ``__all__`` (:class:`ModuleAll`; ``all_names`` and
            ``all_conditional`` read it).
        binding_lines: the line of the statement that first binds each name of ``bindings`` at
            module level (a circular import can see the module before that line has run).
        getattr_hook: the module-level ``__getattr__`` (PEP 562; :class:`ModuleGetattr`;
            ``defines_getattr`` and ``lazy_attach`` read it).
        problem: set when the source could not be parsed; then ``sites`` is empty and the module's
            imports are unknown.
        calls: calls made at import time.
        functions: ``{qualified name: facts}`` for module-level functions (``"f"``), methods of
            module-level classes (``"C.__init__"``) and nested functions (``"f.<locals>.g"``); empty
            when extracted with ``functions=False``.
        function_names: the qualified names of the module-level functions and methods (always set).
        class_tree: the classes defined at import time and their bases (:class:`ModuleClasses`;
            ``classes`` and ``class_bases`` read it).
        aliases: module-level names bound by imports, ``{name: dotted target}`` (relative targets keep
            their leading dots), for following re-exported functions.
        attribute_reads: attribute reads at import time on names bound by imports or calls.
        values: what its names hold (:class:`ModuleValues`; ``call_bindings`` and
            ``name_values`` read it).
        unresolved: what import-time code does that cannot be resolved (IPL006).
        path_changes: computable ``sys.path`` additions made at import time.
    """

    sites: tuple[ImportSite, ...] = ()
    bindings: frozenset[str] = frozenset()
    exports: ModuleAll = _NO_ALL
    getattr_hook: ModuleGetattr = _NO_GETATTR
    problem: SourceProblem | None = None
    binding_lines: Mapping[str, int] = field(default_factory=dict)
    calls: tuple[CallSite, ...] = ()
    functions: Mapping[str, FunctionFacts] = field(default_factory=dict)
    function_names: frozenset[str] = frozenset()
    class_tree: ModuleClasses = _NO_CLASSES
    aliases: Mapping[str, str] = field(default_factory=dict)
    attribute_reads: tuple[AttributeRead, ...] = ()
    values: ModuleValues = _NO_VALUES
    unresolved: tuple[UnresolvedSite, ...] = ()
    path_changes: tuple[PathChange, ...] = ()

    @property
    def call_bindings(self) -> Mapping[str, CallBinding]:
        """``{name: binding}`` of module-level names bound to a call's result (candidate lazy
        module objects)."""
        return self.values.call_bindings

    @property
    def name_values(self) -> Mapping[str, tuple[tuple[str, bool], ...]]:
        """``{name: ((dotted name, undecided), ...)}`` of module-level names bound to other names
        (:class:`ModuleValues`)."""
        return self.values.name_values

    @property
    def all_names(self) -> tuple[str, ...] | None:
        """The literal ``__all__`` (``None`` if absent or not a literal)."""
        return self.exports.names

    @property
    def all_conditional(self) -> bool:
        """``__all__`` was (re)assigned under a condition the engine cannot evaluate."""
        return self.exports.conditional

    @property
    def defines_getattr(self) -> bool:
        """The module defines a module-level ``__getattr__`` (PEP 562)."""
        return self.getattr_hook.defined

    @property
    def lazy_attach(self) -> LazyAttach | None:
        """The mapping of a ``__getattr__`` made by ``lazy_loader.attach`` or a copy of it."""
        return self.getattr_hook.attach

    @property
    def classes(self) -> frozenset[str]:
        """Qualified names of the classes defined at import time (``"C"``, ``"C.D"``)."""
        return self.class_tree.names

    @property
    def class_bases(self) -> Mapping[str, tuple[str, ...]]:
        """``{class qualified name: its bases}`` (:class:`ModuleClasses`)."""
        return self.class_tree.bases
