"""The policy's reference, made from the declaration of its keys (:mod:`flake8_importpolicy.config.keys`):
the JSON Schema for TOML editors (``flake8_importpolicy/schema/policy.schema.json``) and docs/policy.md's
key tables. ``python tools/regenerate.py`` writes both; tests/test_schema.py checks that the shipped
files are what this makes. No check loads this module (tests/test_cli.py).

A key's doc is Markdown; the schema's description is the same text as plain words (links and code
marks dropped, a capital and a full stop added, the default said when it is not a plain value).
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from flake8_importpolicy import docs_url
from flake8_importpolicy.config.fields import Key, Table
from flake8_importpolicy.config.keys import IGNORE, LIGHT, POLICY, SETTINGS
from flake8_importpolicy.model.files import PYPROJECT_TABLE

__all__ = [
    "GENERATED_BEGIN",
    "GENERATED_END",
    "format_key_table",
    "format_schema",
    "policy_schema",
    "replace_key_tables",
]

# A Python identifier's letters as an ECMA regex can say them (JSON Schema patterns are ECMA 262,
# whose \w is ASCII only): anything but the ASCII characters an identifier cannot start with or
# hold, so that every letter Python allows (PEP 3131) is accepted.
_IDENT: Final = r"[^\x00-\x40\x5b-\x5e\x60\x7b-\x7f][^\x00-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]*"
_SEGMENT: Final = rf"(?:\*\*?|{_IDENT})"
_PATTERN: Final = rf"{_SEGMENT}(?:\.{_SEGMENT})*"
_QUALNAME_PART: Final = rf"(?:{_IDENT}|<locals>)"
_NODE: Final = rf"{_PATTERN}(?::{_QUALNAME_PART}(?:\.{_QUALNAME_PART})*|\(\))?"

_DEFS: Final[dict[str, dict[str, object]]] = {
    "pattern": {
        "description": "A dotted module name; a segment may be * (exactly one name) or ** (one or "
                       "more names). Wildcards are whole segments. Names may use any letters Python "
                       "allows in identifiers (not only ASCII).",
        "type": "string",
        "pattern": f"^{_PATTERN}$",
        "examples": ["torch", "mypkg.config", "mypkg.models.*.ops", "mypkg.**.cuda"],
    },
    "patterns": {
        "description": "An array of module patterns.",
        "type": "array",
        "items": {"$ref": "#/$defs/pattern",
                  "description": "A module pattern, or a key of [heavy] or [heavy-calls] (quoted)."},
    },
    "edge": {
        "description": '"importer -> imported": a node on each side, a module pattern, possibly '
                       "followed by :qualname (a function body) or () (a call).",
        "type": "string",
        "pattern": rf"^\s*{_NODE}\s*->\s*{_NODE}\s*$",
    },
    "assumption": {
        "description": 'A dotted name with its module ("mypkg.envs.USE_V1") or a call of one with '
                       'constant arguments ("mypkg.platforms.current_platform.is_rocm()", '
                       '"mypkg.gpu.capability(0)"), or "environ".',
        "type": "string",
        "anyOf": [
            {"const": "environ"},
            {"pattern": rf"^\s*{_IDENT}(?:\s*\.\s*{_IDENT})+\s*(?:\([^()=]*\))?\s*$"},
        ],
    },
}

GENERATED_BEGIN: Final = "<!-- generated from flake8_importpolicy/config/keys.py ({table}) by " \
    "tools/regenerate.py: edit the keys there -->"
GENERATED_END: Final = "<!-- end of generated table -->"

_BLOCK_RE: Final = re.compile(
    r"<!-- generated from flake8_importpolicy/config/keys\.py \((\w+)\) by tools/regenerate\.py: "
    r"edit the keys there -->\n.*?<!-- end of generated table -->",
    re.DOTALL,
)
_LINK_ALONE_RE: Final = re.compile(r"\s*\(\[[^\]]*\]\([^)]*\)\)")
_SEE_RE: Final = re.compile(r";?\s*see \[[^\]]*\]\([^)]*\)")
_LINK_RE: Final = re.compile(r"\[([^\]]*)\]\([^)]*\)")

_TABLES: Final[dict[str, Table]] = {table.name: table for table in (POLICY, SETTINGS, LIGHT, IGNORE)}


# --------------------------------------------------------------------------------------------
# The JSON Schema


def policy_schema() -> dict[str, object]:
    """The JSON Schema (draft 2020-12) of ``policy.toml``, as ``policy.schema.json`` ships it."""
    description = (
        f"{_plain(POLICY.doc)} Also the [{PYPROJECT_TABLE}] table of pyproject.toml. See "
        f"{docs_url('policy.md')}. importpolicy validates the file itself (with its own messages); this "
        "schema lets TOML editors complete and check keys."
    )
    defs: dict[str, object] = {**_DEFS}
    for table in (SETTINGS, LIGHT, IGNORE):
        defs[table.name] = _table_schema(table)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "importpolicy policy.toml",
        "description": description,
        "type": "object",
        "additionalProperties": False,
        "properties": {key.name: _key_schema(key) for key in POLICY.keys},
        "$defs": defs,
    }


def format_schema() -> str:
    """``policy.schema.json``'s text: :func:`policy_schema` as JSON, indented by 2."""
    return json.dumps(policy_schema(), indent=2) + "\n"


def _table_schema(table: Table) -> dict[str, object]:
    schema: dict[str, object] = {
        "description": _plain(table.doc),
        "type": "object",
        "additionalProperties": False,
    }
    required = [key.name for key in table.keys if key.required]
    if required:
        schema["required"] = required
    schema["properties"] = {key.name: _key_schema(key) for key in table.keys}
    schema.update(_copy(table.schema))
    return schema


def _key_schema(key: Key) -> dict[str, object]:
    description = _plain(key.doc)
    if key.default_doc and key.default_doc not in ("none", "—"):
        description += f" Default: {_words(key.default_doc)}."
    schema: dict[str, object] = {"description": description, **_copy(key.schema)}
    if key.default is not None:
        schema["default"] = _copy(key.default)
    return schema


def _copy(value: Any) -> Any:
    """A deep copy of JSON-like data (the declaration's dictionaries are shared and never changed)."""
    if isinstance(value, dict):
        return {name: _copy(item) for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_copy(item) for item in value]
    return value


def _plain(markdown: str) -> str:
    """A key's Markdown doc as plain sentences (what an editor shows on hover)."""
    text = _words(markdown)
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "?", "!")) else text + "."


def _words(markdown: str) -> str:
    """Markdown as plain words: links to other pages dropped or made their text, code marks
    dropped."""
    text = _LINK_ALONE_RE.sub("", markdown)
    text = _SEE_RE.sub("", text)
    return _LINK_RE.sub(r"\1", text).replace("`", "")


# --------------------------------------------------------------------------------------------
# docs/policy.md


def format_key_table(table: Table) -> str:
    """The Markdown table of ``table``'s keys: key, type, default and meaning (the top level's
    without default: each of its tables is empty when absent)."""
    top = table is POLICY
    header = "| key | type | meaning |\n| --- | --- | --- |" if top else \
        "| key | type | default | meaning |\n| --- | --- | --- | --- |"
    rows = [header]
    for key in table.keys:
        cells = [f"`{key.name}`", key.type_doc]
        if not top:
            cells.append(key.default_doc or _default_doc(key))
        cells.append(key.doc)
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows)


def _default_doc(key: Key) -> str:
    if key.default is None:
        return "none"
    return f"`{json.dumps(key.default, ensure_ascii=False)}`"


def replace_key_tables(markdown: str) -> str:
    """``markdown`` with every generated key table (between :data:`GENERATED_BEGIN` naming a table
    and :data:`GENERATED_END`) made again from the declaration.

    Raises:
        KeyError: a block names a table the declaration does not have.
    """
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        return "\n".join([GENERATED_BEGIN.format(table=name), format_key_table(_TABLES[name]),
                          GENERATED_END])

    return _BLOCK_RE.sub(replace, markdown)
