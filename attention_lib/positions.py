r"""Word order for attention: sinusoidal and rotary (RoPE) positions.

Dimension letters used in the shape comments:

- ``...``  leading batch / head axes
- ``n``    number of positions
- ``d``    size of a vector that gets a position (``d_model`` for sinusoidal
  positions added to embeddings, ``d_k`` for rotary positions applied to
  queries and keys)

Both schemes use the same frequencies. Pair ``i`` of a vector (its entries
``2i`` and ``2i + 1``) turns at the angular frequency

.. math:: \omega_i = \text{base}^{-2i/d}, \qquad i = 0, 1, \dots, \lceil d/2 \rceil - 1,

so the first pair turns by one radian per position and the last one almost not
at all.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._validation import (
    as_real_array,
    broadcast_shape,
    common_float_dtype,
    compute_dtype,
    describe,
    positive_int,
    real_number,
)

__all__ = ["apply_rotary", "position_frequencies", "sinusoidal_positions",
           "sinusoidal_shift_matrix"]


def position_frequencies(d: int, *, base: float = 10000.0) -> np.ndarray:
    r"""Angular frequency of each pair of entries: ``base ** (-2i / d)``.

    Parameters
    ----------
    d : int
        Size of the vectors, at least 1.
    base : float, default 10000.0
        Ratio between the slowest and the fastest wavelength (roughly).

    Returns
    -------
    numpy.ndarray of float64, shape (ceil(d / 2),)
        :math:`\omega_i` for pair ``i`` = entries ``2i`` and ``2i + 1``.

    Notes
    -----
    .. math:: \omega_i = \text{base}^{-2i/d} .

    Examples
    --------
    >>> position_frequencies(4, base=100.0)
    array([1. , 0.1])
    """
    d = positive_int(d, "d")
    b = real_number(base, "base", minimum=1.0, strict_minimum=True)
    i = np.arange((d + 1) // 2, dtype=np.float64)  # (ceil(d/2),)
    return b ** (-2.0 * i / d)


def sinusoidal_positions(n: int, d: int, *, base: float = 10000.0) -> np.ndarray:
    r"""The Transformer paper's sinusoidal position encodings, one row per position.

    Parameters
    ----------
    n : int
        Number of positions (0, 1, ..., n - 1), at least 1.
    d : int
        Size of each encoding (the model's ``d_model``), at least 1. An odd
        ``d`` ends with a sine column.
    base : float, default 10000.0

    Returns
    -------
    numpy.ndarray of float64, shape (n, d)
        Sines in the even columns, cosines in the odd ones.

    Notes
    -----
    For position :math:`p` and pair :math:`i`,

    .. math::

        PE(p, 2i) = \sin\bigl(p / \text{base}^{2i/d}\bigr), \qquad
        PE(p, 2i+1) = \cos\bigl(p / \text{base}^{2i/d}\bigr).

    Every row has squared norm :math:`d/2` for even :math:`d`, and the dot
    product of two rows depends only on the distance between their positions:
    :math:`PE(p) \cdot PE(p+k) = \sum_i \cos(k\,\omega_i)`.

    Examples
    --------
    >>> sinusoidal_positions(3, 4).round(4)
    array([[ 0.    ,  1.    ,  0.    ,  1.    ],
           [ 0.8415,  0.5403,  0.01  ,  1.    ],
           [ 0.9093, -0.4161,  0.02  ,  0.9998]])
    """
    n = positive_int(n, "n")
    d = positive_int(d, "d")
    omega = position_frequencies(d, base=base)  # (ceil(d/2),)
    angles = np.arange(n, dtype=np.float64)[:, None] * omega  # (n, ceil(d/2))
    pe = np.empty((n, d), dtype=np.float64)
    pe[:, 0::2] = np.sin(angles)  # (n, ceil(d/2))
    pe[:, 1::2] = np.cos(angles[:, : d // 2])  # (n, floor(d/2))
    return pe


def sinusoidal_shift_matrix(k: float, d: int, *, base: float = 10000.0) -> np.ndarray:
    r"""The block-diagonal rotation that moves every sinusoidal encoding ``k`` positions on.

    Parameters
    ----------
    k : float
        The shift (any real number; an integer for whole positions).
    d : int
        Size of the encodings, even.
    base : float, default 10000.0

    Returns
    -------
    numpy.ndarray of float64, shape (d, d)
        :math:`M_k` such that :math:`PE(p + k) = M_k\, PE(p)` for every
        position :math:`p` (encodings as column vectors).

    Notes
    -----
    With :math:`(s, c) = (\sin p\omega_i, \cos p\omega_i)` the angle-addition
    formulas give, pair by pair,

    .. math::

        \begin{pmatrix} \sin (p+k)\omega_i \\ \cos (p+k)\omega_i \end{pmatrix}
        = \begin{pmatrix} \cos k\omega_i & \sin k\omega_i \\
                          -\sin k\omega_i & \cos k\omega_i \end{pmatrix}
          \begin{pmatrix} s \\ c \end{pmatrix},

    one :math:`2 \times 2` block per pair, independent of :math:`p`.

    Examples
    --------
    >>> pe = sinusoidal_positions(10, 6)
    >>> m3 = sinusoidal_shift_matrix(3, 6)
    >>> bool(np.allclose(pe[2:7] @ m3.T, pe[5:10]))
    True
    """
    k = real_number(k, "k")
    d = positive_int(d, "d")
    if d % 2:
        raise ValueError(f"d={d} is odd; expected an even size (one 2 x 2 block per pair)")
    theta = k * position_frequencies(d, base=base)  # (d/2,)
    cos, sin = np.cos(theta), np.sin(theta)
    m = np.zeros((d, d), dtype=np.float64)
    idx = np.arange(0, d, 2)
    m[idx, idx] = cos
    m[idx, idx + 1] = sin
    m[idx + 1, idx] = -sin
    m[idx + 1, idx + 1] = cos
    return m


def apply_rotary(
    x: ArrayLike, positions: ArrayLike | None = None, *, base: float = 10000.0
) -> np.ndarray:
    r"""Rotary position embedding (RoPE): turn each pair of entries by its position's angle.

    Parameters
    ----------
    x : array_like, shape (..., n, d)
        Queries or keys, one row per position; ``d`` must be even.
    positions : array_like, shape (n,) or broadcastable to x.shape[:-1], optional
        The position of every row (integers or reals, finite). Defaults to
        ``0, 1, ..., n - 1`` along axis -2.
    base : float, default 10000.0

    Returns
    -------
    numpy.ndarray, shape and dtype of ``x``
        float32 stays float32; float16 is computed in float32 and returned as
        float16; integer input is computed in float64.

    Notes
    -----
    Row :math:`x` at position :math:`p`, pair :math:`i`, angle
    :math:`\theta = p\,\omega_i` with :math:`\omega_i = \text{base}^{-2i/d}`:

    .. math::

        \begin{pmatrix} x'_{2i} \\ x'_{2i+1} \end{pmatrix}
        = \begin{pmatrix} \cos\theta & -\sin\theta \\ \sin\theta & \cos\theta \end{pmatrix}
          \begin{pmatrix} x_{2i} \\ x_{2i+1} \end{pmatrix}.

    Rotations keep norms, and :math:`R_m^{\mathsf T} R_n = R_{n-m}`, so the
    score between a query rotated to position :math:`m` and a key rotated to
    :math:`n` depends on the positions only through :math:`m - n`.

    Examples
    --------
    >>> apply_rotary(np.array([[1.0, 0.0], [1.0, 0.0]])).round(4)  # positions 0, 1
    array([[1.    , 0.    ],
           [0.5403, 0.8415]])
    >>> apply_rotary(np.ones((3, 4), dtype=np.float32)).dtype
    dtype('float32')
    """
    xa = as_real_array(x, "x", min_ndim=2)
    dtype = common_float_dtype(xa)
    work = compute_dtype(dtype)  # float16 is computed in float32
    xa = xa.astype(work, copy=False)
    n, d = xa.shape[-2], xa.shape[-1]
    if d % 2:
        raise ValueError(
            f"x has {describe(xa)}: its last axis d={d} is odd; expected an even d, "
            "since rotary positions turn pairs of entries"
        )
    if positions is None:
        pos = np.arange(n, dtype=np.float64)  # (n,)
    else:
        pa = as_real_array(positions, "positions")
        if pa.shape[-1] != n:
            raise ValueError(
                f"positions has {describe(pa)}; expected one position per row of x, "
                f"shape (n,) or (..., n) with n={n}"
            )
        if broadcast_shape(pa.shape, xa.shape[:-1]) != xa.shape[:-1]:
            raise ValueError(
                f"positions has {describe(pa)}, which does not broadcast to the rows of x "
                f"{xa.shape[:-1]}; expected a shape broadcastable to (..., n)"
            )
        pos = pa.astype(np.float64)
    omega = position_frequencies(d, base=base)  # (d/2,)
    theta = pos[..., None] * omega  # (..., n, d/2)
    cos = np.cos(theta).astype(work, copy=False)
    sin = np.sin(theta).astype(work, copy=False)
    even, odd = xa[..., 0::2], xa[..., 1::2]  # (..., n, d/2) each
    out = np.empty(xa.shape, dtype=work)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out.astype(dtype, copy=False)
