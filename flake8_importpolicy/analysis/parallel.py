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
        jobs: processes in all: the engine's and ``jobs - 1`` workers (1 or fewer: no pool; every
            request is answered ``None``). The engine keeps a CPU of its own: workers on every CPU
            take turns with the traversal (torch on 2 CPUs: two workers 0.94 x ``--jobs 1``, one
            worker 0.90 x).
        target: the target the facts are extracted for.
        cache: the facts cache the workers read and write (None: no cache); it is sent to each
            worker (pickled, between our own processes), so it must be a small picklable handle
            such as :class:`~flake8_importpolicy.answers.facts_cache.DiskFactsCache`.

    The pool starts after :data:`MIN_MISSES` calls of :meth:`note_miss` whose files took at least
    :data:`_MIN_PACE` each on average (or on :meth:`start`), only on Linux (``fork``) and only while
    the load average is below ``jobs``; otherwise :meth:`prefetch` does nothing and the engine
    extracts every file itself.

    Workers must never make a check slower than one job (issue 15). With a CPU of its own, the
    engine pays for the pool only in its own process: starting it, handing files out, waiting for
    and unpacking results. The pool keeps that account in wall time against what it saves, the
    engine's own mean time per extracted file (from :meth:`note_miss`) for each result it delivers;
    once the cost exceeds the saving by :data:`_TRIAL` files' worth (files too small to be worth
    sending, workers that fall behind), it is closed and the engine goes on alone.
    """

    def __init__(self, jobs: int, target: Target, cache: FactsCache | None) -> None:
        self.jobs = jobs if jobs > 1 and _can_fork() else 1
        self.target = target
        self.cache = cache
        self._executor: ProcessPoolExecutor | None = None
        self._modules: dict[Path, Future[Extracted]] = {}
        self._own_seconds = 0.0  # the engine's own extractions: time and files
        self._own_files = 0
        self._cost = 0.0  # wall time the engine spent on the pool
        self._delivered = 0  # results the pool delivered

    @property
    def active(self) -> bool:
        """True once worker processes are running."""
        return self._executor is not None

    def note_miss(self, seconds: float) -> None:
        """Count one file the engine extracted itself, in ``seconds``; starts the pool after a few."""
        self._own_seconds += seconds
        self._own_files += 1
        if self._own_files >= MIN_MISSES and self._own_seconds >= self._own_files * _MIN_PACE:
            self.start()

    def start(self) -> None:
        """Start the workers now (no-op if running, if this pool has one job, or if the machine's
        CPUs are already busy: then workers only take turns with the engine and cost more than
        they save)."""
        if self._executor is None and self.jobs > 1 and _cpus_idle(self.jobs):
            started = time.perf_counter()
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            context = multiprocessing.get_context("fork")
            self._executor = ProcessPoolExecutor(max_workers=self.jobs - 1, mp_context=context)
            self._cost += time.perf_counter() - started

    def prefetch(self, path: Path) -> None:
        """Start extracting the module facts of ``path`` in a worker (no-op if inactive or queued)."""
        if self._executor is not None and path not in self._modules:
            started = time.perf_counter()
            future = self._submit(path)
            if future is not None:
                self._modules[path] = future
            self._cost += time.perf_counter() - started

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
        raise for bad input, but a pool can break). The pool is closed once it costs the engine
        more than it saves (see the class docstring).
        """
        if self._executor is None:
            return None
        if self._is_behind():
            self._stop()
            return None
        started = time.perf_counter()
        future = self._modules.pop(path, None)
        result = None if future is None or future.cancel() else _result(future)
        self._cost += time.perf_counter() - started
        self._delivered += result is not None
        return result

    def _is_behind(self) -> bool:
        """Whether what the pool cost the engine exceeds what it saved by more than :data:`_TRIAL`
        files' worth of the engine's own pace (no judgement before the engine has extracted a file)."""
        if not self._own_files:
            return False
        return self._cost > (self._delivered + _TRIAL) * self._own_seconds / self._own_files

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


_MIN_PACE: Final = 0.0005
"""Seconds per file the engine's own extractions must take, on average, for workers to start:
sending a file and its facts back costs the engine about 0.15 ms, and starting the pool 10-20 ms
(the synthetic 10,000-module tree's files take 0.2 ms each: workers never paid; torch's 1.2 ms)."""

_TRIAL: Final = 50
"""How many files' worth of the engine's own pace the pool may cost more than it saved before it is
stopped (its start, forking the workers, is paid before anything comes back)."""


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
    source: bytes,
    target: Target,
    cache: FactsCache | None,
    digest: str | None = None,
    path: Path | None = None,
) -> tuple[str, ModuleFacts, FunctionIndex | None, bool]:
    """The module facts of ``source``: from ``cache`` if there, else extracted (function bodies not
    analysed) and stored.

    Args:
        digest: the SHA-256 hex digest of ``source``, if already known.
        path: the file ``source`` was read from, if any (where the cache keeps the entry).

    Returns:
        ``(digest, facts, index, extracted)``: the SHA-256 hex digest of ``source`` (the cache key and
        what answers depend on), and the :class:`FunctionIndex` from the extraction (None when the
        facts came from the cache).
    """
    digest = digest or hashlib.sha256(source).hexdigest()
    cached = cache.get(digest, target, path) if cache is not None else None
    if cached is not None:
        return digest, cached, None, False
    facts, index = extract_facts_and_index(source, target)
    if cache is not None:
        cache.put(digest, target, facts, path)
    return digest, facts, index, True


def _module_facts(path: Path, target: Target, cache: FactsCache | None) -> Extracted:
    """In a worker: the facts of ``path`` (with an empty digest if it cannot be read)."""
    try:
        source, read = read_source_stamped(path)
    except OSError:
        return SourceRead(""), ModuleFacts(), None
    _, facts, index, _ = cached_facts(source, target, cache, read.digest, path)
    return read, facts, index
