"""``importpolicy lsp``: a language server over stdio, for editors whose linting runs no flake8 plugin.

A thin adapter (pygls, lsprotocol; the ``lsp`` extra) over
:meth:`flake8_importpolicy.answers.per_file.PerFileChecker.find_findings_or_error`, the flake8
checker's answer: for every open document, on open, change and save, it publishes the findings the
flake8 checker reports by default (IPL001, IPL002, IPL008; IPL900 at line 1 when the policy cannot be
used), for the unsaved buffer as it stands. Each answer is computed afresh (the per-file index is
re-validated: files change on disk while the server runs). Closing a document clears its diagnostics.

Code actions: for each of those diagnostics in a request's range, the server asks a fix provider
(:data:`FixProvider`; by default :func:`reexport_fixes`, the fixes ``importpolicy fix`` offers,
verified and without blockers: :func:`flake8_importpolicy.analysis.fixes.find_fixes_at`) and returns
each fix as a quick fix whose edit the editor applies.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from flake8_importpolicy import __version__
from flake8_importpolicy.answers.per_file import PerFileChecker
from flake8_importpolicy.answers.warm_index import Finding

__all__ = ["Edit", "FixAction", "FixProvider", "build_server", "no_fixes", "reexport_fixes", "serve"]

_SHOWN = frozenset({"IPL001", "IPL002", "IPL008", "IPL900"})
"""What flake8 selects by default (IPL006 is opt-in there, and not shown here)."""


class Edit(NamedTuple):
    """Replace the text between two positions (1-based lines, 0-based columns in UTF-16 code units,
    the LSP's) of ``path`` with ``text``."""

    path: str
    start: tuple[int, int]
    end: tuple[int, int]
    text: str


class FixAction(NamedTuple):
    """A fix as an editor offers it: a title and the edits that make it."""

    title: str
    edits: tuple[Edit, ...]


FixProvider = Callable[[str, str, Finding], Sequence[FixAction]]
"""``(path, buffer text, finding) -> fixes``: the fixes ``importpolicy fix`` offers for a finding."""


def no_fixes(path: str, text: str, finding: Finding) -> Sequence[FixAction]:
    """A fix provider that offers nothing: no code actions."""
    return ()


def reexport_fixes(path: str, text: str, finding: Finding, policy: Path | None = None) -> Sequence[FixAction]:
    """The fixes ``importpolicy fix`` offers for an IPL001 re-export at ``finding``'s line of the
    buffer ``text`` of ``path``, verified on the tree with the buffer and without blockers; none
    when the policy or the interpreter cannot be used (the diagnostics say why)."""
    from flake8_importpolicy.analysis.fixes import find_fixes_at
    from flake8_importpolicy.answers.facts_cache import open_facts_cache
    from flake8_importpolicy.config.load import discover_policy
    from flake8_importpolicy.model.errors import ImportPolicyError

    if finding.code != "IPL001":
        return ()
    where = Path(os.path.abspath(path))
    try:
        loaded = discover_policy(where.parent, policy)
        fixes = find_fixes_at(loaded, path=where, line=finding.line,
                              overrides={where: text.encode("utf-8", "surrogatepass")},
                              facts_cache=open_facts_cache(loaded))
    except ImportPolicyError:
        return ()
    texts = {where: text}
    return tuple(FixAction(fix.title, tuple(
        Edit(str(edit.path), _lsp_position(texts, edit.path, edit.start),
             _lsp_position(texts, edit.path, edit.end), edit.new_text) for edit in fix.edits))
        for fix in fixes)


def _lsp_position(texts: dict[Path, str], path: Path, position: tuple[int, int]) -> tuple[int, int]:
    """A fix's ``(line, column in characters)`` as ``(line, column in UTF-16 code units)``."""
    if path not in texts:
        try:
            texts[path] = path.read_text(encoding="utf-8", errors="surrogateescape")
        except OSError:
            texts[path] = ""
    # LSP's lines, as the fix counts them: a form feed or U+2028 (str.splitlines') is no break
    lines = re.split(r"\r\n|\r|\n", texts[path])
    row, column = position
    line = lines[row - 1] if 0 < row <= len(lines) else ""
    return row, len(line[:column].encode("utf-16-le", "surrogatepass")) // 2


def build_server(fix_provider: FixProvider | None = None, policy: Path | None = None) -> LanguageServer:
    """The language server (not started); ``policy`` is used for every document (else each
    document's policy is found from its directory, as flake8 does); ``fix_provider`` gives the
    code actions (default :func:`reexport_fixes`)."""
    if fix_provider is None:
        def fix_provider(path: str, text: str, finding: Finding) -> Sequence[FixAction]:
            return reexport_fixes(path, text, finding, policy)

    server = LanguageServer("importpolicy", __version__,
                            text_document_sync_kind=lsp.TextDocumentSyncKind.Full)

    def findings(uri: str) -> tuple[str, str, tuple[Finding, ...]]:
        document = server.workspace.get_text_document(uri)
        path = to_fs_path(uri) or uri
        text = document.source
        found = PerFileChecker(policy=policy).find_findings_or_error(path, text)
        return path, text, tuple(f for f in found if f.code in _SHOWN)

    def publish(uri: str, version: int | None) -> None:
        if not uri.startswith("file:"):
            return
        _path, text, found = findings(uri)
        lines = text.splitlines()
        server.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
            uri=uri, version=version, diagnostics=[_diagnostic(f, lines) for f in found]))

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: lsp.DidOpenTextDocumentParams) -> None:
        publish(params.text_document.uri, params.text_document.version)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: lsp.DidChangeTextDocumentParams) -> None:
        publish(params.text_document.uri, params.text_document.version)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: lsp.DidSaveTextDocumentParams) -> None:
        publish(params.text_document.uri, None)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: lsp.DidCloseTextDocumentParams) -> None:
        server.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION,
                    lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]))
    def code_action(params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        path, text, found = findings(params.text_document.uri)
        wanted = params.range
        actions = []
        for finding in found:
            if not wanted.start.line <= finding.line - 1 <= wanted.end.line:
                continue
            diagnostic = _diagnostic(finding, text.splitlines())
            for fix in fix_provider(path, text, finding):
                changes: dict[str, list[lsp.TextEdit]] = {}
                for edit in fix.edits:
                    changes.setdefault(Path(os.path.abspath(edit.path)).as_uri(), []).append(lsp.TextEdit(
                        range=lsp.Range(start=lsp.Position(line=edit.start[0] - 1, character=edit.start[1]),
                                        end=lsp.Position(line=edit.end[0] - 1, character=edit.end[1])),
                        new_text=edit.text))
                actions.append(lsp.CodeAction(title=fix.title, kind=lsp.CodeActionKind.QuickFix,
                                              diagnostics=[diagnostic],
                                              edit=lsp.WorkspaceEdit(changes=changes)))
        return actions

    return server


def serve(fix_provider: FixProvider | None = None, policy: Path | None = None) -> None:
    """Run the server on stdin and stdout until the client says ``exit``."""
    build_server(fix_provider, policy).start_io()


def _diagnostic(finding: Finding, lines: Sequence[str]) -> lsp.Diagnostic:
    """A finding as an LSP diagnostic: over the rest of its line, the message without its code."""
    row = finding.line - 1
    line = lines[row] if 0 <= row < len(lines) else ""
    start = _utf16(line, finding.col)
    code, _, message = finding.text.partition(" ")
    return lsp.Diagnostic(
        range=lsp.Range(start=lsp.Position(line=row, character=start),
                        end=lsp.Position(line=row, character=max(start, _utf16(line, len(line.encode()))))),
        message=message if code == finding.code else finding.text,
        severity=lsp.DiagnosticSeverity.Error, code=finding.code, source="importpolicy")


def _utf16(line: str, byte_col: int) -> int:
    """A column in UTF-8 bytes (as Python's ``ast`` gives it) in UTF-16 code units (the LSP's)."""
    prefix = line.encode("utf-8", "surrogatepass")[:byte_col].decode("utf-8", "replace")
    return len(prefix.encode("utf-16-le", "surrogatepass")) // 2
