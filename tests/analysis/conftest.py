"""Shared fixtures of the analysis tests."""

import matplotlib
import pytest

matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def _single_threaded_blas():
    """Small dense linear algebra is fastest single-threaded; on a loaded machine OpenBLAS's
    spinning threads can make a 200×200 QR take a second instead of milliseconds."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield
