"""Divisions by a divisor computed outside its dividend's loop on the cpu backend at its defaults
(``tests/divisioncases.py``), against NumPy bit for bit."""

import pytest
from divisioncases import check_uniform_divisions

pytestmark = pytest.mark.usefixtures("cpu_backend")


def test_uniform_divisors_divide_as_numpy():
    check_uniform_divisions(1631, size=4099)
