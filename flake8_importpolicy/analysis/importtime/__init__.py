"""The import-time walker and its state, one owner per concern (issue 24; docs/design.md):
:mod:`.walker` walks what runs at import time (rules 8-13) and keeps the flow state (:mod:`.flow`);
below it :mod:`.expressions` scans the expressions that run and :mod:`.names` binds names; the
recorders below them, which never call back up, keep what it finds: :mod:`.lazy` (rules 15,
18, 19), :mod:`.calls` (rule 16, with :mod:`.generated`), :mod:`.dynamic` (rules 7, 14) and
:mod:`.sites` (rules 1-4, 17, ``__all__``); :mod:`.bindings` holds what each name is bound to.
:mod:`flake8_importpolicy.analysis.extract` is the public face."""
