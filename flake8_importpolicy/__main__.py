"""``python -m flake8_importpolicy`` runs the ``importpolicy`` command line."""

from flake8_importpolicy.cli import run

if __name__ == "__main__":
    run()
