"""Error texts that name real things and say what to do: the truth value of an array, host values
of traced arrays inside fa.fuse, a fused function writing to a read-only NumPy array. Default
settings, cpu backend."""

import operator

import numpy as np
import pytest

import fusedarrays as fa

SEED = 7041



def _host(n=32, count=2):
    rng = np.random.default_rng(SEED)
    return [rng.standard_normal(n) for _ in range(count)]


@fa.fuse
def descend(p, g, lr):
    p -= lr * g


# -- truth values ------------------------------------------------------------------------------
def test_bool_of_an_array_of_many_elements_names_what_exists():
    x = fa.asarray(np.random.default_rng(SEED).standard_normal((3, 4)))
    with pytest.raises(fa.AmbiguousTruthValueError) as info:
        bool(x > 0)
    text = str(info.value)
    assert isinstance(info.value, ValueError)
    assert "12 elements" in text and "fa.where(" in text and "x.get().any()" in text, text
    assert "a.any()" not in text
    with pytest.raises(fa.AmbiguousTruthValueError, match="0 elements"):
        bool(x[:0] > 0)


def test_bool_of_one_element_is_its_value():
    h = np.random.default_rng(SEED).standard_normal(5)
    x = fa.asarray(h)
    for k in range(5):
        assert bool(x[k:k + 1] > 0) == bool(h[k] > 0), f"seed {SEED}, element {k}"


# -- host values of traced arrays --------------------------------------------------------------
CONVERSIONS = {
    "bool()": lambda p, i: "yes" if p else "no",
    "bool() on one element": lambda p, i: "yes" if p[0] > 0 else "no",
    "float()": lambda p, i: float(p[0]),
    "int()": lambda p, i: int(p[0]),
    "an index conversion": lambda p, i: operator.index(i[0]),
    ".item()": lambda p, i: p[0].item(),
    ".get()": lambda p, i: p.get(),
    "np.asarray()": lambda p, i: np.asarray(p),
    "str()": lambda p, i: str(p * 2),
    ".compute()": lambda p, i: (p * 2).compute(),
    "fa.compute()": lambda p, i: fa.compute(p * 2),
}


@pytest.mark.parametrize("what", list(CONVERSIONS))
def test_a_host_value_of_a_traced_array_raises_a_tracer_error_naming_it(what):
    convert = CONVERSIONS[what]

    @fa.fuse
    def step(p, i):
        convert(p, i)
        p += 1

    hp = _host()[0]
    p, i = fa.asarray(hp), fa.asarray(np.arange(32))
    with pytest.raises(fa.TracerConversionError) as info:
        step(p, i)
    text = str(info.value)
    assert isinstance(info.value, TypeError) and isinstance(info.value,
                                                            fa.UnsupportedOperationError)
    assert what.removesuffix(" on one element") in text and "step" in text, text
    assert "fa.where(cond, a, b)" in text and "static_argnames" in text, text
    np.testing.assert_array_equal(p.get(), hp)   # nothing ran


def test_repr_of_a_traced_argument_says_traced_and_evaluates_nothing():
    shown = []

    @fa.fuse
    def bump(p):
        shown.append(repr(p))
        p += 1

    hp = _host()[0]
    p = fa.asarray(hp)
    bump(p)
    assert shown[0].startswith("fa.ndarray(traced argument, dtype=float64, shape=(32,)"), shown
    np.testing.assert_array_equal(p.get(), hp + 1)


# -- read-only NumPy arguments -----------------------------------------------------------------
def test_writing_a_read_only_numpy_argument_is_a_short_value_error_naming_it():
    hp, hg = _host()
    p = hp.copy()
    descend(p, hg, 0.5)                    # the signature is traced and cached writable
    np.testing.assert_array_equal(p, hp - 0.5 * hg)
    p.flags.writeable = False
    for call, named in [(lambda: descend(p, hg, 0.5), "argument 0 (p)"),
                        (lambda: descend(p=p, g=hg, lr=0.5), "keyword p")]:
        with pytest.raises(fa.ReadOnlyArgumentError) as info:
            call()
        text = str(info.value)
        assert isinstance(info.value, ValueError)
        assert "\n" not in text and len(text) < 300, text
        assert named in text and "read-only" in text and "descend" in text, text
    np.testing.assert_array_equal(p, hp - 0.5 * hg)


def test_a_read_only_numpy_argument_that_is_only_read_is_fine():
    hp, hg = _host()
    p, g = hp.copy(), hg.copy()
    g.flags.writeable = False
    descend(p, g, 0.25)
    np.testing.assert_array_equal(p, hp - 0.25 * hg)


def test_a_write_through_a_writable_view_of_memory_a_read_only_view_also_sees_is_fine():
    hp, hg = _host()
    p = hp.copy()
    frozen = p.view()
    frozen.flags.writeable = False

    @fa.fuse
    def shift(seen, p, g):
        p += g * seen

    shift(frozen, p, hg)                   # NumPy allows it: p is writable
    np.testing.assert_array_equal(p, hp + hg * hp)


def test_an_array_made_writable_again_is_written():
    hp, hg = _host()
    p = hp.copy()
    p.flags.writeable = False
    with pytest.raises(fa.ReadOnlyArgumentError):
        descend(p, hg, 0.5)
    p.flags.writeable = True
    descend(p, hg, 0.5)
    np.testing.assert_array_equal(p, hp - 0.5 * hg)


def test_an_array_read_while_read_only_is_written_once_writable():
    hp, hq, hg = _host(count=3)
    p, q = hp.copy(), hq.copy()
    q.flags.writeable = False

    @fa.fuse
    def add_twice(p, q):
        p += 2 * q

    add_twice.foreach([p], [q])            # its last call's arrays stay referenced
    q.flags.writeable = True
    descend(q, hg, 0.5)
    np.testing.assert_array_equal(p, hp + 2 * hq)
    np.testing.assert_array_equal(q, hq - 0.5 * hg)


def test_foreach_names_the_read_only_element():
    (hp0, hp1), (hg0, hg1) = _host(count=2), _host(n=32, count=2)[::-1]
    p0, p1 = hp0.copy(), hp1.copy()
    p1.flags.writeable = False
    with pytest.raises(fa.ReadOnlyArgumentError, match=r"element 1 of argument 0 \(p\)"):
        descend.foreach([p0, p1], [hg0, hg1], 0.5)
    np.testing.assert_array_equal(p0, hp0)
