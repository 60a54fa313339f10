"""The runtime import recorder of ``importpolicy verify``: a self-contained script, stdlib only.

It runs inside the *target* interpreter, which may not have flake8-importpolicy installed, so it is
never imported by the package; :mod:`flake8_importpolicy.runtime.verify` runs it by path (Python 3.9+)::

    python -E recorder.py OUT MODULE [--root DIR]... [--after EXPRESSION]...

``OUT`` is ``fd:N`` (a pipe the verifier passed as file descriptor N) or a file to append to. It
puts the ``--root`` directories first on ``sys.path`` in place of the script's own directory
(nothing else is added), installs the recorder, imports ``MODULE`` and then evaluates each
``--after`` expression. Results go to ``OUT`` as JSON lines, one event per line, written as they
happen, so a hang or a crash still leaves the events up to that point; the last is ``finish``.
Nothing is written to stdout, which the imported code owns.

The recorder is a ``sys.meta_path`` finder placed first: it asks the other finders for the spec and
wraps the loader. The wrapper records a module when its code *starts executing*
(``exec_module``; ``create_module`` for builtin and extension modules, whose init function runs
there), with the importing frame (the innermost frame outside importlib and this script: module
name, file, line), and puts the original loader back on the spec and the module before the code
runs, so the module looks as if it had been imported without the recorder. A module that is only
found (``importlib.util.find_spec``) or made lazy (``importlib.util.LazyLoader``, as
``lazy_loader.load()`` does) is not recorded until its code really runs.

Before the import only builtins and ``sys`` are used (plus ``_thread``, loaded at start-up by the
import system itself), so the recorder imports nothing that the measured import could then find
already loaded.

Events (``"e"`` is the event type):

- ``{"e": "start", "version": [3, 11, 7], "executable": ...}``
- ``{"e": "exec", "m": name, "file": origin|null, "by": importer|null, "at": file, "line": n,
  "via": [flags], "parent": name|null, "pat": file|null, "pline": n}`` — a module's code started
  running; ``by`` is null for the import made by this script itself; ``via`` holds ``"exec"``
  when the importing code was compiled from a string (``at``/``line`` are then the nearest real
  file's frame); ``parent`` is the module whose import-time code was running in this thread.
- ``{"e": "done", "m": name}`` / ``{"e": "fail", "m": name, "error": "Type: message"}``
- ``{"e": "imported", "ok": true}`` or ``{"e": "imported", "ok": false, "error": ...,
  "at": file|null, "line": n}``
- ``{"e": "unrecorded", "modules": [[name, file|null], ...]}`` — new ``sys.modules`` entries whose
  loading the recorder did not see (a finder ahead of it, or a module put there by hand); lazy
  modules and aliases are left out.
- ``{"e": "after", "expr": source, "ok": bool, "error": message|null}``
- ``{"e": "finish"}``
"""

import sys

MYPY = False
if MYPY:  # type annotations only: nothing is imported at runtime (annotations are strings)
    from types import FrameType, ModuleType
    from typing import Any, BinaryIO, Dict, List, Optional, Tuple

    Event = Dict[str, object]
    Importer = Tuple[Optional[str], Optional[str], int, List[str]]

_THREAD = sys.modules.get("_thread")
_GLOBALS = globals()
_SKIP_MODULES = frozenset((
    "_frozen_importlib",
    "_frozen_importlib_external",
    "importlib",
    "importlib._bootstrap",
    "importlib._bootstrap_external",
    "importlib.util",
))
_HEX = "0123456789abcdef"


def _quote(text: str) -> str:
    """A JSON string literal for ``text``, pure ASCII (lone surrogates as ``\\udcXX``)."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char == '"' or char == "\\":
            out.append("\\" + char)
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code > 0xFFFF:
            code -= 0x10000
            for unit in (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)):
                out.append("\\u" + "".join(_HEX[(unit >> s) & 15] for s in (12, 8, 4, 0)))
        else:
            out.append("\\u" + "".join(_HEX[(code >> s) & 15] for s in (12, 8, 4, 0)))
    out.append('"')
    return "".join(out)


def _encode(value: object) -> str:
    """JSON text for None, bools, ints, strings, lists/tuples and dicts with string keys."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_encode(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(_quote(k) + ":" + _encode(v) for k, v in value.items()) + "}"
    return _quote(repr(value))


def _describe(exc: BaseException) -> str:
    """``Type: message`` for an exception, never raising."""
    try:
        message = str(exc)
    except BaseException:
        message = "<unprintable>"
    name = type(exc).__name__
    return name + ": " + message if message else name


class _Recorder:
    """Writes events and keeps the per-thread stack of modules whose code is running."""

    def __init__(self, stream: "BinaryIO") -> None:
        self.stream = stream
        self.lock: "Any" = _THREAD.allocate_lock() if _THREAD is not None else None
        self.recorded: "Dict[str, bool]" = {}  # name -> True once its code started
        self.found: "set[str]" = set()  # names whose loader the recorder wrapped
        self.stacks: "Dict[int, List[str]]" = {}  # thread id -> modules running
        self.active = True

    def emit(self, event: "Event") -> None:
        data = (_encode(event) + "\n").encode("ascii")
        if self.lock is not None:
            with self.lock:
                self.stream.write(data)
        else:
            self.stream.write(data)

    def stack(self) -> "List[str]":
        ident = _THREAD.get_ident() if _THREAD is not None else 0
        stack = self.stacks.get(ident)
        if stack is None:
            stack = self.stacks[ident] = []
        return stack

    def begin(self, name: str, spec: "Any") -> None:
        """Record that ``name``'s code starts running (once per module)."""
        if name in self.recorded or not self.active:
            return
        self.recorded[name] = True
        origin = getattr(spec, "origin", None)
        if not getattr(spec, "has_location", False) or not isinstance(origin, str):
            origin = None
        by, at, line, via = _importer()
        stack = self.stack()
        parent = stack[-1] if stack else None
        pat, pline = None, 0
        if parent is not None and parent != by:
            pat, pline = _module_frame(parent)
        self.emit({
            "e": "exec", "m": name, "file": origin, "by": by, "at": at, "line": line,
            "via": via, "parent": parent, "pat": pat, "pline": pline,
        })


def _skipped(frame: "FrameType") -> bool:
    """True for frames of the import machinery and of this script (not importing frames)."""
    if frame.f_globals is _GLOBALS:
        return frame.f_code is not _import_target.__code__
    if frame.f_code.co_filename.startswith("<frozen importlib"):
        return True
    return frame.f_globals.get("__name__") in _SKIP_MODULES


def _importer() -> "Importer":
    """``(module, file, line, via)`` of the innermost frame that is importing, or Nones.

    ``module`` is None when the import is this script's own import of the target.
    """
    frame: "Optional[FrameType]" = sys._getframe(1)
    while frame is not None and _skipped(frame):
        frame = frame.f_back
    if frame is None or frame.f_globals is _GLOBALS:
        return None, None, 0, []
    name = frame.f_globals.get("__name__")
    filename = frame.f_code.co_filename
    line = frame.f_lineno or 0
    via: "List[str]" = []
    if filename.startswith("<") and not filename.startswith("<frozen "):
        # Code compiled from a string (exec, eval, compile): point at the nearest real file.
        via.append("exec")
        outer = frame.f_back
        while outer is not None and (_skipped(outer) or outer.f_code.co_filename.startswith("<")):
            outer = outer.f_back
        if outer is not None and outer.f_globals is not _GLOBALS:
            filename, line = outer.f_code.co_filename, outer.f_lineno or 0
            if not isinstance(name, str):
                name = outer.f_globals.get("__name__")
    if not isinstance(name, str):
        name = None
    return name, filename, line, via


def _module_frame(module: str) -> "Tuple[Optional[str], int]":
    """``(file, line)`` of the innermost frame running ``module``'s import-time code, or None, 0."""
    frame: "Optional[FrameType]" = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == module:
            return frame.f_code.co_filename, frame.f_lineno or 0
        frame = frame.f_back
    return None, 0


def _runs_code_in_create(loader: "Any") -> bool:
    """True for loaders whose ``create_module`` runs the module's init (builtin, extension)."""
    names: "set[str]" = set()
    kind = loader if isinstance(loader, type) else type(loader)
    for cls in getattr(kind, "__mro__", ()):
        names.add(cls.__name__)
    return "BuiltinImporter" in names or "ExtensionFileLoader" in names


class _Loader:
    """Wraps a loader: records the module when its code runs, then gets out of the way."""

    def __init__(self, loader: "Any", recorder: "_Recorder") -> None:
        self._ipl_loader = loader
        self._ipl_recorder = recorder

    def __getattr__(self, name: str) -> "Any":
        if name.startswith("_ipl_"):
            raise AttributeError(name)
        return getattr(self._ipl_loader, name)

    def __repr__(self) -> str:
        return repr(self._ipl_loader)

    def create_module(self, spec: "Any") -> "Any":
        loader = self._ipl_loader
        create = getattr(loader, "create_module", None)
        if create is None:
            return None
        if not _runs_code_in_create(loader):
            return create(spec)
        recorder = self._ipl_recorder
        recorder.begin(spec.name, spec)
        stack = recorder.stack()
        stack.append(spec.name)
        try:
            return create(spec)
        except BaseException as exc:
            recorder.emit({"e": "fail", "m": spec.name, "error": _describe(exc)})
            raise
        finally:
            stack.pop()

    def exec_module(self, module: "ModuleType") -> None:
        loader = self._ipl_loader
        recorder = self._ipl_recorder
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.loader is self:
            spec.loader = loader
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = loader
        name = spec.name if spec is not None else getattr(module, "__name__", "?")
        recorder.begin(name, spec)
        stack = recorder.stack()
        stack.append(name)
        try:
            loader.exec_module(module)
        except BaseException as exc:
            recorder.emit({"e": "fail", "m": name, "error": _describe(exc)})
            raise
        finally:
            stack.pop()
        recorder.emit({"e": "done", "m": name})


class _Finder:
    """First on ``sys.meta_path``: finds specs through the other finders and wraps their loader."""

    def __init__(self, recorder: "_Recorder") -> None:
        self.recorder = recorder

    def find_spec(self, name: str, path: "Any" = None, target: "Any" = None) -> "Any":
        spec = None
        for finder in list(sys.meta_path):
            if finder is self:
                continue
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue  # a legacy finder: the import system asks it after us
            spec = find(name, path, target)
            if spec is not None:
                break
        if spec is None:
            return None
        loader = spec.loader
        if loader is None or isinstance(loader, _Loader) or not hasattr(loader, "exec_module"):
            return spec  # not observable: the sweep after the import counts it if it is loaded
        self.recorder.found.add(name)
        spec.loader = _Loader(loader, self.recorder)
        return spec

    def invalidate_caches(self) -> None:
        return None


def _import_target(module: str) -> None:
    """The recorder's own import of the target (importer None in the events)."""
    __import__(module)


def _error_location(exc: BaseException) -> "Tuple[Optional[str], int]":
    """``(file, line)`` of the innermost traceback frame outside importlib and this script."""
    found: "Tuple[Optional[str], int]" = (None, 0)
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if not _skipped(frame) and frame.f_globals is not _GLOBALS:
            found = (frame.f_code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    return found


def _unrecorded(recorder: "_Recorder", before: "set[str]") -> "List[List[Optional[str]]]":
    """New ``sys.modules`` entries whose code ran without the recorder seeing it."""
    out: "List[List[Optional[str]]]" = []
    lazy_type: "Any" = None
    util = sys.modules.get("importlib.util")
    if util is not None:
        lazy_type = getattr(util, "_LazyModule", None)
    module_type = type(sys)
    for name, module in list(sys.modules.items()):
        if name in before or name in recorder.recorded or name in recorder.found:
            continue
        if not isinstance(module, module_type):
            continue
        if lazy_type is not None and type(module) is lazy_type:
            continue
        if module.__dict__.get("__name__") != name:
            continue  # an alias of another module
        path = module.__dict__.get("__file__")
        out.append([name, path if isinstance(path, str) else None])
    return out


def _namespace() -> "Dict[str, object]":
    """Globals for the after-import expressions: ``sys`` and every top-level module imported."""
    namespace: "Dict[str, object]" = {"__builtins__": sys.modules["builtins"]}
    for name, module in list(sys.modules.items()):
        if "." not in name and module is not None and not name.startswith("__"):
            namespace[name] = module
    namespace["sys"] = sys
    return namespace


def _evaluate(recorder: "_Recorder", expression: str) -> None:
    try:
        value = eval(expression, _namespace())
    except BaseException as exc:
        message = _describe(exc)
        if isinstance(exc, NameError):
            missing = getattr(exc, "name", None) or ""
            if missing and missing not in sys.modules:
                message += " (no module of that name was imported)"
        recorder.emit({"e": "after", "expr": expression, "ok": False, "error": "raised " + message})
        return
    try:
        passed = bool(value)
    except BaseException as exc:
        recorder.emit({
            "e": "after", "expr": expression, "ok": False,
            "error": "its value cannot be tested for truth: " + _describe(exc),
        })
        return
    if passed:
        recorder.emit({"e": "after", "expr": expression, "ok": True, "error": None})
    else:
        try:
            shown = repr(value)
        except BaseException:
            shown = "a false value"
        if len(shown) > 200:
            shown = shown[:200] + "..."
        recorder.emit({"e": "after", "expr": expression, "ok": False, "error": "is " + shown})


def _parse(argv: "List[str]") -> "Tuple[str, str, List[str], List[str]]":
    if len(argv) < 3:
        raise SystemExit("usage: recorder.py OUT MODULE [--root DIR]... [--after EXPRESSION]...")
    out, module = argv[1], argv[2]
    roots: "List[str]" = []
    after: "List[str]" = []
    rest = argv[3:]
    if len(rest) % 2:
        raise SystemExit("recorder.py: an option without a value")
    for flag, value in zip(rest[::2], rest[1::2]):
        if flag == "--root":
            roots.append(value)
        elif flag == "--after":
            after.append(value)
        else:
            raise SystemExit("recorder.py: unknown option " + flag)
    return out, module, roots, after


def _script_dir_first() -> bool:
    """True if ``sys.path[0]`` is this script's directory (``python script.py`` puts it there)."""
    if getattr(sys.flags, "safe_path", False) or not sys.path:
        return False
    os: "Any" = sys.modules.get("os") or __import__("os")  # loaded at start-up
    here = os.path.dirname(os.path.realpath(__file__))
    return bool(os.path.realpath(sys.path[0] or ".") == here)


def main(argv: "List[str]") -> int:
    out, module, roots, after = _parse(argv)
    # ``python script.py`` put this script's directory first; the roots replace it.
    if _script_dir_first():
        del sys.path[0]
    sys.path[0:0] = roots
    sys.argv = ["-c"]
    if out.startswith("fd:"):  # the verifier's pipe: the imported code can only append to it
        fd = int(out[3:])
        os_module: "Any" = sys.modules.get("os") or __import__("os")  # loaded at start-up
        os_module.set_inheritable(fd, False)  # not for what the imported code runs
        stream = open(fd, "wb", buffering=0)
    else:
        stream = open(out, "ab", buffering=0)
    recorder = _Recorder(stream)
    recorder.emit({
        "e": "start",
        "version": list(sys.version_info[:3]),
        "executable": sys.executable,
    })
    before = set(sys.modules)
    finder = _Finder(recorder)
    sys.meta_path.insert(0, finder)
    error: "Optional[BaseException]" = None
    try:
        _import_target(module)
    except BaseException as exc:
        error = exc
    recorder.active = False
    if error is None:
        recorder.emit({"e": "imported", "ok": True})
    else:
        at, line = _error_location(error)
        recorder.emit({
            "e": "imported", "ok": False, "error": _describe(error), "at": at, "line": line,
        })
    recorder.emit({"e": "unrecorded", "modules": _unrecorded(recorder, before)})
    if error is None:
        for expression in after:
            _evaluate(recorder, expression)
    recorder.emit({"e": "finish"})
    stream.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
