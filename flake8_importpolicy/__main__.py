"""``python -m flake8_importpolicy`` runs the ``importpolicy`` command line."""

from flake8_importpolicy.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
