"""The entry of the ``importpolicy`` console script and of ``python -m flake8_importpolicy``.

``python -m`` puts the working directory first on ``sys.path``: in a project holding a ``json.py``
(or ``tomllib.py``...) the command line would run it in place of the standard library's. The tool
imports nothing from there, so the entry moves to the end first.

Ctrl-C (SIGINT) at any moment, the start-up's imports included, ends the command with one line and
exit status 130 (128 + SIGINT, the shells' convention), never a traceback: this module imports only
what is needed to say so before it imports the command line."""

from __future__ import annotations

import os
import signal
import sys

TYPE_CHECKING = False  # typing is not imported at run time: a Ctrl-C during that import was a traceback
if TYPE_CHECKING:
    from typing import NoReturn

EXIT_INTERRUPTED = 128 + signal.SIGINT
"""The exit status after Ctrl-C: 128 plus the signal's number, as a shell reports it."""


def _interrupt_at_start(signum: int, frame: object) -> None:
    # Before entry() runs there is nothing to clean up: say so and leave at once.
    try:
        os.write(2, b"importpolicy: interrupted\n")
    finally:
        os._exit(EXIT_INTERRUPTED)


signal.signal(signal.SIGINT, _interrupt_at_start)


def _interrupt(signum: int, frame: object) -> None:
    # Later Ctrl-Cs are ignored: the first one's clean-up (a bisect's temporary tree, a fix's
    # half-written file) and its one line are not cut short by a second KeyboardInterrupt.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def entry() -> NoReturn:
    """Run the ``importpolicy`` command line (:func:`flake8_importpolicy.cli.run`) and exit with its
    status; on Ctrl-C print ``importpolicy: interrupted`` and exit :data:`EXIT_INTERRUPTED`.

    A command that cleans up after an interruption says its own line and returns 130 itself
    (``importpolicy bisect``). Never returns (``os._exit``, as :func:`~flake8_importpolicy.cli.run`).
    """
    try:
        signal.signal(signal.SIGINT, _interrupt)
        from flake8_importpolicy.model.environment import leave_working_directory

        leave_working_directory()
        from flake8_importpolicy.cli import run

        run()
    except KeyboardInterrupt:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):  # a reader that went away: the line below is still written
            pass
        try:
            os.write(2, b"importpolicy: interrupted\n")
        except OSError:
            pass
        os._exit(EXIT_INTERRUPTED)


if __name__ == "__main__":
    entry()
