"""Run the SMAC tests with one torch thread (restored afterwards).

The engine's tensors are small per op; on a busy shared CPU, torch's OpenMP workers spin-wait and
make small reductions ~100x slower with 2+ threads, so these tests pin one thread."""

import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
