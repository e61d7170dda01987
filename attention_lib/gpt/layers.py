r"""The GPT's layers, each a forward that saves what its backward needs, and that backward.

Every ``*_forward`` returns ``(output, saved)``; the matching ``*_backward`` takes the
gradient of the loss with respect to the output and ``saved``, and returns the gradient
with respect to the input (and a dict of parameter gradients where the layer has
parameters). The forwards compute what the book's functions compute
(:func:`~attention_lib.layer_norm`, :func:`~attention_lib.feed_forward` with GELU,
:func:`~attention_lib.scaled_dot_product_attention` with the causal mask,
:func:`~attention_lib.apply_rotary`); the tests hold them to it. Shapes: ``(B, T, d)``
for the residual stream, ``(B, h, T, d_head)`` inside attention.

Attention is causal self-attention unless told otherwise: the encoder and the decoder of
:mod:`attention_lib.training.encoder_decoder` use the same layer without the causal mask,
with a padding mask, and across to an encoder's output (cross-attention, whose backward,
:func:`cross_attention_backward_layer`, also returns the gradient of that output).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..attention import scaled_dot_product_attention
from ..gradients import _backward_from_weights
from ..multihead import merge_heads, split_heads
from ..positions import apply_rotary

__all__: list[str] = []

LN_EPS = 1e-5
_GELU_C = math.sqrt(2.0 / math.pi)


def layer_norm_forward(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray,
                       eps: float = LN_EPS) -> tuple[np.ndarray, tuple]:
    """Layer norm over the last axis (population variance), saving the normalised rows."""
    mu = x.mean(axis=-1, keepdims=True)  # (..., 1)
    centred = x - mu  # (..., d)
    var = np.mean(centred * centred, axis=-1, keepdims=True)  # (..., 1)
    rstd = 1.0 / np.sqrt(var + eps)  # (..., 1)
    xhat = centred * rstd  # (..., d)
    return xhat * gamma + beta, (xhat, rstd, gamma)


def layer_norm_backward(dy: np.ndarray, saved: tuple) -> tuple[np.ndarray, np.ndarray,
                                                                np.ndarray]:
    r"""``(dx, dgamma, dbeta)``.

    With :math:`\hat x = (x - \mu)\,r` and :math:`g = dy \odot \gamma`,
    :math:`dx = r\,\bigl(g - \overline{g} - \hat x\,\overline{g \odot \hat x}\bigr)`
    (bars are means over the row).
    """
    xhat, rstd, gamma = saved
    rows = dy.reshape(-1, dy.shape[-1])
    dgamma = np.einsum("rd,rd->d", rows, xhat.reshape(rows.shape))
    dbeta = rows.sum(axis=0)
    g = dy * gamma  # (..., d)
    dx = rstd * (g - g.mean(axis=-1, keepdims=True)
                 - xhat * np.mean(g * xhat, axis=-1, keepdims=True))
    return dx, dgamma, dbeta


def linear_backward(dy: np.ndarray, x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray,
                                                                         np.ndarray,
                                                                         np.ndarray]:
    """For ``y = x @ w + b`` over (..., n_in): ``(dx, dw, db)``."""
    x2 = x.reshape(-1, x.shape[-1])  # (rows, n_in)
    dy2 = dy.reshape(-1, dy.shape[-1])  # (rows, n_out)
    return dy @ w.T, x2.T @ dy2, dy2.sum(axis=0)


def gelu_forward(h: np.ndarray) -> tuple[np.ndarray, tuple]:
    """GELU, tanh approximation (GPT-2), saving the input and the tanh.

    Computed in place on two work arrays: a fresh temporary per operation costs more than
    the arithmetic on arrays this large.
    """
    inner = h * h  # h^2, then h + 0.044715 h^3 scaled: the argument of tanh
    inner *= h
    inner *= 0.044715
    inner += h
    inner *= _GELU_C
    t = np.tanh(inner, out=inner)
    out = t + 1.0
    out *= h
    out *= 0.5
    return out, (h, t)


def gelu_backward(dy: np.ndarray, saved: tuple) -> np.ndarray:
    r""":math:`g'(h) = \tfrac12(1 + t) + \tfrac12 h (1 - t^2)\,c\,(1 + 3 \cdot 0.044715 h^2)`."""
    h, t = saved
    slope = t * t
    np.subtract(1.0, slope, out=slope)  # 1 - t^2
    slope *= h
    slope *= 0.5 * _GELU_C
    work = h * h
    work *= 3 * 0.044715
    work += 1.0
    slope *= work
    np.multiply(t, 0.5, out=work)
    slope += work
    slope += 0.5
    slope *= dy
    return slope


def feed_forward_forward(x: np.ndarray, p: dict[str, np.ndarray],
                         prefix: str) -> tuple[np.ndarray, tuple]:
    """``GELU(x W_1 + b_1) W_2 + b_2`` over (B, T, d)."""
    hidden = x @ p[prefix + "w1"] + p[prefix + "b1"]  # (B, T, f)
    act, gelu_saved = gelu_forward(hidden)
    return act @ p[prefix + "w2"] + p[prefix + "b2"], (x, act, gelu_saved)


def feed_forward_backward(dy: np.ndarray, saved: tuple, p: dict[str, np.ndarray],
                          prefix: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    x, act, gelu_saved = saved
    d_act, dw2, db2 = linear_backward(dy, act, p[prefix + "w2"])
    d_hidden = gelu_backward(d_act, gelu_saved)
    dx, dw1, db1 = linear_backward(d_hidden, x, p[prefix + "w1"])
    return dx, {prefix + "w1": dw1, prefix + "b1": db1, prefix + "w2": dw2, prefix + "b2": db2}


def attention_forward(x: np.ndarray, p: dict[str, np.ndarray], prefix: str, n_heads: int,
                      rope: bool, head_scale: np.ndarray | None = None, *, causal: bool = True,
                      mask: np.ndarray | None = None, memory: np.ndarray | None = None,
                      weights_fn: Callable[[np.ndarray], np.ndarray] | None = None,
                      ) -> tuple[np.ndarray, np.ndarray, tuple]:
    """Multi-head attention over (B, T, d): ``(output, weights, saved)``.

    By default causal self-attention, as the GPT's blocks use it. ``causal=False`` lets
    every position see every other (an encoder); ``mask`` (bool, broadcastable to
    (B, h, T, S), True = may attend) hides keys too, e.g. the padding of shorter
    sequences; ``memory`` (B, S, d), when given, supplies the keys and values
    (cross-attention: queries from ``x``, keys and values from an encoder's output).
    ``weights`` has shape (B, h, T, S) (S = T for self-attention). ``head_scale`` (h,),
    when given, multiplies each head's output before the output projection (0 removes the
    head; forward only). ``weights_fn``, when given, receives the weights and returns
    the weights the heads then use (an experiment on a trained model; forward only).
    """
    source = x if memory is None else memory  # (B, S, d): what the keys and values read
    q = split_heads(x @ p[prefix + "w_q"] + p[prefix + "b_q"], n_heads)  # (B, h, T, d_head)
    k, v = (split_heads(source @ p[prefix + f"w_{m}"] + p[prefix + f"b_{m}"], n_heads)
            for m in "kv")  # (B, h, S, d_head) each
    if rope:
        if memory is not None:
            raise ValueError("rope=True with memory: rotary positions are for self-attention")
        q, k = apply_rotary(q), apply_rotary(k)  # positions 0 .. T-1 along axis -2
    heads, weights = scaled_dot_product_attention(q, k, v, mask, causal=causal)
    computed = weights  # what the backward pass differentiates (weights_fn is forward only)
    if weights_fn is not None:
        weights = weights_fn(weights)  # (B, h, T, S)
        heads = weights @ v  # (B, h, T, d_head)
    if head_scale is not None:
        heads = heads * head_scale[:, None, None]  # (h, 1, 1) against (B, h, T, d_head)
    merged = merge_heads(heads)  # (B, T, d)
    out = merged @ p[prefix + "w_o"] + p[prefix + "b_o"]
    return out, weights, (x, q, k, v, merged, memory, computed)


def _attention_input_grads(dy: np.ndarray, saved: tuple, p: dict[str, np.ndarray],
                           prefix: str, n_heads: int, rope: bool,
                           ) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
    """The gradients of the inputs of the three projections (dq, dk, dv pulled back through
    W_Q, W_K, W_V, each (B, ., d)) and of the layer's parameters."""
    x, q, k, v, merged, memory, weights = saved
    grads: dict[str, np.ndarray] = {}
    d_merged, grads[prefix + "w_o"], grads[prefix + "b_o"] = linear_backward(
        dy, merged, p[prefix + "w_o"])
    d_heads = split_heads(d_merged, n_heads)  # (B, h, T, d_head)
    # attention_backward's formulas from the weights of the forward pass (masked keys have
    # weight 0 there, so no gradient flows to them), instead of computing them again
    dq, dk, dv = _backward_from_weights(q, k, v, weights, d_heads)
    if rope:
        # A rotation's transpose is the rotation by the opposite angle.
        back = -np.arange(q.shape[-2], dtype=np.float64)
        dq, dk = apply_rotary(dq, back), apply_rotary(dk, back)
    d_inputs = []
    for m, dm, inp in zip("qkv", (dq, dk, dv), (x, x if memory is None else memory,
                                               x if memory is None else memory), strict=True):
        d_in, grads[prefix + f"w_{m}"], grads[prefix + f"b_{m}"] = linear_backward(
            merge_heads(dm), inp, p[prefix + f"w_{m}"])  # (B, T or S, d)
        d_inputs.append(d_in)
    return d_inputs, grads


def attention_backward_layer(dy: np.ndarray, saved: tuple, p: dict[str, np.ndarray],
                             prefix: str, n_heads: int,
                             rope: bool) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Backward of self-attention (:func:`attention_forward` without ``memory``), with the
    formulas of :func:`~attention_lib.attention_backward` applied to the weights the forward
    pass kept: ``(dx, grads)``."""
    d_inputs, grads = _attention_input_grads(dy, saved, p, prefix, n_heads, rope)
    dx = np.zeros_like(saved[0])
    for d_in in d_inputs:  # x feeds the queries, the keys and the values
        dx += d_in
    return dx, grads


def cross_attention_backward_layer(dy: np.ndarray, saved: tuple, p: dict[str, np.ndarray],
                                   prefix: str, n_heads: int,
                                   ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Backward of cross-attention (:func:`attention_forward` with ``memory``):
    ``(dx, d_memory, grads)``. The queries came from ``x``; the keys and the values from
    ``memory``, which therefore gets the gradients of both."""
    (dx, dk_in, dv_in), grads = _attention_input_grads(dy, saved, p, prefix, n_heads, False)
    return dx, dk_in + dv_in, grads
