"""SciPy's array API mode (``SCIPY_ARRAY_API=1``) on fa arrays: ``scipy.special``,
``scipy.stats`` and ``scipy.fft``, each judged against the same call on NumPy arrays. Run by
test_scipy_sklearn.py in a child process (child.py says why).

What SciPy does with an fa array: ``array_namespace`` finds ``fa`` through
``__array_namespace__``. ``scipy.special``'s functions take ``fa.special.<name>`` where fa has
it, else SciPy's generic array-API code, else they convert through ``np.asarray`` and back with
``fa.asarray``. ``scipy.stats`` runs its array-API code on the ``fa`` namespace. fa has no
``fft`` extension, so ``scipy.fft`` copies to NumPy (``np.asarray``), runs pocketfft and returns
``fa.asarray(result)``: an fa array, through the host (on cuda a copy each way); its
``fftfreq(n, xp=fa)`` returns a NumPy array (SciPy uses ``xp`` only when it has ``xp.fft``).
"""

import os

import judge
import numpy as np
import pytest

import fusedarrays as fa

if os.environ.get("SCIPY_ARRAY_API") != "1":
    pytest.skip("SciPy's array API mode needs SCIPY_ARRAY_API=1 before SciPy is imported "
                "(test_scipy_sklearn.py runs this file so)", allow_module_level=True)
pytest.importorskip("scipy")

import scipy.fft  # noqa: E402 - after the skip above
import scipy.special  # noqa: E402
import scipy.stats  # noqa: E402

SEED = 20261129
X = judge.data(SEED, spread=False)                         # (200, 12) float64, normal
P = np.random.default_rng(SEED + 1).uniform(0.02, 0.98, (200, 12))   # in (0, 1)
INTS = np.random.default_rng(SEED + 2).integers(0, 6, (200, 12)).astype(np.float64)


def same(call, *arrays, what: str, **judging) -> None:
    """``call(*arrays)`` on fa arrays matches it on the NumPy arrays."""
    want = call(*arrays)
    got = call(*[fa.asarray(a) for a in arrays])
    judge.check(got, want, f"{what} (seed {SEED})", **judging)


UNARY = {"erf": X, "erfc": X, "expit": X, "logit": P, "gammaln": X, "ndtr": X, "ndtri": P,
         "log_ndtr": X, "entr": P, "i0": X, "erfinv": P * 2 - 1}


@pytest.mark.parametrize("name", list(UNARY))
def test_special_unary(name):
    same(getattr(scipy.special, name), UNARY[name], what=f"scipy.special.{name}")


@pytest.mark.parametrize("name", ["erf", "expit", "gammaln", "logit"])
def test_special_float32(name):
    same(getattr(scipy.special, name), UNARY[name].astype(np.float32),
         what=f"scipy.special.{name} on float32")


@pytest.mark.parametrize("name", ["xlogy", "rel_entr"])
def test_special_binary(name):
    same(getattr(scipy.special, name), P, P[::-1], what=f"scipy.special.{name}")


@pytest.mark.parametrize("call", [lambda x: scipy.special.softmax(x, axis=1),
                                  lambda x: scipy.special.logsumexp(x, axis=1)],
                         ids=["softmax", "logsumexp"])
def test_special_reducing(call):
    same(call, X, what="scipy.special reduction")


STATS = {
    "zscore": lambda x: scipy.stats.zscore(x[::-1], axis=0),        # of views too
    "describe": lambda x: tuple(scipy.stats.describe(x, axis=0))[1:],    # nobs is an int
    "skew": lambda x: scipy.stats.skew(x, axis=0),
    "kurtosis": lambda x: scipy.stats.kurtosis(x.T, axis=0),
    "sem": lambda x: scipy.stats.sem(x, axis=0),
    "gmean": lambda x: scipy.stats.gmean(abs(x) + 0.5, axis=0),
    "entropy": lambda x: scipy.stats.entropy(abs(x) + 0.5, axis=0),
    "trim_mean": lambda x: scipy.stats.trim_mean(x, 0.1, axis=0),
    "pearsonr": lambda x: tuple(scipy.stats.pearsonr(x[:, 0], x[:, 1] + x[:, 0] / 3)),
    "ttest_ind": lambda x: tuple(scipy.stats.ttest_ind(x[:, 0], x[:, 1] + 0.2)),
    "ttest_1samp": lambda x: tuple(scipy.stats.ttest_1samp(x, 0.1, axis=0)),
}


@pytest.mark.parametrize("name", list(STATS))
def test_stats(name):
    same(STATS[name], X, what=f"scipy.stats.{name}")


@pytest.mark.parametrize("name", ["mode", "rankdata"])
def test_stats_of_ties(name):
    call = {"mode": lambda x: tuple(scipy.stats.mode(x, axis=0)),
            "rankdata": lambda x: scipy.stats.rankdata(x, axis=0)}[name]
    same(call, INTS, what=f"scipy.stats.{name} (ties)")


FFT = {
    "fft": lambda x: scipy.fft.fft(x, axis=0),
    "ifft": lambda x: scipy.fft.ifft(x, axis=1),
    "rfft": lambda x: scipy.fft.rfft(x, axis=1),
    "irfft": lambda x: scipy.fft.irfft(scipy.fft.rfft(x, axis=0), n=200, axis=0),
    "fft2": lambda x: scipy.fft.fft2(x),
    "dct": lambda x: scipy.fft.dct(x, axis=1),
    "fftshift": lambda x: scipy.fft.fftshift(x, axes=0),
}


@pytest.mark.parametrize("name", list(FFT))
def test_fft(name):
    same(FFT[name], X, what=f"scipy.fft.{name}")


def test_fftfreq_with_xp_fa():
    # SciPy builds the frequencies in ``xp`` only when it has an ``fft`` extension (fa has
    # none): the user gets NumPy's array (today), with NumPy's values, and fa takes it as it is
    got = scipy.fft.fftfreq(8, 0.1, xp=fa)
    judge.check(fa.asarray(got), np.fft.fftfreq(8, 0.1), "scipy.fft.fftfreq(8, 0.1, xp=fa)")
    judge.check(fa.asarray(scipy.fft.rfftfreq(9, xp=fa)), np.fft.rfftfreq(9),
                "scipy.fft.rfftfreq(9, xp=fa)")
