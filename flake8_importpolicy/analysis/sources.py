"""Where the analysis gets each module's facts: editor buffers, worker processes, the facts cache.

A :class:`FactsSource` is the one place that reads source files for a :class:`PolicyEngine
<flake8_importpolicy.analysis.engine.PolicyEngine>`. For one policy and one target interpreter it

- queries the interpreter (path search needs its ``sys.path``), and meanwhile extracts the facts of
  the light modules' files, which the check reads first;
- answers the graph's requests for a module's :class:`ModuleFacts` and for one function body's
  :class:`FunctionFacts`, taking an editor's unsaved buffer over the file on disk, a worker's
  prefetched result over extracting in this process, and the on-disk facts cache over parsing;
- records the digest of every file whose facts it gave out (what the answers depend on) and reads
  single source lines for ``# noqa``.

Facts are a pure function of (file bytes, target), so where they come from never changes an answer.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from pathlib import Path

from flake8_importpolicy.analysis.extract import (
    FunctionBodies,
    FunctionIndex,
    parse_function_bodies,
)
from flake8_importpolicy.analysis.hops.lookup import resolve_relative
from flake8_importpolicy.analysis.parallel import Extracted, FactsPool, cached_facts
from flake8_importpolicy.analysis.resolve import (
    ModuleIndex,
    query_interpreter,
    query_is_running,
    read_source,
    read_source_stamped,
    running_interpreter_without_path,
)
from flake8_importpolicy.model.facts import (
    FunctionFacts,
    ModuleFacts,
    SourceProblem,
    SourceRead,
    Target,
)
from flake8_importpolicy.model.graph import BoundArgument
from flake8_importpolicy.model.interpreter import InterpreterInfo, ResolvedModule
from flake8_importpolicy.model.policy import Policy
from flake8_importpolicy.model.ports import FactsCache

__all__ = ["FactsSource"]


def assumed_target(policy: Policy) -> dict[str, Any]:
    """The :class:`Target` fields that carry the policy's ``[assume]`` and ``[assume.environ]``
    entries (facts, and so their cache entries, depend on them)."""
    return {
        "assume": tuple(sorted((a.key, a.value) for a in policy.assumptions
                               if not a.environ and a.value is not None)),
        "environ": tuple(sorted(
            ((a.key, a.value if isinstance(a.value, str) else None)
             for a in policy.assumptions if a.environ),
            key=lambda pair: pair[0],
        )),
    }


class FactsSource:
    """The facts of a policy's modules for one target, from wherever they are cheapest to get.

    Args:
        policy: the loaded policy (source roots, interpreter, targets, light and forbidden modules).
        interpreter: the Python whose ``sys.path`` is searched (``--interpreter``); None: the
            policy's ``settings.interpreter``, else the running one.
        target_versions: the ``(major, minor)`` versions conditions are evaluated for; empty: the
            policy's ``settings.target-versions``, else the interpreter's version.
        overrides: ``{path: source bytes}`` to analyse instead of the files on disk (an editor's
            unsaved buffers); paths are resolved.
        facts_cache: where module and function facts are kept between runs (None: nowhere).
        interpreter_info: the interpreter's facts if already known (skips the query).
        jobs: processes that extract facts in parallel (see
            :mod:`flake8_importpolicy.analysis.parallel`); 1 extracts everything in this process.

    Attributes:
        policy: the policy.
        interpreter: the target interpreter's facts (:class:`InterpreterInfo`).
        target: the versions, platform and lazy-imports mode facts are extracted for.
        index: path search over the source roots and the interpreter's ``sys.path``.
        pool: the worker processes that prefetch facts (:class:`FactsPool`).
        early: ``{path: (what was read, facts, index)}`` extracted while the interpreter query ran, for
            this target; an entry is removed when the traversal uses it.
        files_read: ``{path: what was read}`` of every file whose facts were given out (an empty
            digest for a file that could not be read or came from an editor's buffer).
        reading: called with what the traversal reads when it moves to another installed package
            or to the standard library (``"installed package torch"``), for a progress line; None:
            not called.

    Every argument is required: the defaults are those of the one caller,
    :class:`~flake8_importpolicy.analysis.engine.PolicyEngine`. Call :meth:`close` to stop the
    worker processes.

    Raises:
        flake8_importpolicy.model.errors.InterpreterError: if the target interpreter cannot be
            queried.
    """

    def __init__(
        self,
        policy: Policy,
        *,
        interpreter: str | None,
        target_versions: Iterable[tuple[int, int]],
        overrides: Mapping[Path, bytes] | None,
        facts_cache: FactsCache | None,
        interpreter_info: InterpreterInfo | None,
        jobs: int,
    ) -> None:
        self.policy = policy
        settings = policy.settings
        exe = settings.interpreter_executable(interpreter)
        self._overrides = {Path(p).resolve(): text for p, text in (overrides or {}).items()}
        self._cache = facts_cache
        early: tuple[Target, dict[Path, Extracted]] | None = None
        if interpreter_info is None and query_is_running(exe):
            early = self._extract_light_files_early(exe, tuple(target_versions))
        self.interpreter = interpreter_info or query_interpreter(exe)
        versions = tuple(target_versions) or settings.target_versions or (self.interpreter.version,)
        self.target = Target(
            versions=versions, platform=settings.platform, lazy_imports=settings.lazy_imports,
            **assumed_target(policy),
        )
        # Facts extracted for another target cannot be used (the query may report another version).
        self.early = early[1] if early is not None and early[0] == self.target else {}
        self.index = ModuleIndex(settings.source_roots, self.interpreter)
        self.pool = FactsPool(jobs, self.target, facts_cache)
        self._forbid_any = tuple(
            {id(h): h for r in policy.light for h in r.forbid}.values()
        ) + tuple(policy.heavy)
        self._bodies: OrderedDict[Path, FunctionBodies | None] = OrderedDict()
        self._function_indexes: dict[Path, FunctionIndex] = {}
        self.files_read: dict[Path, SourceRead] = {}
        self._lines: dict[Path, list[str]] = {}  # source_line: files split into lines, a few kept
        self.reading: Callable[[str], None] | None = None
        self._reading_last = ""

    def close(self) -> None:
        """Stop the worker processes, if any (facts are still given out afterwards, serially)."""
        self.pool.close()

    def _override(self, path: Path) -> bytes | None:
        """The override for ``path`` (an editor's buffer), if any."""
        return self._overrides.get(path.resolve()) if self._overrides else None

    def _extract_light_files_early(
        self, exe: str, target_versions: tuple[tuple[int, int], ...]
    ) -> tuple[Target, dict[Path, Extracted]] | None:
        """While the interpreter query runs: the facts of the light modules' files and their parent
        packages', found in the source roots alone (the files the check reads first), with the
        target they were extracted for.

        Only for the interpreter running us (whose builtin and frozen modules, version and
        extension suffixes are known here already; the query adds ``sys.path`` and the start-up
        modules). The check uses a result only for the file its real path search finds, and facts
        depend on nothing but the file's bytes and the target, so the answer cannot change.
        """
        if os.path.realpath(exe) != os.path.realpath(sys.executable):
            return None
        settings = self.policy.settings
        target = Target(
            versions=target_versions or settings.target_versions or (sys.version_info[:2],),
            platform=settings.platform,
            lazy_imports=settings.lazy_imports,
            **assumed_target(self.policy),
        )
        index = ModuleIndex(settings.source_roots, running_interpreter_without_path())
        found: dict[Path, Extracted] = {}
        for rule in self.policy.light:
            if rule.pattern.is_wildcard:
                continue
            parts = rule.pattern.text.split(".")
            for end in range(1, len(parts) + 1):
                module = index.resolve_module(".".join(parts[:end]))
                path = module.path
                if module.origin != "first-party" or not module.has_source or path is None:
                    continue
                if path in found or self._override(path) is not None:
                    continue
                try:
                    source, read = read_source_stamped(path)
                except OSError:
                    continue
                _, facts, function_index, _ = cached_facts(source, target, self._cache, read.digest, path)
                found[path] = (read, facts, function_index)
        return target, found

    def module_facts(self, resolved: ResolvedModule) -> ModuleFacts:
        """The import facts of a module with source (an
        :data:`~flake8_importpolicy.analysis.hops.lookup.FactsProvider`).

        Taken, in this order, from the editor's buffer, a worker's prefetched result, the early
        extraction, the facts cache, or extracted here (function bodies not analysed: see
        :meth:`function_facts`). Records the file's digest in :attr:`files_read` and asks the
        workers to prefetch the modules its import sites name.

        Args:
            resolved: a module whose ``path`` is set (``has_source``).

        Returns:
            The facts; an unreadable file gives facts whose ``problem`` says why (never raises).
        """
        assert resolved.path is not None
        path = resolved.path
        source = self._override(path)
        taken = self.pool.take(path) if source is None else None
        if taken is None and self.early:
            taken = self.early.pop(path, None)
        if taken is not None and taken[0].digest:
            read, facts, index = taken
        else:
            if source is None:
                try:
                    source, read = read_source_stamped(path)
                except OSError as exc:
                    self.files_read[path] = SourceRead("")  # unreadable: answers are not cached
                    return ModuleFacts(problem=SourceProblem(1, f"cannot read file: {exc.strerror}"))
            else:
                read = SourceRead("")  # an editor's buffer: answers from it are not cached
            started = time.perf_counter()
            digest, facts, index, extracted = cached_facts(
                source, self.target, self._cache, read.digest, path
            )
            if not read.digest:
                read = SourceRead(digest)
            if extracted:
                self.pool.note_miss(time.perf_counter() - started)
        self.files_read[path] = read
        if self.reading is not None and resolved.origin != "first-party":
            self._say_reading(resolved)
        if index is not None and index.spans:
            self._function_indexes[path] = index
        self._prefetch_imports(resolved, facts)
        return facts

    def _say_reading(self, resolved: ResolvedModule) -> None:
        """Tell :attr:`reading` which installed package the traversal reads now (``installed
        package torch``, ``the standard library``), once each time it changes."""
        assert self.reading is not None
        label = ("the standard library" if resolved.origin == "stdlib"
                 else f"installed package {resolved.name.partition('.')[0]}")
        if label != self._reading_last:
            self._reading_last = label
            self.reading(label)

    def _prefetch_imports(self, resolved: ResolvedModule, facts: ModuleFacts) -> None:
        """Have workers extract the modules ``resolved``'s import sites name, before they are needed.

        Only a guess at what the traversal will ask for next (every site's target, its parent
        packages and the submodules its from-import names may be); wrong guesses cost a worker's
        time, never a wrong answer.
        """
        if not self.pool.active or facts.problem is not None:
            return
        module, is_package = resolved.name, resolved.is_package
        follow_external = self.policy.settings.external == "follow"
        for site in facts.sites:
            if site.target is None:
                continue
            base = resolve_relative(site, module, is_package)
            if base is None:
                continue
            parts = base.split(".")
            names = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
            names.extend(f"{base}.{name}" for name in site.names if name != "*")
            for name in names:
                parent = name.rpartition(".")[0]
                if parent and any(rule.matches_node(parent) for rule in self._forbid_any):
                    continue  # inside a forbidden package: a leaf, its submodules never run
                found = self.index.resolve_module(name)
                if (
                    found.has_source
                    and not found.preloaded
                    and (found.origin == "first-party" or follow_external)
                    and found.path is not None
                    and found.path not in self.files_read
                    and self._override(found.path) is None
                ):
                    self.pool.prefetch(found.path)

    def function_facts(
        self, resolved: ResolvedModule, qualname: str, argument: BoundArgument = None
    ) -> FunctionFacts | SourceProblem | None:
        """One function body of a module, analysed when an import-time call first reaches it (a
        :data:`~flake8_importpolicy.analysis.hops.lookup.FunctionFactsProvider`; docs/semantics.md
        rule 16).

        Args:
            resolved: a module whose :meth:`module_facts` were given out (else the answer is None).
            qualname: the function's qualified name (``"f"``, ``"C.m"``, ``"f.<locals>.g"``).
            argument: a string its first parameter is bound to (a PEP 562 ``__getattr__`` run for
                one name, docs/semantics.md rule 15), or None.

        Returns:
            The body's facts (from the facts cache, else parsed and cached); None if the module has
            no such function, or its file changed or cannot be read since its module facts were
            given out; or the syntax error that keeps the module from being analysed (not cached:
            every run that reaches the body parses it and reports the problem again).
        """
        assert resolved.path is not None
        path = resolved.path
        read = self.files_read.get(path)
        digest = read.digest if read is not None else ""
        if not digest:  # never given out, or unreadable
            return None
        if self._cache is not None:
            cached = self._cache.get_function(digest, self.target, qualname, argument, path)
            if cached is not None:
                return cached[0]
        bodies = self._function_bodies(path, digest)
        facts = bodies.find_function_facts(qualname, argument) if bodies is not None else None
        if bodies is not None and bodies.problem is not None:
            return bodies.problem
        if self._cache is not None and bodies is not None:
            self._cache.put_function(digest, self.target, qualname, facts, argument, path)
        return facts

    def _function_bodies(self, path: Path, digest: str) -> FunctionBodies | None:
        """The parsed function bodies of ``path`` (the last few modules' are kept), or None if the
        file changed since its module facts were read, or cannot be read or parsed."""
        if path in self._bodies:
            self._bodies.move_to_end(path)
            return self._bodies[path]
        source = self._override(path)
        try:
            source = source if source is not None else read_source(path)
        except OSError:
            source = None
        bodies = None
        if source is not None and hashlib.sha256(source).hexdigest() == digest:
            index = self._function_indexes.get(path)
            if index is not None:
                bodies = index.load(source)  # parses only the bodies asked for
            else:
                bodies = parse_function_bodies(source, self.target)
        self._bodies[path] = bodies
        if len(self._bodies) > _BODIES_KEPT:
            self._bodies.popitem(last=False)
        return bodies

    def find_dependencies(self) -> tuple[dict[Path, SourceRead], tuple[Path, ...]]:
        """What the facts given out so far depend on, for caches of whole answers.

        Returns:
            ``(files, directories)``: every source file parsed, with what was read (the SHA-256 hex
            digest of the bytes analysed, empty if the file could not be read or came from an
            editor's buffer, and its ``stat`` when read), and every directory listed during path
            search (including ones that did not exist). If none of these changed, the same
            questions get the same answers.
        """
        return dict(self.files_read), self.index.find_listed_directories()

    def source_line(self, path: Path, line: int) -> str | None:
        """Line ``line`` (1-based) of ``path`` as analysed (the editor's buffer, else the file), for
        ``# noqa`` comments; None if the file cannot be read or has no such line.

        Lines end at Python's own line breaks (CR LF, CR, LF), as the tokenizer's do; undecodable
        bytes are replaced.
        """
        lines = self._lines.get(path)
        if lines is None:
            source = self._override(path)
            try:
                data = source if source is not None else read_source(path)
            except OSError:
                return None
            text = data.decode("utf-8", "replace")
            # Python's own line breaks only (str.splitlines would also break at \f, \x1c, ...);
            # without a CR they are the LFs, which str.split finds ten times faster than the pattern.
            lines = _LINE_BREAKS.split(text) if "\r" in text else text.split("\n")
            if len(self._lines) >= _LINES_KEPT:
                self._lines.pop(next(iter(self._lines)))
            self._lines[path] = lines
        return lines[line - 1] if 0 < line <= len(lines) else None


_LINES_KEPT = 32
"""Files whose lines a :class:`FactsSource` keeps for ``# noqa`` lookups (several sites per file)."""

_BODIES_KEPT = 16
"""Modules whose parsed function bodies a :class:`FactsSource` keeps for further calls into them."""

_LINE_BREAKS = re.compile(r"\r\n|\r|\n")
