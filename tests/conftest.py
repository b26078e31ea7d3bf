"""Shared test settings."""

import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Small networks on a 2-core machine: one intra-op thread (torch's OpenMP workers spin-wait and
    make small ops many times slower when the cores are shared)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
