"""The import-time graph's values: nodes, hops (edges with the statement that makes them) and kinds.

Nodes are dotted module names (``str``, as in grimp), plus two typed kinds of node that are ``str``
too, so that they hash, sort and print like module names and the JSON output shows them as written:

- :class:`FunctionNode` ``"module:qualname"``: a function body run by an import-time call
  (``mypkg.helpers:setup``, ``mypkg.models:Model.__init__``);
- :class:`CallNode` ``"qualname()"``: a call of a ``[heavy-calls]`` function, a leaf
  (``torch.cuda.init()``).

Code asks ``isinstance(node, FunctionNode)`` and ``node.module``; only :func:`parse_node` (for nodes
read back from a cache) knows how the text is spelt.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

__all__ = [
    "Construct",
    "CallNode",
    "BoundArgument",
    "Flag",
    "FunctionNode",
    "Hop",
    "HopKind",
    "UnresolvedCode",
    "module_of",
    "parse_node",
]


BoundArgument = str | tuple[str | None, ...] | None
"""What a function body is analysed with (:class:`FunctionNode`):
nothing, a string its first parameter is bound to, or strings its positional parameters are bound
to (None: not bound)."""


class FunctionNode(str):
    """A function body that import-time code runs: ``"module:qualname"``, or
    ``"module:qualname('argument')"`` when its first parameter is bound to a known string (a PEP 562
    ``__getattr__`` run for one name, docs/semantics.md rule 15), or
    ``"module:qualname(('a', None, 'c'))"`` when its positional parameters are bound to the known
    strings a call passed (None: not known; rule 16).

    Args:
        module: the dotted name of the module that defines it.
        qualname: its qualified name in that module (``f``, ``C.__init__``, ``f.<locals>.g``).
        argument: the value of its first parameter, or of its positional parameters, when the
            caller's are known.
    """

    __slots__ = ()

    def __new__(cls, module: str, qualname: str, argument: BoundArgument = None) -> FunctionNode:
        text = f"{module}:{qualname}" if argument is None else f"{module}:{qualname}({argument!r})"
        return super().__new__(cls, text)

    def __reduce__(self) -> tuple[type[FunctionNode], tuple[str, str, BoundArgument]]:
        """Rebuilt from its parts when a worker process receives it (pickle) or it is copied: the
        constructor takes the parts, not the text (``str.__getnewargs__`` would pass the text)."""
        return type(self), (self.module, self.qualname, self.argument)

    @property
    def module(self) -> str:
        """The defining module."""
        return self.partition(":")[0]

    @property
    def qualname(self) -> str:
        """The function's qualified name in its module."""
        name = self.partition(":")[2]
        return name.partition("(")[0] if name.endswith(")") else name

    @property
    def argument(self) -> BoundArgument:
        """The value bound to the first parameter, or the values bound to the positional ones, if
        any."""
        name = self.partition(":")[2]
        if not name.endswith(")"):
            return None
        return _literal_argument(name[name.index("(") + 1:-1])


@functools.lru_cache(maxsize=4096)
def _literal_argument(text: str) -> BoundArgument:
    """The string (or tuple) a :class:`FunctionNode`'s ``repr``-written argument stands for (asked
    for often: parsed once)."""
    import ast

    value = ast.literal_eval(text)
    if isinstance(value, tuple) and all(item is None or isinstance(item, str) for item in value):
        return value
    return value if isinstance(value, str) else None


class CallNode(str):
    """A call of a ``[heavy-calls]`` function at import time: ``"qualname()"``, a leaf.

    Args:
        callee: the called function's dotted name (``torch.cuda.init``).
    """

    __slots__ = ()

    def __new__(cls, callee: str) -> CallNode:
        return super().__new__(cls, f"{callee}()")

    def __getnewargs__(self) -> tuple[str]:
        return (self.callee,)

    @property
    def callee(self) -> str:
        """The called function's dotted name."""
        return self[:-2]


def module_of(node: str) -> str:
    """The module a node belongs to: itself for a module, the defining module of a function (a call
    node names no module: it is returned as it is)."""
    return node.module if isinstance(node, FunctionNode) else node


def parse_node(text: str) -> str:
    """The node a string spells (as :class:`Hop` fields are written to JSON): a
    :class:`CallNode` for ``"name()"``, a :class:`FunctionNode` for ``"module:qualname"``, else the
    module name itself."""
    if text.endswith("()"):
        return CallNode(text[:-2])
    module, colon, qualname = text.partition(":")
    if not colon:
        return text
    node = FunctionNode(module, qualname)
    return FunctionNode(module, node.qualname, node.argument) if qualname.endswith(")") else node


class Flag(StrEnum):
    """Why an import-time edge may not run, or how it was seen (``Hop.flags``, ``ImportSite.flags``;
    JSON and text show the value).

    - ``guarded``: the import is in a ``try:`` body (it may fail and be handled);
    - ``conditional``: under a condition the engine cannot evaluate (both branches are assumed to
      run), in a ``match`` case, a ``for`` body over an iterable that may be empty, a loop's
      ``else`` that a ``break`` may skip, after a statement of a called function that may
      ``return`` (an early return), or a submodule a from-import runs only in some import
      orders (a circular import, a star import that may bind the name first);
    - ``fallback``: in an ``except`` handler (runs only if the ``try:`` body raised);
    - ``eager-before-3.15``: the module is listed in ``__lazy_modules__``, so the import is lazy on
      Python 3.15+ but eager on the older target versions (PEP 810);
    - ``exec`` (runtime chains only): imported by code compiled from a string (``exec``/``eval``);
    - ``compiled-twin``: the imported module is a mypyc-compiled extension module, analysed through
      the ``.py`` source beside it (docs/semantics.md rule 6).
    """

    GUARDED = "guarded"
    CONDITIONAL = "conditional"
    FALLBACK = "fallback"
    EAGER_BEFORE_315 = "eager-before-3.15"
    EXEC = "exec"
    COMPILED_TWIN = "compiled-twin"


class Construct(StrEnum):
    """Import-time code the engine cannot resolve (code IPL006; docs/codes.md lists each with its
    known limits). The value is what JSON and text show.

    - ``dynamic-import``: ``importlib.import_module``/``__import__`` of a name that is not computable,
      a loader's ``exec_module``/``load_module``, ``runpy``, an importer the engine cannot name;
    - ``getattr-import``: the same inside a ``__getattr__`` (PEP 562 or a lazy object's class), a
      lazy module object of a module that is not computable, or a ``lazy_loader.attach`` mapping
      that is not constant;
    - ``exec``: ``exec``/``eval`` of a string that is not a constant;
    - ``call-through-variable``: a call of a variable, parameter, container item or call result, of
      a class attribute bound to a value, or of a function a decorator may have replaced;
    - ``call-depth``: a function called deeper than ``settings.call-depth`` (not followed);
    - ``sys-path``: a change of ``sys.path`` whose directory is not computable;
    - ``extension-module``: a compiled module without a ``.py`` twin: its imports are unknown;
    - ``unfollowed-package``: with ``external = "stop"``, a package that is not analysed although a
      forbidden module could be reached through it;
    - ``not-installed``: an import that path search does not find for the interpreter (a package
      the project's environment has and the interpreter running the check lacks).
    """

    DYNAMIC_IMPORT = "dynamic-import"
    GETATTR_IMPORT = "getattr-import"
    EXEC = "exec"
    CALL_THROUGH_VARIABLE = "call-through-variable"
    CALL_DEPTH = "call-depth"
    SYS_PATH = "sys-path"
    EXTENSION_MODULE = "extension-module"
    UNFOLLOWED_PACKAGE = "unfollowed-package"
    NOT_INSTALLED = "not-installed"


class HopKind(StrEnum):
    """How a hop's statement makes its ``imported`` node run (JSON and text show the value).

    - ``import``: ``import a.b`` (the hop to ``a.b``);
    - ``from-import``: ``from p import name`` (the hop to ``p``, and to the submodule ``p.name``
      when the fromlist runs it, docs/semantics.md rule 2);
    - ``star-import``: ``from p import *`` (``p``, and the submodules of a literal ``p.__all__``);
    - ``importlib``: ``importlib.import_module("a")``, ``__import__("a")`` with literal names;
    - ``parent-package``: a package that runs before its submodule (rule 1), also the light
      module's own parents (a pseudo-statement at line 1, column 0);
    - ``call``: an import-time call runs a first-party function body, or a ``[heavy-calls]``
      function (rule 16);
    - ``getattr-trigger``: ``from p import name`` runs ``p``'s PEP 562 ``__getattr__`` (rule 15);
    - ``lazy-used``: a PEP 810 lazy import that import-time code uses (rule 17; at the use's line);
    - ``lazy-attr``: an attribute read at import time imports a module: on a lazy module object,
      or through a module's PEP 562 ``__getattr__`` (rule 19; at the read's line);
    - ``finder``: a meta-path finder installed at start-up answers the import of a top-level name
      with another module, whose parent packages it imports first (setuptools' finder imports
      ``setuptools`` for ``distutils``; rule 7; at line 1, column 0 of the module found);
    - ``runtime``: an import observed by ``importpolicy verify`` (runtime chains only).
    """

    IMPORT = "import"
    FROM_IMPORT = "from-import"
    STAR_IMPORT = "star-import"
    IMPORTLIB = "importlib"
    PARENT_PACKAGE = "parent-package"
    CALL = "call"
    GETATTR_TRIGGER = "getattr-trigger"
    LAZY_USED = "lazy-used"
    LAZY_ATTR = "lazy-attr"
    FINDER = "finder"
    RUNTIME = "runtime"


@dataclass(frozen=True, order=True)
class Hop:
    """One edge of an import chain: running ``module`` makes ``imported`` run.

    Attributes:
        module: the importing node (a module, or a :class:`FunctionNode` whose body runs).
        path: the importing module's file (``None`` only for modules without a file).
        line: 1-based first line of the importing statement (1 for a light module's parent packages).
        col: 0-based column of that statement.
        kind: how the statement runs ``imported`` (:class:`HopKind`).
        imported: the node the statement makes run.
        flags: sorted :class:`Flag` values (``guarded``, ``conditional``, ``fallback``, ...).
        via: runtime chains only: the module whose import-time code was running when a function of
            a module loaded earlier made the import (shown as the flag ``via <module>``).
        assumed: the ``[assume]`` entries the statement's running depends on (shown as the flag
            ``assuming <entry>``).
        requires: modules that must be imported already for the statement to run (``if "sphinx"
            in sys.modules:``): the traversal follows the hop only once it has reached them
            (shown as the flag ``if <module> in sys.modules``).
    """

    module: str
    path: Path | None
    line: int
    col: int
    kind: HopKind
    imported: str
    flags: tuple[Flag, ...] = ()
    via: str | None = None
    assumed: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()

    def sort_key(self) -> tuple[int, int, str]:
        """The tie-break order between hops of equal chain length: ``(line, col, imported)``."""
        return (self.line, self.col, self.imported)

    def shown_flags(self) -> tuple[str, ...]:
        """The flags as shown to users, sorted: :attr:`flags`, ``via <module>`` and ``assuming
        <entry>`` for each of :attr:`assumed`."""
        extra = [f"assuming {entry}" for entry in self.assumed]
        extra.extend(f"if {name} in sys.modules" for name in self.requires)
        if self.via is not None:
            extra.append(f"via {self.via}")
        if not extra:
            return tuple(self.flags)
        return tuple(sorted((*self.flags, *extra)))


@dataclass(frozen=True)
class UnresolvedCode:
    """Import-time code of a node that the engine cannot resolve (IPL006): see
    :class:`~flake8_importpolicy.model.facts.Construct`.

    Attributes:
        module: the node whose code it is (a module, or a function body run at import time); for
            an extension module, an unfollowed package or a module not installed, that module.
        path, line, col: where (for an extension module, an unfollowed package or a module not
            installed: the statement that imports it).
        construct: what it is; detail: its source text, or what is not known.
        flags: as for :class:`Hop` (a guarded or conditional site may not run).
    """

    module: str
    path: Path | None
    line: int
    col: int
    construct: Construct
    detail: str
    flags: tuple[Flag, ...] = ()
