"""A minimal Language Server Protocol client for the tests: a real server process over stdio.

JSON-RPC 2.0 messages framed by ``Content-Length`` headers (the LSP base protocol). The client sends
requests and notifications, reads the server's messages on a thread, answers the server's own
requests (``workspace/configuration``, ``client/registerCapability``, ``window/workDoneProgress/create``)
and keeps every ``textDocument/publishDiagnostics`` it receives.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from helpers import HANG_CATCHER


class LspClient:
    """Start ``command`` (a language server on stdio) in ``cwd``; use as a context manager.

    Args:
        settings: the answer to every ``workspace/configuration`` item, and sent with
            ``workspace/didChangeConfiguration`` after ``initialized``.
    """

    def __init__(self, command: Sequence[str], cwd: Path, env: dict[str, str] | None = None,
                 settings: dict[str, Any] | None = None) -> None:
        self.proc = subprocess.Popen(list(command), cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.settings = settings or {}
        self._next = 0
        self._responses: dict[int, queue.Queue[dict[str, Any]]] = {}
        self.diagnostics: queue.Queue[dict[str, Any]] = queue.Queue()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def __enter__(self) -> LspClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.request("shutdown", None)
                self.notify("exit", None)
                self.proc.wait(timeout=HANG_CATCHER)
            except Exception:
                self.proc.kill()
                self.proc.wait(timeout=HANG_CATCHER)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()

    # -- the wire -----------------------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.proc.stdin is not None
        with self._lock:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()

    def _read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode().partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            if length is None:
                continue
            message = json.loads(stream.read(length))
            if "id" in message and "method" in message:  # a request from the server
                self._answer(message)
            elif "id" in message:
                self._responses.setdefault(message["id"], queue.Queue()).put(message)
            elif message.get("method") == "textDocument/publishDiagnostics":
                self.diagnostics.put(message["params"])

    def _answer(self, message: dict[str, Any]) -> None:
        result: Any = None
        if message["method"] == "workspace/configuration":
            result = [self.settings for _ in message["params"]["items"]]
        self._send({"id": message["id"], "result": result})

    # -- requests -----------------------------------------------------------------------------------

    def request(self, method: str, params: Any, timeout: float = HANG_CATCHER) -> Any:
        self._next += 1
        number = self._next
        answers = self._responses.setdefault(number, queue.Queue())
        self._send({"id": number, "method": method, "params": params})
        response = answers.get(timeout=timeout)
        if "error" in response:
            raise RuntimeError(f"{method}: {response['error']}")
        return response.get("result")

    def notify(self, method: str, params: Any) -> None:
        self._send({"method": method, "params": params})

    def initialize(self, root: Path) -> Any:
        result = self.request("initialize", {
            "processId": None, "rootUri": root.as_uri(),
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
            "capabilities": {"textDocument": {"publishDiagnostics": {}, "codeAction": {
                "codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix"]}}}},
                "workspace": {"configuration": True}},
        })
        self.notify("initialized", {})
        if self.settings:
            self.notify("workspace/didChangeConfiguration", {"settings": self.settings})
        return result

    def open(self, path: Path, text: str, version: int = 1) -> None:
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": path.as_uri(), "languageId": "python", "version": version, "text": text}})

    def change(self, path: Path, text: str, version: int) -> None:
        self.notify("textDocument/didChange", {
            "textDocument": {"uri": path.as_uri(), "version": version},
            "contentChanges": [{"text": text}]})

    def wait_for_diagnostics(self, path: Path, timeout: float = HANG_CATCHER,
                             where: Any = None) -> list[dict[str, Any]]:
        """The next diagnostics published for ``path`` (for which ``where(diagnostics)`` holds)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no diagnostics for {path}")
            params = self.diagnostics.get(timeout=left)
            if params["uri"] == path.as_uri():
                found: list[dict[str, Any]] = params["diagnostics"]
                if where is None or where(found):
                    return found
