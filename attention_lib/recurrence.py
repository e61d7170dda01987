r"""A minimal recurrent network, for comparing recurrence with attention.

The recurrence is the plain (Elman) RNN

.. math:: h_t = \tanh(W h_{t-1} + U x_t), \qquad t = 1, \dots, n,

with one row per time step in the arrays. ``w`` (``d_h x d_h``) and ``u``
(``d_h x d_in``) act on column vectors (``w @ state``); in the book's
row-vector convention the same step reads
:math:`h_t = \tanh(h_{t-1} W^{\mathsf T} + x_t U^{\mathsf T})`.
Dimension letters used in the shape comments:

- ``n``     number of time steps (positions)
- ``d_in``  size of an input vector ``x_t``
- ``d_h``   size of the hidden state ``h_t``

Index ``t`` of an array holds position ``t + 1`` of the maths: ``h[0]`` is
:math:`h_1`, and ``h0`` is the state before the first step.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from ._validation import (
    as_real_array,
    common_float_dtype,
    compute_dtype,
    describe,
    index,
    positive_int,
    random_generator,
    real_number,
    square_matrix,
)

__all__ = [
    "recurrent_matrix",
    "rnn_forward",
    "rnn_jacobian_products",
    "rnn_step_jacobians",
    "rnn_sweep",
    "spectral_radius",
]


def spectral_radius(w: ArrayLike) -> float:
    r"""Largest absolute eigenvalue of a square matrix.

    Parameters
    ----------
    w : array_like, shape (d, d)

    Returns
    -------
    float
        :math:`\rho(W)`, as a Python float.

    Notes
    -----
    .. math:: \rho(W) = \max_k |\lambda_k(W)| .

    For a linear recurrence :math:`h_t = W h_{t-1}`, :math:`\|W^k\|` grows or
    shrinks like :math:`\rho(W)^k` for large :math:`k`.

    Examples
    --------
    >>> spectral_radius([[0.0, 2.0], [0.5, 0.0]])
    1.0
    """
    w = square_matrix(w, "w")
    w = w.astype(compute_dtype(common_float_dtype(w)), copy=False)  # eigvals has no float16
    return float(np.abs(np.linalg.eigvals(w)).max())


def recurrent_matrix(d_h: int, radius: float, rng: np.random.Generator) -> np.ndarray:
    r"""A random Gaussian ``(d_h, d_h)`` matrix rescaled to a given spectral radius.

    Parameters
    ----------
    d_h : int
        Size of the hidden state, at least 1.
    radius : float
        The spectral radius the matrix is scaled to, positive.
    rng : numpy.random.Generator
        Source of the random entries (pass a seeded generator).

    Returns
    -------
    numpy.ndarray, shape (d_h, d_h), float64

    Notes
    -----
    The entries are drawn from :math:`\mathcal N(0, 1)` and the matrix is
    multiplied by :math:`\rho / \rho(W_0)`, so that its largest absolute
    eigenvalue is exactly ``radius`` (up to rounding).

    Examples
    --------
    >>> w = recurrent_matrix(8, 0.9, np.random.default_rng(0))
    >>> w.shape, round(spectral_radius(w), 12)
    ((8, 8), 0.9)
    """
    d_h = positive_int(d_h, "d_h")
    radius = real_number(radius, "radius", minimum=0.0, strict_minimum=True)
    rng = random_generator(rng)
    w0 = rng.standard_normal((d_h, d_h))  # (d_h, d_h)
    return w0 * (radius / spectral_radius(w0))


def _scan(step: Callable[[np.ndarray, np.ndarray], np.ndarray], initial: np.ndarray,
          inputs: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[t] = step(out[t - 1], inputs[t])``, with ``initial`` before ``out[0]``.

    The one sequential loop of this module: step ``t`` needs the result of step ``t - 1``.
    """
    state = initial
    for t in range(len(inputs)):
        state = out[t] = step(state, inputs[t])
    return out


def _rnn_inputs(
    x: ArrayLike, w: ArrayLike, u: ArrayLike, h0: ArrayLike | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.dtype]:
    """Validate the RNN arguments; cast them to the dtype they are computed in.

    Returns ``x, w, u, h0`` and the dtype of the result (float32 stays float32; float16
    is computed in float32 and returned as float16; integers become float64).
    """
    x = as_real_array(x, "x", min_ndim=2)
    if x.ndim != 2:
        raise ValueError(f"x has {describe(x)}; expected a 2-D (n, d_in) array, one row per step")
    w = square_matrix(w, "w")
    d_h = w.shape[0]
    u = as_real_array(u, "u", min_ndim=2)
    if u.shape != (d_h, x.shape[1]):
        raise ValueError(
            f"u has {describe(u)}; expected (d_h, d_in) = ({d_h}, {x.shape[1]}) to map the "
            f"inputs x ({describe(x)}) to the hidden state of w ({describe(w)})"
        )
    if h0 is None:
        h0 = np.zeros(d_h, dtype=common_float_dtype(x, w, u))  # takes no part in the dtype
    h0 = as_real_array(h0, "h0")
    if h0.shape != (d_h,):
        raise ValueError(f"h0 has {describe(h0)}; expected ({d_h},), one hidden state")
    dtype = common_float_dtype(x, w, u, h0)
    work = compute_dtype(dtype)
    return (*(a.astype(work, copy=False) for a in (x, w, u, h0)), dtype)


def rnn_forward(
    x: ArrayLike, w: ArrayLike, u: ArrayLike, h0: ArrayLike | None = None
) -> np.ndarray:
    r"""Run the recurrence step by step and return every hidden state.

    Parameters
    ----------
    x : array_like, shape (n, d_in)
        The inputs, one row per time step.
    w : array_like, shape (d_h, d_h)
        Recurrent weights.
    u : array_like, shape (d_h, d_in)
        Input weights.
    h0 : array_like, shape (d_h,), optional
        State before the first step; zeros by default.

    Returns
    -------
    h : numpy.ndarray, shape (n, d_h)
        ``h[t]`` is the state after step ``t + 1``.

    Notes
    -----
    .. math:: h_t = \tanh(W h_{t-1} + U x_t).

    Evaluated this way the loop has depth :math:`n`: step :math:`t` needs
    :math:`h_{t-1}`, so :math:`n` steps take :math:`n` dependent rounds. (A
    *linear* recurrence admits a parallel scan of depth :math:`\lceil\log_2
    n\rceil`; a nonlinear one needs iterative methods, such as the sweeps of
    :func:`rnn_sweep` or Newton's method solved by scans.)
    The input terms :math:`U x_t` do not depend on the state and are computed
    for all steps in one product before the loop.

    Examples
    --------
    >>> h = rnn_forward([[1.0], [0.0]], [[0.5]], [[1.0]])
    >>> h.round(4)                     # tanh(1), then tanh(0.5 tanh(1))
    array([[0.7616],
           [0.3634]])
    """
    x, w, u, h0, dtype = _rnn_inputs(x, w, u, h0)
    drive = x @ u.T  # (n, d_in) @ (d_in, d_h) -> (n, d_h): U x_t for every t at once
    h = _scan(lambda state, drive_t: np.tanh(w @ state + drive_t),  # (d_h,)
              h0, drive, np.empty_like(drive))  # (n, d_h)
    return h.astype(dtype, copy=False)


def rnn_sweep(
    h_guess: ArrayLike,
    x: ArrayLike,
    w: ArrayLike,
    u: ArrayLike,
    h0: ArrayLike | None = None,
) -> np.ndarray:
    r"""Update every step at once from a guess of all the previous states.

    Parameters
    ----------
    h_guess : array_like, shape (n, d_h)
        A guess of the states :math:`h_1, \dots, h_n`.
    x, w, u, h0
        As in :func:`rnn_forward`.

    Returns
    -------
    numpy.ndarray, shape (n, d_h)
        :math:`\tanh(W g_{t-1} + U x_t)` for every ``t``, where :math:`g` is
        the guess shifted by one step and :math:`g_0 = h_0`.

    Notes
    -----
    This is the *parallel* way to attempt the recurrence: every step is
    computed simultaneously, each from the previous guess of its predecessor.
    One sweep makes :math:`h_1` exact; sweep :math:`r` makes :math:`h_r`
    exact, given that :math:`h_1, \dots, h_{r-1}` already were. So, from an
    arbitrary guess, up to :math:`n` sweeps are needed before all :math:`n`
    states are exact; a contracting recurrence gets within a tolerance in
    fewer, since the error of the guesses shrinks with every sweep.

    Examples
    --------
    >>> x, w, u = [[1.0], [0.0]], [[0.5]], [[1.0]]
    >>> once = rnn_sweep(np.zeros((2, 1)), x, w, u)
    >>> twice = rnn_sweep(once, x, w, u)
    >>> bool(np.array_equal(twice, rnn_forward(x, w, u)))
    True
    """
    x, w, u, h0, dtype = _rnn_inputs(x, w, u, h0)
    g = as_real_array(h_guess, "h_guess", min_ndim=2).astype(x.dtype, copy=False)
    if g.shape != (x.shape[0], w.shape[0]):
        raise ValueError(
            f"h_guess has {describe(g)}; expected (n, d_h) = ({x.shape[0]}, {w.shape[0]})"
        )
    previous = np.concatenate([h0[None, :], g[:-1]])  # (n, d_h): row t holds g_{t-1}
    return np.tanh(previous @ w.T + x @ u.T).astype(dtype, copy=False)  # (n, d_h)


def rnn_step_jacobians(h: ArrayLike, w: ArrayLike) -> np.ndarray:
    r"""Jacobians of each step's state with respect to the state before it.

    Parameters
    ----------
    h : array_like, shape (n, d_h)
        The states returned by :func:`rnn_forward`.
    w : array_like, shape (d_h, d_h)
        The recurrent weights used to compute them.

    Returns
    -------
    numpy.ndarray, shape (n, d_h, d_h)
        Entry ``t`` is :math:`\partial h_{t+1} / \partial h_t` in the maths'
        numbering (entry 0 is :math:`\partial h_1 / \partial h_0`).

    Notes
    -----
    Differentiating :math:`h_t = \tanh(W h_{t-1} + U x_t)` and using
    :math:`\tanh' = 1 - \tanh^2`:

    .. math:: J_t = \frac{\partial h_t}{\partial h_{t-1}}
              = \operatorname{diag}(1 - h_t^2)\, W .

    Examples
    --------
    >>> rnn_step_jacobians([[0.5]], [[2.0]])     # (1 - 0.25) * 2
    array([[[1.5]]])
    """
    w = square_matrix(w, "w")
    h = as_real_array(h, "h", min_ndim=2)
    if h.ndim != 2 or h.shape[1] != w.shape[0]:
        raise ValueError(f"h has {describe(h)}; expected (n, d_h) with d_h = {w.shape[0]}")
    dtype = common_float_dtype(h, w)
    h, w = h.astype(dtype, copy=False), w.astype(dtype, copy=False)
    return (1 - h**2)[:, :, None] * w[None, :, :]  # (n, d_h, 1) * (1, d_h, d_h)


def rnn_jacobian_products(h: ArrayLike, w: ArrayLike, source: int = 0) -> np.ndarray:
    r"""Jacobians of every later state with respect to one earlier state.

    Parameters
    ----------
    h, w : array_like, shapes (n, d_h) and (d_h, d_h)
        The states and the recurrent weights, as in :func:`rnn_step_jacobians`.
    source : int, default 0
        Array index of the state differentiated against.

    Returns
    -------
    numpy.ndarray, shape (n - source, d_h, d_h)
        Entry ``k`` is the Jacobian of ``h[source + k]`` with respect to
        ``h[source]``, a product of ``k`` step Jacobians; entry 0 is the
        identity.

    Notes
    -----
    By the chain rule, with :math:`J_t` from :func:`rnn_step_jacobians`,

    .. math:: \frac{\partial h_{s+k}}{\partial h_s}
              = J_{s+k} J_{s+k-1} \cdots J_{s+1} .

    A gradient that reaches :math:`h_{s+k}` is multiplied by the transpose
    of this product on its way back to :math:`h_s`, so its norm is bounded by
    the product's largest singular value.

    Examples
    --------
    >>> h = np.array([[0.0], [0.5], [0.5]])
    >>> rnn_jacobian_products(h, [[2.0]])[:, 0, 0]     # 1, 1.5, 1.5 * 1.5
    array([1.  , 1.5 , 2.25])
    """
    jac = rnn_step_jacobians(h, w)  # (n, d_h, d_h)
    n, d_h = jac.shape[:2]
    source = index(source, n, "source")
    products = np.empty((n - source, d_h, d_h), dtype=jac.dtype)  # (n - source, d_h, d_h)
    products[0] = np.eye(d_h, dtype=jac.dtype)
    # products[k] = J_{s+k} products[k - 1] = J_{s+k} (J_{s+k-1} ... J_{s+1})
    _scan(lambda product, jac_k: jac_k @ product, products[0], jac[source + 1:], products[1:])
    return products
