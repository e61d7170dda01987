"""How saturated a softmax is: its Jacobian, its entropy, and both along a scale.

When the scores grow, softmax weights approach a one-hot vector. Two numbers
measure how far along that road a row of weights is: its *entropy* (``log n``
for uniform weights, 0 for one-hot) and the size of the softmax *Jacobian*
``diag(p) - p p^T`` (the factor every gradient through the softmax is
multiplied by; it vanishes at a one-hot vector). This module computes both,
over the last axis, for any batch of rows.

Dimension letters used in the shape comments:

- ``...``  leading batch axes
- ``n``    number of entries in one row of weights (number of keys)
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ._validation import as_real_array, check_flag, common_float_dtype, describe, positive_int
from .attention import project_qkv, scaled_scores
from .softmax import softmax

__all__ = ["SaturationStats", "entropy", "projection_scale_weights", "saturation_scores",
           "saturation_stats", "softmax_jacobian"]


def _as_probabilities(p: ArrayLike, name: str = "p") -> np.ndarray:
    """``p`` as a float array whose rows (last axis) are probability vectors, or raise."""
    a = as_real_array(p, name, min_ndim=1)
    a = a.astype(common_float_dtype(a), copy=False)
    if (a < 0).any():
        first = tuple(int(i) for i in np.argwhere(a < 0)[0])
        raise ValueError(
            f"{name} has a negative entry at index {first} ({describe(a)}); expected "
            "probabilities (non-negative, each row summing to one), e.g. softmax weights"
        )
    # Softmax output sums to one up to rounding; scores or unnormalised rows do not.
    tol = 10 * float(np.sqrt(np.finfo(a.dtype).eps))
    sums = a.sum(axis=-1)  # (...)
    bad = np.abs(sums - 1) > tol
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0]) if sums.ndim else ()
        raise ValueError(
            f"{name} has a row (last axis) summing to {float(sums[first]):.6g} at index "
            f"{first} ({describe(a)}); expected every row to sum to one (within {tol:.1e}). "
            "Pass softmax weights, not scores"
        )
    return a


def softmax_jacobian(p: ArrayLike) -> np.ndarray:
    r"""Jacobian of the softmax at the weights ``p``: ``diag(p) - p p^T``, batched.

    Parameters
    ----------
    p : array_like, shape (..., n)
        Softmax weights: every row (last axis) non-negative and summing to one.
        Leading axes are batch axes. float32 stays float32.

    Returns
    -------
    numpy.ndarray, shape (..., n, n)
        ``J[..., i, j]`` is :math:`\partial p_i / \partial s_j`, the change of
        weight ``i`` per unit change of score ``j``.

    Notes
    -----
    With :math:`p = \operatorname{softmax}(s)`,

    .. math::

        \frac{\partial p_i}{\partial s_j} = p_i(\delta_{ij} - p_j),
        \qquad J = \operatorname{diag}(p) - p p^{\mathsf T}.

    ``J`` is symmetric, positive semi-definite, and every row sums to zero
    (adding a constant to all scores changes nothing). Every entry has
    magnitude at most 1/4. At a one-hot ``p`` it is the zero matrix: a
    saturated softmax passes no gradient back to its scores.

    Examples
    --------
    >>> softmax_jacobian([0.5, 0.5])
    array([[ 0.25, -0.25],
           [-0.25,  0.25]])
    >>> softmax_jacobian([1.0, 0.0, 0.0])
    array([[0., 0., 0.],
           [0., 0., 0.],
           [0., 0., 0.]])
    >>> softmax_jacobian(np.full((2, 3), 1 / 3)).shape
    (2, 3, 3)
    """
    a = _as_probabilities(p)  # (..., n)
    outer = a[..., :, None] * a[..., None, :]  # (..., n, 1) * (..., 1, n) -> (..., n, n)
    diagonal = np.eye(a.shape[-1], dtype=a.dtype) * a[..., None, :]  # (..., n, n)
    return diagonal - outer


def entropy(p: ArrayLike) -> np.ndarray:
    r"""Shannon entropy (natural log) of each row of weights, with 0 log 0 = 0.

    Parameters
    ----------
    p : array_like, shape (..., n)
        Probabilities: every row (last axis) non-negative and summing to one.

    Returns
    -------
    numpy.ndarray, shape (...)
        The entropy of each row, in nats: 0 for a one-hot row, ``log n`` for a
        uniform row of ``n`` entries. A 1-D ``p`` gives a 0-D array.

    Notes
    -----
    .. math:: H(p) = -\sum_{j=1}^{n} p_j \log p_j, \qquad 0 \log 0 := 0,

    the limit of :math:`x \log x` as :math:`x \to 0`. :math:`e^{H}` is the
    "effective number of keys" a row attends to (between 1 and ``n``).

    Examples
    --------
    >>> float(entropy([0.25, 0.25, 0.25, 0.25]))  # log 4
    1.3862943611198906
    >>> float(entropy([1.0, 0.0, 0.0]))
    0.0
    >>> entropy([[0.5, 0.5], [1.0, 0.0]]).round(4)
    array([0.6931, 0.    ])
    """
    a = _as_probabilities(p)  # (..., n)
    safe = np.where(a > 0, a, 1)  # log(1) = 0 gives 0 log 0 = 0
    # Adding 0.0 turns the -0.0 of a one-hot row into 0.0.
    return -np.sum(a * np.log(safe), axis=-1) + 0.0  # (...)


class SaturationStats(NamedTuple):
    """Weights of ``softmax(scale * scores)`` and how saturated they are (see
    :func:`saturation_stats`)."""

    weights: np.ndarray  # (..., n)
    entropy: np.ndarray  # (...)
    jacobian_norm: np.ndarray  # (...), Frobenius norm of diag(p) - p p^T
    jacobian_max: np.ndarray  # (...), largest |entry| of diag(p) - p p^T


def saturation_stats(scores: ArrayLike, scale: float | ArrayLike = 1.0) -> SaturationStats:
    r"""Softmax weights of ``scale * scores`` with their entropy and Jacobian size.

    Parameters
    ----------
    scores : array_like, shape (..., n)
        Rows of attention scores (softmax over the last axis).
    scale : float or array_like, default 1.0
        Multiplier of the scores (an inverse temperature), broadcast against
        the leading axes: pass ``np.array(scales)[:, None]`` with 1-D
        ``scores`` to get one row per scale.

    Returns
    -------
    SaturationStats
        ``weights`` (..., n); ``entropy``, ``jacobian_norm`` (Frobenius norm
        of :math:`J`) and ``jacobian_max`` (largest :math:`|J_{ij}|`), each
        of shape (...).

    Notes
    -----
    .. math::

        p = \operatorname{softmax}(c\, s), \qquad
        H = -\sum_j p_j \log p_j, \qquad
        J = \operatorname{diag}(p) - p p^{\mathsf T},

    with :math:`c` the scale. As :math:`c` grows (and the largest score is
    unique), :math:`p` tends to one-hot and :math:`H`, :math:`\|J\|_F` and
    :math:`\max_{ij} |J_{ij}|` all tend to 0.

    Examples
    --------
    >>> st = saturation_stats([0.5, 0.3, 0.1, 0.2], scale=[[1.0], [100.0]])
    >>> st.weights.round(3)
    array([[0.31 , 0.253, 0.208, 0.229],
           [1.   , 0.   , 0.   , 0.   ]])
    >>> st.entropy.round(3), st.jacobian_max.round(4)
    (array([1.375, 0.   ]), array([0.2138, 0.    ]))
    """
    s = as_real_array(scores, "scores", min_ndim=1)
    c = as_real_array(scale, "scale", min_ndim=0)
    dtype = common_float_dtype(s, c) if c.ndim else common_float_dtype(s)
    with np.errstate(over="ignore"):  # an overflow is reported just below
        scaled = s.astype(dtype, copy=False) * c.astype(dtype, copy=False)  # (..., n)
    if not np.isfinite(scaled).all():
        raise ValueError("scale * scores overflows; expected finite scaled scores")
    p = softmax(scaled, axis=-1)  # (..., n)
    jac = softmax_jacobian(p)  # (..., n, n)
    return SaturationStats(
        weights=p,
        entropy=entropy(p),
        jacobian_norm=np.sqrt(np.sum(jac * jac, axis=(-2, -1))),
        jacobian_max=np.abs(jac).max(axis=(-2, -1)),
    )


# --------------------------------------------------------------------------------------
# The numbers behind the explorers of chapters 3 and 4
# --------------------------------------------------------------------------------------


def projection_scale_weights(
    x: ArrayLike, w_q: ArrayLike, w_k: ArrayLike, scales: ArrayLike
) -> np.ndarray:
    r"""Attention weights after multiplying ``W_Q`` and ``W_K`` by each factor in ``scales``.

    The numbers of :func:`attention_lib.controls.projection_scale_explorer` (no plots).

    Parameters
    ----------
    x, w_q, w_k : array_like
        The tokens ``(..., n, d_model)`` and the query and key projections
        ``(d_model, d_k)``, as in :func:`~attention_lib.project_qkv` (the values play no
        part in the weights).
    scales : array_like, shape (n_scales,)
        The factors :math:`c`, finite real numbers; :math:`c` and :math:`-c`
        give the same weights.

    Returns
    -------
    numpy.ndarray, shape (n_scales, ..., n, n)
        ``weights[s]`` holds the attention weights (queries as rows, keys as
        columns) for :math:`c` = ``scales[s]``; every row sums to one.

    Notes
    -----
    Multiplying both projections by :math:`c` multiplies every query and
    every key by :math:`c`, hence every score by :math:`c^2`:

    .. math::

        \operatorname{softmax}\!\left(\frac{(cQ)(cK)^{\mathsf T}}{\sqrt{d_k}}\right)
        = \operatorname{softmax}\!\left(c^2\,\frac{Q K^{\mathsf T}}{\sqrt{d_k}}\right),
        \qquad Q = X W_Q,\; K = X W_K .

    :math:`c = 1` gives the plain attention weights and :math:`c = 0` the
    uniform weights :math:`1/n`. Softmax depends only on differences of
    scores, and those differences grow like :math:`c^2`, so as :math:`c`
    grows each row tends to a one-hot vector on its largest score (when that
    score is unique in the row).

    Examples
    --------
    >>> x = np.eye(2)                  # two tokens, d_model = 2
    >>> w = np.array([[1.0], [0.0]])   # d_k = 1: q = k = (1, 0) for the tokens
    >>> projection_scale_weights(x, w, w, [0.0, 1.0, 3.0])[:, 0].round(3)
    array([[0.5  , 0.5  ],
           [0.731, 0.269],
           [1.   , 0.   ]])
    """
    q, k, _ = project_qkv(x, w_q, w_k, w_k)  # w_k stands in for w_v, which is not used
    c = as_real_array(scales, "scales", min_ndim=1)
    if c.ndim != 1:
        raise ValueError(
            f"scales has shape {c.shape}; expected a 1-D sequence of factors, shape (n_scales,)"
        )
    scores = scaled_scores(q, k)  # (..., n, n)
    factor = (c.astype(scores.dtype) ** 2).reshape((-1,) + (1,) * scores.ndim)  # (S, 1, ..., 1)
    return softmax(factor * scores, axis=-1)  # (S, ..., n, n)


def saturation_scores(
    d_k: int,
    *,
    scale: float = 1.0,
    divide_by_sqrt_dk: bool = True,
    n_keys: int = 8,
    seed: int = 0,
) -> np.ndarray:
    r"""Scores of one random query against ``n_keys`` random keys (the saturation explorer's).

    The random rows of :func:`attention_lib.controls.saturation_explorer` (no plots).

    Parameters
    ----------
    d_k : int
        Size of the query and key vectors, at least 1.
    scale : float, default 1.0
        Extra multiplier :math:`c` of the scores (an inverse temperature).
    divide_by_sqrt_dk : bool, default True
        Divide the dot products by :math:`\sqrt{d_k}` (scaled dot-product
        attention) or not.
    n_keys : int, default 8
        Number of keys, at least 2.
    seed : int, default 0
        The draw for each ``d_k`` comes from ``np.random.default_rng([seed, d_k])``,
        so it does not change when ``scale`` or ``divide_by_sqrt_dk`` change.

    Returns
    -------
    numpy.ndarray, shape (n_keys,)

    Notes
    -----
    The query :math:`q` and the keys :math:`k_j` have independent standard
    normal coordinates, and

    .. math::

        s_j = c\,\frac{q \cdot k_j}{\sqrt{d_k}}
        \quad\text{or, undivided,}\quad s_j = c\; q \cdot k_j .

    Examples
    --------
    >>> s = saturation_scores(64)
    >>> s.shape
    (8,)
    >>> bool(np.allclose(saturation_scores(64, divide_by_sqrt_dk=False), 8 * s))
    True
    >>> bool(np.allclose(saturation_scores(64, scale=3.0), 3 * s))
    True
    """
    d_k = positive_int(d_k, "d_k", minimum=1)
    n_keys = positive_int(n_keys, "n_keys", minimum=2)
    c = float(as_real_array(scale, "scale", min_ndim=0))
    divide_by_sqrt_dk = check_flag(divide_by_sqrt_dk, "divide_by_sqrt_dk")
    rng = np.random.default_rng([positive_int(seed, "seed", minimum=0), d_k])
    q = rng.standard_normal(d_k)  # (d_k,)
    k = rng.standard_normal((n_keys, d_k))  # (n_keys, d_k)
    scores = k @ q  # (n_keys,)
    if divide_by_sqrt_dk:
        scores = scores / math.sqrt(d_k)
    return c * scores
