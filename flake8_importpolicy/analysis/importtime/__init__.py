"""The import-time walker's state, one owner per concern (issue 24): :mod:`.bindings` holds what
each name is bound to. The walker itself is :mod:`flake8_importpolicy.analysis.extract`."""
