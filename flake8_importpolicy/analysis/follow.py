"""Which code the analysis follows: first-party code always, third-party and standard-library code
per ``settings.external`` and the policy's forbidden patterns (docs/policy.md).

One :class:`FollowedCode` per engine answers the three forms of the question: which reached modules
have their own imports followed in a traversal (:meth:`FollowedCode.make_expander`), which modules
have their import-time calls and PEP 562 ``__getattr__`` followed (:meth:`FollowedCode.follows`,
docs/semantics.md rules 15 and 16), and which reached modules hide what they import because they
are not followed (:meth:`FollowedCode.find_unexpanded`, IPL006).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from flake8_importpolicy.analysis.hops.lookup import is_compiled_only
from flake8_importpolicy.analysis.resolve import ModuleIndex
from flake8_importpolicy.model.graph import (
    CallNode,
    Construct,
    Flag,
    FunctionNode,
    Hop,
    UnresolvedCode,
)
from flake8_importpolicy.model.interpreter import ResolvedModule
from flake8_importpolicy.model.patterns import ModulePattern
from flake8_importpolicy.model.policy import ModuleRules, Policy

__all__ = ["FollowedCode"]

_OPTIONAL = frozenset({Flag.GUARDED, Flag.FALLBACK, Flag.CONDITIONAL})
"""The flags of an import that may fail or not run without the module being imported wrongly."""


class FollowedCode:
    """Which code a policy's analysis follows.

    Args:
        policy: the policy (``settings.external``; every forbidden pattern, which decides what
            ``external = "auto"`` follows).
        index: path search (which modules are first-party, standard library, third party).
    """

    def __init__(self, policy: Policy, index: ModuleIndex) -> None:
        self.index = index
        self._external = policy.settings.external
        self._first_party_tops: frozenset[str] | None = None
        # Which code outside the source roots has its import-time calls and PEP 562 __getattr__
        # followed: what any light module's forbidden patterns need (third party, stdlib).
        every = [*policy.heavy, *policy.heavy_calls, *(h for r in policy.light for h in r.forbid)]
        self._scope = self.find_external_scope(h.pattern for h in every)

    def make_expander(self, forbidden: Callable[[str], object | None],
                      patterns: Iterable[ModulePattern]) -> Callable[[str], bool]:
        """The predicate deciding which reached modules have their own imports followed.

        First-party modules with source are followed (and first-party ``.pyc`` files without source,
        which are reported as unanalysable); third-party and stdlib ones per
        ``settings.external`` (``stop``: never; ``follow``: always; ``auto``: wherever a forbidden
        module can still be reached: third-party code whenever a forbidden pattern names a
        third-party or standard-library module (third-party code imports both), the standard library
        only when one names a standard-library module (it imports nothing else). A forbidden
        first-party module is assumed unreachable from third-party code, as a wildcard pattern
        without a fixed top level is not: it makes both followed. Forbidden modules and modules
        already imported at interpreter start-up are never followed.
        """
        follow_third, follow_stdlib = self.find_external_scope(patterns)
        index = self.index

        def expand(name: str) -> bool:
            if forbidden(name) is not None or isinstance(name, CallNode):
                return False
            if isinstance(name, FunctionNode):
                name = name.module
                if forbidden(name) is not None:
                    return False
            resolved = index.resolve_module(name)
            if resolved.preloaded or not (resolved.has_source or is_compiled_only(resolved)):
                return False
            if resolved.origin == "first-party":
                return True
            if resolved.origin == "stdlib":
                return follow_stdlib
            return follow_third

        return expand

    def find_external_scope(
        self, patterns: Iterable[ModulePattern], external: str | None = None
    ) -> tuple[bool, bool]:
        """``(follow third-party code, follow the standard library)`` for forbidden ``patterns``, per
        ``settings.external`` or ``external`` (see :meth:`make_expander`)."""
        external = external or self._external
        if external != "auto":
            return external == "follow", external == "follow"
        follow_third = follow_stdlib = False
        tops = self.first_party_tops()
        for pattern in patterns:
            top = pattern.top_level
            if top is None:
                return True, True
            if top not in tops:
                follow_third = True
                if self.index.resolve_module(top).origin == "stdlib":
                    follow_stdlib = True
        return follow_third, follow_stdlib

    def widen(self, patterns: Iterable[ModulePattern]) -> None:
        """Follow calls and PEP 562 ``__getattr__`` wherever ``patterns`` (forbidden modules that
        are not the policy's: ``why --heavy``) need it too."""
        widened = self.find_external_scope(patterns)
        self._scope = (self._scope[0] or widened[0], self._scope[1] or widened[1])

    def follows(self, module: str) -> bool:
        """Whether ``module``'s import-time calls and PEP 562 ``__getattr__`` are followed: always in
        first-party code, elsewhere when some light module's forbidden patterns need its origin
        followed (see :meth:`make_expander`)."""
        resolved = self.index.resolve_module(module)
        if resolved.preloaded or not resolved.has_source:
            return False
        if resolved.origin == "first-party":
            return True
        return self._scope[1] if resolved.origin == "stdlib" else self._scope[0]

    def first_party_tops(self) -> frozenset[str]:
        """Top-level first-party module names (cached)."""
        if self._first_party_tops is None:
            self._first_party_tops = frozenset(self.index.find_first_party_top_levels())
        return self._first_party_tops

    def find_unfollowed_origins(self, rules: ModuleRules) -> frozenset[str]:
        """The origins (``third-party``, ``stdlib``) whose packages a light module's forbidden
        modules could be reached through but that ``external = "stop"`` does not analyse."""
        if self._external != "stop":
            return frozenset()
        third, stdlib = self.find_external_scope((h.pattern for h in rules.forbid), external="auto")
        return frozenset(o for o, on in (("third-party", third), ("stdlib", stdlib)) if on)

    def find_unexpanded(
        self, name: str, chain: tuple[Hop, ...], unfollowed: frozenset[str]
    ) -> tuple[UnresolvedCode, ...]:
        """A reached node whose code is not analysed, when that hides what it imports (IPL006): a
        compiled module without a ``.py`` twin outside the standard library, a package that
        ``external = "stop"`` leaves out although a forbidden module could be reached through it
        (``unfollowed``: :meth:`find_unfollowed_origins`), or a module that path search does not
        find for the interpreter (:meth:`_reports_missing`: a package the project's environment
        has and this interpreter lacks, as under pipx or pre-commit's own venv)."""
        if isinstance(name, (FunctionNode, CallNode)) or not chain:
            return ()
        construct = _unexpanded_construct(self.index.resolve_module(name), unfollowed)
        if construct is None:
            return ()
        last = chain[-1]
        if construct is Construct.EXTENSION_MODULE:
            detail = f"{name} (compiled: its imports are not known)"
        elif construct is Construct.NOT_INSTALLED:
            if not self._reports_missing(name, chain):
                return ()
            detail = f"{name} (not found by {self.index.interpreter.executable})"
        else:
            name = name.partition(".")[0]
            detail = f"{name} (not analysed: external = \"stop\")"
        return (UnresolvedCode(name, last.path, last.line, last.col, construct, detail, last.flags),)

    def may_find_unexpanded(self, name: str, unfollowed: frozenset[str]) -> bool:
        """Whether :meth:`find_unexpanded` finds something for ``name`` by some chain: the part of
        its answer that does not depend on the chain (a traversal asks it once per node)."""
        if isinstance(name, (FunctionNode, CallNode)):
            return False
        return _unexpanded_construct(self.index.resolve_module(name), unfollowed) is not None

    def _reports_missing(self, name: str, chain: tuple[Hop, ...]) -> bool:
        """Whether ``name``, reached by ``chain`` and not found by path search, is a blind spot
        (IPL006 ``not-installed``): not when its parent package is missing too (the outermost
        missing module is the one reported, once), nor when the import statement expects it may
        fail or not run (``guarded`` in a ``try:`` body, a ``fallback`` in an ``except`` handler,
        ``conditional`` under a test the engine cannot evaluate: an optional dependency), nor when
        a hop up the chain is ``guarded``: the ``ImportError`` the missing module raises goes up to
        that ``try:``, which expects it (httpcore's ``try: from .http2 import ...`` over
        ``http2.py``'s ``import h2``). A submodule of an installed package is no such optional
        dependency: the package's code names it unconditionally, so something serves it that path
        search does not see (toolz's ``tlz.curried``, which a finder ``tlz`` added serves, behind
        dask.array's ``try:`` that re-raises), or the import fails wherever it is guarded."""
        if _OPTIONAL.intersection(chain[-1].flags):
            return False
        parent = name.rpartition(".")[0]
        if parent and self.index.resolve_module(parent).kind == "unresolved":
            return False
        return bool(parent) or not any(Flag.GUARDED in hop.flags for hop in chain[:-1])


def _unexpanded_construct(resolved: ResolvedModule, unfollowed: frozenset[str]) -> Construct | None:
    """Which blind spot a reached module that is not expanded may be
    (:meth:`FollowedCode.find_unexpanded`): a compiled module outside the standard library, a module
    path search does not find, a package of an origin in ``unfollowed``; None for any other (a
    module imported at start-up included)."""
    if resolved.preloaded:
        return None
    if resolved.kind == "extension" and resolved.origin != "stdlib":
        return Construct.EXTENSION_MODULE
    if resolved.kind == "unresolved":
        return Construct.NOT_INSTALLED
    if resolved.has_source and resolved.origin in unfollowed:
        return Construct.UNFOLLOWED_PACKAGE
    return None
