"""A forked child of a process that used the GPU gets an error naming 'spawn', never a hang."""


import forkwork
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config

SEED = 20261123


@pytest.mark.filterwarnings("ignore:.*multi-threaded.*fork:DeprecationWarning")
def test_a_forked_child_is_refused_naming_spawn():
    a, b, _ = forkwork.inputs(SEED, 1 << 16)
    with config.override(BACKEND="cuda"):
        x = fa.asarray(a)
        np.testing.assert_allclose((x * 2).get(), a * 2, rtol=1e-6)   # the parent used the GPU
        def child() -> int:
            try:
                (fa.asarray(b) + 1).get()
            except fa.ForkedDeviceError as exc:
                return 0 if "'spawn'" in str(exc) else 4
            return 3

        pid = forkwork.fork_child(child, failed=5)
        code = forkwork.wait_or_kill(pid, timeout=60)
        assert code == 0, (f"the child exited with {code} (None: killed after 60 s; 3: no error; "
                           "5: another error)")
        np.testing.assert_allclose((x + 1).get(), a + 1, rtol=1e-6)    # the parent goes on
