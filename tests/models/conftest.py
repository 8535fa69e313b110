"""Model tests run torch single-threaded: on a shared 2-core machine, OpenMP threads that
spin-wait for a busy core make small decoder steps many times slower."""
try:
    import torch
except ImportError:  # every torch test module skips itself
    torch = None

if torch is not None:
    torch.set_num_threads(1)
