"""Set-up shared by the sim-tier test modules: a shorter GIL switch interval while each runs."""

import sys

import pytest

# numba's simulator runs each simulated thread of a block as a Python thread, and the block's
# manager polls them in a loop that holds the GIL until the interpreter asks it to switch: at
# Python's default 5 ms, every barrier (a tile's staging, each level of a reduction tree) waits
# out several of the manager's turns. At 1 ms the tier takes about half as long on a 2-core
# machine; shorter intervals slow the 256-thread tiled and product blocks down again. No value a
# kernel computes depends on it: the simulator's interleaving of threads is arbitrary anyway,
# and only changes more often.
SWITCH_INTERVAL = 0.001


@pytest.fixture(autouse=True)
def short_switch_interval():
    before = sys.getswitchinterval()
    sys.setswitchinterval(min(before, SWITCH_INTERVAL))
    try:
        yield
    finally:
        sys.setswitchinterval(before)
