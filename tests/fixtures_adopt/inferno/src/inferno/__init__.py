"""A tiny inference server: the project of the README's "Adopt it on an existing project" walk
(tests/test_adopt.py runs that walk on a copy of this tree)."""
