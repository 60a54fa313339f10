DEVICE = "cuda"  # stands in for a module whose import initialises CUDA
