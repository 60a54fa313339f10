"""Import extraction: a scope-aware AST visitor that finds the imports a module runs at import time.

Only statements that CPython executes when the module is imported are visited (docs/semantics.md
rules 8-13): module-level code, ``if``/``try``/``with``/``for``/``while``/``match`` bodies, class bodies,
decorators, default values and base classes. Function and lambda bodies are deferred; the body of
``if TYPE_CHECKING:`` and of ``if __name__ == "__main__":`` never runs on import; ``sys.version_info``,
``sys.platform`` and ``os.name`` conditions are evaluated for the target versions and platform
(:mod:`flake8_importpolicy.analysis.conditions`).

Beyond import statements it records what later rules need (docs/semantics.md rules 15-17): the calls
made at import time (module level, class bodies, decorators, default values, base classes and
metaclasses), the imports and calls in every function body (run when the function is called), a
module-level ``__getattr__`` (PEP 562), and PEP 810 lazy imports (``lazy import x`` is recognised on
Python 3.11-3.13 by removing the soft keyword before parsing, which keeps every line number and the
statement's column).

Nothing is imported or executed: the source is parsed with :func:`ast.parse` only.
"""

from __future__ import annotations

import ast
import bisect
import contextlib
import gc
import importlib.util
import io
import re
import threading
import tokenize
from collections.abc import (
    Callable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from typing import Final, TypeVar, cast

from flake8_importpolicy.analysis.importtime.bindings import (
    DEFINITIONS,
    NO_VALUE,
    BindingKind,
    Scope,
)
from flake8_importpolicy.analysis.skeleton import blank_function_bodies
from flake8_importpolicy.model.facts import (
    FunctionFacts,
    ModuleAll,
    ModuleClasses,
    ModuleFacts,
    ModuleGetattr,
    ModuleValues,
    SourceProblem,
    Target,
)
from flake8_importpolicy.model.graph import BoundArgument

from flake8_importpolicy.analysis.importtime.calls import HeldCallables
from flake8_importpolicy.analysis.importtime.names import NamespaceWrites
from flake8_importpolicy.analysis.importtime.walker import (
    Pending,
    _ImportTimeVisitor,
    analyse_function,
    analyse_functions,
)

__all__ = [
    "FunctionBodies",
    "FunctionIndex",
    "extract_facts",
    "extract_facts_and_index",
    "parse_function_bodies",
]


def extract_facts(source: bytes | str, target: Target, *, functions: bool = True) -> ModuleFacts:
    """Parse ``source`` and return the imports it runs at import time for ``target``.

    Args:
        source: the module's source; bytes are decoded like CPython does (BOM, PEP 263 coding cookie).
        target: the versions and platform for which ``sys.version_info``/``sys.platform`` tests are
            evaluated.
        functions: analyse every function body too (``ModuleFacts.functions``). With False only
            their names are recorded (``function_names``); the engine asks for the bodies of a
            module only when an import-time call reaches one (most modules' never are), which
            halves the cost of a cold check.

    Returns:
        The module's :class:`ModuleFacts`. A source that cannot be parsed (syntax error, bad encoding,
        NUL byte, a construct newer than the running Python) gives facts with ``problem`` set; this
        function never raises for bad input.
    """
    return _extract(source, target, functions=functions)[1]


def _extract(
    source: bytes | str, target: Target, *, functions: bool, skeleton: bool = False
) -> tuple[_ImportTimeVisitor | None, ModuleFacts]:
    """:func:`extract_facts`, also returning the visitor (None if the source did not parse).

    With ``skeleton`` (only with ``functions=False``) the function bodies are blanked out before
    parsing (:mod:`flake8_importpolicy.analysis.skeleton`); the visitor's function nodes then have a ``pass``
    body, but the right lines."""
    skeleton = skeleton and not functions
    with _gc_paused():
        try:
            return _extract_unpaused(
                source, target, functions=functions, report_recursion=False, skeleton=skeleton
            )
        except RecursionError:
            return _on_new_stack(
                lambda: _extract_unpaused(source, target, functions=functions, skeleton=skeleton)
            )


_R = TypeVar("_R")

_DEEP_STACK: Final = 16 * 2**20
"""Bytes of stack for the thread that retries a deeply nested source (see :func:`_on_new_stack`)."""


def _on_new_stack(function: Callable[[], _R]) -> _R:
    """``function()`` called at the bottom of a new thread's stack.

    For work that exceeded the recursion limit where it was called: the caller's frames count
    towards the limit, so how deeply a source may nest would depend on where it is analysed (a
    worker process forked deep inside the engine, a long chain of import-time calls) and so would
    the answers. Tried again from a stack of a few frames, it always gets the same budget.
    """
    outcome: list[tuple[bool, object]] = []

    def run() -> None:
        try:
            outcome.append((True, function()))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the calling thread
            outcome.append((False, exc))

    try:  # as deep a stack as the main thread's usually is (musl's default for threads is 128 KiB)
        previous = threading.stack_size(_DEEP_STACK)
    except (ValueError, RuntimeError):
        previous = None
    try:
        thread = threading.Thread(target=run, name="importpolicy-deep-source")
        thread.start()
    finally:
        if previous is not None:
            threading.stack_size(previous)
    thread.join()
    succeeded, value = outcome[0]
    if not succeeded:
        raise cast(BaseException, value)
    return cast(_R, value)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: a syntax tree is millions of young objects without
    cycles (reference counting frees it), and collections triggered while it is built cost about a
    fifth of the extraction time for nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _extract_unpaused(
    source: bytes | str,
    target: Target,
    *,
    functions: bool,
    report_recursion: bool = True,
    skeleton: bool = False,
) -> tuple[_ImportTimeVisitor | None, ModuleFacts]:
    """The extraction; a source nested too deeply for the recursion limit is a problem, or with
    ``report_recursion=False`` raises RecursionError (to be tried again on a new stack)."""
    try:
        lazy_lines, tree = _parse(source, skeleton=skeleton)
    except SyntaxError as exc:
        line = exc.lineno or 1
        if "null bytes" in (exc.msg or ""):
            line = _nul_line(source)
        return None, ModuleFacts(problem=SourceProblem(line, _syntax_message(exc)))
    except (ValueError, UnicodeError, RecursionError, MemoryError, tokenize.TokenError) as exc:
        if isinstance(exc, RecursionError) and not report_recursion:
            raise
        unreadable = SourceProblem(_nul_line(source), str(exc) or type(exc).__name__)
        return None, ModuleFacts(problem=unreadable)
    raw = source.encode("utf-8", "replace") if isinstance(source, str) else source  # scanned as text
    declared_global = _globals(raw)
    if _writes_namespace(raw):  # ``globals()[...] = ...`` somewhere: no name keeps its value
        declared_global = NamespaceWrites(declared_global, _last_module_level_write(raw))
    visitor = _ImportTimeVisitor(
        target, lazy_lines=lazy_lines, declared_global=declared_global, walrus=_has_walrus(raw),
        source=raw,
    )
    try:
        visitor.visit_body(tree.body, frozenset())
        analysed = analyse_functions(visitor) if functions else {}
    except RecursionError:
        if not report_recursion:
            raise
        return visitor, ModuleFacts(problem=SourceProblem(1, "source too deeply nested to analyse"))
    problem = visitor.expressions.problem or _late_future_import(tree) or _lazy_too_early(lazy_lines, target)
    if problem is not None:
        return visitor, ModuleFacts(problem=problem)
    bound = sorted(visitor.scope.items())  # by name: the same mappings whatever the order of binding
    return visitor, ModuleFacts(
        sites=tuple(visitor.imports.finish()),
        bindings=frozenset(name for name, binding in bound if binding.bound),
        exports=ModuleAll(
            None if visitor.imports.all_unknown or visitor.imports.all_names is None
            else tuple(visitor.imports.all_names),
            visitor.imports.all_conditional,
        ),
        getattr_hook=ModuleGetattr(visitor.lazy.defines_getattr, visitor.lazy.lazy_attach),
        binding_lines={
            name: binding.line for name, binding in bound if binding.line is not None
        },
        calls=tuple(visitor.callees.calls),
        functions=analysed,
        function_names=frozenset(name for name, _ in visitor.pending),
        class_tree=ModuleClasses(frozenset(visitor.callees.classes.names), visitor.callees.classes.bases),
        aliases={
            name: binding.refers_to for name, binding in bound
            if binding.kind is BindingKind.IMPORT and binding.refers_to is not None
        },
        attribute_reads=tuple(visitor.lazy.attribute_reads),
        values=ModuleValues(
            {name: binding.call for name, binding in bound if binding.call is not None},
            {
                name: binding.choices for name, binding in bound
                if binding.choices is not None and binding.bound
                and binding.kind in (BindingKind.OTHER, BindingKind.CALL)  # ``partial(g)``: a call's
                and binding.refers_to is None
            },
            {
                name: bool(binding.value) for name, binding in bound
                if binding.bound and binding.refers_to is None
                and type(binding.value) in _TRUTH_TYPES  # not a container: it may change
            },
        ),
        unresolved=tuple(visitor.dynamic.unresolved_sites),
        path_changes=tuple(visitor.dynamic.path_changes),
    )


_TRUTH_TYPES: Final = frozenset({bool, int, str, type(None), float, bytes})
"""The types of a module-level value whose truth another module's test may read
(:attr:`~flake8_importpolicy.model.facts.ModuleValues.truths`): exactly these (a ``str`` subclass
is a name computed from the module's own, not a constant)."""


def extract_facts_and_index(
    source: bytes | str, target: Target
) -> tuple[ModuleFacts, FunctionIndex | None]:
    """:func:`extract_facts` without function bodies, plus the module's :class:`FunctionIndex`
    (None when ``facts.problem`` is set), from a single parse.

    Function bodies are not parsed at all (:mod:`flake8_importpolicy.analysis.skeleton`): a syntax error
    that is only inside a function body does not set ``facts.problem`` here, where
    :func:`extract_facts` reports it."""
    visitor, facts = _extract(source, target, functions=False, skeleton=True)
    if visitor is None or facts.problem is not None:
        return facts, None
    spans: dict[str, list[tuple[int, int]]] = {}
    for qualname, node in visitor.pending:
        spans.setdefault(qualname, []).append((node.lineno, node.end_lineno or node.lineno))
    aliases: dict[str, str] = {}
    constants: dict[str, object] = {}
    definitions: set[str] = set()
    call_bound: set[str] = set()
    for name, binding in visitor.scope.items():  # a module's scope: no enclosing one
        if binding.refers_to is not None:
            aliases[name] = binding.refers_to
        if binding.value is not NO_VALUE:
            constants[name] = binding.value
        if binding.kind in DEFINITIONS:
            definitions.add(name)
        if binding.call is not None:
            call_bound.add(name)
    index = FunctionIndex(
        target=target,
        spans={name: tuple(found) for name, found in spans.items()},
        aliases=aliases,
        constants=constants,
        local_defs=frozenset(definitions),
        future_annotations=visitor.expressions.future_annotations,
        call_bound=frozenset(call_bound),
        star_bases=tuple(visitor.callees.star_bases),
        decorated=frozenset(visitor.callees.decorated),
        variables=visitor.callees.module_variables(),
    )
    return facts, index


def parse_function_bodies(source: bytes | str, target: Target) -> FunctionBodies:
    """Parse all of ``source`` for its :class:`FunctionBodies` (when no :class:`FunctionIndex` of
    it is at hand). If the module cannot be analysed, the bodies' ``problem`` says why and they
    find no function; never raises for bad input."""
    visitor, facts = _extract(source, target, functions=False)
    if visitor is None or facts.problem is not None:
        return FunctionBodies(_ImportTimeVisitor(target), (), problem=facts.problem)
    return FunctionBodies(visitor, visitor.pending)


@dataclass(frozen=True)
class FunctionIndex:
    """Where a module's functions are and which module-level names their bodies see: enough to
    analyse one body later by parsing only its own lines (see :meth:`load`).

    Attributes:
        target: the target the module was analysed for.
        spans: ``{qualified name: ((def line, last line), ...)}``, 1-based and inclusive, one pair
            per definition in source order (a name defined twice has two).
        call_bound: the module-level names bound to a call's result (candidate lazy module objects).
        star_bases: the modules the module star-imports (a call of a name they may bind).
        decorated: the module-level functions a decorator may have replaced (a call of one runs
            what the decorator returned).
        variables: the module-level variables, each with the known callables it may hold (None:
            not only those), for a call of one in a body (rule 16).
        aliases, constants, local_defs, future_annotations: the module's final import aliases,
            literal constants, names bound by ``def``/``class``, and whether
            ``from __future__ import annotations`` is in effect (PEP 563).
    """

    target: Target
    spans: Mapping[str, tuple[tuple[int, int], ...]]
    aliases: Mapping[str, str]
    constants: Mapping[str, object]
    local_defs: frozenset[str]
    future_annotations: bool
    call_bound: frozenset[str] = frozenset()
    star_bases: tuple[str, ...] = ()
    decorated: frozenset[str] = frozenset()
    variables: Mapping[str, HeldCallables | None] = field(default_factory=dict)

    def load(self, source: bytes | str) -> FunctionBodies:
        """The function bodies of ``source``, which must be the source this index was made from
        (the caller checks its digest). Parses nothing until a body is asked for."""
        visitor = _ImportTimeVisitor(
            self.target,
            scope=Scope.from_index(self.aliases, self.constants, self.local_defs, self.call_bound),
            future_annotations=self.future_annotations,
            star_bases=list(self.star_bases),
            walrus=_has_walrus(source),
            decorated=set(self.decorated),
        )
        visitor.callees.own_defs.variables = self.variables
        return FunctionBodies(visitor, (), source=source, spans=self.spans)


class FunctionBodies:
    """The function bodies of one module, each analysed the first time it is asked for.

    :meth:`find_function_facts` gives for one qualified name exactly the :class:`FunctionFacts`
    that ``extract_facts(source, target).functions`` holds for it (docs/semantics.md rule 16), without
    analysing the module's other functions: an import-time call usually reaches one or two of a
    module's functions. Made from a :class:`FunctionIndex`, it parses only the lines of the
    function asked for (inside ``if 1:`` when indented, so columns stay, after blank lines, so line
    numbers stay), and falls back to parsing the whole source if that fails.
    """

    def __init__(
        self,
        visitor: _ImportTimeVisitor,
        pending: Sequence[Pending],
        *,
        source: bytes | str | None = None,
        spans: Mapping[str, tuple[tuple[int, int], ...]] | None = None,
        problem: SourceProblem | None = None,
    ) -> None:
        self.problem = problem
        """Why the module's source cannot be analysed, once that is known: set when a body asked
        for does not parse from its own lines and the whole source does not parse either (a
        syntax error inside a function body, which the module-level extraction does not parse)."""
        self._visitor = visitor
        self._nodes: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        for qualname, node in pending:
            self._nodes.setdefault(qualname, []).append(node)
        self._source = source
        self._spans = spans or {}
        self._lines: list[str] | None = None
        self._facts: dict[tuple[str, BoundArgument], FunctionFacts | None] = {}

    def find_function_facts(
        self, qualname: str, argument: BoundArgument = None
    ) -> FunctionFacts | None:
        """The facts of the function ``qualname`` (``"f"``, ``"C.m"``, ``"f.<locals>.g"``), or None
        if the module defines no such function (a nested one counts if it is at most two levels
        of ``<locals>`` deep, as in ``extract_facts``). With ``argument``, the body is analysed with
        its first parameter bound to that string (a PEP 562 ``__getattr__`` run for one name, rule
        15): conditions and lookups on it are evaluated."""
        if (qualname, argument) in self._facts:
            return self._facts[(qualname, argument)]
        outer, nested_marker, _ = qualname.rpartition(".<locals>.")
        if nested_marker and (outer, None) not in self._facts:
            self.find_function_facts(outer)  # registers the functions nested in ``outer``
        found: FunctionFacts | None = None
        # Every definition under this name is analysed (a later one wins, as in extract_facts)
        # because each may define nested functions.
        for node in self._find_nodes(qualname):
            found, nested = self._analyse(qualname, node, argument)
            for name, nested_node in nested:
                self._nodes.setdefault(name, []).append(nested_node)
        self._facts[(qualname, argument)] = found
        return found

    def _analyse(
        self, qualname: str, node: ast.FunctionDef | ast.AsyncFunctionDef, argument: BoundArgument
    ) -> tuple[FunctionFacts | None, list[Pending]]:
        """One body's facts and nested functions; (None, []) if nested too deeply to analyse,
        whatever the depth of the caller's stack (see :func:`_on_new_stack`): then
        :attr:`problem` says so."""
        try:
            return analyse_function(self._visitor, qualname, node, argument)
        except RecursionError:
            pass

        def again() -> tuple[FunctionFacts | None, list[Pending]]:
            try:
                return analyse_function(self._visitor, qualname, node, argument)
            except RecursionError:
                return None, []

        found = _on_new_stack(again)
        if found[0] is None:  # never silently empty: the module cannot be analysed (IPL005)
            self.problem = SourceProblem(node.lineno, "function body too deeply nested to analyse")
        return found

    def _find_nodes(self, qualname: str) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        if qualname in self._nodes or qualname not in self._spans:
            return self._nodes.get(qualname, [])
        nodes = [self._parse_span(*span) for span in self._spans[qualname]]
        if all(node is not None for node in nodes):
            found = [node for node in nodes if node is not None]
        else:  # a span that does not parse on its own: parse the whole module once
            found = self._parse_all().get(qualname, [])
        self._nodes[qualname] = found
        return found

    def _parse_span(self, first: int, last: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        lines = self._text_lines()
        segment = "\n".join(lines[first - 1:last]) + "\n"
        indented = segment[:1] in (" ", "\t")
        if indented and first < 2:
            return None
        # Blank lines before the segment put it at its own lines (cheaper than shifting every node).
        padding = "\n" * (first - 2) + "if 1:\n" if indented else "\n" * (first - 1)
        try:
            tree = ast.parse(padding + segment)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        body = tree.body[0].body if indented and isinstance(tree.body[0], ast.If) else tree.body
        node = body[0] if len(body) == 1 else None
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.lineno != first:
            return None
        return node

    def _text_lines(self) -> list[str]:
        if self._lines is None:
            text, _ = _strip_lazy_keyword(self._source or "")
            if isinstance(text, bytes):
                text = importlib.util.decode_source(text)
            else:
                text = text.replace("\r\n", "\n").replace("\r", "\n")
            self._lines = text.split("\n")
        return self._lines

    def _parse_all(self) -> dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]]:
        whole = parse_function_bodies(self._source or "", self._visitor.target)
        self._spans = {}
        if whole.problem is not None:
            self.problem = whole.problem
            return {}
        self._nodes.update(whole._nodes)
        return whole._nodes


_LAZY_HINT: Final = re.compile(rb"^[ \t]*lazy[ \t]+(?:import|from)\b", re.MULTILINE)
_LAZY_WORDS: Final = re.compile(rb"lazy[ \t]+(?:import|from)\b")
""":data:`_LAZY_HINT` without its anchor, tried first: a pattern that starts with a literal is
searched for in C, while a MULTILINE ``^`` is tried at every byte (eight times slower here)."""


def _strip_lazy_keyword(source: bytes | str) -> tuple[bytes | str, dict[int, int]]:
    """Remove PEP 810's soft keyword ``lazy`` before ``import``/``from`` statements.

    Returns the source to parse and ``{line: column of the statement}`` for each lazy import. Only
    the keyword and the blanks after it are removed, so line numbers are unchanged and the statement
    starts at the column where ``lazy`` stood. Sources without ``lazy`` are returned as they are.

    Raises:
        tokenize.TokenError, SyntaxError, UnicodeError: for sources that cannot be tokenized.
    """
    raw = source.encode("utf-8") if isinstance(source, str) else source
    if b"lazy" not in raw:
        return source, {}
    # Python's line breaks (CR LF, CR, LF) as LF, and only those: tokenize counts rows at LF alone,
    # and str.splitlines would also break at a form feed, \x1c or \u2028 (in a comment, say).
    raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    if not _LAZY_WORDS.search(raw) or not _LAZY_HINT.search(raw):
        return source, {}
    tokens = list(tokenize.tokenize(io.BytesIO(raw).readline))
    encoding = tokens[0].string if tokens and tokens[0].type == tokenize.ENCODING else "utf-8"
    lines = raw.decode(encoding).split("\n")
    lazy: dict[int, int] = {}
    at_statement_start = True
    for index, token in enumerate(tokens):
        if token.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING):
            at_statement_start = True
            continue
        if token.type in (tokenize.NL, tokenize.COMMENT):
            continue
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if (
            at_statement_start
            and token.type == tokenize.NAME
            and token.string == "lazy"
            and following is not None
            and following.type == tokenize.NAME
            and following.string in ("import", "from")
            and following.start[0] == token.start[0]
        ):
            row, col = token.start
            line = lines[row - 1]
            lines[row - 1] = line[:col] + line[following.start[1]:]
            lazy[row] = col
        at_statement_start = token.type == tokenize.OP and token.string == ";"
    return "\n".join(lines), lazy


def _parse(source: bytes | str, *, skeleton: bool) -> tuple[dict[int, int], ast.Module]:
    """The lazy-import lines (see :func:`_strip_lazy_keyword`) and syntax tree of ``source``; with
    ``skeleton``, of its skeleton when there is one that parses, else of the whole source.

    Raises:
        SyntaxError, ValueError, UnicodeError, tokenize.TokenError, RecursionError, MemoryError: as
            :func:`ast.parse` and :func:`_strip_lazy_keyword`, for the whole source.
    """
    if skeleton and isinstance(source, bytes):
        blanked = blank_function_bodies(source)
        if blanked is not None and blanked is not source:
            try:
                text, lazy_lines = _strip_lazy_keyword(blanked)
                return lazy_lines, ast.parse(text)
            except (SyntaxError, ValueError, UnicodeError, MemoryError, tokenize.TokenError):
                pass  # the whole source says what is wrong, and where
    text, lazy_lines = _strip_lazy_keyword(source)
    return lazy_lines, ast.parse(text)


def _lazy_too_early(lazy_lines: Mapping[int, int], target: Target) -> SourceProblem | None:
    """PEP 810's ``lazy import`` / ``lazy from`` is new syntax in Python 3.15: a module that uses it
    does not compile on an older target version (``lazy`` is a plain name there, and ``lazy import
    x`` a SyntaxError), so importing it raises (docs/semantics.md rule 17)."""
    older = sorted(version for version in target.versions if version < (3, 15))
    if not lazy_lines or not older:
        return None
    major, minor = older[0]
    return SourceProblem(
        min(lazy_lines),
        f"'lazy' imports (PEP 810) need Python 3.15; a syntax error on target version {major}.{minor}",
    )


def _late_future_import(tree: ast.Module) -> SourceProblem | None:
    """``from __future__`` after other statements is a compile-time SyntaxError (``ast.parse``
    accepts it, the compiler does not)."""
    body = tree.body
    start = 1 if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
        and isinstance(body[0].value.value, str) else 0
    seen_other = False
    for stmt in body[start:]:
        is_future = isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__" and not stmt.level
        if is_future and seen_other:
            message = "from __future__ imports must occur at the beginning of the file"
            return SourceProblem(stmt.lineno, message)
        seen_other = seen_other or not is_future
    return None


_GLOBAL_WORD: Final = re.compile(rb"global[ \t]+([A-Za-z_][\w \t,]*)")
"""``global`` and its names; :func:`_globals` keeps the matches that start a statement: at the start
of a line, after ``;`` or after ``:`` (``def f(): global x``), spaces and tabs between. (One pattern
with ``(?:^|[;:])`` in front is tried at every colon of the module: 2.5 times slower on vLLM.)"""


def _globals(raw: bytes) -> frozenset[str]:
    """Names declared ``global`` anywhere in the module, read from the text (no second AST walk).

    A match inside a string literal only adds a name, which makes it non-constant: the safe side.
    """
    if b"global" not in raw:  # a substring test is ~30 times faster than the regex scan
        return frozenset()
    names: set[str] = set()
    for match in _GLOBAL_WORD.finditer(raw):
        before = raw[max(raw.rfind(b"\n", 0, match.start()), -1) + 1:match.start()].rstrip(b" \t")
        if before and before[-1:] not in (b";", b":"):
            continue
        names.update(name.strip().decode() for name in match.group(1).split(b",") if name.strip())
    return frozenset(names)


_NAMESPACE_WRITE: Final = re.compile(
    rb"\b(?:globals|vars)\(\)\s*(?:\[[^\]\n]*\]\s*=(?!=)|\.update\b|\.setdefault\b)"
)


_TOP_LEVEL: Final = re.compile(rb"^[^\s#)\]}]", re.MULTILINE)
_IN_DEFINITION: Final = (b"def ", b"async ", b"class ", b"@")


def _last_module_level_write(raw: bytes) -> int | None:
    """The line of the last ``globals()``/``vars()`` write when every one is in module-level code
    (not in a ``def`` or ``class``), else None: a write in a function may run at any time."""
    tops = [top.start() for top in _TOP_LEVEL.finditer(raw)]  # where each top-level line starts
    last = None
    for write in _NAMESPACE_WRITE.finditer(raw):
        index = bisect.bisect_right(tops, write.start()) - 1
        if index < 0 or raw.startswith(_IN_DEFINITION, tops[index]):
            return None
        last = raw.count(b"\n", 0, write.start()) + 1
    return last


_GETATTR_DEF: Final = re.compile(rb"^def[ \t]+__getattr__[ \t]*\([ \t]*(\w+)", re.MULTILINE)
_TOP_LEVEL_LINE: Final = re.compile(rb"^[^\s#)]", re.MULTILINE)


def _writes_namespace(raw: bytes) -> bool:
    """Whether the module writes its namespace through ``globals()``/``vars()`` anywhere (a
    function called at import time may rebind any name then). A module-level PEP 562
    ``__getattr__(name)`` caching what it made in ``globals()[name]`` does not count: it is
    called only for a name the module does not bind, so it rebinds none (pydantic, langchain)."""
    if b"globals()" not in raw and b"vars()" not in raw:
        return False
    hooks: list[tuple[int, int, bytes]] = []  # the ``__getattr__`` bodies: (start, end, parameter)
    for hook in _GETATTR_DEF.finditer(raw):
        after = _TOP_LEVEL_LINE.search(raw, raw.find(b"\n", hook.end()) + 1)
        hooks.append((hook.start(), after.start() if after else len(raw), hook.group(1)))
    for write in _NAMESPACE_WRITE.finditer(raw):
        text = write.group()
        if not any(
            start <= write.start() < end
            and text.startswith(b"globals()[" + parameter + b"]")
            for start, end, parameter in hooks
        ):
            return True
    return False


def _has_walrus(source: bytes | str) -> bool:
    """Whether ``:=`` occurs anywhere in the source (a match in a string only costs a walk)."""
    return b":=" in source if isinstance(source, bytes) else ":=" in source


def _nul_line(source: bytes | str) -> int:
    """The 1-based line of the first NUL byte (1 if there is none)."""
    if isinstance(source, bytes):
        index = source.find(b"\0")
        return 1 if index < 0 else source.count(b"\n", 0, index) + 1
    index = source.find("\0")
    return 1 if index < 0 else source.count("\n", 0, index) + 1


def _syntax_message(exc: SyntaxError) -> str:
    message = exc.msg or "invalid syntax"
    if message.startswith("(unicode error)"):
        message = message.replace("(unicode error) ", "")
    return message
