r"""The attention layer of every model: multi-head attention, forward and backward.

One function computes it for every model of the book: self-attention (queries, keys and
values from ``x``) or cross-attention (keys and values from a ``memory``), causal or not,
with a boolean mask (padding, a window, one per head), rotary positions, grouped key/value
heads (query head ``i`` reads key/value head ``i // g``, ``g = h / h_kv``), and softmax or
linear (kernelised) attention:

.. math::

    Q = X W_Q + b_Q, \quad K = C W_K + b_K, \quad V = C W_V + b_V, \quad
    \text{head}_i = \operatorname{softmax}\Bigl(\frac{Q_i K_{\lfloor i/g \rfloor}^{\mathsf T}}
    {\sqrt{e}} + M\Bigr) V_{\lfloor i/g \rfloor}, \quad
    Y = \operatorname{Concat}_i(\text{head}_i)\, W_O + b_O,

with :math:`C = X` for self-attention. Head ``i`` owns columns ``i*e:(i+1)*e`` of
``W_Q`` (and of ``W_K``, ``W_V`` for key/value head ``i``) and rows ``i*e:(i+1)*e`` of
``W_O``. Biases are optional (absent names are no bias). ``W_O`` may map to any width:
a model whose attention output is its read-out (the soft dictionary of chapter 10) uses
the layer so.

The backward pass applies the formulas of :func:`~attention_lib.attention_backward` to the
weights the forward pass kept; shared keys and values get the gradients of every query head
that read them. No checks here: the public functions check their arguments.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..attention import _causal_rule, attend
from ..gradients import _backward_from_weights
from ..linear_attention import _elu_plus_one, linear_attention
from ..masks import sliding_window_mask
from ..positions import apply_rotary
from .hooks import Hooks, replacement, run_hook
from .layers import linear_backward, matmul

__all__: list[str] = []

KINDS = ("softmax", "linear")


def split(x: np.ndarray, n_heads: int) -> np.ndarray:
    """``x`` (..., n, heads * e) as (..., heads, n, e): head ``i`` is columns ``i*e:(i+1)*e``."""
    *lead, n, width = x.shape
    x = x.reshape(*lead, n, n_heads, width // n_heads)  # (..., n, h, e)
    return np.swapaxes(x, -3, -2)  # (..., h, n, e)


def merge(x: np.ndarray) -> np.ndarray:
    """``x`` (..., heads, n, e) as (..., n, heads * e): the inverse of :func:`split`."""
    *lead, h, n, e = x.shape
    return np.swapaxes(x, -3, -2).reshape(*lead, n, h * e)  # (..., n, h, e) -> (..., n, h*e)


def _project(x: np.ndarray, p: dict[str, np.ndarray], prefix: str, m: str) -> np.ndarray:
    bias = p.get(prefix + f"b_{m}")
    y = matmul(x, p[prefix + f"w_{m}"])
    if bias is not None:
        y += bias
    return y


def allowed_keys(n_q: int, n_k: int, *, causal: bool, window: int | None,
                 mask: np.ndarray | None) -> np.ndarray | None:
    """The boolean mask (True = may attend) from ``mask``, ``causal`` and ``window``, or None.

    The queries are the last ``n_q`` of the ``n_k`` positions (a cache's new rows).
    """
    if window is not None:
        if not causal:
            raise ValueError(f"window={window} without causal=True; a window counts back "
                             "from each query, so expected a causal model")
        rule = sliding_window_mask(n_q, n_k, window)  # (n_q, n_k)
    elif causal and n_q == 1:
        rule = None  # one query at the last position sees every key
    else:
        rule = _causal_rule(n_q, n_k) if causal else None
    if rule is None:
        return mask
    return rule if mask is None else mask & rule


def _grouped(a: np.ndarray | None, h_kv: int, group: int) -> np.ndarray | None:
    """(..., h or 1, n, m) arrays regrouped as (..., h_kv or 1, g or 1, n, m)."""
    if a is None:
        return None
    if a.ndim >= 3 and a.shape[-3] == h_kv * group and group > 1:
        return a.reshape(*a.shape[:-3], h_kv, group, *a.shape[-2:])
    return a[..., None, :, :] if a.ndim >= 3 else a  # (..., 1, 1, n, m) or (n, m)


def _linear_weights(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """phi(q) . phi(k_j) / sum_l phi(q) . phi(k_l): what linear attention weighs each value by."""
    a = _elu_plus_one(q) @ np.swapaxes(_elu_plus_one(k), -1, -2)  # (..., t, n)
    return a / a.sum(axis=-1, keepdims=True)


def _elu_plus_one_slope(x: np.ndarray) -> np.ndarray:
    """The derivative of elu(x) + 1: 1 for x > 0, exp(x) otherwise."""
    return np.where(x > 0, 1.0, np.exp(np.minimum(x, 0.0)))


def _linear_backward(q: np.ndarray, k: np.ndarray, v: np.ndarray, d_z: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradients of non-causal linear attention, in its kernelised form (no n x n array).

    ``q`` (..., h_kv, g, t, e), ``k`` and ``v`` (..., h_kv, 1, n, e): the keys and values
    are shared by the g query heads of a group, so their gradients are summed over that
    axis (kept, of size 1).
    """
    fq, fk = _elu_plus_one(q), _elu_plus_one(k)
    s = np.swapaxes(fk, -1, -2) @ v  # (..., 1, e, e_v): sum_j phi(k_j) v_j^T
    u = fk.sum(axis=-2)  # (..., 1, e): sum_j phi(k_j)
    num = fq @ s  # (..., g, t, e_v)
    den = np.einsum("...te,...e->...t", fq, u)  # (..., g, t)
    z = num / den[..., None]  # (..., g, t, e_v)
    d_num = d_z / den[..., None]  # (..., g, t, e_v)
    d_den = -np.einsum("...te,...te->...t", d_z, z) / den  # (..., g, t)
    d_fq = d_num @ np.swapaxes(s, -1, -2) + d_den[..., None] * u[..., None, :]  # (..., g, t, e)
    d_s = (np.swapaxes(fq, -1, -2) @ d_num).sum(axis=-3, keepdims=True)  # (..., 1, e, e_v)
    d_u = np.einsum("...t,...te->...e", d_den, fq).sum(axis=-2, keepdims=True)  # (..., 1, e)
    d_fk = v @ np.swapaxes(d_s, -1, -2) + d_u[..., None, :]  # (..., 1, n, e)
    d_v = fk @ d_s  # (..., 1, n, e_v)
    return d_fq * _elu_plus_one_slope(q), d_fk * _elu_plus_one_slope(k), d_v


def attend_heads(q: np.ndarray, k: np.ndarray, v: np.ndarray, allowed: np.ndarray | None,
                 kind: str = "softmax") -> tuple[np.ndarray, np.ndarray, tuple]:
    """``h`` query heads (..., h, T, e) attend through ``h_kv`` key/value heads (..., h_kv, S, e).

    Query head ``i = a g + b`` uses key/value head ``a``: the queries are regrouped to
    (..., h_kv, g, T, e) and the keys and values get an axis of size 1 that broadcasts over
    the group, so no key or value is copied. ``allowed`` (bool, broadcastable to
    (..., h or 1, T, S), True = may attend) or None. Returns the heads (..., h, T, e), the
    weights (..., h, T, S), and the arrays as computed (grouped where they were), for the
    backward pass.
    """
    n_heads, T = q.shape[-3], q.shape[-2]
    h_kv, S = k.shape[-3], k.shape[-2]
    group = n_heads // h_kv
    grouped = group > 1 or kind == "linear"  # linear attention always keeps the group axis
    if grouped:
        qg = q.reshape(*q.shape[:-3], h_kv, group, T, q.shape[-1])  # (..., h_kv, g, T, e)
        kg, vg = k[..., :, None, :, :], v[..., :, None, :, :]  # (..., h_kv, 1, S, e): views
        ag = _grouped(allowed, h_kv, group)
    else:
        qg, kg, vg, ag = q, k, v, allowed
    if kind == "linear":
        heads = linear_attention(qg, kg, vg, causal=False)  # (..., h_kv, g, T, e)
        weights = _linear_weights(qg, kg)
    else:
        heads, weights = attend(qg, kg, vg, ag)  # (..., [h_kv, g,] T, e), (..., T, S)
    computed = weights  # what the backward pass differentiates
    if grouped:
        heads = heads.reshape(*heads.shape[:-4], n_heads, T, heads.shape[-1])  # (..., h, T, e)
        weights = weights.reshape(*weights.shape[:-4], n_heads, T, S)  # (..., h, T, S)
    return heads, weights, (qg, kg, vg, computed)


def attention_forward(x: np.ndarray, p: dict[str, np.ndarray], prefix: str, *, n_heads: int,
                      n_kv_heads: int | None = None, memory: np.ndarray | None = None,
                      causal: bool = False, mask: np.ndarray | None = None,
                      window: int | None = None, rope: bool = False,
                      positions: np.ndarray | None = None, kind: str = "softmax",
                      cache: Any = None, hooks: Hooks | None = None, site: str = "",
                      ) -> tuple[np.ndarray, np.ndarray, tuple]:
    """Multi-head attention over (..., T, d): ``(output, weights, saved)``.

    Parameters
    ----------
    x : (..., T, d)
        The sequence that asks (the queries).
    p, prefix
        The parameters ``prefix + "w_q"`` (d, h e), ``"w_k"``, ``"w_v"`` (d, h_kv e),
        ``"w_o"`` (h e, d_out), and optionally the biases ``"b_q"`` ... ``"b_o"``.
    n_heads, n_kv_heads
        ``h`` query heads and ``h_kv`` key/value heads (default ``h``).
    memory : (..., S, d), optional
        Keys and values come from it (cross-attention).
    causal, window, mask
        Query ``t`` sees keys ``s <= t`` (the queries are the last ``T`` of ``S``
        positions), at most the last ``window``; ``mask`` (bool, broadcastable to
        (..., h or 1, T, S), True = may attend) hides keys too.
    rope, positions
        Rotate queries and keys by their positions (default ``0 .. T - 1``).
    cache : KVCache, optional
        Decoding: the new keys and values are appended to it, and the queries attend to
        every key it holds (forward only).
    kind : {"softmax", "linear"}
        Softmax attention, or linear attention with :math:`\\phi = \\operatorname{elu} + 1`
        (non-causal, no mask).
    hooks, site
        Hooks (:mod:`~attention_lib.model.hooks`) at ``site + ".q"``, ``".k"``, ``".v"``,
        ``".weights"``, ``".heads"`` and ``".out"``.

    Returns
    -------
    output : (..., T, d_out)
    weights : (..., h, T, S)
    saved : what :func:`attention_backward` needs
    """
    source = x if memory is None else memory  # (..., S, d): what the keys and values read
    h_kv = n_heads if n_kv_heads is None else n_kv_heads
    group = n_heads // h_kv
    q = split(_project(x, p, prefix, "q"), n_heads)  # (..., h, T, e)
    k = split(_project(source, p, prefix, "k"), h_kv)  # (..., h_kv, S, e)
    v = split(_project(source, p, prefix, "v"), h_kv)  # (..., h_kv, S, e)
    if rope:
        if memory is not None:
            raise ValueError("rope=True with memory: rotary positions are for self-attention")
        q, k = apply_rotary(q, positions), apply_rotary(k, positions)  # along axis -2
    if cache is not None:  # (h_kv, m, e) each in, (h_kv, S, e) out: every position so far
        k, v = cache._extend(k, v)
    if hooks is not None:
        q, k, v = (run_hook(hooks, f"{site}.{m}", a) for m, a in zip("qkv", (q, k, v),
                                                                     strict=True))
    T, S = q.shape[-2], k.shape[-2]
    if kind == "linear":
        if causal or mask is not None or window is not None:
            raise ValueError("kind='linear' is non-causal attention without a mask here")
        allowed = None
    else:
        allowed = allowed_keys(T, S, causal=causal, window=window, mask=mask)
    heads, weights, (qg, kg, vg, computed) = attend_heads(q, k, v, allowed, kind)
    grouped = qg.ndim == q.ndim + 1
    if hooks is not None:
        fn = hooks.get(site + ".weights")
        changed = None if fn is None else fn(weights)
        if changed is not None:  # the heads average the values with the new weights
            weights = replacement(site + ".weights", weights, changed)  # same shape and dtype
            regrouped = _grouped(weights, h_kv, group) if grouped else weights
            heads = regrouped @ vg
            if grouped:
                heads = heads.reshape(*heads.shape[:-4], n_heads, T, heads.shape[-1])
        heads = run_hook(hooks, site + ".heads", heads)  # (..., h, T, e)
    merged = merge(heads)  # (..., T, h e)
    out = _project(merged, p, prefix, "o")  # (..., T, d_out)
    if hooks is not None:
        out = run_hook(hooks, site + ".out", out)
    saved = (x, memory, qg, kg, vg, merged, computed, n_heads, h_kv, kind,
             positions if rope else None, rope)
    return out, weights, saved


def attention_backward(dy: np.ndarray, saved: tuple, p: dict[str, np.ndarray], prefix: str,
                       ) -> tuple[np.ndarray, np.ndarray | None, dict[str, np.ndarray]]:
    """Backward of :func:`attention_forward`: ``(dx, d_memory, grads)``.

    ``d_memory`` is None for self-attention (``x`` then gets the gradients through the
    queries, the keys and the values); for cross-attention the keys and the values came
    from the memory, which gets theirs.
    """
    x, memory, qg, kg, vg, merged, weights, n_heads, h_kv, kind, positions, rope = saved
    group = n_heads // h_kv
    grouped = qg.ndim == merged.ndim + 2  # (..., h_kv, g, T, e) against (..., T, h e)
    grads: dict[str, np.ndarray] = {}
    d_merged, grads[prefix + "w_o"], db_o = linear_backward(dy, merged, p[prefix + "w_o"])
    if prefix + "b_o" in p:
        grads[prefix + "b_o"] = db_o
    d_heads = split(d_merged, n_heads)  # (..., h, T, e)
    if grouped:
        d_heads = d_heads.reshape(*d_heads.shape[:-3], h_kv, group, *d_heads.shape[-2:])
    if kind == "linear":
        dq, dk, dv = _linear_backward(qg, kg, vg, d_heads)
    else:
        # attention_backward's formulas from the weights of the forward pass (masked keys
        # have weight 0 there, so no gradient flows to them)
        dq, dk, dv = _backward_from_weights(qg, kg, vg, weights, d_heads)
    if grouped:  # (..., h_kv, g, ., e): queries back to (..., h, T, e); keys summed over g
        dq = dq.reshape(*dq.shape[:-4], n_heads, *dq.shape[-2:])
        dk, dv = dk.sum(axis=-3), dv.sum(axis=-3)  # (..., h_kv, S, e)
    if rope:
        # A rotation's transpose is the rotation by the opposite angle.
        back = -(np.arange(dq.shape[-2], dtype=np.float64) if positions is None
                 else np.asarray(positions, dtype=np.float64))
        dq, dk = apply_rotary(dq, back), apply_rotary(dk, back)
    source = x if memory is None else memory
    d_inputs = []
    for m, dm, inp in zip("qkv", (dq, dk, dv), (x, source, source), strict=True):
        d_in, grads[prefix + f"w_{m}"], db = linear_backward(merge(dm), inp, p[prefix + f"w_{m}"])
        if prefix + f"b_{m}" in p:
            grads[prefix + f"b_{m}"] = db
        d_inputs.append(d_in)  # (..., T or S, d)
    d_q, d_k, d_v = d_inputs
    if memory is None:
        return d_q + d_k + d_v, None, grads  # x feeds the queries, the keys and the values
    return d_q, d_k + d_v, grads


def check_kind(kind: Any) -> str:
    if kind not in KINDS:
        raise ValueError(f"attention={kind!r}; expected one of {KINDS}")
    return kind
