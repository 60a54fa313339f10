"""kiln: a tiny stand-in for an inference server (see ../../README.md)."""
