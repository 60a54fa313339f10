"""Each code's help: its section of docs/codes.md (Markdown, without the heading), which SARIF rules
carry (:attr:`flake8_importpolicy.codes.Code.help`). Loaded only for them.

Generated from docs/codes.md by tools/regenerate.py: edit the docs, then run it (tests/test_codes.py
checks that this file is current).
"""

from typing import Final

HELP: Final[dict[str, str]] = {
    "IPL001": """\
**What it does.** Reports a statement in a light module whose execution at import time leads — directly
or through any chain of imports, parent packages included — to a forbidden module. One report per
(light module, first-hop statement), at that statement's first line, with the nearest forbidden module,
its reason from `policy.toml`, and the shortest chain. Other forbidden modules reachable from the same
statement are listed as "also reaches". One cause, one report: CPython runs a module once, so a statement
whose every forbidden module an earlier statement already ran (the light module's parent packages
first, then the statements in order) is not reported on its own; its line is listed under the earlier
report ("same cause: lines 11, 12 reach only what this statement already ran"), and a `# noqa` on that
report's line does not bring it back. In the `check` text report, the statements of one light module
that reach one forbidden package are one entry: a later statement whose forbidden module is that
package, a submodule or a parent package of it (`import deepspeed`, then `import deepspeed.ops`) is
listed under the first as "also reaches deepspeed.ops, from app/light.py:9:1:" with its chain; flake8,
mypy, GitHub annotations, JSON and SARIF keep one finding per statement, where it is fixed.

The chain follows everything CPython runs on import: parent packages' `__init__`, `from p import name`
submodules, star imports through `__all__`, literal `importlib.import_module` calls, the bodies of
first-party functions *called* at import time (module-level calls, decorators, class statements with
their metaclasses and `__init_subclass__`), PEP 562 `__getattr__` triggers, and PEP 810 lazy imports
whose names import-time code uses. A call to a `[heavy-calls]` function ends a chain too; the message
then says "calls `torch.cuda.init()` at import time".

**Why it matters.** Importing a "light" package should be cheap and free of side effects. In the
incident behind this tool, a one-line convenience re-export in `vllm/models/common/ops/__init__.py`
pulled in config modules whose import initialised CUDA; every process that imported the ops package
before forking its engine worker then died with *Cannot re-initialize CUDA in forked subprocess*.

**Example.**

```python
# src/inferno/models/common/ops/__init__.py   (light)
from .fused_allreduce_rms_norm import fused_allreduce_rms_norm   # IPL001: ... -> inferno.config
```

**Use instead.**
- Import the submodule at the call site (`from inferno.models.common.ops.fused_allreduce_rms_norm import
  fused_allreduce_rms_norm` where it is used) instead of re-exporting it from the light package.
- Move the import into the function that needs it (a deferred import).
- For names needed only in annotations, import under `if TYPE_CHECKING:`.
- Re-export lazily with a PEP 562 module `__getattr__`, or, on Python 3.15+, `lazy import` (PEP 810).
- `importpolicy fix` writes the first or the last of these for a re-export in a light package's
  `__init__.py`, verified before it is offered (the lazy one only when every target version is 3.7
  or newer, as `check`'s "use instead" line and SARIF `fixes` say); `importpolicy bisect` names the
  commit that added it ([bisect and fix](bisect-and-fix.md)).

**Options.** `[heavy]`, `[heavy-calls]`, `[light."…"]` (`forbid`, `allow`), `[[ignore]]`,
`settings.external`, `settings.call-depth`, `settings.lazy-imports`; suppress one report with
`# noqa: IPL001` on the reported line.

**Known limits.** See [design.md](design.md#known-limits): what extension modules import, `exec` of
strings that are not constants, meta-path hooks other than setuptools' and values computed at runtime
are invisible statically; they are reported as IPL006 where they are met, and `importpolicy verify`
checks at runtime.""",
    "IPL002": """\
**What it does.** flake8 only. In a first-party module that lies on a chain reported as IPL001, reports
this module's hop of that chain, naming the light module(s) it makes heavy.

**Why it matters.** The person who just typed `import heavy_thing` in a deep module sees, in the editor,
that this line makes a light package heavy — not only the maintainer of the light package.

**Example.**

```python
# src/inferno/distributed/parallel_state.py
from inferno.config import CONFIG   # IPL002 this import makes light module inferno.models.common.ops ...
```

**Use instead.** As for IPL001: defer the import into the function that needs it, or import under
`if TYPE_CHECKING:` when only annotations need it.

**Options.** The same policy; `# noqa: IPL002` on the line.

**Known limits.** Only the chains that `importpolicy check` reports (the shortest per first-hop
statement) are marked, not every path. The mypy plugin does not report IPL002 (it would go stale on warm
runs).""",
    "IPL003": """\
**What it does.** Reports a `[light."…"]` pattern of the policy that matches no module.

**Why it matters.** A renamed or deleted package silently turns a light-module rule into a no-op.

**Example.** `[light."mypkg.model.ops"]` after `mypkg/models/ops` was renamed.

**Use instead.** Fix the name, or delete the entry. When the package is there but not under a source
root (a `python/` layout, or a policy outside the repository with the default `source-roots`), one
IPL003 says where it is and which `source-roots` to set, for every entry of the policy that names that
package (they are not reported one by one): `light pattern 'app.light' matches no module; package 'app'
is in python/, which is not a source root: set source-roots = ["python"] in [settings] (2 more entries
of the policy name modules of 'app')`.

**Known limits.** Only modules found by path search count (not modules created at runtime). The
directory named is looked for at most three levels below the policy's directory (hidden directories,
virtual environments and `build`, `dist`, `site-packages` left out).""",
    "IPL004": """\
**What it does.** Reports an `[[ignore]]` entry that removed no import in any light module's import-time
closure.

**Why it matters.** Stale exceptions hide future regressions and make the policy harder to trust.

**Example.** `import = "mypkg.a -> mypkg.b"` after `mypkg.a` stopped importing `mypkg.b`.

**Use instead.** Delete the entry.

**Known limits.** Ignores are matched against import-time edges only (not deferred imports).""",
    "IPL005": """\
**What it does.** Reports a module in a light module's import-time closure whose source cannot be read
or parsed by the running Python (syntax error, invalid encoding, NUL byte, unreadable file, syntax
newer than the running interpreter, or than a target version: PEP 810's `lazy import` before 3.15), with the file and line. Only regular files of at most 10 MiB are
read as sources: a FIFO, a device or a symbolic link loop named like a module, a file over 10 MiB, and
a first-party module found only as a `.pyc` are reported too.

**Why it matters.** A module that cannot be parsed is never silently treated as import-free: the check
is incomplete, and the chain stops there. `importpolicy why` shows where.

**Example.** `vendor/mod.py:3: invalid syntax` deep in a chain.

**Use instead.** Fix the file, or run importpolicy with a Python that can parse it.

**Known limits.** Extension modules are leaves, reported as IPL006 (`extension-module`), not here.
Function bodies are not parsed with their module: a syntax error only inside a function body is
reported when import-time code calls that function (its body is parsed then), and otherwise not
(CPython refuses to import the module; flake8 reports E999 in that file). Either way the module's
own import-time imports are still followed. See
[design.md](design.md#function-bodies-are-not-parsed).""",
    "IPL006": """\
**What it does.** Reports import-time code on a light module's import-time path that the engine cannot
resolve, so it cannot tell what that code imports. Each report names the construct, its source text
and the chain from the light module:

- `dynamic-import`: `importlib.import_module`, `__import__` or `importlib.__import__` of a name that
  is not computable; the same for the standard-library functions that import the module they are
  given: `importlib.util.find_spec` (it imports the parent package), the `importlib.resources`
  functions and `pkgutil.resolve_name`; a loader's `exec_module` or `load_module` (except a
  `LazyLoader`'s in the lazy-import recipe), `runpy.run_module`/`run_path`, and an `import_module`
  reached through something the engine cannot name (`sys.modules["importlib"].import_module(n)`);
- `getattr-import`: a dynamic import inside a `__getattr__`; a module-level `__getattr__` bound by
  name (`__getattr__ = _lazy`) or imported from another module; a module that replaces itself in
  `sys.modules` with an object built from a structure that is not constant; a read of a lazy module
  object whose module is not computable, because the argument is not a constant or because its
  class does not show which module it imports (a dataclass field, `object.__setattr__`, an f-string);
- `exec`: `exec`/`eval` of a string that is not a constant;
- `call-through-variable`: a call of a variable, parameter, container item or call result
  (`__builtins__["__import__"](...)` and `C.__dict__["f"]()` included), of a class attribute bound
  to a value (`C.load = staticmethod(importlib.import_module)`), and of a function whose decorator
  may have replaced it (the decorator's result runs, not the body; `functools.cache`,
  `lru_cache`, `wraps`, `staticmethod`, `classmethod`, `contextmanager`, the typing decorators and
  a decorator of the same module that returns its argument are known to keep the body). A class
  made by `collections.namedtuple`, `typing.NamedTuple`, `NewType`, `TypedDict` or the functional
  enum API runs only generated code when called: not counted;
- `call-depth`: a function called deeper than `settings.call-depth`; it is not followed, and is
  reported at the call;
- `sys-path`: a `sys.path` change whose directory is not computable, `site.addsitedir`,
  `sys.path` or `sys.modules` bound to another name, and a finder or path hook added to
  `sys.meta_path` or `sys.path_hooks` (`append`, `insert`, `extend`: toolz's
  `sys.meta_path.append(TlzLoader())` serves `tlz.curried`, which path search does not find);
- `extension-module`: a compiled module without a `.py` twin (mypyc) or a `.pyx` source (Cython)
  beside it;
- `unfollowed-package`: with `external = "stop"`, each top-level package not analysed although a
  forbidden module could be reached through it (once per light module);
- `not-installed`: an import that path search does not find for the interpreter, named in the
  report (a package the project's environment has and the interpreter running the check lacks: a
  pipx install, pre-commit's own venv); once per missing module and light module, the outermost
  missing package only (`rich`, not also `rich.syntax`). An import that expects to fail or not run
  is not reported: in a `try:` body, in an `except` handler, or under a condition the engine cannot
  evaluate (an optional dependency); nor one reached through a `try:` body higher up the chain,
  whose `ImportError` that `try:` catches (httpcore's `try: from .http2 import ...` over
  `http2.py`'s `import h2`: a module that imports fine without `h2`), unless the missing module is
  a submodule of an installed package (toolz's `tlz.curried`, which a finder `tlz` added serves,
  behind dask.array's `try:` that re-raises: no optional dependency). Point the check at the
  project's interpreter
  (`--interpreter`, `[settings] interpreter`) to follow the chain.

It is information by default: the exit status does not change, and the summary never says "OK"
while such sites exist ("No violations in 4 light modules; 12 import-time sites not resolved
(IPL006)"). `[settings] unresolved = "error"` or `--unresolved=error` makes them fail the check.
The command line reports each at its site; flake8 and mypy, which lint first-party files, report it
at the light module's statement that leads there, with the site in the message. Sites in an
installed package or the standard library are not the user's to fix and come by the hundred (a
light module reaching `torch`): the text report shows the first-party sites first, one by one, then
the sites in one installed distribution (`torch` and `torchgen` are one) as one line for the whole
run, however few, naming the light modules that reach it ("2 light modules (app.a, app.b) run
import-time code that cannot be resolved in installed package torch: 212 sites
(call-through-variable 150, call-depth 40, getattr-import 22); --format json lists them"); flake8
and mypy, per file, one entry per first-party site and one per light module and installed
distribution. `--format json`, SARIF and GitHub annotations list every site. flake8 shows it
only when `IPL006` itself is in `select` or `extend-select` (the prefix `IPL` does not turn it on);
mypy shows it as a note.

**Why it matters.** A clean verdict is a proof only where the engine sees everything. Lazy-import
machinery and dynamic code are exactly where heavy imports hide; without this report the check would
print "OK" over a blind spot.

**Example.**

```python
# mypkg/plugins.py   (imported by the light module mypkg.cli)
for name in discover_plugins():
    importlib.import_module(name)      # IPL006 dynamic-import
```

**Use instead.**
- Make the name computable: a literal, a module-level constant (also a tuple, list or dict of
  literals, or a comprehension over them), `__name__ + ".x"`, or a loop over such a constant.
- Write what the engine follows: `def __getattr__(name):` in the module itself; `sys.path.append(d)`
  with a computable `d` instead of `site.addsitedir(d)` when `d` holds no `.pth` file; for
  `call-depth`, a larger `settings.call-depth`.
- Move the dynamic code out of import time (into the function that needs it).
- Accept a site you have checked: `# noqa: IPL006` on its line in first-party code (or on the
  light module's reported line), or `[[ignore]] unresolved = "mypkg.plugins"` with a `reason` (the
  module whose code it is; for `extension-module`, `unfollowed-package` and `not-installed`, that
  module). An entry
  that accepts nothing is IPL004.
- `importpolicy verify` proves the light module at runtime.

**Known limits.** Method calls on objects (`obj.setup()`, `@obj.method`) are not followed and not
reported; a function bound to a module-level variable and called from a function body is not
reported. A lazy module object is not recognised, and not reported, when its class inherits its
`__getattr__`, imports through a property or imports a fixed module, or when it is bound by tuple
unpacking, a walrus, in a class body, or copied to another name or module. Methods that Python
calls implicitly are not followed beyond instantiation (`__new__`, `__init__`, `__post_init__`),
`with` (`__enter__`, `__exit__`) and class creation: operators, iteration, descriptors and
properties, `__class_getitem__`, `__mro_entries__`, a metaclass's `__call__`, Enum members' hooks,
a dataclass field's `default_factory`. A module `__getattr__` installed through `globals()`,
`setattr`, a star import or a `__class__` swap is not seen. docs/semantics.md, "What the engine
cannot resolve", lists every blind spot known. A `call-depth` site is reported
whether or not the function it calls imports anything. A `sys.path` directory that is computable is
searched after every other entry from the moment the module is analysed (docs/semantics.md rule 7).
Only constructs on a light module's import-time path are reported: code that is never reached at
import time is not. A `not-installed` import is judged on the chain the report shows (the shortest):
when that chain passes a `try:` body it is not reported, even if another chain reaches the same
import outside any `try:`; and any `try:` counts, whatever its `except` catches.""",
    "IPL007": """\
**What it does.** Reports an entry of the policy that names nothing the engine can see, at its line
in the policy (or in the base it `extends`), with a "did you mean" when a known name is close:

- a `forbid` or `allow` entry of a `[light."…"]` rule that names no `[heavy]` or `[heavy-calls]` key
  and no module;
- a `[heavy]` key that names no module;
- a `[heavy-calls]` key whose module part names no module, or whose function is not bound in its
  module: `mypkg.gpu.init_cuda` is split at its longest prefix that is a module (`mypkg.gpu`), and
  the next name must be a submodule of it or a name its import-time code binds (a `def`, a class,
  an assignment, an import, also through a first-party star import).

For a wildcard pattern, its part before the first wildcard is checked. An entry whose top-level
package is simply not installed for the interpreter (heavy GPU packages on a CI machine, a pre-commit
or pipx venv) is a note, not a finding: it does not change the exit status, also with
`--unresolved=error`, and it says which package is missing. A name close to an installed top-level
package (`"jsonn"`) is a finding: a typo, not an absent package.

**Why it matters.** A misspelt `forbid` entry (`"reqeusts"`) forbids nothing, and the check passes
without a word; a misspelt `allow` entry allows nothing; a misspelt `[heavy]` key (`"mypkg.confg"`)
makes every light module's check blind to the module it meant.

**Example.** `forbid = ["mypkg.confg"]` when the module is `mypkg.config`:
`IPL007 light."mypkg.ops".forbid[0] entry 'mypkg.confg' names no [heavy] or [heavy-calls] key and no
module; did you mean 'mypkg.config'?`; the same typo as a key:
`IPL007 [heavy] entry 'mypkg.confg' names no module; did you mean 'mypkg.config'?`.

**Use instead.** Fix the name, name a `[heavy]` key, or delete the entry.

**Known limits.** Only modules found by path search count (a module a meta-path finder provides, such
as a package installed in editable mode through an import hook, is not seen: its keys are notes);
a pattern that starts with a wildcard is not checked. A misspelt top-level package that is close to
no installed name (`"trosh"` where no `torch` is installed) cannot be told from a package missing
here, so it is a note. The function of a `[heavy-calls]` key is looked up in first-party modules
only: outside the source roots, and in a module with a PEP 562 `__getattr__` or a star import of
other code, any name is taken as bound; only the first name after the module is checked
(`mypkg.gpu.Device.probe` needs `Device`, not its method). The keys of a built-in preset
(`extends = ["heavy-ml"]`) are not checked: a preset names packages no interpreter has all of. A
function meant for `[heavy-calls]` but written only in `forbid` is a module pattern, and is reported
when no module has its name.""",
    "IPL008": """\
**What it does.** Reports a light module whose predicted import-time closure is larger than the
`max-modules` of its `[light."…"]` rule. The closure is counted as every first-party module that
runs (the light module and its parent packages included) plus each top-level third-party or
standard-library package that first-party code imports (`numpy` counts once however many of its
submodules run; what numpy or `logging` imports in turn is their own cost and does not count);
modules already imported at interpreter start-up do not count. The report gives the count, the budget and
the first hops (the light module's own statements) that bring in the most counted modules. It is
reported at line 1 of the light module's file. `importpolicy verify` counts what really executed
the same way and fails the light module when that count is over the budget too.

**Why it matters.** A forbidden-module list catches the heavy imports you know of; a budget catches
the slow growth nobody names: each new convenience import adds a few modules, and after a year
`import mypkg.cli` takes a second. transformers' CI fails when `import transformers` loads more
than a fixed number of modules for the same reason.

**Example.**

```toml
[light."mypkg.cli"]
reason = "the command line must start fast"
max-modules = 40
```

`mypkg/cli.py:1:1: IPL008 light module mypkg.cli runs 57 modules at import time, over its budget of
max-modules = 40; most through: mypkg.plugins (31), json (2), mypkg.config (1)`

**Use instead.**
- Defer the imports that bring in the most modules (the first hops the message names) into the
  functions that use them.
- Raise `max-modules` when the growth is wanted; `importpolicy why mypkg.cli --format json` gives
  today's count (`count`).
- Record today's overrun in the baseline (`importpolicy check --write-baseline`) while you work it
  down.

**Options.** `max-modules` in `[light."…"]`; `# noqa: IPL008` on line 1 of the light module's file.

**Known limits.** Conservative hops (`guarded`, `conditional`) count as running, so the static
count can be higher than `verify`'s; an import first-party code makes in a way `check` cannot
resolve (a name computed at runtime) is counted by `verify` only.""",
    "IPL009": """\
**What it does.** Reports an entry of the baseline file (`[settings] baseline`, `--baseline`) that
matches no finding any more: the violation it recorded was fixed, or the code moved so that the
finding is a different one (another forbidden module, another first hop). It is reported at the
entry's line in the baseline file and is a finding: `importpolicy check` exits 1.

**Why it matters.** A baseline is a list of accepted debts. An entry that outlives its finding
would silently accept the same finding when it comes back; reporting it makes the file only shrink.

**Example.** The baseline holds `{"code": "IPL001", "first-hop": "app.ops.fused", "forbidden":
"app.config", "light": "app.ops"}` and `app/ops/__init__.py` no longer re-exports from
`app.ops.fused`: `importpolicy-baseline.json:4: IPL009 baseline entry IPL001 app.ops -> app.config
(first hop app.ops.fused) no longer occurs; remove it with importpolicy check --write-baseline`.

**Use instead.** Run `importpolicy check --write-baseline`: it rewrites the file without the stale
entries (it never adds one unless given `--add`).

**Known limits.** Entries match by the finding's identity (code, light module, forbidden module or
call, the module the first hop imports), never by line, so moving code keeps them; renaming the
light module, the forbidden module or the first hop's module makes the entry stale and the finding
new. The flake8 checker does not report IPL009 (it is about a JSON file, not a Python one).""",
    "IPL900": """\
**What it does.** The policy cannot be loaded: missing, not TOML, or invalid. Every problem is listed at
once with its key path and a "did you mean" for unknown keys; `importpolicy` exits 2.

**Why it matters.** A broken policy must never pass silently, and never crash flake8 or mypy with a
traceback.

**Example.**

```
policy.toml is not valid (1 problem):
  settings.externl: unknown key; did you mean 'external'?
```

**Use instead.** Fix the key named in the message; see [policy.md](policy.md).

**Known limits.** —""",
}
