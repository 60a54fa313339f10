"""Light modules, one statement shape each."""
