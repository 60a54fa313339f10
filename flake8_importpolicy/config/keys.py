"""Every key of ``policy.toml`` (schema version 1), declared once: its name, its type (how its value is
checked), its default and its doc.

The validation walks these tables (:meth:`~flake8_importpolicy.config.fields.Table.walk`: unknown keys
with a "did you mean", then every key in the order declared here); the JSON Schema shipped for editors
(``flake8_importpolicy/schema/policy.schema.json``) and docs/policy.md's key tables are made from them
(:mod:`flake8_importpolicy.config.reference`, ``python tools/regenerate.py``; tests/test_schema.py holds
both to what this declares).

Adding a key to ``[settings]`` or to a ``[light."…"]`` table is one :class:`~flake8_importpolicy.config.
fields.Key` here (a check of its own in :mod:`~flake8_importpolicy.config.validate` unless
:meth:`~flake8_importpolicy.config.fields.Key.choice` or :meth:`~flake8_importpolicy.config.fields.
Key.integer` says it) and the attribute :class:`~flake8_importpolicy.model.policy.Settings` or
:class:`~flake8_importpolicy.model.policy.LightRule` gives its readers; then run ``python
tools/regenerate.py``.
"""

from __future__ import annotations

from typing import Final, get_args

from flake8_importpolicy.config import validate
from flake8_importpolicy.config.fields import Key, Table
from flake8_importpolicy.model.facts import LazyImports
from flake8_importpolicy.model.files import DEFAULT_CACHE_DIR
from flake8_importpolicy.model.policy import External, UnresolvedMode

__all__ = [
    "DEFAULT_CALL_DEPTH",
    "EXTERNAL_VALUES",
    "IGNORE",
    "LAZY_IMPORTS_VALUES",
    "LIGHT",
    "POLICY",
    "SETTINGS",
    "UNRESOLVED_VALUES",
]

DEFAULT_CALL_DEPTH: Final = 3
# the values are the model's Literal types: one declaration for the checker and for mypy
EXTERNAL_VALUES: Final[tuple[str, ...]] = get_args(External)
LAZY_IMPORTS_VALUES: Final[tuple[str, ...]] = get_args(LazyImports)
UNRESOLVED_VALUES: Final[tuple[str, ...]] = get_args(UnresolvedMode)

_PATTERNS: Final = {"$ref": "#/$defs/patterns"}
_NON_EMPTY: Final = {"type": "string", "pattern": r"\S"}


SETTINGS: Final = Table("settings", [
    Key(
        "source-roots", validate.source_roots, missing=validate.default_source_roots,
        type_doc="array of strings", default_doc='`["src"]` if `src/` exists, else `["."]`',
        doc="directories (relative to the policy file) holding first-party top-level packages; "
            "searched first, in order; what is found through an entry of the interpreter's "
            "`sys.path` inside one (`PYTHONPATH=.venv/site`; an editable install's `src/` under "
            "`.`: list `src` instead) is installed code, not first-party",
        schema={"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1},
                "examples": [["src"], ["."]]},
    ),
    Key(
        "interpreter", validate.interpreter,
        type_doc="string", default_doc="the Python running importpolicy",
        doc="the Python whose `sys.path` locates third-party and stdlib modules (and that runs "
            "`importpolicy verify`): relative to the policy file, absolute, or a command name",
        schema={"type": "string", "minLength": 1, "examples": [".venv/bin/python", "python3.12"]},
    ),
    Key(
        "target-versions", validate.target_versions, default=[],
        type_doc='array of `"3.Y"`', default_doc="the interpreter's version",
        doc="Python versions for `sys.version_info` branches; several = the union of their "
            "branches",
        schema={"type": "array",
                "items": {"type": "string", "pattern": r"^3\.[0-9]+$", "examples": ["3.11"]},
                "examples": [["3.11"], ["3.11", "3.13"]]},
    ),
    Key(
        "platform", validate.platform, missing=validate.default_platform,
        type_doc="string", default_doc="the running `sys.platform`",
        doc="the `sys.platform` value for `sys.platform` and `os.name` branches",
        schema={"type": "string", "pattern": f"^{validate.PLATFORM_PATTERN}$",
                "not": {"enum": list(validate.PLATFORM_ALIASES)},
                "examples": ["linux", "darwin", "win32"]},
    ),
    Key.choice(
        "external", EXTERNAL_VALUES,
        doc="which code outside the source roots is followed (its imports, import-time calls, "
            "PEP 562 `__getattr__` and lazy module objects): `auto` what the forbidden patterns "
            "need, `follow` all of it, `stop` none (such modules are leaves matched by name); see "
            "[below](#external)",
    ),
    Key(
        "cache-dir", validate.cache_dir, default=DEFAULT_CACHE_DIR,
        type_doc="string",
        doc="the on-disk cache (relative to the policy file): a directory of its own, made and "
            "tagged by importpolicy (or an empty one); the policy's directory, a source root, or an "
            "existing directory without importpolicy's `CACHEDIR.TAG` is an error, since `cache "
            "clear` must never delete what importpolicy did not write ([design](design.md#caches))",
        schema={"type": "string", "minLength": 1},
    ),
    Key.integer(
        "call-depth", minimum=0, default=DEFAULT_CALL_DEPTH,
        doc="how many nested calls of functions made at import time are followed, in first-party "
            "code and in the third-party and stdlib code that `external` follows (0: calls are not "
            "followed); a call not followed is IPL006 `call-depth`; see [below](#call-depth)",
    ),
    Key.choice(
        "lazy-imports", LAZY_IMPORTS_VALUES,
        doc="which PEP 810 world to check: `lazy` keywords and `__lazy_modules__` as written "
            "(`normal`), every eligible import lazy (`all`, `-X lazy_imports=all`), or every import "
            "eager (`none`, `-X lazy_imports=none`)",
    ),
    Key.choice(
        "unresolved", UNRESOLVED_VALUES,
        doc="import-time code the engine cannot resolve (IPL006): `info` reports it and leaves the "
            "exit status alone; `error` makes `importpolicy check` fail (exit 1) when there is any. "
            "`--unresolved=info|error` overrides it for one run",
    ),
    Key(
        "baseline", validate.baseline,
        type_doc="string", default_doc="none",
        doc="a baseline file (relative to the policy file): findings it records (IPL001, IPL008) "
            "are not reported, an entry that no longer occurs is IPL009; written by `importpolicy "
            "check --write-baseline` ([adopt.md](adopt.md#the-baseline))",
        schema={"type": "string", "pattern": r"\S", "examples": ["importpolicy-baseline.json"]},
    ),
    Key(
        "user-cache-dir", validate.user_cache_dir,
        type_doc="string",
        default_doc="`$IMPORTPOLICY_CACHE_DIR`, else `importpolicy` in the platform's user cache "
                    "directory (`~/.cache/importpolicy`)",
        doc="the user-level cache, shared by every project, that keeps the facts of installed files "
            "(site-packages, the standard library), keyed by their bytes so that sharing it never "
            "changes an answer: relative to the policy file, `~` expanded; `\"\"` for none (they "
            "stay in `cache-dir`). `$IMPORTPOLICY_CACHE_DIR` overrides it, as `$PIP_CACHE_DIR` does "
            "pip's configuration; `importpolicy cache clear --user` clears it "
            "([design](design.md#caches))",
        schema={"type": "string", "examples": ["~/.cache/importpolicy", ""]},
    ),
], doc="Where the project's modules are and which interpreter and targets to analyse for; all keys "
       "optional.")
"""``[settings]``: :class:`~flake8_importpolicy.model.policy.Settings` has an attribute for each key."""


LIGHT: Final = Table("light", [
    Key(
        "reason", validate.light_reason, missing=validate.missing_light_reason, required=True,
        type_doc="string (required)", default_doc="—",
        doc="why the module must stay light",
        schema=_NON_EMPTY,
    ),
    Key(
        "forbid", validate.forbid, missing=validate.default_forbid,
        type_doc="array of patterns", default_doc="every `[heavy]` and `[heavy-calls]` pattern",
        doc="what this light module must not run (or call): `[heavy]` or `[heavy-calls]` keys; an "
            "entry in neither table is a module pattern and takes this light module's reason",
        schema=_PATTERNS,
    ),
    Key(
        "allow", validate.allow, default=[],
        type_doc="array of patterns",
        doc="subtracted from `forbid`; chains continue through allowed modules",
        schema=_PATTERNS,
    ),
    Key(
        "after-import", validate.after_import, default=[],
        type_doc="array of Python expressions",
        doc="evaluated by `importpolicy verify` after the import; a false or raising expression is a "
            "violation",
        schema={"type": "array", "items": _NON_EMPTY,
                "examples": [["not torch.cuda.is_initialized()"]]},
    ),
    Key.integer(
        "max-modules", minimum=1, examples=[40],
        meaning="how many modules the import-time closure may count, the light module included",
        doc="import budget: the import-time closure may count at most this many modules "
            "(first-party modules, plus each top-level third-party or standard-library package "
            "that first-party code imports, once; what that package imports in turn is not "
            "counted; what a forbidden module imports runs, and counts); over it is IPL008, "
            "and `verify` fails when what executed counts more "
            "([adopt.md](adopt.md#budgets))",
    ),
    Key(
        "max-import-ms", validate.max_import_ms,
        type_doc="number > 0", default_doc="none",
        doc="the median import time `importpolicy verify` reports against (milliseconds, measured "
            "with `-X importtime`); it fails only with `--fail-on-time`",
        schema={"type": "number", "exclusiveMinimum": 0, "examples": [150]},
    ),
], doc="A light module (or, with wildcards, every matching module).", schema={"title": "light table"},
   unknown=validate.light_unknown)
"""A ``[light."pattern"]`` table: :class:`~flake8_importpolicy.model.policy.LightRule` has an attribute
for each key."""


IGNORE: Final = Table("ignore", [
    Key(
        "import", validate.ignored_import, missing=validate.missing_import,
        type_doc="string (this or `unresolved`)", default_doc="—",
        doc='`"importer -> imported"`: patterns on both sides, each matched exactly (write '
            "`mypkg.b.**` to include submodules); a side may also name a function body run at "
            "import time, `module:qualname` (`mypkg.env:setup`), or a `[heavy-calls]` call, "
            "`name()` (`torch.cuda.init()`)",
        schema={"$ref": "#/$defs/edge",
                "examples": ["mypkg.a -> mypkg.b", "mypkg.env:setup -> torch",
                             "mypkg.ops -> torch.cuda.init()"]},
    ),
    Key(
        "unresolved", validate.ignored_unresolved,
        type_doc="pattern (this or `import`)", default_doc="—",
        doc="instead of `import`: a module pattern, matched exactly (`mypkg.**` includes "
            "submodules); IPL006 is not reported for the import-time code of these modules (for "
            "`extension-module`, `unfollowed-package` and `not-installed`: that module)",
        schema={"$ref": "#/$defs/pattern"},
    ),
    Key(
        "reason", validate.ignore_reason, missing=validate.missing_ignore_reason, required=True,
        type_doc="string (required)", default_doc="—",
        doc="why the import is accepted",
        schema=_NON_EMPTY,
    ),
], doc="An accepted import edge (`import = ...`), or accepted unresolved import-time code (IPL006) of "
       "the modules a pattern names (`unresolved = ...`).",
   schema={"oneOf": [{"required": ["import"]}, {"required": ["unresolved"]}]})
"""An ``[[ignore]]`` entry."""


POLICY: Final = Table("policy", [
    Key(
        "version", validate.version, default=validate.SUPPORTED_VERSION,
        type_doc="integer",
        doc="the policy schema version; only 1 is understood (`1.0` is read as 1)",
        schema={"type": "integer", "const": validate.SUPPORTED_VERSION},
    ),
    Key(
        "extends", validate.merged_already, default=[],
        type_doc="array of strings",
        doc="presets and policy files merged into this one, in order: an entry with a `/` or ending "
            "in `.toml` is a file, relative to this one; any other names a built-in preset "
            "(`importpolicy presets` lists them); see [below](#extends)",
        schema={"type": "array",
                "items": {"type": "string", "pattern": r"\S",
                          "description": 'A built-in preset name ("torch-cuda") or a policy file '
                                         '("../base.toml", "../pyproject.toml").'},
                "examples": [["torch-cuda"], ["heavy-ml", "../shared/policy-base.toml"]]},
    ),
    Key(
        "settings", validate.settings(SETTINGS), default={}, merge="by key",
        type_doc="table",
        doc="where the project's modules are and which interpreter and targets to analyse for; all "
            "keys optional; see [below](#settings)",
        schema={"$ref": "#/$defs/settings"},
    ),
    Key(
        "heavy", validate.heavy(call=False), default={}, merge="by key",
        type_doc='table of `"pattern" = "reason"`',
        doc='heavy modules, `"module pattern" = "reason"`: a pattern matches the named module and '
            "every submodule; the reason is shown in every message. Quote the module name; see "
            "[below](#heavy)",
        schema={"type": "object", "propertyNames": {"$ref": "#/$defs/pattern"},
                "additionalProperties": {**_NON_EMPTY, "description": "Why importing this module "
                                         "is heavy (shown in every message)."}},
    ),
    Key(
        "heavy-calls", validate.heavy(call=True), default={}, merge="by key",
        type_doc='table of `"pattern" = "reason"`',
        doc='functions that must not be called at import time, `"function pattern" = "reason"` '
            '(`"torch.cuda.init"`): a call resolved through imports and aliases ends a chain like a '
            "heavy module; see [below](#heavy-calls)",
        schema={"type": "object", "propertyNames": {"$ref": "#/$defs/pattern"},
                "additionalProperties": {"oneOf": [
                    {**_NON_EMPTY, "description": "Why calling this function at import time is "
                     "heavy."},
                    {"type": "object", "required": ["reason", "unless-environ"],
                     "additionalProperties": False,
                     "description": "The reason, and environment variables under which the call "
                                    "is not heavy.",
                     "properties": {
                         "reason": {**_NON_EMPTY, "description": "Why calling this function at "
                                    "import time is heavy."},
                         "unless-environ": {
                             "type": "object", "minProperties": 1,
                             "additionalProperties": {"type": "string"},
                             "description": "The call is not heavy when every variable has this "
                                            "value ([assume.environ], or set by the code before "
                                            "the call)."}}},
                ]}},
    ),
    Key(
        "light", validate.light(LIGHT), default={}, merge="by key",
        type_doc='`[light."pattern"]` tables, or `"pattern" = "reason"`',
        doc='modules that must stay light at import time: `[light."pattern"]` tables, or the '
            'shorthand `"pattern" = "reason"`; a wildcard pattern makes every matching module light. '
            "Quote the module name; see [below](#lightpattern)",
        schema={"type": "object", "propertyNames": {"$ref": "#/$defs/pattern"},
                "additionalProperties": {
                    "description": "Either a reason string (why the module must stay light), or a "
                                   "table with a required reason and optional forbid, allow and "
                                   "after-import.",
                    "type": ["string", "object"],
                    "if": {"type": "string"},
                    "then": {**_NON_EMPTY, "title": "reason string (shorthand)",
                             "description": 'Shorthand for a table with only "reason": why the '
                                            "module must stay light."},
                    "else": {"title": 'light table ([light."module"] with reason, forbid, allow, '
                                      "after-import)", "$ref": "#/$defs/light"}}},
    ),
    Key(
        "ignore", validate.ignore(IGNORE), default=[], merge="concatenate",
        type_doc="array of tables (`[[ignore]]`)",
        doc='accepted import edges (`import = "importer -> imported"`), removed from the graph '
            'before any check, and accepted unresolved import-time code (`unresolved = "pattern"`), '
            "each with a reason; an entry that removes nothing is IPL004; see [below](#ignore)",
        schema={"type": "array", "items": {"$ref": "#/$defs/ignore"}},
    ),
    Key(
        "assume", validate.assume, default={}, merge="by key",
        type_doc='table of `"dotted.name" = value`',
        doc="facts about the runtime the code will run in, used wherever the engine evaluates a "
            'condition: `"dotted.name" = value` or `"dotted.function()" = value` (booleans, '
            "strings or integers), resolved through imports and aliases; `[assume.environ]` sets "
            "environment variables; `importpolicy verify` checks each one after the import; see "
            "[below](#assume)",
        schema={
            "type": "object",
            "properties": {"environ": {
                "description": "Environment variables read through os.environ[...], "
                               "os.environ.get(...) or os.getenv(...): \"VARIABLE\" = \"value\" "
                               "(set to that string) or false (not set).",
                "type": "object",
                "propertyNames": {"minLength": 1, "pattern": "^[^=\\u0000]+$"},
                "additionalProperties": {
                    "description": 'The variable\'s value (a string), or false for "not set".',
                    "anyOf": [{"type": "string", "title": "set to this value",
                               "pattern": "^[^\\u0000]*$"},
                              {"const": False, "title": "not set"}]}}},
            "propertyNames": {"$ref": "#/$defs/assumption"},
            "additionalProperties": {
                "description": "The assumed value: true/false, a string or an integer.",
                "type": ["boolean", "string", "integer"]}},
    ),
], doc="The import policy of flake8-importpolicy (schema version 1): which modules are heavy, and "
       "which must stay light at import time.", unknown=validate.top_level_unknown)
"""The policy's top level (``policy.toml``, or ``[tool.importpolicy]`` in ``pyproject.toml``)."""
