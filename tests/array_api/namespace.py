"""The namespace the Array API test suite runs against: ``fusedarrays`` itself, plus host
stand-ins for ``all``/``any`` while the namespace lacks them.

The suite's array strategies (Hypothesis' ``extra.array_api``) call ``xp.all`` to build every
test array, so without it nearly every test fails before testing anything. The reductions are
their own part of the library; until ``fa.all``/``fa.any`` exist, these compute on the host
(``x.get()``) and give the result back as a ``fa.ndarray``. Once the library has them, nothing
is added and the suite tests the library's own.

Named by the suite's ``ARRAY_API_TESTS_MODULE`` (see ``run.sh``).
"""

import types

import numpy as np

import fusedarrays


def _host_reduction(name):
    def reduce(x, /, *, axis=None, keepdims=False):
        values = getattr(np, name)(fusedarrays.asarray(x).get(), axis=axis, keepdims=keepdims)
        return fusedarrays.asarray(np.asarray(values))
    reduce.__name__ = name
    return reduce


xp = types.ModuleType("fusedarrays")
xp.__dict__.update(vars(fusedarrays))
for _name in ("all", "any"):
    if not hasattr(fusedarrays, _name):
        setattr(xp, _name, _host_reduction(_name))
STAND_INS = sorted(n for n in ("all", "any") if not hasattr(fusedarrays, n))
