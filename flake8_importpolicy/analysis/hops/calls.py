"""Import-time calls: which function bodies a call runs (docs/semantics.md rule 16).

A call at import time to a function of followed code runs its body: the body is a node named
``module:qualname`` (``mypkg.helpers:setup``, ``mypkg.models:Model.__init__``) reached by a hop of
kind ``call``. Instantiating a class runs its hooks (``__new__``, ``__init__``, a dataclass's
``__post_init__``), ``with`` runs ``__enter__`` and ``__exit__``, a class statement its metaclass's
and bases' hooks; a member is the class's own or the first base's, depth first (an approximation of
C3 for multiple inheritance). A call of a ``[heavy-calls]`` function is a leaf node named
``qualname()`` (``torch.cuda.init()``). Re-exports are followed through the module's import
aliases, a few deep.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Final

from flake8_importpolicy.analysis.hops.lookup import FactsLookup, absolute, defines
from flake8_importpolicy.model.facts import (
    UNKNOWN_ENVIRON_VALUE,
    CallSite,
    ModuleFacts,
    EnvironWrite,
    assumption_text,
    resolve_argument,
)
from flake8_importpolicy.model.graph import (
    CallNode,
    Construct,
    Flag,
    FunctionNode,
    Hop,
    HopKind,
    UnresolvedCode,
    module_of,
)
from flake8_importpolicy.model.interpreter import ResolvedModule

__all__ = ["CallResolver", "HeavyCallEnviron"]

HeavyCallEnviron = tuple[
    Callable[[str], tuple[tuple[tuple[str, str], ...], ...]], Mapping[str, "str | None"]
]
"""For ``[heavy-calls]`` rules with ``unless-environ``: the pairs of each rule matching a call's
name (none when one of them is heavy whatever the environment), and ``[assume.environ]``."""

_CLASS_HOOKS: Final = {
    # ``__post_init__``: a dataclass's generated ``__init__`` calls it
    "call": ("__new__", "__init__", "__post_init__"),
    "with": ("__enter__", "__exit__"),
    "class-attribute": ("__new__", "__init__", "__post_init__", "__set_name__"),
    "metaclass": ("__prepare__", "__new__", "__init__"),
    "subclass": ("__init_subclass__",),
    "decorator-factory": ("__new__", "__init__", "__post_init__"),
}
_ALIAS_DEPTH: Final = 5
_MAX_BASES: Final = 64
"""Classes visited at most when a member is looked up in the bases of one class."""


class CallResolver:
    """The nodes import-time calls run, and the definitions dotted names refer to.

    Args:
        lookup: the facts of the modules reached.
        is_heavy_call: optional predicate on a called function's dotted name (``[heavy-calls]``).
        heavy_call_environ: the ``unless-environ`` conditions of heavy calls (:meth:`_environ`).
    """

    def __init__(
        self, lookup: FactsLookup, is_heavy_call: Callable[[str], bool] | None = None,
        heavy_call_environ: HeavyCallEnviron | None = None,
    ) -> None:
        self.index = lookup.index
        self._lookup = lookup
        self._is_heavy_call = is_heavy_call
        self._heavy_call_environ = heavy_call_environ
        self._inherited_found: dict[tuple[str, str, str], list[str]] = {}
        # the module a read ``module.name`` imports lazily (a PEP 562 mapping's entry), or None:
        # ModuleGetattr's, set by the graph that puts the concerns together (lazy is above calls)
        self.lazy_module: Callable[[str, str], str | None] = lambda module, name: None

    def find_hops(
        self, node: str, resolved: ResolvedModule, call: CallSite,
        unresolved: list[UnresolvedCode] | None = None,
    ) -> Iterator[Hop]:
        """The hops of kind ``call`` from ``node`` (a module or a function body of ``resolved``)
        that ``call`` makes: one to each node it runs. A method call the engine cannot follow
        because the object's class is not known is added to ``unresolved`` (IPL006)."""
        module = module_of(node)
        nested = call.local and call.kind == "call" and "<locals>" in call.callee
        targets = self._nested_call(module, call) if nested else None
        if targets is None and isinstance(node, FunctionNode) and call.callee.startswith("self."):
            targets = self._self_method(module, node.qualname, call)
        if targets is None and not isinstance(node, FunctionNode):
            targets = self._module_instance_method(node, resolved, call, unresolved)
        undecided: set[str] = set()  # run through a branch the target does not decide
        for target in targets if targets is not None else self._resolve_call(
            module, resolved.is_package, call, undecided
        ):
            flags, assumed = call.flags, call.assumed
            conditional = target in undecided
            if self._heavy_call_environ is not None and isinstance(target, CallNode):
                verdict = self._environ(target.callee, call.environ)
                if verdict is None:
                    continue  # the environment the call runs in makes it harmless
                maybe, used = verdict
                conditional = conditional or maybe
                assumed = (*assumed, *(u for u in used if u not in assumed))
            if conditional and Flag.CONDITIONAL not in flags:
                flags = tuple(sorted((*flags, Flag.CONDITIONAL)))
            if call.arguments and call.kind == "call" and isinstance(target, FunctionNode):
                target = self._with_arguments(target, call, module, resolved.is_package)
            yield Hop(node, resolved.path, call.line, call.col, HopKind.CALL, target, flags,
                      assumed=assumed)

    def _environ(
        self, callee: str, writes: tuple[EnvironWrite, ...]
    ) -> tuple[bool, tuple[str, ...]] | None:
        """Whether a heavy call of ``callee`` is heavy in the environment it runs in: None when every
        matching rule's ``unless-environ`` holds (the variables the code set before the call, else
        ``[assume.environ]``, else unset), else ``(only maybe, the assumptions that decided it)``:
        maybe when a write that may not have run (or of a value that is not a constant) could
        make it harmless. The assumptions name the variables as ``[assume]`` hops do
        (``environ."X" unset``)."""
        assert self._heavy_call_environ is not None
        conditions, assumed_environ = self._heavy_call_environ
        rules = conditions(callee)
        if not rules:
            return False, ()
        used: list[str] = []
        verdicts = []
        for pairs in rules:
            verdict = "yes"
            for variable, wanted in pairs:
                one = _environ_holds(variable, wanted, writes, assumed_environ, used)
                if one == "no" or (one == "maybe" and verdict == "yes"):
                    verdict = one
            verdicts.append(verdict)
        if all(v == "yes" for v in verdicts):
            return None
        return "no" not in verdicts, tuple(dict.fromkeys(used))

    def _with_arguments(
        self, target: FunctionNode, call: CallSite, module: str, is_package: bool
    ) -> FunctionNode:
        """The body a call with known string arguments runs, its parameters bound to them
        (``import_optional_dependency("xarray")`` whose body does ``import_module(name)``, rule
        16): for a module-level function (not a method: ``self`` takes no argument) whose body,
        analysed without them, imports a module it cannot name. Otherwise ``target`` as it is (a
        body is analysed once per distinct set of arguments only where that can name a module)."""
        if target.argument is not None or "." in target.qualname:
            return target
        body = self._lookup.get_function_facts(target.module, target.qualname)
        if body is None or not any(site.target is None for site in body.sites):
            return target
        values = tuple(
            None if value is None else resolve_argument(value, module, is_package)
            for value in call.arguments
        )
        return FunctionNode(target.module, target.qualname, values[0] if len(values) == 1 else values)

    def _self_method(self, module: str, qualname: str, call: CallSite) -> list[str]:
        """``self.m()`` in a method of class ``C`` (``qualname`` ``C.method``): ``C``'s ``m``, its
        own or inherited (httpx's ``Client.__init__`` calls ``self._init_transport()``). A subclass
        may override ``m``; the engine follows the class the method is written in. ``self.a.m()``
        (a method of another object) is not followed."""
        cls, _, _ = qualname.rpartition(".")
        member = call.callee[len("self."):]
        facts = self._lookup.get_facts(module)
        if not cls or "." in member or facts is None or cls not in facts.classes:
            return []
        return self.find_member(module, cls, member)

    def _module_instance_method(
        self, module: str, resolved: ResolvedModule, call: CallSite,
        unresolved: list[UnresolvedCode] | None,
    ) -> list[str] | None:
        """``name.m()`` at module level where the module bound ``name = C(...)`` (with or without
        arguments): ``C``'s ``m``, its own or inherited, when ``C`` is a class the engine reads
        (rule 16). When ``name`` holds what a function of followed code returned, the object's
        class is not known: IPL006 ``call-through-variable`` (what ``m`` runs is not known), and
        no node. None when ``name`` is not bound to a call (an import, a definition)."""
        if call.kind != "call" or call.local:
            return None
        name, _, member = call.callee.partition(".")
        if not member or "." in member:
            return None
        facts = self._lookup.get_facts(module)
        if facts is None or name in facts.aliases:
            return None
        binding = facts.call_bindings.get(name)
        if binding is None:
            return None
        method = self._instance_method(module, facts, name, member)
        if method is not None:
            return method
        if binding.local:
            made_by = (module, binding.callee) if defines(facts, binding.callee) else None
        else:
            dotted = absolute(binding.callee, module, resolved.is_package)
            found = self.find_definition(dotted) if dotted is not None else None
            made_by = (found[0], found[1]) if found is not None and not found[2] else None
        body = self._lookup.get_function_facts(*made_by) if made_by is not None else None
        # a function that makes a lazy module object (rule 19) returns a module, not an instance
        if body is not None and not body.lazy_params and unresolved is not None:
            unresolved.append(UnresolvedCode(
                module, resolved.path, call.line, call.col, Construct.CALL_THROUGH_VARIABLE,
                f"{call.callee}() (a method of what {binding.callee}() returned: its class is not"
                " known)", call.flags,
            ))
        return []

    def _nested_call(self, module: str, call: CallSite) -> list[str]:
        """A call in a function body of a function or class defined in that body, which the
        extractor names ``outer.<locals>.inner`` (Python's scoping: the local name wins over a
        module-level one): that function, or the hooks of the class that instantiating it runs."""
        get_function_facts = self._lookup.get_function_facts
        if get_function_facts(module, call.callee) is not None:
            return [FunctionNode(module, call.callee)]
        return [
            FunctionNode(module, f"{call.callee}.{hook}") for hook in _CLASS_HOOKS["call"]
            if get_function_facts(module, f"{call.callee}.{hook}") is not None
        ]

    def _resolve_call(
        self, module: str, is_package: bool, call: CallSite, undecided: set[str]
    ) -> list[str]:
        """The nodes a call runs: first-party function bodies, or a ``[heavy-calls]`` leaf (also for
        a function of the calling module itself, ``probe()`` in ``pkg.plat`` for ``pkg.plat.probe``).
        Those run only through a branch the target does not decide are added to ``undecided``."""
        if call.local:
            own = f"{module}.{call.callee}"
            if self._calls_heavy(own, call.kind):
                return [CallNode(own)]
            return self._find_run(module, call.callee, call.kind, 0, undecided)
        name = absolute(call.callee, module, is_package)
        if name is None:
            return []
        return self._find_run_dotted(name, call.kind, 0, undecided)

    def find_member(self, module: str, cls: str, member: str, *, inherited: bool = True) -> list[str]:
        """The function ``member`` of class ``cls`` of ``module``: its own, else (with
        ``inherited``) the one its bases give it (:meth:`_inherited`); [] if there is none."""
        facts = self._lookup.get_facts(module)
        if facts is not None and defines(facts, f"{cls}.{member}"):
            return [FunctionNode(module, f"{cls}.{member}")]
        return self._inherited(module, cls, member) if inherited else []

    def _inherited(self, module: str, cls: str, member: str) -> list[str]:
        """The function ``member`` that class ``cls`` of ``module`` gets from its bases: the first
        base, depth-first and left to right, that defines it (the method resolution order of single
        inheritance; an approximation of C3 for multiple: docs/semantics.md rule 16), or [] if no
        analysed base does (a base outside the followed code, or ``object``)."""
        key = (module, cls, member)
        if key not in self._inherited_found:
            self._inherited_found[key] = self._find_inherited(module, cls, member)
        return self._inherited_found[key]

    def _find_inherited(self, module: str, cls: str, member: str) -> list[str]:
        stack = list(reversed(self._bases(module, cls, member)))
        seen: set[tuple[str, str]] = set()
        while stack and len(seen) < _MAX_BASES:
            base_module, base = stack.pop()
            if not base_module:  # a ``[heavy-calls]`` class whose construction hook runs
                return [CallNode(base)]
            if (base_module, base) in seen:
                continue
            seen.add((base_module, base))
            facts = self._lookup.get_facts(base_module)
            if facts is None or facts.problem is not None:
                continue
            if defines(facts, f"{base}.{member}"):
                return [FunctionNode(base_module, f"{base}.{member}")]
            stack.extend(reversed(self._bases(base_module, base, member)))
        return []

    def _bases(self, module: str, cls: str, member: str = "") -> list[tuple[str, str]]:
        """``(module, class)`` of each base of ``cls`` that is in followed code, in order; a base
        that is a ``[heavy-calls]`` class whose ``member`` the subclass gets (:meth:`_heavy_base`)
        as ``("", dotted name)``, in followed code or not."""
        facts = self._lookup.get_facts(module)
        if facts is None:
            return []
        found: list[tuple[str, str]] = []
        is_package = self.index.resolve_module(module).is_package
        for base in facts.class_bases.get(cls, ()):
            local = base in facts.classes
            name = f"{module}.{base}" if local else absolute(base, module, is_package)
            if name is None:
                continue
            if self._heavy_base(name, member):
                found.append(("", name))
                continue
            if local:
                found.append((module, base))
                continue
            top = name.partition(".")[0]
            resolved = self.index.resolve_module(top)
            if not resolved.has_source or not self._lookup.is_followed(top, resolved):
                continue  # code that is not followed (``torch.nn.Module``): no path search in it
            owner = self._split_owner(name)
            if owner is not None:
                found.append((owner[0], owner[1]))
        return found

    def _heavy_base(self, name: str, member: str) -> bool:
        """Whether a subclass that gets ``member`` from its base ``name`` (not overriding it, or
        calling ``super().member()``) runs a construction of the ``[heavy-calls]`` class ``name``:
        its ``__init__``, or its ``__new__`` when the class is followed code that defines one
        (docs/semantics.md rule 16: an instantiation runs the first ``__new__`` and ``__init__``
        of the method resolution order)."""
        if member not in ("__init__", "__new__") or not self._calls_heavy(name, "call"):
            return False
        if member == "__init__":
            return True
        found = self._split_owner(name)
        facts = self._lookup.get_facts(found[0]) if found is not None else None
        return found is not None and facts is not None and defines(facts, f"{found[1]}.__new__")

    def _calls_heavy(self, name: str, kind: str) -> bool:
        """Whether a call site of ``kind`` on ``name`` calls the ``[heavy-calls]`` function ``name``.
        A class statement's base (``class DeviceOf(device):``, kind ``subclass``) is not called:
        creating the class runs the bases' ``__init_subclass__`` only (docs/semantics.md rule 16),
        which :meth:`_find_run` follows."""
        return self._is_heavy_call is not None and kind != "subclass" and self._is_heavy_call(name)

    def _find_run_dotted(
        self, name: str, kind: str, depth: int, undecided: set[str] | None = None
    ) -> list[str]:
        if self._calls_heavy(name, kind):
            return [CallNode(name)]
        found = self._split_owner(name)
        return [] if found is None else self._find_run(found[0], found[1], kind, depth, undecided)

    def _find_run(
        self, module: str, attribute: str, kind: str, depth: int,
        undecided: set[str] | None = None,
    ) -> list[str]:
        """Function nodes run by calling ``attribute`` (dotted) of first-party ``module``; those
        run only through a branch the target does not decide are added to ``undecided``."""
        facts = self._lookup.get_facts(module)
        if facts is None or facts.problem is not None or depth > _ALIAS_DEPTH:
            return []
        if kind == "super":  # ``super().m()`` in a method of class ``owner``
            owner, _, member = attribute.rpartition(".")
            return self._inherited(module, owner, member)
        if defines(facts, attribute):
            nodes: list[str] = [FunctionNode(module, attribute)]
            if kind == "decorator-factory":
                body = self._lookup.get_function_facts(module, attribute)
                returned = body.returns if body is not None else ()
                nodes += [FunctionNode(module, f"{attribute}.<locals>.{name}") for name in returned]
            if kind in ("call", "decorator-factory"):
                return nodes
            return []
        if attribute in facts.classes:
            # ``__post_init__``: a dataclass's own (its bases' are not looked up); a ``[heavy-calls]``
            # base's call once though both its hooks may lead there
            return list(dict.fromkeys(
                node for hook in _CLASS_HOOKS.get(kind, ())
                for node in self.find_member(module, attribute, hook, inherited=hook != "__post_init__")
            ))
        owner, _, member = attribute.rpartition(".")
        if kind == "call" and owner in facts.classes:  # ``C.m()``: a method ``C`` inherits
            return self._inherited(module, owner, member)
        first, _, rest = attribute.partition(".")
        if kind == "call" and rest and "." not in rest and first not in facts.aliases:
            method = self._instance_method(module, facts, first, rest)
            if method is not None:
                return method
        target = facts.aliases.get(first)
        if target is None:
            choices = facts.name_values.get(attribute)
            if choices is not None:
                return self._run_choices(module, choices, kind, depth, undecided)
            lazy = self.lazy_module(module, first) if first not in facts.bindings else None
            if lazy is None or (not rest and lazy.rpartition(".")[2] == first):
                return []  # no lazy entry, or a module called
            # ``go.candlestick.decreasing.Line()``: ``go.candlestick`` is a submodule plotly's
            # lazy mapping imports (then ``rest`` is read on it), or the submodule that exports
            # the name (``Line`` is read there), as the read at import time does (rule 19)
            inner = rest if lazy.rpartition(".")[2] == first else attribute
            return self._find_run_dotted(f"{lazy}.{inner}", kind, depth + 1, undecided)
        resolved = self.index.resolve_module(module)
        name = absolute(f"{target}.{rest}" if rest else target, module, resolved.is_package)
        if name is None:
            return []
        return self._find_run_dotted(name, kind, depth + 1, undecided)

    def _instance_method(
        self, module: str, facts: ModuleFacts, name: str, member: str
    ) -> list[str] | None:
        """``name.member()`` where module-level ``name = C(...)`` and ``C`` is a class the engine
        reads (of ``module`` or imported): ``C``'s ``member``, its own or inherited (sqlalchemy's
        ``import_prefix = _reg.import_prefix``, called from another module; rule 16). None when
        ``name`` is not bound to an instance of a known class."""
        binding = facts.call_bindings.get(name)
        if binding is None:
            return None
        if binding.local:
            if binding.callee not in facts.classes:
                return None
            return self.find_member(module, binding.callee, member)
        dotted = absolute(binding.callee, module, self.index.resolve_module(module).is_package)
        found = self.find_definition(dotted) if dotted is not None else None
        if found is None or not found[2]:
            return None
        return self.find_member(found[0], found[1], member)

    def _run_choices(
        self, module: str, choices: tuple[tuple[str, bool], ...], kind: str, depth: int,
        undecided: set[str] | None,
    ) -> list[str]:
        """What calling a name bound to other names runs (``f = g if test else h``): what each
        branch the target decides runs, every one when it does not (rule 16)."""
        nodes: list[str] = []
        for written, unsure in choices:
            inner: set[str] = set()
            found = self._find_run(module, written, kind, depth + 1, inner)
            nodes += found
            if undecided is not None:
                undecided.update(found if unsure else inner)
        return list(dict.fromkeys(nodes))

    def find_definition(self, name: str, depth: int = 0) -> tuple[str, str, bool] | None:
        """``(module, qualname, is_class)`` of the function or class a dotted name refers to,
        following re-exports, in code whose calls are followed; None if not found."""
        found = self._split_owner(name)
        if found is None:
            return None
        owner, attribute, resolved = found
        facts = self._lookup.get_facts(owner)
        if facts is None or facts.problem is not None or depth > _ALIAS_DEPTH:
            return None
        if attribute in facts.classes:
            return owner, attribute, True
        if defines(facts, attribute):
            return owner, attribute, False
        first, _, rest = attribute.partition(".")
        target = facts.aliases.get(first)
        if target is None:
            return None
        dotted = absolute(f"{target}.{rest}" if rest else target, owner, resolved.is_package)
        return self.find_definition(dotted, depth + 1) if dotted is not None else None

    def _split_owner(self, name: str) -> tuple[str, str, ResolvedModule] | None:
        """``(module, attribute, resolved module)`` for a dotted name: its longest prefix that is
        a module, and the rest; None when there is none, or its code is not followed."""
        parts = name.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            owner = ".".join(parts[:cut])
            resolved = self.index.resolve_module(owner)
            if resolved.kind == "unresolved":
                continue
            if not resolved.has_source or not self._lookup.is_followed(owner, resolved):
                return None
            return owner, ".".join(parts[cut:]), resolved
        return None


def _environ_holds(
    variable: str, wanted: str, writes: tuple[EnvironWrite, ...],
    assumed: Mapping[str, str | None], used: list[str],
) -> str:
    """``"yes"``, ``"maybe"`` or ``"no"``: whether ``variable`` is ``wanted`` at the call. The
    code's last write before the call decides; else (or before a write that may not have run) the
    policy's ``[assume.environ]``, whose use (or the default world's, unset) is added to ``used``."""
    for name, value, certain in writes:
        if name != variable:
            continue
        if certain and value != UNKNOWN_ENVIRON_VALUE:
            return "yes" if value == wanted else "no"
        if certain:  # a value that is not a constant
            return "maybe"
        # a write that may not have run: the value before it counts too
        held = _assumed_holds(variable, wanted, assumed, used)
        if value == UNKNOWN_ENVIRON_VALUE or (value == wanted) != held:
            return "maybe"
        return "yes" if held else "no"
    return "yes" if _assumed_holds(variable, wanted, assumed, used) else "no"


def _assumed_holds(variable: str, wanted: str, assumed: Mapping[str, str | None],
                   used: list[str]) -> bool:
    value = assumed.get(variable)
    used.append(assumption_text(variable, value, environ=True) if variable in assumed
                else f"environ.{json.dumps(variable, ensure_ascii=False)} unset")
    return value == wanted
