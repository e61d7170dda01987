"""The checker of the reader's functions: right functions pass, wrong ones are named, and
nothing a reader's function does makes the checker fail.

The right functions here are vectorised numpy (and, where the library has the same
operation, the library's own function): the checker's references are loops, so a pass is
two independent implementations agreeing.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attention_lib as al


def _softmax(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _attention(q, k, v, causal=False):
    s = q @ k.T / np.sqrt(q.shape[-1])
    if causal:
        n_q, n_k = s.shape
        s = np.where(np.tril(np.ones((n_q, n_k), bool), k=n_k - n_q), s, -np.inf)
    return _softmax(s) @ v


def _merge(m1, l1, u1, m2, l2, u2):
    m = np.maximum(m1, m2)
    a = np.where(m1 == -np.inf, 0.0, np.exp(m1 - m))
    b = np.where(m2 == -np.inf, 0.0, np.exp(m2 - m))
    return m, a * l1 + b * l2, a[:, None] * u1 + b[:, None] * u2


def _top_p(probs, p):
    return al.next_token_distribution(np.log(probs), top_p=p)


def _cross_entropy(logits, targets):
    m = logits.max(axis=-1, keepdims=True)
    log_p = logits - m - np.log(np.exp(logits - m).sum(axis=-1, keepdims=True))
    return -log_p[np.arange(len(targets)), targets].mean()


def _recurrence(x, w_h, w_x):
    h, out = np.zeros(w_h.shape[0]), []
    for row in x @ w_x:
        h = np.tanh(h @ w_h + row)
        out.append(h)
    return np.stack(out)


def _ov_circuit(w_e, w_v, w_o, n_heads):
    e = w_e.shape[1] // n_heads
    w_v_heads = w_v.reshape(len(w_v), n_heads, e).transpose(1, 0, 2)  # (h, d, e)
    w_o_heads = w_o.reshape(n_heads, e, -1)  # (h, e, d)
    return w_e @ w_v_heads @ w_o_heads @ w_e.T


def _sae_encode(x, w_enc, b_enc, b_dec):
    return np.maximum((x - b_dec) @ w_enc + b_enc, 0.0)


RIGHT = {
    "qkv_projection": lambda x, wq, wk, wv: (x @ wq, x @ wk, x @ wv),
    "attention": _attention,
    "softmax": _softmax,
    "causal_attention": lambda q, k, v: al.scaled_dot_product_attention(q, k, v,
                                                                        causal=True)[0],
    "split_heads": al.split_heads,
    "recurrence": _recurrence,
    "sinusoidal_positions": al.sinusoidal_positions,
    "softmax_backward": al.softmax_vjp,
    "cross_entropy": _cross_entropy,
    "layer_norm": lambda x, g, b: al.layer_norm(x, g, b),
    "kv_cache_step": lambda ck, cv, q, k, v: (_attention(q[None], np.vstack([ck, k]),
                                                         np.vstack([cv, v]))[0],
                                              np.vstack([ck, k]), np.vstack([cv, v])),
    "online_softmax_merge": _merge,
    "repeat_kv": lambda kv, h: np.repeat(kv, h // kv.shape[0], axis=0),
    "top_p": _top_p,
    "ov_circuit": _ov_circuit,
    "restored_fraction": lambda clean, corrupt, patched: (
        (np.mean(patched) - np.mean(corrupt)) / (np.mean(clean) - np.mean(corrupt))),
    "sae_encode": _sae_encode,
}

# A mistake a reader makes, and the words the verdict must contain.
WRONG = {
    "qkv_projection": (lambda x, wq, wk, wv: (x @ wq, x @ wq, x @ wv), "item 2"),
    "attention": (lambda q, k, v: _softmax(q @ k.T) @ v, "3 queries and 5 keys, d_k = 4"),
    "softmax": (lambda z: np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True), "large scores"),
    "causal_attention": (lambda q, k, v: _attention(q, k, v), "5 queries"),
    "split_heads": (lambda x, h: x.reshape(h, x.shape[0], -1), "into 2 heads"),
    "recurrence": (lambda x, w_h, w_x: np.tanh(x @ w_x), "6 steps"),
    "sinusoidal_positions": (lambda n, d: np.concatenate(
        [np.sin(np.arange(n)[:, None] / 10000 ** (np.arange(0, d, 2) / d)),
         np.cos(np.arange(n)[:, None] / 10000 ** (np.arange(0, d, 2) / d))], axis=1),
        "1 position, d = 4"),
    "softmax_backward": (lambda p, g: p * g, "a vector of 4 weights"),
    "cross_entropy": (lambda z, t: -np.log(_softmax(z)[np.arange(len(t)), t]).sum(),
                      "4 positions"),
    "layer_norm": (lambda x, g, b: g * (x - x.mean(-1, keepdims=True))
                   / np.sqrt(x.var(-1, ddof=1, keepdims=True) + 1e-5) + b, "(3, 4) matrix"),
    "kv_cache_step": (lambda ck, cv, q, k, v: (_attention(q[None], ck, cv)[0], ck, cv),
                      "shape"),
    "online_softmax_merge": (lambda m1, l1, u1, m2, l2, u2: (np.maximum(m1, m2), l1 + l2,
                                                             u1 + u2), "two tiles"),
    "repeat_kv": (lambda kv, h: np.tile(kv, (h // kv.shape[0], 1, 1)), "6 query heads"),
    "top_p": (lambda probs, p: np.where(probs >= p, probs, 0) / probs[probs >= p].sum(),
              "p = 0.5"),
    # every head given the whole layer's W_V W_O instead of its own blocks
    "ov_circuit": (lambda w_e, w_v, w_o, h: np.stack([w_e @ w_v @ w_o @ w_e.T] * h),
                   "2 heads"),
    # the mean of each pair's own fraction: the pair with a tiny gap swamps the others
    "restored_fraction": (lambda clean, corrupt, patched: np.mean(
        (patched - corrupt) / (clean - corrupt)), "differ by only 0.01"),
    "sae_encode": (lambda x, w, b_enc, b_dec: np.maximum(x @ w + b_enc, 0.0), "nonzero b_dec"),
}


def test_every_task_has_a_right_and_a_wrong_function_here():
    assert set(RIGHT) == set(WRONG) == set(al.implementation_tasks())


@pytest.mark.parametrize("task", sorted(RIGHT))
def test_a_right_function_is_correct(task):
    assert al.implementation_verdict(RIGHT[task], task) == "correct"


@pytest.mark.parametrize("task", sorted(WRONG))
def test_a_wrong_function_is_named_with_its_case_and_a_hint(task):
    fn, words = WRONG[task]
    verdict = al.implementation_verdict(fn, task)
    assert verdict.startswith("not quite: "), verdict
    assert words in verdict and "Hint: " in verdict, verdict


def _relu_of(f):
    """A wrong version that gets the pre-activation right and the nonlinearity ``f`` wrong."""
    return lambda x, w, b_enc, b_dec: f((x - b_dec) @ w + b_enc)


# The usual mistakes in a sparse autoencoder's encoder, each caught by the case made for it.
SAE_MISTAKES = {
    "forgets b_dec": (lambda x, w, b_enc, b_dec: np.maximum(x @ w + b_enc, 0.0),
                      "a nonzero b_dec"),
    "adds b_dec": (lambda x, w, b_enc, b_dec: np.maximum((x + b_dec) @ w + b_enc, 0.0),
                   "a nonzero b_dec"),
    "subtracts b_dec after the product": (
        lambda x, w, b_enc, b_dec: np.maximum(x @ w - b_dec + b_enc, 0.0),
        "b_dec = 0 and every pre-activation above 1: the function raised ValueError"),
    "forgets b_enc": (lambda x, w, b_enc, b_dec: np.maximum((x - b_dec) @ w, 0.0),
                      "b_dec = 0 and every pre-activation above 1: the result is"),
    "forgets the ReLU": (_relu_of(lambda z: z), "every pre-activation negative"),
    "clips at 1e-6": (_relu_of(lambda z: np.maximum(z, 1e-6)), "every pre-activation negative"),
    "clips at -1": (_relu_of(lambda z: np.maximum(z, -1.0)), "every pre-activation negative"),
    "takes the absolute value": (_relu_of(np.abs), "every pre-activation negative"),
    "zeroes below 0.5 instead of 0": (_relu_of(lambda z: np.where(z > 0.5, z, 0.0)),
                                      "pre-activations of both signs"),
    "transposes w_enc": (lambda x, w, b_enc, b_dec: np.maximum((x - b_dec) @ w.T + b_enc, 0.0),
                         "w_enc of shape (3, 5), b_dec = 0"),
    "multiplies w_enc^T by x^T": (
        lambda x, w, b_enc, b_dec: np.maximum(w.T @ (x - b_dec).T + b_enc[:, None], 0.0),
        "b_dec = 0 and every pre-activation above 1: the result has shape (5, 4); expected "
        "(4, 5)"),
    "handles only a batch of rows": (
        lambda x, w, b_enc, b_dec: np.maximum(np.einsum("nd,dm->nm", x - b_dec, w) + b_enc,
                                              0.0), "a single row x of shape (3,)"),
    "makes a single row a (1, d) batch": (
        lambda x, w, b_enc, b_dec: np.maximum((x - b_dec[None]) @ w + b_enc, 0.0),
        "a single row x of shape (3,), w_enc of shape (3, 5) (the features have shape (5,)): "
        "the result has shape (1, 5); expected (5,)"),
}


@pytest.mark.parametrize("mistake", sorted(SAE_MISTAKES))
def test_each_usual_sae_encoder_mistake_is_named_by_its_case(mistake):
    fn, words = SAE_MISTAKES[mistake]
    verdict = al.implementation_verdict(fn, "sae_encode")
    assert verdict.startswith("not quite: ") and "Hint: b_dec" in verdict, verdict
    assert words in verdict, verdict


def test_the_sae_encoder_cases_hold_what_their_names_say():
    from attention_lib.implement import _TASKS

    cases = {case.name: case for case in _TASKS["sae_encode"].cases()}
    assert len(cases) == 6
    for name, case in cases.items():
        x, w_enc, b_enc, b_dec = case.args
        d, m = w_enc.shape
        assert d != m and b_enc.shape == (m,) and b_dec.shape == (d,)  # w_enc.T fails
        assert x.dtype == case.expected.dtype == np.float64
        assert case.expected.shape == x.shape[:-1] + (m,)
        # each feature by hand, one at a time, agrees with the loop reference
        pre = np.array([[float(np.dot(row - b_dec, w_enc[:, j]) + b_enc[j]) for j in range(m)]
                        for row in np.atleast_2d(x)])
        want = np.atleast_2d(case.expected)
        assert want == pytest.approx(np.where(pre > 0, pre, 0.0), rel=1e-12, abs=1e-12)
        if "above 1" in name:
            assert pre.min() > 1
        if "negative" in name:
            assert pre.max() < 0 and not want.any()
        if "both signs" in name:
            assert pre.min() < 0 < pre.max()
        assert not b_dec.any() if "b_dec = 0" in name else np.abs(b_dec).min() > 0
    single = next(case for name, case in cases.items() if "single row" in name)
    assert single.args[0].shape == (3,) and single.expected.shape == (5,)


def test_the_tasks_the_chapters_promise_exist():
    for task in ("softmax", "causal_attention", "split_heads", "kv_cache_step",
                 "online_softmax_merge", "repeat_kv", "top_p", "ov_circuit",
                 "restored_fraction", "sae_encode"):
        assert task in al.implementation_tasks()


def test_a_stub_is_not_answered_yet(capsys):
    def mine(z):
        raise NotImplementedError

    assert al.implementation_verdict(mine, "softmax") == "not answered yet"
    assert al.implementation_verdict(None, "top_p") == "not answered yet"
    al.check_implementation(mine, "softmax")
    assert capsys.readouterr().out == "not answered yet\n"


def test_each_kind_of_mistake_gets_its_own_words():
    verdict = al.implementation_verdict

    def forgot_return(z):
        np.exp(z)

    assert "is None; did the function forget to return" in verdict(forgot_return, "softmax")
    assert "holds integers" in verdict(lambda x, h: np.zeros((h, x.shape[0],
                                                              x.shape[1] // h), int),
                                       "split_heads")
    assert "has shape (3,); expected (2, 4, 3)" in verdict(lambda x, h: np.zeros(3),
                                                           "split_heads")
    assert "raised ZeroDivisionError: division by zero" in verdict(lambda z: 1 / 0, "softmax")
    assert "expected a tuple of 3 arrays" in verdict(lambda *a: a[0], "kv_cache_step")
    assert "a tuple of 2 items; expected one array" in verdict(
        lambda q, k, v: al.scaled_dot_product_attention(q, k, v, causal=True), "causal_attention")

    def in_place(z):
        z -= z.max(axis=-1, keepdims=True)
        np.exp(z, out=z)
        z /= z.sum(axis=-1, keepdims=True)
        return z

    assert "changed its argument 1 in place" in verdict(in_place, "softmax")
    assert "expected a function" in verdict(np.ones(3), "softmax")
    global_max = verdict(lambda z: np.exp(z - z.max()) / np.exp(z - z.max()).sum(
        axis=-1, keepdims=True), "softmax")
    assert "rows of different sizes" in global_max, global_max
    assert "return its result? Hint" in verdict(forgot_return, "softmax")
    # a list of the right numbers is accepted (numpy reads it as an array)
    assert verdict(lambda z: _softmax(z).tolist(), "softmax") == "correct"


def test_an_unknown_task_is_the_pages_error():
    with pytest.raises(ValueError, match="task='sofmax'; expected one of 'qkv_projection'"):
        al.implementation_verdict(_softmax, "sofmax")


class _Hostile:
    """An object numpy cannot read: its __array__ and __len__ raise."""

    def __array__(self, *args, **kwargs):
        raise RuntimeError("no")

    def __len__(self):
        raise RuntimeError("no")


_RESULTS = st.one_of(
    st.none(), st.integers(), st.floats(allow_nan=True), st.text(max_size=5),
    st.lists(st.floats(allow_nan=True), max_size=4),
    st.lists(st.lists(st.integers(), max_size=3), max_size=3),  # ragged
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    st.tuples(st.integers(), st.text(max_size=2)),
    st.builds(lambda n: np.full(n, np.nan), st.integers(0, 5)),
    st.builds(lambda n: np.zeros(n, dtype=complex), st.integers(0, 5)),
    st.builds(lambda n: np.array(["a"] * n), st.integers(0, 3)),
    st.just(_Hostile()), st.just((_Hostile(), _Hostile(), _Hostile())),
)
_ERRORS = st.sampled_from([ValueError, TypeError, IndexError, KeyError, ZeroDivisionError,
                           AttributeError, RuntimeError, RecursionError, AssertionError,
                           FloatingPointError, MemoryError])


@settings(max_examples=150, deadline=None)
@given(task=st.sampled_from(sorted(RIGHT)), result=_RESULTS, error=st.none() | _ERRORS)
def test_whatever_the_readers_function_does_the_checker_gives_a_verdict(task, result, error):
    def mine(*args):
        if error is not None:
            raise error("the reader's bug")
        return result

    verdict = al.implementation_verdict(mine, task)
    assert verdict.startswith("not quite: "), verdict
    assert "Hint: " in verdict
