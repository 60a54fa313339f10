X = 1  # stands in for torch
