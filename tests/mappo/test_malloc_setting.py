"""``keep_freed_memory``: a thread that allocates and frees a large tensor again and again stops faulting
fresh pages in once glibc keeps one arena and its freed memory (the MAPPO update's second thread)."""

import subprocess
import sys

import pytest

PROGRAM = """
import resource, sys, threading, torch
from selfplay.utils.threads import keep_freed_memory
if sys.argv[1] == "tuned":
    assert keep_freed_memory()
def churn(k):  # as a pass of the update: tensors of several sizes alive at once, then all freed
    for _ in range(10):
        held = [torch.ones((n + k) << 18) for n in (1, 3, 2, 5, 4, 6, 2, 8, 3, 7) * 2]  # 1-9 MiB each
        del held
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(6):  # as the update's passes: a new thread beside the main one each time
    t = threading.Thread(target=churn, args=(1,))
    t.start()
    churn(0)
    t.join()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults)
"""


def page_faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", PROGRAM, mode], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.split()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_freed_memory_is_reused_instead_of_faulted_in_again():
    pages = ((98 + 118) << 20) // 4096  # the two threads' tensors alive at once
    tuned = page_faults("tuned")
    assert tuned < 1.5 * pages  # faulted in once, then reused
    assert page_faults("default") > 2 * pages  # glibc's defaults: mapped afresh again and again
