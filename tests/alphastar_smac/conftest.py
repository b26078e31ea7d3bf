"""One torch thread: the tests share small CPUs (multi-threaded torch is far slower under contention)."""

import torch

torch.set_num_threads(1)
