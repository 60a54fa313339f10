"""The flake8 plugin: IPL001, IPL002 and IPL008 per checked file, a thin adapter over the engine.

Registered as ``IPL`` in the ``flake8.extension`` entry-point group, so flake8 selects it by default.
IPL006 (unresolved import-time code, information) is reported only when ``IPL006`` itself is in
``select`` or ``extend-select``: the prefix ``IPL`` does not turn it on.
The answer for each file comes from :class:`flake8_importpolicy.answers.per_file.PerFileChecker`: the checked
file's content is flake8's ``lines`` (the editor buffer with ``flake8 -``), every other module is read
from disk, and the policy is found from the checked file's path unless ``--import-policy`` names one.

Errors never surface as tracebacks, and never hide the file's other diagnostics: a broken policy (or an
interpreter that cannot be queried, or a bug of ours) is one IPL900 diagnostic at line 1 of each checked
file, naming the policy's file, line and key, while flake8 goes on with its other plugins (exit status
by flake8's rules: 1, as for any reported error). Editors that parse flake8's output (pylsp, the VS
Code flake8 extension) show it where they would show a finding. Problems in other modules (syntax
errors, bad encodings, unreadable files) are not errors here: the engine stops the chain there and
``importpolicy check`` / ``importpolicy why`` report them (IPL005).
"""

from __future__ import annotations

import argparse
import ast
import os
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

from flake8.options.manager import OptionManager
from flake8.style_guide import Decision, DecisionEngine

from flake8_importpolicy.answers.per_file import PerFileChecker

__all__ = ["ImportPolicyChecker"]

_CODES = ("IPL001", "IPL002", "IPL008", "IPL900")
_OPT_IN = "IPL006"
_NO_FILE = frozenset({"stdin", "-", ""})
"""Display names flake8 uses for stdin without ``--stdin-display-name``: there is no path to go by."""


class ImportPolicyChecker:
    """flake8 checker: the IPL001/IPL002/IPL008 findings of one file, IPL900 when the policy cannot be
    used (see the module docstring).

    Args:
        tree: the parsed file (requested so that flake8 runs the checker once per file).
        filename: the file's path as flake8 displays it (``--stdin-display-name`` for stdin).
        lines: the file's lines as flake8 read them (the editor buffer with ``flake8 -``).
    """

    # Set by parse_options from the options alone (so spawned -j workers, which parse the same
    # arguments again, get the same values); the checker holding the caches is made per process.
    _policy: ClassVar[Path | None] = None
    _selected: ClassVar[frozenset[str]] = frozenset(_CODES)
    _checker: ClassVar[PerFileChecker | None] = None

    def __init__(self, tree: ast.AST, filename: str, lines: list[str]) -> None:
        self.filename = filename
        self.lines = lines

    @classmethod
    def add_options(cls, manager: OptionManager) -> None:
        """Register ``--import-policy`` (also ``import-policy = ...`` in the ``[flake8]`` config)."""
        manager.add_option(
            "--import-policy",
            metavar="PATH",
            default=None,
            parse_from_config=True,
            normalize_paths=True,
            help="policy.toml or pyproject.toml for every checked file (default: found from each "
            "file's directory, walking up: policy.toml, else pyproject.toml with "
            "[tool.importpolicy])",
        )

    @classmethod
    def parse_options(cls, options: argparse.Namespace) -> None:
        """Keep the explicit policy path and which IPL codes flake8 would report."""
        explicit = options.import_policy
        cls._policy = Path(os.path.abspath(explicit)) if explicit else None
        decisions = DecisionEngine(options)
        explicit = {
            str(code).strip().upper()
            for code in [*(options.select or ()), *(getattr(options, "extend_select", None) or ())]
        }
        opt_in = (_OPT_IN,) if _OPT_IN in explicit else ()
        cls._selected = frozenset(
            code for code in (*_CODES, *opt_in) if decisions.decision_for(code) is Decision.Selected
        )
        cls._checker = None

    def run(self) -> Iterator[tuple[int, int, str, type[ImportPolicyChecker]]]:
        """Yield ``(line, col, "IPLnnn message", type)`` for this file (an IPL900 at line 1 when the
        check cannot be made)."""
        if not self._selected or self.filename in _NO_FILE:
            return
        checker = type(self)._checker
        if checker is None:
            checker = type(self)._checker = PerFileChecker(policy=self._policy)
        for finding in checker.find_findings_or_error(self.filename, "".join(self.lines)):
            if finding.code in self._selected:
                yield finding.line, finding.col, finding.text, type(self)
