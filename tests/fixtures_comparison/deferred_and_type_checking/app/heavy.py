class Model:
    """Stands in for a class whose module is slow to import."""
