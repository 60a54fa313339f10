"""``python -m flake8_importpolicy`` runs the ``importpolicy`` command line.

``python -m`` puts the working directory first on ``sys.path``: in a project holding a ``json.py``
(or ``tomllib.py``...) the command line would run it in place of the standard library's. The tool
imports nothing from there, so the entry moves to the end first."""

from flake8_importpolicy.model.environment import leave_working_directory

leave_working_directory()

from flake8_importpolicy.cli import run  # noqa: E402  (once the working directory is last)

if __name__ == "__main__":
    run()
