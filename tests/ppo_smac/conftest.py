import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Small networks on a shared 2-core machine: one intra-op thread avoids oversubscription."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
