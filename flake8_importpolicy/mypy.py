"""The mypy plugin: ``plugins = flake8_importpolicy.mypy`` makes mypy report import-policy findings.

A thin adapter over :mod:`flake8_importpolicy.answers.by_module`, for mypy >= 2.4 (docs/mypy.md):

- ``get_additional_indirect_deps`` runs once per re-checked module, after mypy checked it and before
  its errors are cached: the findings are reported there (``# type: ignore`` sees them);
- mypy's plugin API hands an error log only to hooks run during analysis (``ctx.api.msg.errors``),
  none of them for every module. So each module with findings to show gets typeshed's ``graphlib``
  stub as an extra dependency (``get_additional_deps``), whose cache entry is stale on every run
  (``report_config_data``): mypy analyses it before such a module, and the class hook of
  ``graphlib.TopologicalSorter`` takes the error log (without one, mypy stops with one line, exit 2).
  A run with findings therefore re-checks the modules that show them, and their importers;
- ``report_config_data`` gives the digest of what a module shows, so a dependency edit that changes
  no interface still re-checks the light module;
- ``dmypy`` and ``mypy -n N`` stop at the first check with one line (exit 2).

Configuration problems stop mypy with one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Final

from mypy.build import find_config_file_line_number
from mypy.errorcodes import ErrorCode
from mypy.errors import CompileError, Errors
from mypy.nodes import MypyFile
from mypy.options import Options
from mypy.plugin import ClassDefContext, Plugin, ReportConfigContext

from flake8_importpolicy import docs_url
from flake8_importpolicy.answers.by_module import (
    MYPY_SECTION,
    ModuleFindings,
    find_light_matcher,
    find_module_findings,
    find_module_findings_quickly,
    find_mypy_settings,
    find_unsupported_mode,
    format_mypy_error,
    is_same_file,
    start_index_build,
)
from flake8_importpolicy.answers.warm_index import Finding
from flake8_importpolicy.model.environment import leave_working_directory
from flake8_importpolicy.model.errors import ImportPolicyError, display_path

__all__ = ["IMPORT_POLICY", "SECTION", "ImportPolicyPlugin", "plugin"]

IMPORT_POLICY: Final = ErrorCode(
    "import-policy", "Check that light modules import no forbidden module at import time", "General"
)
SECTION: Final = MYPY_SECTION
"""The plugin's section of mypy's configuration (``policy``, ``unresolved_notes``)."""
_NAME: Final = "flake8_importpolicy.mypy"
_NOTE_CODE: Final = "IPL006"
"""Unresolved import-time code is information: a note, which does not fail mypy."""
_ANCHOR: Final = "graphlib"
_ANCHOR_CLASS: Final = "graphlib.TopologicalSorter"


class ImportPolicyPlugin(Plugin):
    """Reports the policy's findings in the modules mypy checks; see the module docstring."""

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self._policy_path = ""
        self._notes = True
        self._config_error = ""  # reported at the first hook: raising here would print a traceback
        self._found: ModuleFindings | None = None
        self._helper: subprocess.Popen[bytes] | None = None
        self._is_light: Callable[[str], bool] = lambda module: True
        self._errors: Errors | None = None
        self._anchor = f"{os.getpid()}:{id(self)}"  # the anchor's cache entry is stale on every run
        try:
            if not hasattr(Plugin, "get_additional_indirect_deps"):
                raise _ConfigError(f"error: {_NAME} needs mypy >= 2.4 (get_additional_indirect_deps)")
            refused = find_unsupported_mode(options.fine_grained_incremental,
                                            getattr(options, "num_workers", 0))
            if refused:
                raise _ConfigError(refused)
            self._policy_path, self._notes = _locate_settings(options.config_file)
            # Warm, the index answers now. Cold, a helper process runs the engine while mypy checks
            # modules that need no answer.
            self._found = find_module_findings_quickly(self._policy_path)
            if self._found is not None:
                self._is_light = self._found.findings.__contains__
            else:
                self._is_light = find_light_matcher(self._policy_path)
                self._helper = start_index_build(self._policy_path)
        except _ConfigError as err:
            self._config_error = str(err)
        except Exception as err:  # a broken policy: one line, never a traceback
            self._config_error = format_mypy_error(self._policy_path, err)

    def _get_found(self) -> ModuleFindings:
        """The findings by module, once per process; a configuration problem stops mypy (exit 2)."""
        if self._found is None:
            if self._config_error:
                raise CompileError([self._config_error])
            if self._helper is not None:
                self._helper.wait()
                self._helper = None
            try:
                self._found = find_module_findings(self._policy_path)
            except Exception as err:
                raise CompileError([format_mypy_error(self._policy_path, err)]) from None
        return self._found

    def set_modules(self, modules: dict[str, MypyFile]) -> None:
        super().set_modules(modules)
        if self._config_error:
            raise CompileError([self._config_error])

    def get_additional_deps(self, file: MypyFile) -> list[tuple[int, str, int]]:
        if not self._findings_of(file):
            return []
        return [(10, _ANCHOR, -1)]  # priority 10: an ordinary import's (mypy.plugin's docs)

    def _findings_of(self, file: MypyFile) -> list[Finding]:
        """What the module shows (IPL006 notes unless silenced); none for another copy of it."""
        if file.is_stub or not self._is_light(file.fullname):
            return []
        found = self._get_found()
        if not is_same_file(file.path, found.files.get(file.fullname)):
            return []
        return [f for f in found.findings.get(file.fullname, ()) if self._notes or f.code != _NOTE_CODE]

    def get_customize_class_mro_hook(self, fullname: str) -> Callable[[ClassDefContext], None] | None:
        return self._take_error_log if fullname == _ANCHOR_CLASS else None

    def _take_error_log(self, ctx: ClassDefContext) -> None:
        self._errors = ctx.api.msg.errors  # MessageBuilder.errors: "Report errors using this instance"

    def report_config_data(self, ctx: ReportConfigContext) -> str | None:
        if ctx.id == _ANCHOR:
            return self._anchor
        if ctx.path.endswith(".pyi") or not self._is_light(ctx.id):  # a stub never runs
            return None
        found = self._get_found()  # another copy of the module shows nothing: its digest is None
        digest = found.digests.get(ctx.id) if is_same_file(ctx.path, found.files.get(ctx.id)) else None
        return digest if digest is None or self._notes else f"{digest}:no-notes"

    def get_additional_indirect_deps(self, file: MypyFile) -> set[str]:
        findings = self._findings_of(file)
        if not findings:
            return set()
        errors = self._errors
        if errors is None:
            raise CompileError([
                f"{display_path(Path(file.path))}: error: {_NAME} cannot report the import-policy "
                f"findings of {file.fullname}: mypy did not analyse {_ANCHOR} before it, so the plugin "
                f"has no error log (see {docs_url('mypy.md')}); run 'importpolicy check'"])
        saved = (errors.file, errors.target_module, errors.options, errors.scope)
        options = saved[2] if saved[0] == file.path else self.options.clone_for_module(file.fullname)
        errors.set_file(file.path, file.fullname, options)
        try:
            for finding in findings:
                severity = "note" if finding.code == _NOTE_CODE else "error"
                errors.report(finding.line, finding.col, finding.text, code=IMPORT_POLICY,
                              severity=severity)
        finally:
            errors.set_file(saved[0], saved[1], saved[2], saved[3])
        return set()


def plugin(version: str) -> type[Plugin]:
    """mypy's entry point (setup.cfg states the supported range; a too old mypy is detected by feature)."""
    return ImportPolicyPlugin


def _locate_settings(config_file: str | None) -> tuple[str, bool]:
    """The policy and ``unresolved_notes`` for mypy's configuration (see :func:`find_mypy_settings`).

    Raises:
        _ConfigError: if the plugin's section is invalid or no policy is found.
    """
    try:
        return find_mypy_settings(config_file, lambda section, key: find_config_file_line_number(
            config_file or "", section, key))
    except ImportPolicyError as err:
        raise _ConfigError(str(err)) from None


class _ConfigError(Exception):
    """A configuration problem, as the one line mypy prints."""


leave_working_directory()  # python -m mypy, and -n N's workers: a project's tomllib.py is not ours
