r"""Counting the cost of attention: FLOPs, bytes, and measured time.

Conventions used throughout:

- A matrix product of an ``(m, k)`` by a ``(k, p)`` matrix costs
  :math:`2 m k p` floating-point operations (FLOPs): one multiply and one add
  for each of the :math:`k` terms of each of the :math:`m p` entries.
  Only matrix products are counted; softmax, tanh, biases and normalisation
  are lower-order terms and are left out.
- ``n`` is a number of positions (tokens), ``d_model`` the width of a
  transformer layer. With ``h`` heads of size ``d_head = d_model / h`` the
  attention FLOPs do not depend on ``h``: ``h`` heads of size ``d_head`` cost
  the same as one head of size ``d_model``.
- Under a causal mask a query only meets the keys at or before it, so only the
  allowed (query, key) pairs are counted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from ._validation import as_real_array, describe

__all__ = [
    "AttentionFlops",
    "LayerFlops",
    "attention_flops",
    "best_time",
    "causal_pairs",
    "layer_flops",
    "power_law_fit",
    "rnn_flops",
    "score_matrix_bytes",
]


def _positive_int(value: Any, name: str) -> int:
    if not isinstance(value, int | np.integer) or isinstance(value, bool):
        raise TypeError(f"{name}={value!r}; expected a positive integer")
    if value < 1:
        raise ValueError(f"{name}={value}; expected a positive integer")
    return int(value)


def causal_pairs(n_q: int, n_k: int | None = None) -> int:
    r"""Number of (query, key) pairs a causal mask allows.

    Parameters
    ----------
    n_q : int
        Number of queries, the last ``n_q`` of the ``n_k`` positions.
    n_k : int, optional
        Number of keys, at least ``n_q``; defaults to ``n_q``.

    Returns
    -------
    int

    Notes
    -----
    Query :math:`i` (counting from 1) sits at position :math:`i + n_k - n_q`
    and sees that many keys (the rule of :func:`attention_lib.causal_mask`):

    .. math:: \sum_{i=1}^{n_q} (i + n_k - n_q) = n_q (n_k - n_q) + \frac{n_q (n_q + 1)}{2},

    which is :math:`n (n + 1) / 2`, a little over half of :math:`n^2`, when
    :math:`n_q = n_k = n`.

    Examples
    --------
    >>> causal_pairs(4)            # 1 + 2 + 3 + 4
    10
    >>> causal_pairs(1, 128)       # one new token sees the whole prefix
    128
    """
    n_q = _positive_int(n_q, "n_q")
    n_k = n_q if n_k is None else _positive_int(n_k, "n_k")
    if n_q > n_k:
        raise ValueError(f"n_q={n_q} > n_k={n_k}; a causal mask needs n_q <= n_k")
    return n_q * (n_k - n_q) + n_q * (n_q + 1) // 2


class AttentionFlops(NamedTuple):
    """FLOPs of one attention call, split by matrix product."""

    scores: int
    """Q @ K^T."""
    mix: int
    """weights times :math:`V`."""

    @property
    def total(self) -> int:
        """``scores + mix``."""
        return self.scores + self.mix


def attention_flops(
    n_q: int, n_k: int, d_k: int, d_v: int | None = None, *, causal: bool = False
) -> AttentionFlops:
    r"""FLOPs of the two matrix products of scaled dot-product attention.

    Parameters
    ----------
    n_q, n_k : int
        Number of queries and of keys.
    d_k : int
        Size of a query or key vector (summed over heads for multi-head
        attention).
    d_v : int, optional
        Size of a value vector; defaults to ``d_k``.
    causal : bool, default False
        Count only the pairs allowed by a causal mask (:func:`causal_pairs`).

    Returns
    -------
    AttentionFlops
        ``scores`` (:math:`QK^{\mathsf T}`), ``mix`` (weights @ V) and their
        ``total``.

    Notes
    -----
    Each allowed pair :math:`(i, j)` costs one dot product of length
    :math:`d_k` for its score and adds :math:`w_{ij} v_j` (length
    :math:`d_v`) to output :math:`i`:

    .. math:: \text{scores} = 2 P d_k, \qquad \text{mix} = 2 P d_v,

    with :math:`P = n_q n_k` pairs, or :math:`P` = ``causal_pairs(n_q, n_k)``.
    For self-attention over :math:`n` tokens this is :math:`2 n^2 d_k` each:
    quadratic in :math:`n`.

    Examples
    --------
    >>> attention_flops(4, 4, 3)
    AttentionFlops(scores=96, mix=96)
    >>> attention_flops(1, 1000, 128).total      # one new token, 1000 keys
    512000
    """
    n_q, n_k, d_k = (_positive_int(v, name) for v, name in
                     ((n_q, "n_q"), (n_k, "n_k"), (d_k, "d_k")))
    d_v = d_k if d_v is None else _positive_int(d_v, "d_v")
    if not isinstance(causal, bool | np.bool_):
        raise TypeError(f"causal={causal!r}; expected True or False")
    pairs = causal_pairs(n_q, n_k) if causal else n_q * n_k
    return AttentionFlops(scores=2 * pairs * d_k, mix=2 * pairs * d_v)


class LayerFlops(NamedTuple):
    """Forward FLOPs of one transformer layer over a sequence, by part."""

    projections: int
    """Q, K, V and output projections."""
    mlp: int
    """The two matrices of the feed-forward block."""
    attention: int
    """Scores and mixing (:func:`attention_flops`)."""

    @property
    def total(self) -> int:
        """All three parts."""
        return self.projections + self.mlp + self.attention

    @property
    def attention_share(self) -> float:
        """Fraction of the layer's FLOPs spent in scores and mixing."""
        return self.attention / self.total


def layer_flops(
    d_model: int, n: int, *, d_ff: int | None = None, causal: bool = False
) -> LayerFlops:
    r"""Forward FLOPs of one transformer layer applied to ``n`` tokens.

    Parameters
    ----------
    d_model : int
        Width of the layer (``n_heads * d_head``).
    n : int
        Number of tokens in the sequence.
    d_ff : int, optional
        Hidden width of the feed-forward block; defaults to ``4 * d_model``.
    causal : bool, default False
        Each token attends only to itself and the tokens before it.

    Returns
    -------
    LayerFlops
        ``projections``, ``mlp`` and ``attention`` FLOPs for the whole
        sequence, their ``total`` and the ``attention_share``. Divide by
        ``n`` for the cost per token.

    Notes
    -----
    The usual count (Kaplan et al. 2020, table 1), per token:

    .. math::

        \underbrace{8 d^2}_{W_Q, W_K, W_V, W_O}
        + \underbrace{4 d\, d_{ff}}_{\text{MLP}} \;(= 16 d^2)
        + \underbrace{4 n d}_{QK^{\mathsf T},\ AV}
        = 24 d^2 + 4 n d \quad (d_{ff} = 4d),

    where a token attending to :math:`n` keys pays :math:`4 n d`. Everything
    but attention is linear in :math:`n` over the sequence; attention is
    quadratic. With ``causal=True`` token :math:`t` sees :math:`t` keys, so
    the attention term over the sequence is :math:`4 d \cdot n(n+1)/2`, about
    half.

    Examples
    --------
    >>> f = layer_flops(4, 2)
    >>> f.projections, f.mlp, f.attention        # 8*16*2, 16*16*2, 4*2*4*2
    (256, 512, 64)
    >>> round(f.attention_share, 4)
    0.0769
    """
    d_model = _positive_int(d_model, "d_model")
    n = _positive_int(n, "n")
    d_ff = 4 * d_model if d_ff is None else _positive_int(d_ff, "d_ff")
    projections = 4 * (2 * n * d_model * d_model)  # Q, K, V, O: (n, d) @ (d, d) each
    mlp = 2 * n * d_model * d_ff + 2 * n * d_ff * d_model  # (n, d) @ (d, d_ff) @ (d_ff, d)
    attention = attention_flops(n, n, d_model, causal=causal).total
    return LayerFlops(projections=projections, mlp=mlp, attention=attention)


def rnn_flops(n: int, d_in: int, d_h: int) -> int:
    r"""FLOPs of the matrix products of :func:`attention_lib.rnn_forward`.

    Parameters
    ----------
    n : int
        Number of steps.
    d_in, d_h : int
        Input and hidden sizes.

    Returns
    -------
    int

    Notes
    -----
    Each step computes :math:`W h_{t-1}` (:math:`2 d_h^2`) and
    :math:`U x_t` (:math:`2 d_h d_{in}`):

    .. math:: 2 n d_h (d_h + d_{in}),

    linear in :math:`n`, but spread over :math:`n` dependent steps.

    Examples
    --------
    >>> rnn_flops(100, 8, 32)
    256000
    """
    n, d_in, d_h = (_positive_int(v, name) for v, name in
                    ((n, "n"), (d_in, "d_in"), (d_h, "d_h")))
    return 2 * n * d_h * (d_h + d_in)


def score_matrix_bytes(n_q: int, n_k: int, dtype: DTypeLike = np.float32) -> int:
    """Bytes of an ``(n_q, n_k)`` score (or weight) matrix.

    Parameters
    ----------
    n_q, n_k : int
        Number of queries and of keys.
    dtype : numpy dtype, default float32

    Returns
    -------
    int
        ``n_q * n_k * itemsize``, what ``scores.nbytes`` reports.

    Notes
    -----
    Per head and per sequence in a batch; a naive implementation holds at
    least one such matrix (the weights) for every head at once.

    Examples
    --------
    >>> score_matrix_bytes(4096, 4096) / 2**20        # MiB
    64.0
    """
    n_q, n_k = _positive_int(n_q, "n_q"), _positive_int(n_k, "n_k")
    return n_q * n_k * np.dtype(dtype).itemsize


def best_time(
    fn: Callable[[], Any], *, repeat: int = 5, timer: Callable[[], float] = time.perf_counter
) -> float:
    """Shortest wall-clock time of ``repeat`` calls of ``fn``, in seconds.

    Parameters
    ----------
    fn : callable taking no arguments
    repeat : int, default 5
    timer : callable returning seconds, default ``time.perf_counter``

    Returns
    -------
    float

    Notes
    -----
    The minimum is the least disturbed measurement: other processes and
    caches can only make a call slower. Times vary between machines and runs;
    never treat them as exact.

    Examples
    --------
    >>> ticks = iter([0.0, 3.0, 10.0, 11.0])          # a fake clock
    >>> best_time(lambda: None, repeat=2, timer=lambda: next(ticks))
    1.0
    """
    if not callable(fn):
        raise TypeError(f"fn is {type(fn).__name__}; expected a callable with no arguments")
    repeat = _positive_int(repeat, "repeat")
    best = float("inf")
    for _ in range(repeat):
        start = timer()
        fn()
        best = min(best, timer() - start)
    return best


def power_law_fit(x: ArrayLike, y: ArrayLike) -> tuple[float, float]:
    r"""Fit :math:`y = c\, x^p` by least squares on a log-log scale.

    Parameters
    ----------
    x, y : array_like, shape (m,)
        Positive values, at least two distinct ``x``.

    Returns
    -------
    exponent : float
        :math:`p`, the slope of :math:`\log y` against :math:`\log x`.
    prefactor : float
        :math:`c`.

    Notes
    -----
    .. math:: \log y = p \log x + \log c,

    fitted with ``np.polyfit(log x, log y, 1)``. Doubling :math:`x`
    multiplies :math:`y` by :math:`2^p`.

    Examples
    --------
    >>> p, c = power_law_fit([1, 2, 4], [3, 12, 48])
    >>> round(p, 6), round(c, 6)
    (2.0, 3.0)
    """
    x = as_real_array(x, "x")
    y = as_real_array(y, "y")
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"x has {describe(x)} and y {describe(y)}; expected two equal 1-D arrays")
    for name, a in (("x", x), ("y", y)):
        if (a <= 0).any():
            raise ValueError(f"{name} has non-positive values; a power law needs positive data")
    if np.unique(x).size < 2:
        raise ValueError("x has fewer than two distinct values; cannot fit a slope")
    slope, intercept = np.polyfit(np.log(x), np.log(y), 1)
    return float(slope), float(np.exp(intercept))
