"""``importpolicy why``'s answers, reused while nothing they depend on has changed: the warm path
``check`` has (:mod:`flake8_importpolicy.answers.whole`).

A ``why`` with the facts cache still reads, hashes and decodes every module of the closure (for a
closure through torch, thousands of files: seconds), where a warm ``check`` reads one answer. So the
shown output of each ``why MODULE [--heavy PATTERN] [--format F]`` is kept in an answer index
(:mod:`flake8_importpolicy.answers.warm_index`, directory ``why``, one entry per module, pattern,
format, interpreter and target versions) with what it depends on: the policy, its bases and
baseline, this package's code, every source file the engine read, every directory path search
listed and the interpreter's path entries. :func:`find_cached_why` reads it with the standard
library alone (no policy loaded, no engine imported); :func:`store_why` writes it after the engine
answered.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from flake8_importpolicy.answers.jsonfile import expect_str
from flake8_importpolicy.answers.warm_index import load_index, store_index

if TYPE_CHECKING:
    from flake8_importpolicy.analysis.engine import PolicyEngine
    from flake8_importpolicy.model.policy import Policy

__all__ = ["find_cached_why", "store_why"]

_FORMAT = 1
_INDEX_DIR = "why"


def _options(
    module: str, heavy: str | None, output_format: str, interpreter: str | None,
    target_versions: Sequence[tuple[int, int]],
) -> list[object]:
    return [module, heavy, output_format, interpreter, [list(version) for version in target_versions]]


def find_cached_why(
    policy_path: str,
    *,
    module: str,
    heavy: str | None,
    output_format: str,
    interpreter: str | None = None,
    target_versions: Sequence[tuple[int, int]] = (),
) -> str | None:
    """The output ``why`` showed for these arguments with the policy at ``policy_path``, if it is
    still fresh; else None. Imports no analysis module."""
    return load_index(
        policy_path, _INDEX_DIR, _FORMAT, _parse_entry,
        _options(module, heavy, output_format, interpreter, target_versions),
    )


def _parse_entry(entry: Any) -> str:
    return expect_str(entry["output"])


def store_why(
    policy: Policy,
    engine: PolicyEngine,
    output: str,
    *,
    module: str,
    heavy: str | None,
    output_format: str,
    interpreter: str | None = None,
    target_versions: Sequence[tuple[int, int]] = (),
) -> bool:
    """Keep ``output``, what ``engine`` answered, for :func:`find_cached_why` (best effort; nothing
    is kept when a file changed while it was read, or one could not be read). The policy's baseline
    is a dependency too: ``why`` reads it, and fails while it cannot be used.

    Raises:
        flake8_importpolicy.model.errors.BaselineError: if the baseline cannot be used.
    """
    from flake8_importpolicy.model.findings import Report

    baseline = None
    if policy.settings.baseline is not None:
        from flake8_importpolicy.config.baseline import load_policy_baseline

        baseline = load_policy_baseline(policy)
    files, directories = engine.find_dependencies()
    return store_index(
        str(policy.path), _INDEX_DIR, _FORMAT, policy=policy, info=engine.interpreter,
        report=Report((), ()), files=files, directories=directories, fields={"output": output},
        options=_options(module, heavy, output_format, interpreter, target_versions),
        baseline=baseline,
    )
