"""The hidden cases of the implementation checker (:mod:`attention_lib.implement`).

One task per function a reader writes: its signature, a hint, and the cases its verdict
runs, each with the value a slow reference gives (plain loops, sharing no code with the
library).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class _Case:
    name: str  # what the case is, in the reader's words
    args: tuple  # what the reader's function receives
    expected: Any  # an array, or a tuple of arrays (one per returned item)


@dataclass(frozen=True)
class _Task:
    signature: str  # e.g. "fn(z) -> softmax over the last axis"
    hint: str  # shown after the first failing case
    cases: Callable[[], list[_Case]]


# ---------------------------------------------------------------------------------------
# Slow references: plain loops, so that they share no code with the library.


def _softmax_vector(z: np.ndarray) -> np.ndarray:
    m = max(float(x) for x in z)
    e = [0.0 if x == -math.inf else math.exp(float(x) - m) for x in z]
    total = sum(e)
    return np.array([x / total for x in e])


def _softmax_ref(z: np.ndarray) -> np.ndarray:
    z = np.asarray(z, dtype=np.float64)
    out = np.empty_like(z)
    for index in np.ndindex(z.shape[:-1]):
        out[index] = _softmax_vector(z[index])
    return out


def _attention_ref(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    n_q, d_k = q.shape
    n_k = k.shape[0]
    out = np.zeros((n_q, v.shape[1]))
    for i in range(n_q):
        last = i + (n_k - n_q) if causal else n_k - 1  # causal: bottom-right aligned
        scores = np.array([sum(q[i, c] * k[j, c] for c in range(d_k)) / math.sqrt(d_k)
                           for j in range(last + 1)])
        w = _softmax_vector(scores)
        for j in range(last + 1):
            out[i] += w[j] * v[j]
    return out


def _count(n: int, noun: str) -> str:
    """``1 query``, ``5 queries``, ``1 key``, ``3 keys``."""
    if n == 1:
        return f"1 {noun}"
    return f"{n} {noun[:-1]}ies" if noun.endswith("y") and noun[-2] not in "aeiou" else \
        f"{n} {noun}s"


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------------------
# The tasks: each makes its cases (inputs and the reference's answers).


def _softmax_cases() -> list[_Case]:
    r = _rng(1)
    inputs = [
        ("a vector [1, 2, 3]", np.array([1.0, 2.0, 3.0])),
        ("a (3, 4) matrix, softmax along each row", r.normal(size=(3, 4))),
        ("a (2, 3, 5) array, softmax along the last axis", r.normal(size=(2, 3, 5)) * 3),
        ("large scores [1000, 1001, 1002]", np.array([1000.0, 1001.0, 1002.0])),
        ("rows of different sizes [[0, 1, 2], [1000, 1001, 1002]]",
         np.array([[0.0, 1.0, 2.0], [1000.0, 1001.0, 1002.0]])),
        ("very negative scores [-1000, -1001, -1002]", np.array([-1000.0, -1001.0, -1002.0])),
        ("scores with -inf (masked) entries [0, -inf, 1, -inf]",
         np.array([0.0, -np.inf, 1.0, -np.inf])),
        ("a single score [5]", np.array([5.0])),
    ]
    return [_Case(name, (z,), _softmax_ref(z)) for name, z in inputs]


def _attention_cases(causal: bool) -> list[_Case]:
    r = _rng(2 if causal else 3)
    cases = []
    shapes = [(1, 1, 4, 3), (5, 5, 4, 3), (6, 6, 8, 2)] if causal else \
        [(1, 1, 4, 3), (3, 5, 4, 2), (6, 4, 8, 5)]
    for n_q, n_k, d_k, d_v in shapes:
        q, k, v = r.normal(size=(n_q, d_k)), r.normal(size=(n_k, d_k)), r.normal(size=(n_k, d_v))
        name = f"{_count(n_q, 'query')} and {_count(n_k, 'key')}, d_k = {d_k}, d_v = {d_v}"
        cases.append(_Case(name, (q, k, v), _attention_ref(q, k, v, causal)))
    q, k, v = r.normal(size=(4, 4)) * 40, r.normal(size=(4, 4)) * 40, r.normal(size=(4, 3))
    cases.append(_Case("large scores (entries of q and k near 40)", (q, k, v),
                       _attention_ref(q, k, v, causal)))
    return cases


def _split_heads_ref(x: np.ndarray, h: int) -> np.ndarray:
    n, d = x.shape
    size = d // h
    out = np.zeros((h, n, size))
    for head in range(h):
        for i in range(n):
            for c in range(size):
                out[head, i, c] = x[i, head * size + c]
    return out


def _split_heads_cases() -> list[_Case]:
    x = np.arange(24.0).reshape(4, 6)
    y = _rng(4).normal(size=(5, 12))
    return [_Case(f"x of shape {a.shape} into {h} heads", (a, h), _split_heads_ref(a, h))
            for a, h in ((x, 2), (x, 3), (x, 1), (x, 6), (y, 4))]


def _kv_cache_ref(cache_k, cache_v, q, k, v):
    keys = np.vstack([cache_k, k[None]])
    values = np.vstack([cache_v, v[None]])
    out = _attention_ref(q[None], keys, values, causal=False)[0]
    return out, keys, values


def _kv_cache_cases() -> list[_Case]:
    r = _rng(5)
    cases = []
    for t, d_k, d_v in ((0, 4, 3), (1, 4, 3), (6, 8, 2)):
        ck, cv = r.normal(size=(t, d_k)), r.normal(size=(t, d_v))
        q, k, v = r.normal(size=d_k), r.normal(size=d_k), r.normal(size=d_v)
        name = ("an empty cache (shapes (0, 4) and (0, 3))" if t == 0 else
                f"a cache of {_count(t, 'token')}, d_k = {d_k}, d_v = {d_v}")
        cases.append(_Case(name, (ck, cv, q, k, v), _kv_cache_ref(ck, cv, q, k, v)))
    return cases


def _merge_ref(m1, l1, u1, m2, l2, u2):
    n = len(m1)
    m, lsum, u = np.zeros(n), np.zeros(n), np.zeros((n, u1.shape[1]))
    for i in range(n):
        m[i] = max(m1[i], m2[i])
        a = 0.0 if m1[i] == -math.inf else math.exp(m1[i] - m[i])
        b = 0.0 if m2[i] == -math.inf else math.exp(m2[i] - m[i])
        lsum[i] = a * l1[i] + b * l2[i]
        u[i] = a * u1[i] + b * u2[i]
    return m, lsum, u


def _tile_state(s: np.ndarray, v: np.ndarray):
    """(m, l, U) of one tile of scores s (rows) and its values v, by the definition."""
    m = s.max(axis=1)
    e = np.exp(s - m[:, None])
    return m, e.sum(axis=1), e @ v


def _merge_cases() -> list[_Case]:
    r = _rng(6)
    cases = []
    for name, scale in (("two tiles of 3 query rows", 1.0),
                        ("two tiles whose scores differ by hundreds", 300.0)):
        s1, s2 = r.normal(size=(3, 4)), r.normal(size=(3, 5))
        if scale > 1:
            s2 = s2 + scale
        v1, v2 = r.normal(size=(4, 2)), r.normal(size=(5, 2))
        args = (*_tile_state(s1, v1), *_tile_state(s2, v2))
        cases.append(_Case(name, args, _merge_ref(*args)))
    # a row that saw no key in the first tile: m = -inf, l = 0, U = 0
    s2, v2 = r.normal(size=(2, 3)), r.normal(size=(3, 2))
    m2, l2, u2 = _tile_state(s2, v2)
    args = (np.array([-np.inf, -np.inf]), np.zeros(2), np.zeros((2, 2)), m2, l2, u2)
    cases.append(_Case("a first tile that every key was masked in (m = -inf, l = 0)",
                       args, _merge_ref(*args)))
    return cases


def _repeat_kv_ref(kv: np.ndarray, h_q: int) -> np.ndarray:
    h_kv = kv.shape[0]
    group = h_q // h_kv
    return np.stack([kv[i // group] for i in range(h_q)])


def _repeat_kv_cases() -> list[_Case]:
    kv = np.arange(2 * 3 * 2, dtype=np.float64).reshape(2, 3, 2)
    one = _rng(7).normal(size=(1, 4, 3))
    return [_Case(f"{_count(a.shape[0], 'key/value head')} for {_count(h, 'query head')}", (a, h),
                  _repeat_kv_ref(a, h)) for a, h in ((kv, 6), (kv, 2), (one, 4), (kv, 4))]


def _top_p_ref(probs: np.ndarray, p: float) -> np.ndarray:
    order = sorted(range(len(probs)), key=lambda i: (-probs[i], i))
    kept, total = [], 0.0
    for i in order:
        if total >= p:
            break
        kept.append(i)
        total += probs[i]
    out = np.zeros(len(probs))
    for i in kept:
        out[i] = probs[i] / total
    return out


def _top_p_cases() -> list[_Case]:
    probs = np.array([0.1, 0.4, 0.05, 0.3, 0.15])
    r = _rng(8).random(12)
    r = r / r.sum()
    inputs = [(probs, 0.5, "p = 0.5 keeps the two most likely (0.4 + 0.3)"),
              (probs, 0.75, "p = 0.75 keeps three"),
              (probs, 1.0, "p = 1 keeps every token"),
              (probs, 0.01, "a tiny p keeps only the most likely"),
              (r, 0.9, "12 probabilities, p = 0.9")]
    return [_Case(name, (pr, p), _top_p_ref(pr, p)) for pr, p, name in inputs]


def _cross_entropy_ref(logits: np.ndarray, targets: np.ndarray) -> float:
    total = 0.0
    for row, t in zip(logits, targets, strict=True):
        m = max(row)
        lse = m + math.log(sum(math.exp(x - m) for x in row))
        total += lse - row[t]
    return np.float64(total / len(targets))


def _cross_entropy_cases() -> list[_Case]:
    r = _rng(9)
    cases = []
    for name, logits, targets in (
            ("4 positions over 5 tokens", r.normal(size=(4, 5)), np.array([0, 3, 3, 1])),
            ("one position, uniform logits over 10 tokens", np.zeros((1, 10)), np.array([7])),
            ("large logits (near 1000)", r.normal(size=(3, 4)) + 1000, np.array([2, 0, 1]))):
        cases.append(_Case(name, (logits, targets), _cross_entropy_ref(logits, targets)))
    return cases


def _softmax_backward_ref(p: np.ndarray, g: np.ndarray) -> np.ndarray:
    out = np.empty_like(p)
    for index in np.ndindex(p.shape[:-1]):
        pv, gv = p[index], g[index]
        n = len(pv)
        # the Jacobian diag(p) - p p^T, written out entry by entry
        out[index] = [sum(gv[i] * ((pv[i] if i == j else 0.0) - pv[i] * pv[j])
                          for i in range(n)) for j in range(n)]
    return out


def _softmax_backward_cases() -> list[_Case]:
    r = _rng(10)
    cases = []
    for name, shape in (("a vector of 4 weights", (4,)), ("a (3, 5) matrix of rows", (3, 5)),
                        ("a (2, 2, 3) array", (2, 2, 3))):
        p = _softmax_ref(r.normal(size=shape))
        g = r.normal(size=shape)
        cases.append(_Case(name, (p, g), _softmax_backward_ref(p, g)))
    return cases


def _layer_norm_ref(x, gamma, beta, eps=1e-5):
    out = np.empty_like(x)
    for index in np.ndindex(x.shape[:-1]):
        row = x[index]
        mu = sum(row) / len(row)
        var = sum((a - mu) ** 2 for a in row) / len(row)
        out[index] = [gamma[j] * (row[j] - mu) / math.sqrt(var + eps) + beta[j]
                      for j in range(len(row))]
    return out


def _layer_norm_cases() -> list[_Case]:
    r = _rng(11)
    cases = []
    for name, shape in (("a (3, 4) matrix, gain 1 and bias 0", (3, 4)),
                        ("a (2, 3, 6) array with a gain and a bias", (2, 3, 6))):
        x = r.normal(size=shape) * 3 + 1
        d = shape[-1]
        gamma, beta = ((np.ones(d), np.zeros(d)) if len(shape) == 2 else
                       (r.normal(size=d), r.normal(size=d)))
        cases.append(_Case(name, (x, gamma, beta), _layer_norm_ref(x, gamma, beta)))
    x = np.array([[2.0, 2.0, 2.0, 2.0]])
    g, b = np.ones(4), np.arange(4.0)
    cases.append(_Case("a constant row [2, 2, 2, 2] (variance 0)", (x, g, b),
                       _layer_norm_ref(x, g, b)))
    return cases


def _positions_ref(n: int, d: int) -> np.ndarray:
    out = np.zeros((n, d))
    for p in range(n):
        for j in range(d):
            i = j // 2
            angle = p / 10000 ** (2 * i / d)
            out[p, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return out


def _positions_cases() -> list[_Case]:
    return [_Case(f"{_count(n, 'position')}, d = {d}", (n, d), _positions_ref(n, d))
            for n, d in ((1, 4), (6, 8), (50, 16), (3, 2))]


def _recurrence_ref(x, w_h, w_x):
    h = np.zeros(w_h.shape[0])
    states = []
    for t in range(x.shape[0]):
        h = np.tanh(h @ w_h + x[t] @ w_x)
        states.append(h)
    return np.array(states).reshape(x.shape[0], w_h.shape[0])


def _recurrence_cases() -> list[_Case]:
    r = _rng(12)
    cases = []
    for n, d_in, d_h in ((1, 3, 4), (6, 3, 4), (5, 2, 2)):
        x, w_h, w_x = r.normal(size=(n, d_in)), r.normal(size=(d_h, d_h)) * 0.5, \
            r.normal(size=(d_in, d_h))
        cases.append(_Case(f"{_count(n, 'step')}, inputs of {d_in}, states of {d_h}", (x, w_h, w_x),
                           _recurrence_ref(x, w_h, w_x)))
    return cases


def _projection_ref(x, w_q, w_k, w_v):
    def matmul(a, b):
        return np.array([[sum(a[i, c] * b[c, j] for c in range(a.shape[1]))
                          for j in range(b.shape[1])] for i in range(a.shape[0])])
    return matmul(x, w_q), matmul(x, w_k), matmul(x, w_v)


def _projection_cases() -> list[_Case]:
    r = _rng(13)
    cases = []
    for n, d, d_k, d_v in ((4, 3, 2, 2), (1, 4, 3, 5), (5, 6, 4, 3)):
        args = (r.normal(size=(n, d)), r.normal(size=(d, d_k)), r.normal(size=(d, d_k)),
                r.normal(size=(d, d_v)))
        cases.append(_Case(f"{_count(n, 'token')} of width {d}, d_k = {d_k}, d_v = {d_v}", args,
                           _projection_ref(*args)))
    return cases


def _ov_circuit_ref(w_e, w_v, w_o, n_heads):
    vocab, d = w_e.shape
    e = d // n_heads
    out = np.zeros((n_heads, vocab, vocab))
    for head in range(n_heads):
        cols = range(head * e, (head + 1) * e)  # head's columns of W_V, rows of W_O
        for a in range(vocab):
            # what token a, attended to, writes into the stream: w_e[a] W_V^(i) W_O^(i)
            value = [sum(w_e[a, r] * w_v[r, c] for r in range(d)) for c in cols]
            written = [sum(value[j] * w_o[c, m] for j, c in enumerate(cols)) for m in range(d)]
            for b in range(vocab):  # ... read out as token b's logit
                out[head, a, b] = sum(written[m] * w_e[b, m] for m in range(d))
    return out


def _ov_circuit_cases() -> list[_Case]:
    r = _rng(14)
    cases = []
    for vocab, d, h in ((5, 4, 2), (3, 6, 3), (4, 4, 1), (6, 8, 4)):
        args = (r.normal(size=(vocab, d)), r.normal(size=(d, d)), r.normal(size=(d, d)), h)
        cases.append(_Case(f"{vocab} tokens, d_model = {d}, {_count(h, 'head')}", args,
                           _ov_circuit_ref(*args)))
    return cases


def _restored_fraction_ref(clean, corrupt, patched):
    n = len(clean)
    mean_clean = sum(float(x) for x in clean) / n  # each run's mean over the pairs, first
    mean_corrupt = sum(float(x) for x in corrupt) / n
    mean_patched = sum(float(x) for x in patched) / n
    return np.float64((mean_patched - mean_corrupt) / (mean_clean - mean_corrupt))


def _restored_fraction_cases() -> list[_Case]:
    r = _rng(15)
    inputs = [
        ("3 pairs whose clean and corrupt runs differ by 4 in each",
         [3.0, 2.0, 1.5], [-1.0, -2.0, -2.5], [1.0, 0.0, 0.5]),
        ("4 pairs, one whose clean and corrupt runs differ by only 0.01",
         [5.0, 4.0, 6.0, 0.51], [-5.0, -4.0, -6.0, 0.5], [0.0, 1.0, -2.0, 0.9]),
        ("2 pairs patched past the clean run (more than 1 restored)",
         [2.0, 3.0], [-2.0, -1.0], [4.0, 5.0]),
        ("a single pair", [8.0], [-6.0], [1.0]),
    ]
    clean = r.normal(6.0, 3.0, size=500)
    corrupt = -r.normal(6.0, 3.0, size=500)
    inputs.append(("500 random pairs", clean, corrupt, corrupt + r.random(500) * (clean - corrupt)))
    cases = []
    for name, *arrays in inputs:
        args = tuple(np.asarray(a, dtype=np.float64) for a in arrays)
        cases.append(_Case(name, args, _restored_fraction_ref(*args)))
    return cases


def _sae_encode_ref(x, w_enc, b_enc, b_dec):
    d, m = w_enc.shape
    out = np.zeros((len(x.reshape(-1, d)), m))
    for i, row in enumerate(x.reshape(-1, d)):  # a single row (d,) is one row
        centred = [row[c] - b_dec[c] for c in range(d)]  # x - b_dec, before the product
        for j in range(m):
            out[i, j] = max(sum(centred[c] * w_enc[c, j] for c in range(d)) + b_enc[j], 0.0)
    return out.reshape(m) if x.ndim == 1 else out


def _sae_encode_cases() -> list[_Case]:
    r = _rng(16)

    def case(name, n, d, m, b_dec=True, bound=0.0):
        """Rows x (n, d), or one row (d,) if n = 0; every pre-activation above ``bound`` if
        it is positive, below it if negative (b_enc chosen so), either sign if 0."""
        x, w_enc, b_enc = r.normal(size=(n, d) if n else d), r.normal(size=(d, m)), \
            r.normal(size=m)
        b_dec = r.normal(size=d) * 2 if b_dec else np.zeros(d)
        pre = (x - b_dec).reshape(-1, d) @ w_enc  # (rows, m), before b_enc
        if bound:
            b_enc = bound + r.random(m) - pre.min(axis=0) if bound > 0 else \
                bound - r.random(m) - pre.max(axis=0)
        return _Case(name, (x, w_enc, b_enc, b_dec), _sae_encode_ref(x, w_enc, b_enc, b_dec))

    shapes = "x of shape (4, 3), w_enc of shape (3, 5)"
    return [case(f"{shapes}, b_dec = 0 and every pre-activation above 1", 4, 3, 5, False, 1.0),
            case(f"{shapes}, a nonzero b_dec and every pre-activation above 1", 4, 3, 5,
                 bound=1.0),
            case("every pre-activation negative (every feature is 0)", 3, 3, 5, bound=-0.1),
            case("x of shape (6, 3), w_enc of shape (3, 5), pre-activations of both signs",
                 6, 3, 5),
            case("a single row x of shape (3,), w_enc of shape (3, 5) (the features have "
                 "shape (5,))", 0, 3, 5),
            case("x of shape (10, 8) into 32 features", 10, 8, 32)]


_TASKS: dict[str, _Task] = {
    "qkv_projection": _Task(
        "fn(x, w_q, w_k, w_v) -> (q, k, v): the rows of x times each weight matrix",
        "each token is a row of x, so its query is that row times W_Q: x @ w_q",
        _projection_cases),
    "attention": _Task(
        "fn(q, k, v) -> (n_q, d_v): softmax(q k^T / sqrt(d_k)) v, every query sees every key",
        "scores = q @ k.T / sqrt(d_k) has one row per query, d_k = q.shape[-1]; softmax "
        "each row (subtract the row's maximum before exp), then multiply by v",
        lambda: _attention_cases(causal=False)),
    "softmax": _Task(
        "fn(z) -> softmax of z over its last axis, for any shape",
        "subtract each row's maximum (z.max(axis=-1, keepdims=True)) before exp, and sum "
        "with axis=-1, keepdims=True; exp(-inf) is 0",
        _softmax_cases),
    "causal_attention": _Task(
        "fn(q, k, v) -> (n, d_v): causal scaled dot-product attention, query i sees keys "
        "0..i",
        "scale by sqrt(d_k) = sqrt(q.shape[-1]); set the scores above the diagonal to -inf "
        "with np.where(np.tril(np.ones((n, n), bool)), scores, -np.inf) (multiplying by "
        "-inf gives 0 * -inf = nan), then softmax each row; the output has v's width",
        lambda: _attention_cases(causal=True)),
    "split_heads": _Task(
        "fn(x, num_heads) -> (num_heads, n, d / num_heads): head h takes columns "
        "h*d/num_heads onwards",
        "x.reshape(n, num_heads, d // num_heads) puts each head's columns together; then "
        "move the head axis first (transpose(1, 0, 2))",
        _split_heads_cases),
    "recurrence": _Task(
        "fn(x, w_h, w_x) -> (n, d_h): the states of h_t = tanh(h_{t-1} w_h + x_t w_x), "
        "h_0 = 0",
        "rows are states: h @ w_h + x[t] @ w_x (the matrices act from the right, already "
        "transposed); start from zeros of length w_h.shape[0] and keep every state after "
        "the update, one per row of x",
        _recurrence_cases),
    "sinusoidal_positions": _Task(
        "fn(n, d) -> (n, d): PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(same)",
        "pair i holds entries 2i and 2i + 1 and shares one frequency 10000^(-2i/d); "
        "sines at even columns (pe[:, 0::2]), cosines at odd ones",
        _positions_cases),
    "softmax_backward": _Task(
        "fn(p, grad_p) -> grad_z: the gradient through p = softmax(z) along the last axis",
        "grad_z = p * (grad_p - sum(grad_p * p)), the sum along the last axis with "
        "keepdims=True",
        _softmax_backward_cases),
    "cross_entropy": _Task(
        "fn(logits, targets) -> mean over positions of -log softmax(logits)[target]",
        "log softmax = logits - max - log(sum(exp(logits - max))) along each row; pick each "
        "row's target with logits[np.arange(n), targets]; average",
        _cross_entropy_cases),
    "layer_norm": _Task(
        "fn(x, gamma, beta) -> gamma * (x - mean) / sqrt(var + 1e-5) + beta over the last "
        "axis",
        "mean and variance along axis=-1 with keepdims=True; the variance divides by d "
        "(np.var's default), and eps = 1e-5 goes inside the square root",
        _layer_norm_cases),
    "kv_cache_step": _Task(
        "fn(cache_k, cache_v, q, k, v) -> (out, new_cache_k, new_cache_v): append the new "
        "token's key and value, then attend with its query",
        "stack the new key under the cached ones (np.vstack([cache_k, k])), same for the "
        "value; the query sees every cached key and its own; out has length d_v",
        _kv_cache_cases),
    "online_softmax_merge": _Task(
        "fn(m1, l1, u1, m2, l2, u2) -> (m, l, u): merge two tiles' running max, running sum "
        "and unnormalised output",
        "m = max(m1, m2); rescale each tile's l and u by exp(m_tile - m); a tile with "
        "m = -inf contributes 0 (guard exp(-inf - -inf))",
        _merge_cases),
    "repeat_kv": _Task(
        "fn(kv, num_query_heads) -> (num_query_heads, n, d): query head i reads key/value "
        "head i // (num_query_heads / h_kv)",
        "each key/value head serves a group of consecutive query heads: np.repeat along "
        "axis 0 (not np.tile)",
        _repeat_kv_cases),
    "ov_circuit": _Task(
        "fn(w_e, w_v, w_o, n_heads) -> (n_heads, V, V): head i's OV circuit over the "
        "tokens, w_e W_V^(i) W_O^(i) w_e^T",
        "with e = d_model // n_heads, head i owns columns i*e:(i+1)*e of w_v and rows "
        "i*e:(i+1)*e of w_o; entry [i, a, b] is what token a, attended to, adds to the logit "
        "of token b through the tied read-out w_e.T",
        _ov_circuit_cases),
    "restored_fraction": _Task(
        "fn(clean, corrupt, patched) -> float: the fraction of the logit difference a patch "
        "restores, (mean(patched) - mean(corrupt)) / (mean(clean) - mean(corrupt))",
        "take each run's mean over the pairs first, then one ratio; a mean of each pair's "
        "own fraction lets a pair whose clean and corrupt runs nearly agree swamp the rest",
        _restored_fraction_cases),
    "sae_encode": _Task(
        "fn(x, w_enc, b_enc, b_dec) -> (n, m): a sparse autoencoder's features "
        "relu((x - b_dec) @ w_enc + b_enc); a single row x of shape (d,) gives (m,)",
        "b_dec has a row's length d: subtract it from x before the product with w_enc "
        "(d, m), add b_enc, then np.maximum(..., 0.0), so a negative pre-activation gives "
        "exactly 0",
        _sae_encode_cases),
    "top_p": _Task(
        "fn(probs, p) -> probabilities: keep the smallest set of most likely tokens whose "
        "probability reaches p, zero the rest, renormalise",
        "sort by probability, largest first; keep a token while the total before it is "
        "still below p; divide the kept probabilities by their sum",
        _top_p_cases),
}
