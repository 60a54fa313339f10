"""``python -m flake8_importpolicy`` runs the ``importpolicy`` command line."""

from flake8_importpolicy.cli import main

raise SystemExit(main())
