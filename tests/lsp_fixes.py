"""A fix provider for tests/test_lsp.py: removes the statement of each IPL001 (a stand-in for the
fixes ``importpolicy fix`` offers), so that the language server's code-action plumbing is tested."""

from __future__ import annotations

from collections.abc import Sequence

from flake8_importpolicy.answers.warm_index import Finding
from flake8_importpolicy.lsp import Edit, FixAction


def remove_the_statement(path: str, text: str, finding: Finding) -> Sequence[FixAction]:
    if finding.code != "IPL001":
        return ()
    return (FixAction("Remove the import-time import",
                      (Edit(path, (finding.line, 0), (finding.line + 1, 0), ""),)),)
