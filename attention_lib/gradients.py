r"""Gradients of softmax and of scaled dot-product attention (the backward pass).

The dimension letters of the shape comments are those of :mod:`attention_lib.attention`.

With :math:`S = Q K^{\mathsf T} / \sqrt{d_k}`, :math:`A = \operatorname{softmax}(S)`
(row by row) and :math:`Z = A V`, the backward pass takes the gradient of a
loss with respect to the output, :math:`dZ = \partial L / \partial Z`, and
returns the gradients with respect to the three inputs:

.. math::

    dV = A^{\mathsf T} dZ, \qquad dA = dZ\, V^{\mathsf T}, \qquad
    dS = A \odot \bigl(dA - \operatorname{rowsum}(dA \odot A)\bigr),

    dQ = dS\, K / \sqrt{d_k}, \qquad dK = dS^{\mathsf T} Q / \sqrt{d_k}.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from ._validation import as_real_array, common_float_dtype, compute_dtype, describe, normalise_axis
from .attention import attend, prepare_attention

__all__ = ["attention_backward", "softmax_vjp"]


def softmax_vjp(p: ArrayLike, grad: ArrayLike, axis: int = -1) -> np.ndarray:
    r"""Gradient with respect to the logits of softmax, given its output.

    This is the vector-Jacobian product of softmax (backward mode): with
    ``grad`` the gradient of a loss with respect to ``p``, it returns the
    gradient with respect to the logits. The softmax Jacobian is symmetric, so
    the same formula is also the Jacobian-vector product (forward mode): with
    ``grad`` a change of the logits, it returns the resulting change of ``p``.

    Parameters
    ----------
    p : array_like, shape (...)
        Softmax output along ``axis`` (non-negative, each slice summing to one,
        or all zero for a fully masked slice). Masked entries are 0 in ``p``
        and get 0 in the result.
    grad : array_like, shape of ``p``
        The gradient of a loss with respect to ``p`` (in attention, ``dA``),
        or, read as a JVP, a change of the logits.
    axis : int, default -1
        The softmax axis.

    Returns
    -------
    numpy.ndarray, shape of ``p``
        :math:`J^{\mathsf T} g = J g` for every slice along ``axis``; float32
        stays float32.

    Notes
    -----
    With :math:`J = \operatorname{diag}(p) - p p^{\mathsf T}` (``p`` as a
    column; for a row ``p`` the same matrix is written
    :math:`\operatorname{diag}(p) - p^{\mathsf T} p`), which is symmetric,

    .. math:: J^{\mathsf T} g = J g = p \odot \bigl(g - (p \cdot g)\,\mathbf 1\bigr),

    computed without forming the :math:`n \times n` matrix :math:`J`. The
    result of each slice sums to zero (shifting all logits equally does not
    change softmax).

    Examples
    --------
    >>> p = np.array([0.5, 0.25, 0.25])
    >>> softmax_vjp(p, np.array([1.0, 0.0, 0.0]))  # first row (= column) of J
    array([ 0.25 , -0.125, -0.125])
    >>> float(softmax_vjp(p, np.ones(3)).sum())  # a uniform shift changes nothing
    0.0
    """
    pa = as_real_array(p, "p")
    ga = as_real_array(grad, "grad")
    if pa.shape != ga.shape:
        raise ValueError(
            f"grad has {describe(ga)} but p has {describe(pa)}; expected the same shape"
        )
    ax = normalise_axis(axis, pa.ndim)
    dtype = common_float_dtype(pa, ga)
    work = compute_dtype(dtype)  # float16 is computed in float32
    return _vjp(pa.astype(work, copy=False), ga.astype(work, copy=False), ax).astype(dtype)


def _vjp(p: np.ndarray, g: np.ndarray, axis: int) -> np.ndarray:
    """:math:`p \\odot (g - p \\cdot g)` along ``axis``, without checks."""
    dot = np.sum(p * g, axis=axis, keepdims=True)  # (..., 1, ...): p . g per slice
    return p * (g - dot)


def _sum_to_shape(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum ``grad`` over the axes that broadcasting added to an input of ``shape``."""
    extra = grad.ndim - len(shape)
    if extra:
        grad = grad.sum(axis=tuple(range(extra)))  # axes the input did not have
    stretched = tuple(i for i, size in enumerate(shape) if size == 1 and grad.shape[i] != 1)
    if stretched:
        grad = grad.sum(axis=stretched, keepdims=True)  # axes of size 1 in the input
    return grad


def attention_backward(
    q: ArrayLike, k: ArrayLike, v: ArrayLike, grad_output: ArrayLike,
    mask: ArrayLike | None = None, *, causal: bool = False,
    fully_masked: Literal["raise", "zero"] = "raise",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Gradients of scaled dot-product attention with respect to q, k and v.

    Parameters
    ----------
    q, k, v : array_like, shapes (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v)
        As in :func:`~attention_lib.scaled_dot_product_attention`; leading
        axes are broadcast together.
    grad_output : array_like, shape (..., n_q, d_v)
        :math:`dZ`, the gradient of a scalar loss with respect to the output
        of attention, with the output's full (broadcast) shape.
    mask : array_like of bool, optional
        True = may attend, broadcastable to ``(..., n_q, n_k)``.
    causal : bool, default False
        Query ``i`` attends only to keys ``j <= i`` (queries are the last
        ``n_q`` positions when ``n_q < n_k``).
    fully_masked : {"raise", "zero"}, default "raise"
        As in :func:`~attention_lib.scaled_dot_product_attention`; a zeroed
        row is constant, so it contributes no gradient.

    Returns
    -------
    dq, dk, dv : numpy.ndarray, shapes of ``q``, ``k`` and ``v``
        An input whose leading axes were broadcast gets its gradient summed
        back over those axes (as every autodiff framework does). float32 stays
        float32; float16 is computed in float32 and returned as float16.

    Notes
    -----
    With :math:`A` the attention weights, :math:`dZ` the gradient with
    respect to the output and :math:`s = 1/\sqrt{d_k}`:

    .. math::

        dV = A^{\mathsf T} dZ, \quad dA = dZ\,V^{\mathsf T}, \quad
        dS = A \odot \bigl(dA - \operatorname{rowsum}(dA \odot A)\bigr), \quad
        dQ = s\, dS\, K, \quad dK = s\, dS^{\mathsf T} Q .

    A masked score has weight 0, so :math:`dS` is 0 there and no gradient
    flows through masked (query, key) pairs.

    Examples
    --------
    >>> q, k = np.array([[1.0, 0.0]]), np.eye(2)   # the example of scaled_dot_product_attention
    >>> v = np.array([[10.0], [20.0]])
    >>> dq, dk, dv = attention_backward(q, k, v, np.ones((1, 1)))
    >>> dv.round(4)  # each value's gradient is its attention weight
    array([[0.6698],
           [0.3302]])
    >>> dq.shape, dk.shape
    ((1, 2), (2, 2))
    """
    q, k, v, allowed, out_dtype = prepare_attention(q, k, v, mask, causal, fully_masked)
    d_out = as_real_array(grad_output, "grad_output", min_ndim=2)
    out, p = attend(q, k, v, allowed)  # (..., n_q, d_v), (..., n_q, n_k): a mask may add axes
    if d_out.shape != out.shape:
        raise ValueError(
            f"grad_output has {describe(d_out)}; expected the shape of the attention "
            f"output (..., n_q, d_v) = {out.shape}"
        )
    d_out = d_out.astype(out.dtype, copy=False)  # the dtype q, k, v are computed in
    grads = _backward_from_weights(q, k, v, p, d_out)
    return tuple(_sum_to_shape(g, a.shape).astype(out_dtype, copy=False)
                 for g, a in zip(grads, (q, k, v), strict=True))


def _backward_from_weights(q: np.ndarray, k: np.ndarray, v: np.ndarray, p: np.ndarray,
                           d_out: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The formulas of :func:`attention_backward` from the forward's weights ``p``, without
    checks: (dq, dk, dv) over the broadcast leading axes. A caller that kept the weights of
    its forward pass (the GPT's layers) skips computing them again."""
    scale = 1.0 / math.sqrt(q.shape[-1])  # a Python float keeps float32 float32
    d_v = np.swapaxes(p, -1, -2) @ d_out  # (..., n_k, n_q) @ (..., n_q, d_v)
    d_p = d_out @ np.swapaxes(v, -1, -2)  # (..., n_q, d_v) @ (..., d_v, n_k)
    d_s = _vjp(p, d_p, -1)  # (..., n_q, n_k)
    d_s *= scale
    d_q = d_s @ k  # (..., n_q, n_k) @ (..., n_k, d_k)
    d_k = np.swapaxes(d_s, -1, -2) @ q  # (..., n_k, n_q) @ (..., n_q, d_k)
    return d_q, d_k, d_v
