"""Findings by module, for the mypy plugin: answered without importing the engine when nothing changed.

mypy asks on every run, for every module, whether the plugin's data for it changed; on a warm run
importing the engine would cost more than everything else the plugin does. So the answer is kept in a
small index beside the facts cache (``<cache-dir>/mypy/<key>.json``, JSON only), read with the
standard library alone. The index records the findings of every module that has any, a digest of them
per module, the policy's bytes (size, mtime, SHA-256), a stamp of this package's code, the interpreter
running us and ``PYTHONPATH``, and what the report depends on: every source file parsed (path, size,
mtime, SHA-256) and every directory listed by path search, with the interpreter's path entries. Checking
it costs a ``stat`` per dependency; a file whose ``stat`` changed but whose bytes hash the same still
counts as unchanged. Any change means a fresh check with the engine (the facts cache keeps that cheap),
which rewrites the index atomically. Finding the policy, reading, validating and writing the index is
:mod:`flake8_importpolicy.answers.warm_index`, shared with the flake8 checker's per-file index.

What a module shows:

- IPL001 in the light module, at its first-hop statement, with the text of
  :func:`flake8_importpolicy.output.render.format_violation_message` (what the flake8 checker prints);
- IPL006 in the light module, at the statement that leads to each unresolved site, with the text of
  :func:`flake8_importpolicy.output.render.format_unresolved_message` (mypy shows it as a note);
- IPL003, IPL004 and IPL007 (stale light pattern, unused ``[[ignore]]``, stale ``forbid``/``allow``
  entry) in the first light module (by name),
  at line 1, followed by the policy location ``(policy.toml:LINE)``: mypy can only show findings in
  the modules it checks. IPL002 and IPL005 are not included (the first would go stale on warm runs,
  as intermediate modules are not in the digest; mypy reports the second's syntax errors itself).

This module imports neither flake8 nor mypy, and the engine only on a miss.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from flake8_importpolicy import __version__, docs_url
from flake8_importpolicy.answers.jsonfile import expect_list, expect_object, expect_str
from flake8_importpolicy.answers.warm_index import Finding, load_index, parse_finding, store_index
from flake8_importpolicy.config.locate import find_policy

if TYPE_CHECKING:
    from flake8_importpolicy.model.findings import Report
    from flake8_importpolicy.model.policy import Policy

__all__ = [
    "ModuleFindings",
    "find_light_matcher",
    "find_module_findings",
    "find_module_findings_quickly",
    "MYPY_SECTION",
    "MypySettings",
    "find_mypy_settings",
    "find_unsupported_mode",
    "format_mypy_error",
    "is_same_file",
    "start_index_build",
]

_FORMAT = 5
_INDEX_DIR = "mypy"
_PROBLEM_CODES = ("IPL003", "IPL004", "IPL007", "IPL009")


class ModuleFindings(NamedTuple):
    """What every module shows.

    Attributes:
        findings: module name -> its findings, sorted by position; only modules with findings.
        digests: module name -> a digest of its findings, the package version, the engine's code, the
            policy's bytes and the path and content of the file the engine analysed for it (the same
            modules as ``findings``): mypy stores it with the module's cache entry, so a run on
            another copy of the module (which shows nothing) cannot leave this copy's entry fresh.
        files: light module name -> the file the engine analysed (modules with IPL001 findings).
    """

    findings: dict[str, list[Finding]]
    digests: dict[str, str]
    files: dict[str, str]


MYPY_SECTION = "importpolicy-mypy"
"""The plugin's section of mypy's configuration: ``[importpolicy-mypy]`` in ``mypy.ini`` or
``setup.cfg``, ``[tool.importpolicy-mypy]`` in ``pyproject.toml`` (as pydantic's ``pydantic-mypy``);
the older ``[importpolicy]`` INI section is read the same way."""
_OLD_SECTION = "importpolicy"
_KEYS = ("policy", "unresolved_notes")


class MypySettings(NamedTuple):
    """What mypy's configuration says to the plugin.

    Attributes:
        policy: the policy file (absolute).
        unresolved_notes: show IPL006 (unresolved import-time code) as notes (``unresolved_notes``,
            default true; false silences them and keeps the errors).
    """

    policy: str
    unresolved_notes: bool = True


def find_mypy_settings(config_file: str | None, line_of: Callable[[str, str], int]) -> MypySettings:
    """The plugin's settings in a mypy configuration: the section's ``policy = PATH`` (relative to the
    configuration file), else the policy :func:`~flake8_importpolicy.config.locate.find_policy` finds
    from the configuration's directory (the working directory without one); ``unresolved_notes``.

    Args:
        config_file: mypy's configuration file, if any.
        line_of: the 1-based line of a key in a section of ``config_file`` (0 if unknown).

    Raises:
        flake8_importpolicy.model.errors.ImportPolicyError: the section is invalid or no policy is
            found; the message is the one line mypy prints (``<config>[:line]: error: ...``).
    """
    from flake8_importpolicy.model.errors import ImportPolicyError, display_path, find_close_match

    def shown(path: str) -> str:
        return display_path(Path(path))

    section, table = _read_section(config_file)

    def problem(key: str, message: str) -> ImportPolicyError:
        line = line_of(section, key) if config_file else 0
        where = f"{shown(str(config_file))}{f':{line}' if line > 0 else ''}"
        return ImportPolicyError(f"{where}: error: [{section}] {message}")

    for key in table:
        if key not in _KEYS:
            close = find_close_match(key, _KEYS)
            hint = f"; did you mean {close!r}?" if close else f"; its keys are {', '.join(_KEYS)}"
            raise problem(key, f"has no key {key!r}{hint}")
    notes = table.get("unresolved_notes", True)
    words = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False,
             "0": False}
    if isinstance(notes, str) and notes.strip().lower() in words:
        notes = words[notes.strip().lower()]
    if not isinstance(notes, bool):
        raise problem("unresolved_notes", f"unresolved_notes = {notes}: expected true or false")
    value = table.get("policy")
    if value is not None:
        text = str(value).strip()
        path = os.path.join(os.path.dirname(str(config_file)), os.path.expanduser(text))
        if not text or not os.path.isfile(path):
            raise problem("policy", f"policy = {text}: no such file {shown(path)}")
        return MypySettings(os.path.realpath(path), notes)
    start = (os.path.dirname(config_file) if config_file else os.getcwd()) or os.curdir
    found = find_policy(start)
    if found is None:
        hint = f" or set 'policy = PATH' in an [{MYPY_SECTION}] section" if config_file else ""
        where = f"{shown(config_file)}: " if config_file else ""
        raise ImportPolicyError(
            f"{where}error: no policy.toml or pyproject.toml with [tool.importpolicy] found in "
            f"{shown(start)} or any parent; create one{hint} (see {docs_url('mypy.md')})")
    return MypySettings(str(found), notes)


def find_unsupported_mode(daemon: bool, workers: int) -> str | None:
    """The one line mypy prints when the plugin cannot show every finding: under ``dmypy`` (its
    fine-grained updates drop plugin-reported errors) and with ``-n N`` (a parallel worker may check
    a light module before any hook hands the plugin mypy's error log); None otherwise."""
    name = "flake8_importpolicy.mypy"
    if daemon:
        return (f"error: {name} does not support dmypy: the daemon's updates drop plugin-reported "
                f"errors ({docs_url('mypy.md')}); run mypy, and in the editor the flake8 checker or "
                "'importpolicy lsp'")
    if workers:
        return (f"error: {name} does not support mypy -n {workers}: a parallel worker may check a "
                f"light module before mypy lets the plugin report ({docs_url('mypy.md')}); run mypy "
                "without -n")
    return None


def format_mypy_error(policy_path: str, error: Exception) -> str:
    """An unusable policy (or an internal error: a bug) as the one line mypy prints,
    ``<policy>[:LINE]: error: <message>`` (the policy shown as mypy shows paths)."""
    from flake8_importpolicy.model.errors import ImportPolicyError, display_path
    from flake8_importpolicy.output.render import format_error_line

    if not isinstance(error, ImportPolicyError):
        error = RuntimeError(f"flake8-importpolicy failed: {type(error).__name__}: {error}; this is a bug")
    return format_error_line(error, display_path(Path(policy_path)))


def is_same_file(path: str, analysed: str | None) -> bool:
    """False when mypy checks another file under the module's name than the engine analysed (None:
    the module has no such file, any copy is it)."""
    if analysed is None:
        return True
    try:
        return os.path.samefile(path, analysed)
    except OSError:
        return False


def _read_section(config_file: str | None) -> tuple[str, dict[str, object]]:
    """The plugin's section of mypy's configuration file: its name as written and its keys (empty
    when there is none; an unreadable file is mypy's to report)."""
    if config_file is None:
        return MYPY_SECTION, {}
    if config_file.endswith(".toml"):
        import tomllib

        try:
            with open(config_file, "rb") as handle:
                tool = tomllib.load(handle).get("tool", {})
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            return MYPY_SECTION, {}
        table = tool.get(MYPY_SECTION, {}) if isinstance(tool, dict) else {}
        return f"tool.{MYPY_SECTION}", dict(table) if isinstance(table, dict) else {}
    import configparser

    parser = configparser.RawConfigParser()
    try:
        parser.read(config_file, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return MYPY_SECTION, {}
    for section in (MYPY_SECTION, _OLD_SECTION):
        if parser.has_section(section):
            return section, {key: parser.get(section, key) for key in parser.options(section)}
    return MYPY_SECTION, {}


def find_module_findings(policy_path: str) -> ModuleFindings:
    """The findings by module of the policy at ``policy_path`` (from the index when still valid).

    Raises:
        flake8_importpolicy.model.errors.ImportPolicyError: the policy cannot be loaded or its
            interpreter queried, or it has problems to show but no light module
            (:class:`~flake8_importpolicy.model.errors.NoLightModule`).
    """
    return _load_index(policy_path) or _build_index(policy_path)


def find_module_findings_quickly(policy_path: str) -> ModuleFindings | None:
    """The findings from the index alone (the engine is not imported); None if it is missing or stale."""
    return _load_index(policy_path)


def find_light_matcher(policy_path: str) -> Callable[[str], bool]:
    """Whether a module name matches a ``[light]`` pattern: only those modules can show findings.

    Loads the policy (the loader, not the engine), so it also reports a broken policy early.

    Raises:
        flake8_importpolicy.model.errors.PolicyError: if the policy cannot be loaded.
    """
    from flake8_importpolicy.config.load import load_policy
    from flake8_importpolicy.model.patterns import PatternIndex

    index = PatternIndex((rule.pattern, True) for rule in load_policy(Path(policy_path)).light)
    return lambda module: bool(index.find_exact(module))


def start_index_build(policy_path: str) -> subprocess.Popen[bytes] | None:
    """Start a helper process that writes the index, as ``python -m flake8_importpolicy.answers.by_module
    POLICY`` does; None if it cannot be started (:func:`find_module_findings` then checks in-process).

    A caller with other work to do meanwhile (mypy parsing the project) starts this, and later waits for
    the process and calls :func:`find_module_findings`, which then reads the index; a helper that fails
    (a broken policy) leaves no index, and :func:`find_module_findings` reports why.

    The helper is a fresh interpreter of the same executable and environment, which is what the engine's
    interpreter query (:func:`flake8_importpolicy.analysis.resolve.query_interpreter`) starts: so it starts
    as the query does (``python -c`` with this interpreter's flags, in an empty directory, with the
    query's environment), answers the query first, then moves to
    this process's directory and imports this copy of the package (one interpreter start, not two).
    """
    import tempfile

    from flake8_importpolicy.analysis.resolve import query_script
    from flake8_importpolicy.model.environment import query_environment, running_flags

    package_parent = str(Path(__file__).resolve().parents[2])  # the directory holding the package
    try:
        empty = tempfile.mkdtemp(prefix="importpolicy-")
    except OSError:
        return None
    try:
        return subprocess.Popen(
            [sys.executable, *running_flags(), "-c", query_script(_HELPER), policy_path,
             package_parent, os.getcwd()],
            cwd=empty, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=query_environment(),
        )
    except OSError:
        os.rmdir(empty)
        return None


# After the query (argv: policy, the directory holding this package, the directory to work in).
_HELPER = """\
import os
empty = os.getcwd()
os.chdir(sys.argv[3])
os.rmdir(empty)
if not sys.flags.safe_path:
    del sys.path[0]  # the script directory of -c
sys.path.insert(0, sys.argv[2])
import flake8_importpolicy
del sys.path[0]
from flake8_importpolicy.answers.by_module import _run_helper
_run_helper(sys.argv[1], answer)
"""


# -- the quick path: the index, standard library only ---------------------------------------------


def _load_index(policy_path: str) -> ModuleFindings | None:
    """The index if it exists and nothing it depends on changed, else None."""
    return load_index(policy_path, _INDEX_DIR, _FORMAT, _parse_index)


def _parse_index(entry: Any) -> ModuleFindings:
    findings = {
        module: [parse_finding(row) for row in expect_list(rows)]
        for module, rows in expect_object(entry["findings"]).items()
    }
    return ModuleFindings(
        findings,
        {module: expect_str(digest) for module, digest in expect_object(entry["digests"]).items()},
        {module: expect_str(path) for module, path in expect_object(entry["files_of"]).items()},
    )


# -- the slow path: the engine --------------------------------------------------------------------


def _build_index(policy_path: str) -> ModuleFindings:
    """Check the policy with the engine, store the index (best effort) and return the findings."""
    from flake8_importpolicy.answers.compute import run_engine_for
    from flake8_importpolicy.answers.facts_cache import engine_fingerprint
    from flake8_importpolicy.answers.freshness import sha256

    answer = run_engine_for(policy_path)
    policy = answer.policy
    findings, files_of = _translate(policy, answer.report)
    read = {str(path): source.digest for path, source in answer.files.items()}
    digests = {  # bound to the file shown in (path and content): another copy of the module is not it
        module: sha256(json.dumps([
            __version__, engine_fingerprint(), policy.digest,
            answer.baseline.digest if answer.baseline else "", rows,
            files_of.get(module), read.get(files_of.get(module, "")),
        ]).encode())[:32]
        for module, rows in findings.items()
    }
    store_index(policy_path, _INDEX_DIR, _FORMAT, policy=policy, info=answer.info,
                report=answer.report, files=answer.files, directories=answer.directories,
                baseline=answer.baseline,
                fields={"findings": findings, "digests": digests, "files_of": files_of})
    return ModuleFindings(findings, digests, files_of)


def _translate(policy: Policy, report: Report) -> tuple[dict[str, list[Finding]], dict[str, str]]:
    """The report's IPL001, IPL003 and IPL004 by module, and the file of each IPL001 module.

    Raises:
        flake8_importpolicy.model.errors.NoLightModule: the report has IPL003/IPL004 problems but
            no light module to show them in.
    """
    from flake8_importpolicy.model.errors import NoLightModule
    from flake8_importpolicy.output.render import (
        format_problem,
        format_unresolved_entry,
        format_violation_message,
        group_unresolved,
    )

    root = os.path.join(policy.root, "")

    def relpath(path: Path) -> str:  # Policy.relpath, fast for the absolute paths under the root
        text = str(path)
        return text[len(root):].replace(os.sep, "/") if text.startswith(root) else policy.relpath(path)

    found: dict[str, list[Finding]] = {}
    files_of: dict[str, str] = {}
    for violation in report.violations:
        found.setdefault(violation.light, []).append(Finding(
            violation.line, violation.col, violation.code.id,
            format_violation_message(violation, relpath),
        ))
        files_of[violation.light] = str(violation.path)
    for entry in group_unresolved(report.unresolved):
        at, line, col = entry.first_hop
        if at is None or entry.light_path is None:
            continue
        found.setdefault(entry.light, []).append(Finding(
            line, col, entry.code.id, format_unresolved_entry(entry, relpath),
        ))
        files_of[entry.light] = str(entry.light_path)
    problems = [p for p in report.problems if p.code.id in _PROBLEM_CODES]
    if problems and not report.light_modules:
        raise NoLightModule("no [light] pattern matches a module; check settings.source-roots")
    for problem in problems:
        where = (relpath(problem.path) if problem.path else "<policy>") + (
            f":{problem.line}" if problem.line else "")
        found.setdefault(report.light_modules[0], []).append(
            Finding(1, 0, problem.code.id, f"{format_problem(problem)} ({where})"))
    return {module: sorted(set(rows)) for module, rows in found.items()}, files_of


def _run_helper(policy_path: str, answer: dict[str, object] | None = None) -> None:
    """The helper of :func:`start_index_build`: writes the index (exit status 1 if the policy is unusable)."""
    from flake8_importpolicy.model.errors import ImportPolicyError

    if answer is not None:
        from flake8_importpolicy.analysis.resolve import remember_interpreter

        remember_interpreter(answer)
    try:
        find_module_findings(policy_path)
    except ImportPolicyError:
        sys.exit(1)


if __name__ == "__main__":
    _run_helper(sys.argv[1])
