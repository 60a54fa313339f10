"""What each name of a scope is bound to, one :class:`Binding` per name (pyflakes' model).

Every fact the walker keeps about a name (the dotted name an import binds it to, its constant
value, the line that first bound it, the import guard it is, the call it was bound to, the path it
holds) lives in the name's one binding. Rebinding a name replaces its binding, so what any concern
knew about the name's previous value is forgotten in one place (:meth:`Scope.bind`) instead of by
hand in every collection.

A function body's scope is a child of the module's: lookups fall through to the module's
bindings (a copy-on-write overlay, so analysing every body stays linear in the module), its own
bindings shadow them. A class body's scope only records which names it binds: its bindings do not
change what the module's names refer to (docs/semantics.md rules 8-13).

A branch's body (``if``/``elif``/``else``, a ``try``'s body, handlers, ``else`` and ``finally``,
a loop's body and ``else``, a ``match`` case) binds names in a branch overlay of the scope it runs
in (:meth:`Scope.branch`): lookups fall through to the scope's bindings, the branch's writes shadow
them, and when the branch ends its writes are merged back in the order they happened, so the scope
ends as if the branch had bound its names directly (the last write wins, a name first bound in a
branch takes its place after the names bound before it).
"""

from __future__ import annotations

import ast
import enum
from collections.abc import ItemsView, Iterable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Final

from flake8_importpolicy.analysis.syspath import PathValue
from flake8_importpolicy.model.facts import CallBinding

__all__ = ["NO_VALUE", "Binding", "BindingKind", "Guard", "Scope", "ScopeKind", "stored_names"]


class BindingKind(enum.Enum):
    """What bound a name."""

    IMPORT = "import"
    DEF = "def"
    CLASS = "class"
    CALL = "call"  # ``name = callee(...)`` at module level (a candidate lazy module object)
    CONSTANT = "constant"  # a name whose value is known (``MYPY = False``, a loop's variable)
    OTHER = "other"

    # Members are singletons compared by identity: hashed by identity too, in C (Enum's own hash
    # is a Python function, called for every ``kind in DEFINITIONS``).
    __hash__ = object.__hash__


DEFINITIONS: Final = frozenset({BindingKind.DEF, BindingKind.CLASS})
"""The kinds of a name bound by ``def`` or ``class`` (a definition calls can be followed into)."""


class ScopeKind(enum.Enum):
    """The namespaces names are bound in."""

    MODULE = "module"
    CLASS = "class"
    FUNCTION = "function"


class _NoValue:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_VALUE"


NO_VALUE: Final = _NoValue()
"""The value of a binding whose value is not known."""

Guard = tuple[tuple[str, ...], bool]
"""An import guard (rule 12): the modules of a ``try`` and the name's truth when they are found."""


@dataclass(frozen=True, slots=True, init=False)
class Binding:
    """What one name of a scope is bound to.

    Attributes:
        kind: what bound it.
        refers_to: the dotted name an import binds it to (``np`` -> ``numpy``), else None.
        value: its constant value when it is computable (rule 15), else :data:`NO_VALUE`.
        line: the line of the module-level statement that first bound it since it was last
            deleted (None in other scopes, and for a name only a ``type`` statement binds).
        guard: set when the name is an import guard (``HAS_X``, rule 12).
        call: the call a module-level name was bound to (rule 19).
        path: the ``sys.path`` entry it holds, when computable (rule 7).
        choices: for a module-level ``f = g`` / ``f = g if test else h``, the names as written it
            may hold, each with whether a test on the way was undecided (rule 16).
        bound: False for a name this scope does not bind (any more): one ``del`` unbound, or whose
            value, guard or path was recorded by code that binds it in a nested class body; what
            the binding says beyond that is still known.
    """

    kind: BindingKind
    refers_to: str | None = None
    value: object = NO_VALUE
    line: int | None = None
    guard: Guard | None = None
    call: CallBinding | None = None
    path: PathValue | None = None
    bound: bool = True
    choices: tuple[tuple[str, bool], ...] | None = None

    def __init__(
        self,
        kind: BindingKind,
        refers_to: str | None = None,
        value: object = NO_VALUE,
        line: int | None = None,
        guard: Guard | None = None,
        call: CallBinding | None = None,
        path: PathValue | None = None,
        bound: bool = True,
        choices: tuple[tuple[str, bool], ...] | None = None,
    ) -> None:
        # The slots' own setters: the generated __init__ of a frozen dataclass goes through
        # object.__setattr__ once a field, about twice the cost, and the walker makes one binding
        # for every name it binds. (Slot descriptors' __set__, bound by unpacking a generator: the
        # engine cannot name them, and they import nothing.)
        _SET_KIND(self, kind)  # noqa: IPL006
        _SET_REFERS_TO(self, refers_to)  # noqa: IPL006
        _SET_VALUE(self, value)  # noqa: IPL006
        _SET_LINE(self, line)  # noqa: IPL006
        _SET_GUARD(self, guard)  # noqa: IPL006
        _SET_CALL(self, call)  # noqa: IPL006
        _SET_PATH(self, path)  # noqa: IPL006
        _SET_BOUND(self, bound)  # noqa: IPL006
        _SET_CHOICES(self, choices)  # noqa: IPL006


(
    _SET_KIND, _SET_REFERS_TO, _SET_VALUE, _SET_LINE, _SET_GUARD, _SET_CALL, _SET_PATH, _SET_BOUND,
    _SET_CHOICES,
) = (
    vars(Binding)[name].__set__
    for name in ("kind", "refers_to", "value", "line", "guard", "call", "path", "bound", "choices")
)

_UNBOUND: Final = Binding(BindingKind.OTHER, bound=False)
_PLAIN: Final = {kind: Binding(kind) for kind in BindingKind}
"""One shared binding of each kind for the names bound without a line or a dotted name (most of a
class body's and a function body's)."""


class Scope:
    """The bindings of one namespace; see the module docstring.

    ``aliases``, ``constants`` and ``path_names`` are read-only (``path_names``: writable) views
    of the bindings, for the evaluators that take mappings (:class:`~flake8_importpolicy.analysis.
    conditions.ConditionEvaluator`, :mod:`~flake8_importpolicy.analysis.syspath`).
    """

    __slots__ = ("kind", "_table", "_parent", "_views", "ever_bound", "seen_constants")

    def __init__(self, kind: ScopeKind = ScopeKind.MODULE, parent: Scope | None = None) -> None:
        self.kind = kind
        # a dict, or during a branch an _Overlay of the branch's writes over the scope's table
        self._table: MutableMapping[str, Binding] = {}
        self._parent = parent
        self._views: tuple[_Aliases, _Constants, _PathNames] | None = None  # made when asked for
        # every name bound so far, also deleted ones and those of nested class bodies
        self.ever_bound: set[str] = set()
        # names that were once constants (their value was recorded or forgotten)
        self.seen_constants: set[str] = set()

    def _made_views(self) -> tuple[_Aliases, _Constants, _PathNames]:
        if self._views is None:  # a class body's scope (one per class statement) never needs them
            self._views = (_Aliases(self), _Constants(self), _PathNames(self))
        return self._views

    @property
    def aliases(self) -> Mapping[str, str]:
        """``{name: dotted name}`` of the names an import binds."""
        return self._made_views()[0]

    @property
    def constants(self) -> Mapping[str, object]:
        """``{name: value}`` of the names whose value is known."""
        return self._made_views()[1]

    @property
    def path_names(self) -> MutableMapping[str, PathValue]:
        """``{name: sys.path entry}`` of this scope's names that hold one (written by
        :mod:`~flake8_importpolicy.analysis.syspath` for a walrus)."""
        return self._made_views()[2]

    @classmethod
    def from_index(
        cls,
        aliases: Mapping[str, str],
        constants: Mapping[str, object],
        definitions: frozenset[str] | set[str],
        call_bound: frozenset[str] | set[str],
    ) -> Scope:
        """A module scope rebuilt from what a function index keeps of it: enough for the scopes
        of its function bodies (the details of a call binding are not kept)."""
        scope = cls()
        unknown_call = CallBinding(0, "", False, ())
        for name in {*aliases, *constants, *definitions, *call_bound}:
            scope._table[name] = Binding(
                BindingKind.DEF if name in definitions else BindingKind.OTHER,
                refers_to=aliases.get(name),
                value=constants.get(name, NO_VALUE),
                call=unknown_call if name in call_bound else None,
            )
        return scope

    def child(self, kind: ScopeKind = ScopeKind.FUNCTION) -> Scope:
        """A scope whose lookups fall through to this one's bindings (a function body's)."""
        return Scope(kind, self)

    @contextmanager
    def branch(self) -> Iterator[_Overlay]:
        """Bind the names of a branch's body in an overlay of this scope (see the module
        docstring); yields the overlay. The same object stays the scope:
        every concern that holds it sees the overlay while the branch runs."""
        base = self._table
        overlay = _Overlay(base)
        self._table = overlay
        try:
            yield overlay
        finally:
            self._table = base
            base.update(overlay)  # in the order the branch first wrote each name, its last write

    # -- lookups -----------------------------------------------------------------------------------

    def lookup(self, name: str) -> Binding | None:
        """The binding ``name`` has here or, if none, in the enclosing scopes."""
        found = self._table.get(name)
        if found is None and self._parent is not None:
            return self._parent.lookup(name)
        return found

    def binds(self, name: str) -> bool:
        """Whether this scope itself binds ``name`` (not an enclosing one)."""
        found = self._table.get(name)
        return found is not None and found.bound

    def is_definition(self, name: str) -> bool:
        """Whether ``name`` is bound by ``def`` or ``class``."""
        found = self.lookup(name)
        return found is not None and found.kind in DEFINITIONS

    def is_import(self, name: str) -> bool:
        """Whether this scope binds ``name`` by an import."""
        found = self._table.get(name)
        return found is not None and found.kind is BindingKind.IMPORT

    def is_call_bound(self, name: str) -> bool:
        """Whether ``name`` is bound to a call's result (a candidate lazy module object)."""
        found = self.lookup(name)
        return found is not None and found.call is not None

    def guard(self, name: str) -> Guard | None:
        """The import guard this scope's ``name`` is, if it is one."""
        found = self._table.get(name)
        return None if found is None else found.guard

    def items(self) -> Iterator[tuple[str, Binding]]:
        """This scope's own bindings, in the order the names were first bound."""
        return iter(self._table.items())

    # -- changes -----------------------------------------------------------------------------------

    def bind(self, name: str, kind: BindingKind, refers_to: str | None, line: int | None) -> None:
        """Bind ``name``: its new binding replaces the old one, so nothing the old one said (value,
        guard, call, path) survives. ``line`` counts only for the first binding since a ``del``."""
        old = self._table.get(name)
        if old is not None and old.line is not None:
            line = old.line
        elif line is None and refers_to is None:
            self._table[name] = _PLAIN[kind]
            return
        self._table[name] = Binding(kind, refers_to, NO_VALUE, line)

    def mark_bound(self, name: str) -> None:
        """Count ``name`` as bound here without changing what it refers to (a ``type`` statement's
        lazily evaluated value)."""
        own = self._own(name)
        if not own.bound:
            self._table[name] = replace(own, bound=True)

    def unbind(self, name: str) -> None:
        """``del name``: the name is no longer bound, refers to nothing and has no value; the
        guard, call and path it held are still known."""
        old = self._table.get(name)
        if old is not None:
            self._table[name] = replace(
                old, kind=BindingKind.OTHER, refers_to=None, value=NO_VALUE, line=None, bound=False
            )

    def set_value(self, name: str, value: object) -> None:
        """Record ``name``'s constant value (or, with :data:`NO_VALUE`, forget it)."""
        own = self._own(name)
        if value is NO_VALUE and own.value is NO_VALUE:
            return
        kind = own.kind
        if value is not NO_VALUE and kind is BindingKind.OTHER and own.bound:
            kind = BindingKind.CONSTANT
        elif value is NO_VALUE and kind is BindingKind.CONSTANT:
            kind = BindingKind.OTHER
        self._table[name] = Binding(
            kind, own.refers_to, value, own.line, own.guard, own.call, own.path, own.bound,
            own.choices,
        )

    def set_guard(self, name: str, guard: Guard) -> None:
        """Record that ``name`` is an import guard."""
        self._table[name] = replace(self._own(name), guard=guard)

    def set_call(self, name: str, call: CallBinding) -> None:
        """Record the call ``name`` was just bound to."""
        own = self._own(name)
        kind = BindingKind.CALL if own.kind is BindingKind.OTHER and own.bound else own.kind
        self._table[name] = Binding(
            kind, own.refers_to, own.value, own.line, own.guard, call, own.path, own.bound,
            own.choices,
        )

    def set_choices(self, name: str, choices: tuple[tuple[str, bool], ...]) -> None:
        """Record the names ``name`` was just bound to (``f = g if test else h``, rule 16)."""
        self._table[name] = replace(self._own(name), choices=choices)

    def set_path(self, name: str, path: PathValue | None) -> None:
        """Record (or, with None, forget) the ``sys.path`` entry ``name`` holds."""
        own = self._own(name)
        if path is None and own.path is None:
            return
        self._table[name] = replace(own, path=path)

    def imports_among(self, names: Iterable[str]) -> dict[str, Binding]:
        """The bindings of those of ``names`` that an import binds, here or in enclosing scopes
        (what :meth:`keep_import` is given back)."""
        found: dict[str, Binding] = {}
        for name in names:
            binding = self.lookup(name)
            if binding is not None and binding.refers_to is not None:
                found[name] = binding
        return found

    def keep_import(self, name: str, before: Binding) -> None:
        """``name`` was rebound by code that runs instead of what left it bound by an import
        (``np = None`` in the ``except`` handler of ``try: import numpy as np``): on the other path
        it still is the import, so it keeps what the import bound it to (docs/semantics.md rule
        12). A rebinding to another import, or none, changes nothing."""
        if before.refers_to is None:
            return
        own = self._table.get(name)
        if own is None or not own.bound or own.refers_to is not None:
            return
        self._table[name] = replace(own, kind=before.kind, refers_to=before.refers_to)

    def forget_values(self) -> None:
        """Forget every value, guard and path: code bound names the engine cannot see
        (``globals()[...] = ...``)."""
        for name, binding in list(self._table.items()):
            if binding.value is not NO_VALUE:
                self.seen_constants.add(name)
            if binding.value is not NO_VALUE or binding.guard is not None or binding.path is not None:
                self._table[name] = replace(binding, value=NO_VALUE, guard=None, path=None)

    def _own(self, name: str) -> Binding:
        """This scope's binding of ``name``, to be replaced: an enclosing scope's (what it says
        that is the enclosing scope's own, its guard and path, left out) or an unbound one."""
        own = self._table.get(name)
        if own is not None:
            return own
        inherited = self._parent.lookup(name) if self._parent is not None else None
        if inherited is None:
            return _UNBOUND
        return replace(inherited, line=None, guard=None, path=None, bound=False)


class _Overlay(dict[str, Binding]):
    """A branch's writes (its own items) over the table of the scope it branched (``base``): reads
    fall through, a write stays here; iterated as the merged table, the base's names first."""

    __slots__ = ("base",)

    def __init__(self, base: MutableMapping[str, Binding]) -> None:
        super().__init__()
        self.base = base

    def __missing__(self, key: str) -> Binding:
        return self.base[key]

    # dict's get and items are overloaded; these two have the one signature the scope reads (the
    # ignores), and must see the base's names too
    def get(self, key: str, default: Binding | None = None) -> Binding | None:  # type: ignore[override]
        found = dict.get(self, key)
        return self.base.get(key, default) if found is None else found

    def writes(self) -> dict[str, Binding]:
        """The branch's own writes so far, in the order each name was first written."""
        return dict(dict.items(self))

    def _merged(self) -> dict[str, Binding]:
        merged = dict(self.base.items())
        merged.update(dict.items(self))
        return merged

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self.base

    def __iter__(self) -> Iterator[str]:
        return iter(self._merged())

    def __len__(self) -> int:
        return len(self._merged())

    def items(self) -> ItemsView[str, Binding]:  # type: ignore[override]
        return self._merged().items()


class _View:
    """A mapping that reads a scope's bindings."""

    __slots__ = ("_scope",)

    def __init__(self, scope: Scope) -> None:
        self._scope = scope

    def __iter__(self) -> Iterator[str]:
        raise NotImplementedError

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _Aliases(_View, Mapping[str, str]):
    """``{name: dotted name}`` of the names an import binds (through enclosing scopes)."""

    def __getitem__(self, key: str) -> str:
        found = self._scope.lookup(key)
        if found is None or found.refers_to is None:
            raise KeyError(key)
        return found.refers_to

    # The mixins' versions go through __getitem__ and a KeyError: these are on hot paths.
    # (``get`` is read for every dotted name: the lookup is written out.)
    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        scope: Scope | None = self._scope
        while scope is not None:
            found = scope._table.get(key)
            if found is not None:
                refers_to = found.refers_to
                return default if refers_to is None else refers_to
            scope = scope._parent
        return default

    def __contains__(self, key: object) -> bool:
        return self.get(key) is not None if isinstance(key, str) else False

    def __iter__(self) -> Iterator[str]:
        return (name for name, binding in _visible(self._scope) if binding.refers_to is not None)


class _Constants(_View, Mapping[str, object]):
    """``{name: value}`` of the names whose value is known (through enclosing scopes)."""

    def __getitem__(self, key: str) -> object:
        found = self._scope.lookup(key)
        if found is None or found.value is NO_VALUE:
            raise KeyError(key)
        return found.value

    def __contains__(self, key: object) -> bool:
        found = self._scope.lookup(key) if isinstance(key, str) else None
        return found is not None and found.value is not NO_VALUE

    def __iter__(self) -> Iterator[str]:
        return (name for name, binding in _visible(self._scope) if binding.value is not NO_VALUE)


class _PathNames(_View, MutableMapping[str, PathValue]):
    """``{name: sys.path entry}`` of this scope's names that hold a computable path."""

    def __getitem__(self, key: str) -> PathValue:
        found = self._scope._table.get(key)
        if found is None or found.path is None:
            raise KeyError(key)
        return found.path

    def __setitem__(self, key: str, value: PathValue) -> None:
        self._scope.set_path(key, value)

    def __delitem__(self, key: str) -> None:
        self[key]  # noqa: B018 - raises KeyError for a name without a path
        self._scope.set_path(key, None)

    def __iter__(self) -> Iterator[str]:
        return (name for name, binding in self._scope.items() if binding.path is not None)


def _visible(scope: Scope) -> Iterator[tuple[str, Binding]]:
    """The bindings a lookup in ``scope`` finds, each name once."""
    seen: set[str] = set()
    current: Scope | None = scope
    while current is not None:
        for name, binding in current.items():
            if name not in seen:
                seen.add(name)
                yield name, binding
        current = current._parent


def stored_names(body: Iterable[ast.stmt]) -> set[str]:
    """The names statements of ``body`` assign (``x = ...``, ``for x in``, ``with ... as x``,
    walrus), not those of nested function, lambda and class bodies (their scopes' own)."""
    names: set[str] = set()
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            if type(node.ctx) is ast.Store:
                names.add(node.id)
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return names
