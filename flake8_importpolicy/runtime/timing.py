"""Import time of a light module (``importpolicy verify --import-time``): fresh interpreters run
``python -E -X importtime`` and import it; the median wall time of the import and the modules that
took the most time of their own.

Wall time is noisy (other processes, disk caches), so it is reported, and fails verify only with
``--fail-on-time``. This runs project code, as verify does.
"""

from __future__ import annotations

import os
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from flake8_importpolicy.runtime.run import DEFAULT_MEMORY_MIB, run_confined

__all__ = ["ImportTime", "measure_import_time", "parse_importtime"]

_START: Final = "@@importpolicy-import-start"
_END: Final = "@@importpolicy-import-end"
# Only builtins, sys and time (builtin) before the import, so the script imports nothing a project
# could shadow; the roots replace the script directory of -c, as the recorder's run does.
_SCRIPT: Final = f"""\
import sys, time
sys.path[0:1] = sys.argv[2:]
sys.stderr.write({_START!r} + "\\n")
sys.stderr.flush()
started = time.perf_counter()
__import__(sys.argv[1])
elapsed = time.perf_counter() - started
sys.stderr.flush()
sys.stderr.write({_END!r} + " %r\\n" % elapsed)
"""
_STDERR_HEAD: Final = 16 * 1024 * 1024
"""Bytes of the timing run's stderr kept from its start (torch's ``-X importtime`` lines are about
200 KB); its end is kept too, where the closing marker is."""
CONTRIBUTORS: Final = 5
"""How many modules :class:`ImportTime` lists as the biggest contributors."""


@dataclass(frozen=True)
class ImportTime:
    """A light module's import time over several fresh interpreters.

    Attributes:
        median_ms: the median wall time of ``import module``, in milliseconds.
        runs_ms: each run's wall time, in run order.
        contributors: ``(module, median self time in ms)`` of the modules with the largest own
            import time (``-X importtime``'s ``self``), most first, at most :data:`CONTRIBUTORS`.
        error: why it could not be measured (the import raised or timed out), else None.
    """

    median_ms: float
    runs_ms: tuple[float, ...]
    contributors: tuple[tuple[str, float], ...] = ()
    error: str | None = None


def parse_importtime(stderr: str) -> tuple[float | None, dict[str, int]]:
    """``(wall seconds of the import or None, {module: self microseconds})`` from the stderr of the
    timing script: only the ``-X importtime`` lines between its two markers count."""
    inside = False
    selves: dict[str, int] = {}
    elapsed: float | None = None
    for line in stderr.splitlines():
        if line == _START:
            inside = True
        elif line.startswith(_END):
            inside = False
            try:
                elapsed = float(line[len(_END):].strip())
            except ValueError:
                elapsed = None
        elif inside and line.startswith("import time:"):
            fields = line[len("import time:"):].split("|")
            if len(fields) != 3:
                continue
            try:
                self_us = int(fields[0])
            except ValueError:
                continue  # the header line
            selves[fields[2].strip()] = selves.get(fields[2].strip(), 0) + self_us
    return elapsed, selves


def measure_import_time(
    module: str,
    *,
    python: str,
    source_roots: Sequence[Path],
    cwd: Path | None,
    runs: int,
    timeout: float,
    memory_mib: int = DEFAULT_MEMORY_MIB,
) -> ImportTime:
    """Import ``module`` in ``runs`` fresh interpreters under ``-X importtime`` (one after the
    other, with the environment verify uses: ``-E``, no ``PYTHON*`` variables), each confined as
    verify's import is (:func:`~flake8_importpolicy.runtime.run.run_confined`: nothing it starts
    outlives it; its memory and what is kept of its stderr are bounded).

    Raises:
        InterpreterError: if the interpreter cannot be started.
    """
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    argv = [python, "-E", "-X", "importtime", "-c", _SCRIPT, module, *map(str, source_roots)]
    walls: list[float] = []
    selves: list[dict[str, int]] = []
    for _ in range(max(1, runs)):
        done = run_confined(argv, timeout=timeout, cwd=cwd, env=env, memory_mib=memory_mib,
                            stderr_head=_STDERR_HEAD)
        if done.timed_out:
            return ImportTime(0.0, tuple(walls), error=f"timed out after {timeout:g}s")
        elapsed, self_times = parse_importtime(done.stderr.decode("utf-8", "replace"))
        if done.returncode != 0 or elapsed is None:
            tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            return ImportTime(0.0, tuple(walls), error=f"the import failed: {tail[0]}")
        walls.append(elapsed * 1000)
        selves.append(self_times)
    names = sorted({name for run in selves for name in run})
    medians = {name: statistics.median(run.get(name, 0) for run in selves) / 1000 for name in names}
    biggest = sorted(medians.items(), key=lambda item: (-item[1], item[0]))[:CONTRIBUTORS]
    return ImportTime(
        round(statistics.median(walls), 3), tuple(round(w, 3) for w in walls),
        tuple((name, round(ms, 3)) for name, ms in biggest),
    )


if __name__ == "__main__":  # pragma: no cover - a manual check
    print(measure_import_time(sys.argv[1], python=sys.executable, source_roots=(), cwd=None,
                              runs=3, timeout=60))
