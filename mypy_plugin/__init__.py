"""The mypy plugin: ``plugins = mypy_plugin`` makes mypy report import-policy findings (docs/mypy.md).

A thin adapter over :mod:`flake8_importpolicy.answers.by_module` (the engine reads the sources itself;
mypy only hosts the reporting, under the error code ``import-policy``), for mypy >= 2.4, sequential or
``-n N``:

- ``get_additional_indirect_deps`` runs once per re-checked module, in the process that checks it,
  before its errors are cached: the findings are reported there (``# type: ignore`` sees them), through
  the ``BuildManager``'s ``Errors``, found with ``gc.get_referrers`` (in ``set_modules`` on a cold run
  or in a ``-n`` worker, else only when a finding is reported);
- ``report_config_data`` returns the digest of what a module shows, so a dependency edit that changes
  no interface still re-checks the light module.

On a cold run a helper process builds the index while mypy checks modules that cannot show findings.
Configuration problems stop mypy with one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Final

from mypy.build import BuildManager, find_config_file_line_number
from mypy.errorcodes import ErrorCode
from mypy.errors import CompileError
from mypy.nodes import MypyFile
from mypy.options import Options
from mypy.plugin import Plugin, ReportConfigContext

from flake8_importpolicy.answers.by_module import (
    MYPY_SECTION,
    ModuleFindings,
    find_light_matcher,
    find_module_findings,
    find_module_findings_quickly,
    find_policy_for_mypy,
    start_index_build,
)
from flake8_importpolicy.model.errors import ImportPolicyError

__all__ = ["IMPORT_POLICY", "SECTION", "ImportPolicyPlugin", "plugin"]

IMPORT_POLICY: Final = ErrorCode(
    "import-policy", "Check that light modules import no forbidden module at import time", "General"
)
_NOTE_CODE: Final = "IPL006"
"""Unresolved import-time code is information: a note, which does not fail mypy."""
SECTION: Final = MYPY_SECTION
"""The mypy.ini/setup.cfg section read by the plugin; its one key is ``policy = PATH``."""


class ImportPolicyPlugin(Plugin):
    """Reports the policy's findings in the modules mypy checks; see the module docstring."""

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self._policy_path = ""
        self._config_error = ""  # reported at the first hook: raising here would print a traceback
        self._found: ModuleFindings | None = None
        self._helper: subprocess.Popen[bytes] | None = None
        self._is_light: Callable[[str], bool] = lambda module: True
        self._manager: BuildManager | None = None
        try:
            if not hasattr(Plugin, "get_additional_indirect_deps"):
                raise _ConfigError("error: mypy_plugin needs mypy >= 2.4 (get_additional_indirect_deps)")
            self._policy_path = _locate_policy(options.config_file)
            # Warm, the index answers now. Cold, a helper process runs the engine while mypy checks
            # modules that need no answer, started by the main process only, and not under dmypy.
            self._found = find_module_findings_quickly(self._policy_path)
            if self._found is None and not options.fine_grained_incremental:
                self._is_light = find_light_matcher(self._policy_path)
                if not _in_build_worker():
                    self._helper = start_index_build(self._policy_path)
        except _ConfigError as err:
            self._config_error = str(err)
        except Exception as err:  # a broken policy: one line, never a traceback
            self._config_error = _error_line(self._policy_path, err)

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
                raise CompileError([_error_line(self._policy_path, err)]) from None
        return self._found

    def set_modules(self, modules: dict[str, MypyFile]) -> None:
        super().set_modules(modules)
        if self._config_error:
            raise CompileError([self._config_error])
        # Nothing is reported under dmypy (docs/mypy.md: fine-grained updates drop plugin errors).
        if not self.options.fine_grained_incremental and (
                self._found is None or self._found.findings and _in_build_worker()):
            self._manager = _find_manager(modules)

    def report_config_data(self, ctx: ReportConfigContext) -> str | None:
        if ctx.path.endswith(".pyi") or not self._is_light(ctx.id):  # a stub never runs
            return None
        found = self._get_found()  # another copy of the module shows nothing: its digest is None
        return found.digests.get(ctx.id) if _is_same_file(ctx.path, found.files.get(ctx.id)) else None

    def get_additional_indirect_deps(self, file: MypyFile) -> set[str]:
        if file.is_stub or self.options.fine_grained_incremental or not self._is_light(file.fullname):
            return set()
        found = self._get_found()
        findings = found.findings.get(file.fullname)
        if findings and _is_same_file(file.path, found.files.get(file.fullname)):
            self._manager = self._manager or _find_manager(self._modules)  # warm: searched only now
            if self._manager is None:
                return set()
            errors = self._manager.errors
            saved = (errors.file, errors.target_module, errors.options, errors.scope)
            options = saved[2] if saved[0] == file.path else (
                self._manager.options.clone_for_module(file.fullname))
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


def _find_manager(modules: object) -> BuildManager | None:
    return next((r for r in gc.get_referrers(modules) if isinstance(r, BuildManager)), None)


def _in_build_worker() -> bool:
    """True in a worker of ``mypy -n N`` (``python -m mypy.build_worker``)."""
    main = getattr(sys.modules.get("__main__"), "__spec__", None)
    return bool(getattr(main, "name", "").startswith("mypy.build_worker"))


def _is_same_file(path: str, analysed: str | None) -> bool:
    """False when mypy checks another file under the module's name than the engine did."""
    if analysed is None:
        return True
    try:
        return os.path.samefile(path, analysed)
    except OSError:
        return False


def _locate_policy(config_file: str | None) -> str:
    """The policy for mypy's configuration (see :func:`find_policy_for_mypy`).

    Raises:
        _ConfigError: if the ``[importpolicy]`` section is invalid or no policy is found.
    """
    try:
        return find_policy_for_mypy(config_file, lambda key: find_config_file_line_number(
            config_file or "", SECTION, key))
    except ImportPolicyError as err:
        raise _ConfigError(str(err)) from None


class _ConfigError(Exception):
    """A configuration problem, as the one line mypy prints."""


def _error_line(policy_path: str, error: Exception) -> str:
    """An unusable policy (or an internal error: a bug) as the one line mypy prints."""
    from flake8_importpolicy.model.errors import ImportPolicyError
    from flake8_importpolicy.output.render import format_error_line

    if not isinstance(error, ImportPolicyError):
        error = RuntimeError(f"flake8-importpolicy failed: {type(error).__name__}: {error}; this is a bug")
    return format_error_line(error, _shown(policy_path))


def _shown(path: str) -> str:
    """``path`` relative to the working directory when inside it (as mypy shows paths), else absolute."""
    from flake8_importpolicy.model.errors import display_path

    return display_path(Path(path))
