"""A Cython module's import-time imports read from the ``.pyx`` shipped beside it
(``flake8_importpolicy/analysis/pyx.py``; docs/semantics.md rule 6).

The fixture ``x_cython_source`` is checked statically by tests/test_fixtures.py (its ``.so`` is a
placeholder); here its ``.pyx`` is compiled and imported by a fresh interpreter, the oracle, where
Cython and a C compiler are installed.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from flake8_importpolicy.analysis.pyx import python_skeleton

FIXTURE = Path(__file__).parent / "fixtures" / "x_cython_source"


def _kept(text: str, tmp_path: Path, **files: str) -> dict[int, str]:
    for name, body in files.items():
        (tmp_path / name).write_text(body)
    source = python_skeleton(tmp_path / "m.pyx", text.encode()).decode()
    ast.parse(source)
    return {n: line for n, line in enumerate(source.splitlines(), 1) if line.strip()}


def test_imports_and_their_blocks_keep_their_lines(tmp_path: Path) -> None:
    text = (
        "import os\n"                                  # 1
        "from libc.math cimport sqrt\n"                # 2
        "cimport cython\n"                             # 3
        "import cython\n"                              # 4
        "try:\n"                                       # 5
        "    import numpy as np\n"                     # 6
        "except ImportError:\n"                        # 7
        "    np = None\n"                              # 8
        "cdef class Box:\n"                            # 9
        "    def load(self):\n"                        # 10
        "        import never\n"                       # 11
        "if <int>np > 0:\n"                            # 12
        "    from a import (b,\n"                      # 13
        "                   c)\n"                      # 14
        "for x in range(3):\n"                         # 15
        "    import loop\n"                            # 16
        "else:\n"                                      # 17
        "    import after_loop\n"                      # 18
    )
    assert _kept(text, tmp_path) == {
        1: "import os",
        5: "try:",
        6: "    import numpy as np",
        7: "except ImportError: pass",
        12: "if __cython_compile_time_or_c_test__:",
        13: "    from a import (b,",
        14: "                   c)",
    }


def test_an_included_file_goes_below_the_last_line(tmp_path: Path) -> None:
    kept = _kept('import os\ninclude "extra.pxi"\nimport sys\n', tmp_path,
                 **{"extra.pxi": "try:\n    import cloudpickle as pickle\nexcept ImportError:\n"
                                 "    import pickle\n"})
    assert kept == {1: "import os", 3: "import sys", 4: "try:", 5: "    import cloudpickle as pickle",
                    6: "except ImportError:", 7: "    import pickle"}


def test_an_included_file_not_shipped_is_left_out(tmp_path: Path) -> None:
    assert _kept('import os\ninclude "missing.pxi"\nimport sys\n', tmp_path) == {
        1: "import os", 3: "import sys",
    }


def test_source_that_does_not_tokenize_is_left_to_the_parser(tmp_path: Path) -> None:
    data = b'import os\nx = """never closed\n'
    assert python_skeleton(tmp_path / "m.pyx", data) == data


def _compiler() -> str | None:
    try:
        import Cython  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        return None
    return shutil.which("cc") or shutil.which("gcc")


@pytest.mark.skipif(_compiler() is None, reason="needs Cython and a C compiler")
def test_fixture_compiled_matches_interpreter(tmp_path: Path) -> None:
    shutil.copytree(FIXTURE, tmp_path / "fx")
    package = tmp_path / "fx" / "site-packages" / "fastext"
    (package / "lib.abi3.so").unlink()
    subprocess.run([sys.executable, "-m", "cython", "-3", "lib.pyx", "-o", "lib.c"], cwd=package,
                   check=True)
    include = sysconfig.get_paths()["include"]
    subprocess.run([str(_compiler()), "-shared", "-fPIC", f"-I{include}", "lib.c", "-o",
                    "lib.abi3.so"], cwd=package, check=True)
    probe = ("import sys; before = set(sys.modules); import app.light; "
             "print(sorted(m for m in set(sys.modules) - before if m.startswith('fastext')))")
    out = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path[:0] = "
                          f"[{str(tmp_path / 'fx')!r}, {str(package.parent)!r}]; {probe}"],
                         capture_output=True, text=True, check=True).stdout
    executed = set(ast.literal_eval(out))
    assert executed == {"fastext", "fastext.lib", "fastext.heavy", "fastext.included", "fastext.opt"}
