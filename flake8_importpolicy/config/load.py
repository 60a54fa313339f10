"""The policy file: finding, reading and validating ``policy.toml`` (schema version 1).

A policy lives in ``policy.toml``, or in the ``[tool.importpolicy]`` table of ``pyproject.toml``
(same schema). :func:`discover_policy` takes an explicit path or walks up from a directory with
:func:`~flake8_importpolicy.config.locate.find_policy`; :func:`load_policy` reads one file
(:mod:`~flake8_importpolicy.config.read`), merges the bases it ``extends``
(:mod:`~flake8_importpolicy.config.merge`) and validates the result against the declaration of every
key (:mod:`~flake8_importpolicy.config.keys`, :mod:`~flake8_importpolicy.config.validate`) into a
:class:`~flake8_importpolicy.model.policy.Policy`.

Validation reports every problem at once: :class:`PolicyError` carries one :class:`PolicyProblem`
per problem, each with a TOML-ish key path, and ``str(err)`` renders them all::

    policy.toml is not valid (2 problems):
      settings.externl: unknown key; did you mean 'external'?
      light."a.b".reason: missing; every light module needs a reason (why it must stay light)

Errors about the file as a whole (unreadable, not UTF-8, not TOML) are one line, compiler style::

    policy.toml:3:7: invalid TOML: Expected '=' after a key in a key/value pair

This module imports neither flake8 nor mypy.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

from typing import TYPE_CHECKING

from flake8_importpolicy.config.fields import Check
from flake8_importpolicy.config.keys import DEFAULT_CALL_DEPTH, EXTERNAL_VALUES, POLICY
from flake8_importpolicy.config.locate import find_policy
from flake8_importpolicy.config.read import TOO_DEEP, Source, parse_text, read_source
from flake8_importpolicy.config.validate import SUPPORTED_VERSION, validate_policy
from flake8_importpolicy.model.errors import PolicyError, PolicyNotFound, PolicyProblem
from flake8_importpolicy.model.policy import Policy

if TYPE_CHECKING:  # loaded when a policy extends another (tests/test_cli.py)
    from flake8_importpolicy.config.merge import Merger
    from flake8_importpolicy.model.bases import PolicySource

__all__ = [
    "DEFAULT_CALL_DEPTH",
    "EXTERNAL_VALUES",
    "SUPPORTED_VERSION",
    "discover_policy",
    "find_policy",
    "load_policy",
    "policy_from_text",
]


def discover_policy(start: Path, explicit: Path | None = None) -> Policy:
    """Load the policy given explicitly, else the one
    :func:`~flake8_importpolicy.config.locate.find_policy` finds from ``start``.

    Raises:
        PolicyNotFound: if ``explicit`` is None and no policy file is found.
        PolicyError: if the policy file cannot be loaded (see :func:`load_policy`).
    """
    if explicit is not None:
        return load_policy(explicit)
    found = find_policy(start)
    if found is None:
        raise PolicyNotFound(start)
    return load_policy(found)


def load_policy(path: Path) -> Policy:
    """Read, parse and validate a policy file, with the bases it ``extends``.

    Args:
        path: a ``policy.toml`` (any name other than ``pyproject.toml`` is read as one) or a
            ``pyproject.toml`` whose ``[tool.importpolicy]`` table holds the policy.

    Returns:
        The :class:`Policy`. ``extends = [...]`` merges base files (an entry with a ``/`` or ending
        in ``.toml``, relative to the extending file; a ``pyproject.toml`` base contributes its
        ``[tool.importpolicy]``) and built-in presets (any other entry) into it: tables merge by
        key and the extending file's value wins, a ``[light."x"]`` table is replaced whole, and
        ``[[ignore]]`` entries concatenate, a base's first (docs/policy.md, ``extends``).

    Raises:
        PolicyError: for every kind of bad input (unreadable file, bad UTF-8, invalid TOML, a
            ``pyproject.toml`` without ``[tool.importpolicy]``, schema problems, a base that cannot
            be read or is invalid, an ``extends`` cycle), listing every problem at once; a problem
            in a base names that file (:attr:`PolicyProblem.file`) and its key there.
    """
    given = Path(path)
    top = read_source(given.absolute(), None)
    table, merger, sources = _merged(top)
    digest = top.digest
    if sources:
        digest = hashlib.sha256(
            "\0".join([top.digest, *(f"{s.label}\0{s.digest}" for s in sources)]).encode()
        ).hexdigest()
    check = Check(given.resolve(), top.text, top.prefix, merger)
    try:
        policy = validate_policy(check, table, digest, POLICY)
    except RecursionError:
        raise PolicyError(given, [TOO_DEEP]) from None
    _raise_problems(given, policy, check, merger)
    assert policy is not None
    return dataclasses.replace(policy, file_digest=top.digest, sources=sources)


def policy_from_text(text: str, path: Path) -> Policy:
    """Validate ``text`` as the policy file ``path`` would be read (relative paths and ``extends``
    against its directory), without the file having to exist: ``importpolicy suggest``'s draft.

    Raises:
        PolicyError: as :func:`load_policy`.
    """
    path = path.absolute()
    top = parse_text(text, path)
    table, merger, sources = _merged(top)
    check = Check(path, text, "", merger)
    policy = validate_policy(check, table, top.digest, POLICY)
    _raise_problems(path, policy, check, merger)
    assert policy is not None
    return dataclasses.replace(policy, file_digest=top.digest, sources=sources)


def _merged(top: Source) -> tuple[dict[str, object], Merger | None, tuple[PolicySource, ...]]:
    """``top``'s table with the bases it ``extends`` merged in, the merge (None: it extends
    nothing, and every entry is its own) and the bases read."""
    if "extends" not in top.table:
        return top.table, None, ()
    from flake8_importpolicy.config.merge import Merger

    merger = Merger(top)
    table = merger.run()
    return table, merger, tuple(merger.sources)


def _raise_problems(path: Path, policy: Policy | None, check: Check, merger: Merger | None) -> None:
    """Raise the problems of the merge and of the validation, if any (each problem of the merged
    table told against the file its entry came from).

    Raises:
        PolicyError: there is a problem, or no policy.
    """
    problems = check.problems
    if merger is not None:
        problems = merger.problems + [merger.attribute(problem) for problem in problems]
    if policy is None or problems:
        raise PolicyError(path, problems or [PolicyProblem("", "invalid policy")])
