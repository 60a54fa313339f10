"""Extracting import facts in worker processes, ahead of the breadth-first traversal that needs them.

A cold check spends most of its time in :func:`ast.parse` (C code that holds the GIL), so threads do
not help; forked worker processes do. The engine stays sequential and deterministic: it asks a
:class:`FactsPool` to *prefetch* the files it will probably need next (the targets of the import sites
of every module whose facts it has just read), and takes a prefetched result when it gets there, or
extracts the file itself when nothing was prefetched. Facts are a pure function of (file bytes,
target), so where they were computed cannot change an answer.

Workers are forked (``fork`` start method, Linux only): they inherit the imported engine and start
in milliseconds. Elsewhere, and when asked for one job, there is no pool. Results travel back over
the pool's pipe as :class:`~flake8_importpolicy.analysis.extract.ModuleFacts` and
:class:`~flake8_importpolicy.analysis.extract.FunctionIndex` (``multiprocessing`` pickles
them between our own processes; nothing is ever loaded from a file). Workers read and write the
on-disk facts cache themselves, which is safe under concurrency (see
:mod:`flake8_importpolicy.answers.facts_cache`).
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Final, TypeVar

from flake8_importpolicy.analysis.extract import FunctionIndex, extract_facts_and_index
from flake8_importpolicy.analysis.resolve import read_source_stamped
from flake8_importpolicy.model.facts import ModuleFacts, SourceRead, Target

if TYPE_CHECKING:  # imported when a pool starts: concurrent.futures and multiprocessing cost ~20 ms
    from concurrent.futures import Future, ProcessPoolExecutor

    from flake8_importpolicy.model.ports import FactsCache

__all__ = ["Extracted", "FactsPool", "cached_facts", "default_jobs"]

_T = TypeVar("_T")

Extracted = tuple[SourceRead, ModuleFacts, FunctionIndex | None]
"""A file's facts as extracted: what was read (its digest empty if it could not be read), the module
facts, and the function index (None when the facts came from the cache)."""

MIN_MISSES: int = 100
"""Files extracted in the engine's own process before a pool is started; a warm facts cache never
pays for one. Below about a hundred files, forking, the pipe and the workers' start cost about what
they save; the measurements are in docs/performance.md, "Where the time goes", "Worker processes"."""


def default_jobs() -> int:
    """The CPUs this process may run on (``os.sched_getaffinity`` where available), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class FactsPool:
    """Worker processes that extract :class:`ModuleFacts` of files before the engine asks for them.

    Args:
        jobs: worker processes (1 or fewer: no pool; every request is answered ``None``).
        target: the target the facts are extracted for.
        cache: the facts cache the workers read and write (None: no cache); it is sent to each
            worker (pickled, between our own processes), so it must be a small picklable handle
            such as :class:`~flake8_importpolicy.answers.facts_cache.DiskFactsCache`.

    The pool starts after :data:`MIN_MISSES` calls of :meth:`note_miss` (or on :meth:`start`), only on
    Linux (``fork``) and only while the load average is below ``jobs``; otherwise :meth:`prefetch`
    does nothing and the engine extracts every file itself.

    Workers must never make a check slower than one job (issue 15). The engine keeps the account in
    wall time, which counts everything the pool costs (forking, the pipe, waiting for results, the
    CPUs the workers take from the engine): its pace alone is what the files given out before the pool
    started took each; once the pool has taken longer than that pace would have for the files given
    out since it started, by :data:`_TRIAL` files' worth (a busy machine, workers that fall behind,
    files too small to be worth sending), it is closed and the engine goes on alone.
    """

    def __init__(self, jobs: int, target: Target, cache: FactsCache | None) -> None:
        self.jobs = jobs if jobs > 1 and _can_fork() else 1
        self.target = target
        self.cache = cache
        self._misses = 0
        self._executor: ProcessPoolExecutor | None = None
        self._modules: dict[Path, Future[Extracted]] = {}
        self._files = 0  # files given out (each asked of take() once)
        self._clock: float | None = None  # when the first was asked for
        self._pace = 0.0  # seconds per file before the pool started
        self._pool_clock = 0.0  # when the pool started
        self._pool_files = 0  # files given out before it started

    @property
    def active(self) -> bool:
        """True once worker processes are running."""
        return self._executor is not None

    def note_miss(self) -> None:
        """Count one file the engine had to extract itself; starts the pool after a few."""
        self._misses += 1
        if self._misses >= MIN_MISSES:
            self.start()

    def start(self) -> None:
        """Start the workers now (no-op if running, if this pool has one job, or if the machine's
        CPUs are already busy: then workers only take turns with the engine and cost more than
        they save)."""
        if self._executor is None and self.jobs > 1 and _cpus_idle(self.jobs):
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            now = time.perf_counter()
            if self._files and self._clock is not None:
                self._pace = (now - self._clock) / self._files
            self._pool_clock, self._pool_files = now, self._files
            context = multiprocessing.get_context("fork")
            self._executor = ProcessPoolExecutor(max_workers=self.jobs, mp_context=context)

    def prefetch(self, path: Path) -> None:
        """Start extracting the module facts of ``path`` in a worker (no-op if inactive or queued)."""
        if self._executor is not None and path not in self._modules:
            future = self._submit(path)
            if future is not None:
                self._modules[path] = future

    def _submit(self, path: Path) -> Future[Extracted] | None:
        assert self._executor is not None
        try:
            return self._executor.submit(_module_facts, path, self.target, self.cache)
        except RuntimeError:  # BrokenProcessPool (a worker died), or shut down: carry on serially
            self._stop(broken=True)
            return None

    def take(self, path: Path) -> Extracted | None:
        """``(what was read, facts, function index)`` if ``path`` was
        prefetched, else None.

        A file still waiting in the queue is taken back (None: the engine extracts it itself rather
        than wait for the workers to reach it), and so is the work of a worker that failed (it cannot
        raise for bad input, but a pool can break). Every file the engine gives out is asked for
        here once: the pool is closed once it is behind the engine's own pace (see the class
        docstring).
        """
        if self._clock is None:
            self._clock = time.perf_counter()
        self._files += 1
        if self._executor is not None and self._pace and self._is_behind():
            self._stop()
        future = self._modules.pop(path, None)
        if future is None or future.cancel():
            return None
        return _result(future)

    def _is_behind(self) -> bool:
        """Whether the time since the pool started exceeds what the engine alone would have taken for
        the files given out since, by more than :data:`_TRIAL` files."""
        elapsed = time.perf_counter() - self._pool_clock
        return elapsed > (self._files - self._pool_files + _TRIAL) * self._pace

    def _stop(self, *, broken: bool = False) -> None:
        """Close the pool for good: the engine extracts every file itself from now on. Queued work is
        cancelled and work in progress waited for (a file or two), unless the pool is broken (a
        worker died): so no worker writes to the cache after the engine is done with it."""
        if self._executor is not None:
            self._executor.shutdown(wait=not broken, cancel_futures=True)
            self._executor = None
        self._modules.clear()
        self.jobs = 1

    def close(self) -> None:
        """Stop the workers: queued work is cancelled, work in progress (a file or two) is waited
        for, so that no worker writes to the cache after the engine is done with it."""
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
        self._modules.clear()


_TRIAL: Final = 50
"""How many files' worth of the engine's own pace the pool may fall behind before it is stopped."""


def _cpus_idle(jobs: int) -> bool:
    """Whether the 1-minute load average leaves room for more processes (this one counts as 1)."""
    try:
        return os.getloadavg()[0] < jobs
    except OSError:
        return True


def _can_fork() -> bool:
    return sys.platform == "linux"  # fork is always available there, and cheap


def _result(future: Future[_T]) -> _T | None:
    try:
        return future.result()
    except Exception:  # a broken pool (a worker killed, say): extract in this process instead
        return None


def cached_facts(
    source: bytes, target: Target, cache: FactsCache | None, digest: str | None = None
) -> tuple[str, ModuleFacts, FunctionIndex | None, bool]:
    """The module facts of ``source``: from ``cache`` if there, else extracted (function bodies not
    analysed) and stored.

    Args:
        digest: the SHA-256 hex digest of ``source``, if already known.

    Returns:
        ``(digest, facts, index, extracted)``: the SHA-256 hex digest of ``source`` (the cache key and
        what answers depend on), and the :class:`FunctionIndex` from the extraction (None when the
        facts came from the cache).
    """
    digest = digest or hashlib.sha256(source).hexdigest()
    cached = cache.get(digest, target) if cache is not None else None
    if cached is not None:
        return digest, cached, None, False
    facts, index = extract_facts_and_index(source, target)
    if cache is not None:
        cache.put(digest, target, facts)
    return digest, facts, index, True


def _module_facts(path: Path, target: Target, cache: FactsCache | None) -> Extracted:
    """In a worker: the facts of ``path`` (with an empty digest if it cannot be read)."""
    try:
        source, read = read_source_stamped(path)
    except OSError:
        return SourceRead(""), ModuleFacts(), None
    _, facts, index, _ = cached_facts(source, target, cache, read.digest)
    return read, facts, index
