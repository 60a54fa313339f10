"""Per-file answers: the IPL001/IPL002 findings one source file shows, fast enough to ask per file.

Editors start a new flake8 process for every lint, so each process needs the answer for one file, and
importing the engine alone costs more than the budget. This module answers from a small per-file index
written beside the facts cache (``<cache-dir>/per-file/<key>.json``) and reads it without importing the
engine (standard library only; finding the policy, reading, validating and writing the index is
:mod:`flake8_importpolicy.answers.warm_index`, shared with the mypy plugin's index):

- the policy is found from the file's directory
  (:func:`flake8_importpolicy.config.locate.find_policy`);
- the index records the findings of every file that has any, and what they depend on: the policy
  file, a stamp of this package's code, the interpreter's path entries, every source file parsed
  (path, size, mtime, SHA-256) and every directory listed by path search. Checking it costs a
  ``stat`` per dependency (``hashlib`` is not even imported); a file whose ``stat`` changed but whose
  bytes hash the same still counts as unchanged. Any change means a fresh check with the engine (the
  facts cache keeps that cheap), which rewrites the index atomically (JSON, never pickle);
- a buffer that differs from the file on disk (an editor's unsaved edits) is checked with the engine,
  the buffer standing in for the file — unless the file is outside every light module's closure, where
  its content cannot change any answer.

IPL001 is reported at the light module's first-hop statement; IPL002 at every other hop of a reported
chain (the chains of :meth:`flake8_importpolicy.analysis.engine.PolicyEngine.check`, not every path),
naming the light module(s) the hop makes heavy. This module imports neither flake8 nor mypy.
"""

from __future__ import annotations

import io
import os
import tokenize
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flake8_importpolicy.answers.jsonfile import expect_list, expect_str
from flake8_importpolicy.answers.roots import is_under_roots, root_prefixes
from flake8_importpolicy.answers.warm_index import Finding, load_index, parse_finding, store_index
from flake8_importpolicy.config.locate import find_policy
from flake8_importpolicy.model.reading import read_regular_file

if TYPE_CHECKING:
    from flake8_importpolicy.model.findings import Report

__all__ = ["PerFileChecker", "find_findings_by_file"]

_FORMAT = 5
_INDEX_DIR = "per-file"


# -- findings from a report ---------------------------------------------------------------------------


def find_findings_by_file(
    report: Report, relpath: Callable[[Path], str]
) -> dict[str, tuple[Finding, ...]]:
    """The findings of every file a report touches, keyed by the file's real path.

    IPL001 at each violation's first-hop statement in the light module's file (IPL008 at its line
    1); IPL002 at each later hop of its chain, in the importing module's file; IPL006 at the light
    module's statement that leads to each unresolved site: one per first-party site (the site and
    the chain in the message), one for the sites of a light module in one installed distribution
    (:func:`~flake8_importpolicy.output.render.group_unresolved`). Hops of several chains at the
    same statement that reach the same forbidden module (same reason) make one IPL002 naming every
    light module, with the chain of the first light module. Each file's findings are sorted by
    position.
    """
    from flake8_importpolicy import codes
    from flake8_importpolicy.model.graph import CallNode
    from flake8_importpolicy.output.render import (
        format_chain_compact,
        format_message,
        format_unresolved_entry,
        format_violation_message,
        group_unresolved,
    )

    found: dict[str, list[Finding]] = {}
    hops: dict[tuple[str, int, int, str, str], list[tuple[str, str]]] = {}
    for violation in report.violations:
        text = format_violation_message(violation, relpath)
        found.setdefault(os.path.realpath(violation.path), []).append(
            Finding(violation.line, violation.col, violation.code.id, text)
        )
        chain = format_chain_compact(violation.chain, relpath)
        for hop in violation.chain[1:]:
            if hop.path is not None:
                key = (os.path.realpath(hop.path), hop.line, hop.col, violation.heavy,
                       violation.reason)
                hops.setdefault(key, []).append((violation.light, chain))
    for (path, line, col, heavy, reason), lights in hops.items():
        lights.sort()
        names = ", ".join(sorted({light for light, _ in lights}))
        head = format_message(
            codes.IPL002, call=isinstance(heavy, CallNode), lights=names, heavy=heavy, reason=reason
        )
        found.setdefault(path, []).append(
            Finding(line, col, codes.IPL002.id, f"{head}: {lights[0][1]}")
        )
    for entry in group_unresolved(report.unresolved):
        where, line, col = entry.first_hop
        if where is not None:
            found.setdefault(os.path.realpath(where), []).append(Finding(
                line, col, codes.IPL006.id, format_unresolved_entry(entry, relpath)
            ))
    return {path: tuple(sorted(set(items))) for path, items in found.items()}


# -- the per-process checker --------------------------------------------------------------------------


class _Index:
    """A loaded per-file index (see the module docstring)."""

    __slots__ = ("prefixes", "files", "findings")

    def __init__(
        self, roots: tuple[str, ...], files: frozenset[str], findings: dict[str, tuple[Finding, ...]]
    ) -> None:
        self.prefixes = root_prefixes(roots)
        self.files = files
        self.findings = findings

    def covers(self, path: str) -> bool:
        """True if the real path ``path`` lies under a source root, or is a file the engine read (a
        module whose file is a symbolic link to outside the tree)."""
        return is_under_roots(path, self.prefixes) or path in self.files


class PerFileChecker:
    """Answers "what does this file show" for files of any number of policies; one per process.

    Args:
        policy: an explicit policy file for every file (else each file's policy is found by walking
            up from its directory).

    Everything found is kept for the life of the object (the policy of each directory, the index of
    each policy), so a process checking many files validates each index once.
    """

    def __init__(self, *, policy: Path | None = None) -> None:
        self._explicit = os.path.abspath(policy) if policy is not None else None
        self._policies: dict[str, str | None] = {}
        self._indexes: dict[str, _Index] = {}

    def find_findings(self, path: Path | str, text: str | None = None) -> tuple[Finding, ...]:
        """The IPL001/IPL002 findings of the file ``path``, sorted by position.

        Args:
            path: the file (relative paths are relative to the working directory).
            text: the file's content as the caller sees it (an editor buffer); None reads the disk.

        Returns:
            No findings for a file under no policy or outside its source roots.

        Raises:
            flake8_importpolicy.model.errors.ImportPolicyError: the policy is broken or its
                interpreter cannot be queried.
        """
        given = os.path.abspath(path)
        real = os.path.realpath(given)
        policy = self._policy_for(os.path.dirname(given))  # a link's policy is where the link is
        if policy is None:
            return ()
        index = self._indexes.get(policy)
        if index is None:
            index = self._indexes[policy] = _load_index(policy) or _build_index(policy)
        if not index.covers(real):
            return ()
        if text is not None and real in index.files and not _same_text(real, text):
            return self._check_buffer(policy, real, text)
        return index.findings.get(real, ())

    def find_findings_or_error(self, path: Path | str, text: str | None = None) -> tuple[Finding, ...]:
        """:meth:`find_findings`, except that an error that stops the check is one IPL900 finding at
        line 1 of the file instead (what an editor shows: flake8 and its other plugins go on).

        The message is :func:`~flake8_importpolicy.output.render.format_error_diagnostic`'s: the
        policy file (relative to the working directory when inside it), the line and key of its
        first problem, and every problem; an internal error (a bug) says so."""
        try:
            return self.find_findings(path, text)
        except Exception as error:  # never a traceback, never a silent pass
            from flake8_importpolicy.model.errors import ImportPolicyError, PolicyNotFound, display_path
            from flake8_importpolicy.output.render import format_error_diagnostic

            about = getattr(error, "path", None)
            if not isinstance(error, ImportPolicyError):
                error = RuntimeError(f"flake8-importpolicy failed: {type(error).__name__}: {error}; "
                                     "this is a bug, please report it (--extend-ignore=IPL900 hides it)")
                about = None
            elif isinstance(error, PolicyNotFound) or about is None or not os.path.isfile(about):
                about = self._policy_for(os.path.dirname(os.path.abspath(path)))
            location = display_path(Path(about)) if about else str(path)
            return (Finding(1, 0, "IPL900", format_error_diagnostic(error, location)),)

    def _policy_for(self, directory: str) -> str | None:
        """The policy file for the files in ``directory``."""
        if self._explicit is not None:
            return self._explicit
        if directory not in self._policies:
            found = find_policy(directory)
            self._policies[directory] = str(found) if found is not None else None
        return self._policies[directory]

    def _check_buffer(self, policy_path: str, real: str, text: str) -> tuple[Finding, ...]:
        from flake8_importpolicy.answers.compute import run_engine_for

        answer = run_engine_for(policy_path, overrides={Path(real): _encode(text)})
        return find_findings_by_file(answer.report, answer.policy.relpath).get(real, ())


# -- the quick path: no engine imports ----------------------------------------------------------------


def _load_index(policy_path: str) -> _Index | None:
    """The policy's index if it exists and nothing it depends on changed, else None."""
    return load_index(policy_path, _INDEX_DIR, _FORMAT, _parse_index)


def _parse_index(entry: Any) -> _Index:
    findings: dict[str, list[Finding]] = {}
    for row in expect_list(entry["findings"]):
        path, line, col, code, text = expect_list(row)
        findings.setdefault(expect_str(path), []).append(parse_finding([line, col, code, text]))
    return _Index(
        tuple(expect_str(root) for root in expect_list(entry["roots"])),
        frozenset(expect_str(expect_list(row)[0]) for row in expect_list(entry["files"])),
        {path: tuple(items) for path, items in findings.items()},
    )


def _same_text(path: str, text: str) -> bool:
    """True if the file at ``path`` decodes to ``text`` the way flake8 reads files: the declared
    encoding, else Latin-1 (flake8's fallback); newlines and a BOM normalised."""
    try:
        data = read_regular_file(path)[1]
    except OSError:
        return False
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        disk = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        disk = data.decode("latin-1")
    return _normalise(disk) == _normalise(text)


def _normalise(text: str) -> str:
    """Text as flake8 hands it over: without a byte order mark, which flake8 strips whether it was
    decoded as U+FEFF or, under a latin-1 coding cookie, as the three characters of its UTF-8 bytes
    (``FileProcessor.strip_utf_bom``), and with ``\n`` line ends."""
    text = text.removeprefix("\ufeff").removeprefix("\xef\xbb\xbf")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _encode(text: str) -> bytes:
    """The buffer as bytes in the encoding its coding cookie declares (UTF-8 by default)."""
    data = text.encode("utf-8", "surrogateescape")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        if encoding not in ("utf-8", "utf-8-sig"):
            return text.encode(encoding)
    except (SyntaxError, UnicodeError, LookupError):
        pass
    return data


# -- the slow path: the engine ------------------------------------------------------------------------


def _build_index(policy_path: str) -> _Index:
    """Check the policy with the engine, store the index (best effort) and return it."""
    from flake8_importpolicy.answers.compute import run_engine_for

    answer = run_engine_for(policy_path)
    findings = find_findings_by_file(answer.report, answer.policy.relpath)
    roots = tuple(os.path.realpath(root) for root in answer.policy.settings.source_roots)
    store_index(
        policy_path, _INDEX_DIR, _FORMAT, policy=answer.policy, info=answer.info,
        report=answer.report, files=answer.files, directories=answer.directories, real_paths=True,
        baseline=answer.baseline,
        fields={
            "roots": list(roots),
            "findings": [
                [path, item.line, item.col, item.code, item.text]
                for path, items in sorted(findings.items()) for item in items
            ],
        },
    )
    return _Index(roots, frozenset(os.path.realpath(path) for path in answer.files), findings)
