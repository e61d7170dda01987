"""One attention head with a linear read-out: forward pass, cross-entropy, backward pass.

These are the pieces every task of the package is built from; the tasks decide
what goes in as the queries' and the keys' inputs (embeddings, positions) and
which outputs carry a label. Dimension letters: ``B`` sequences, ``t`` queries
per sequence, ``n`` positions a query attends to, ``d`` the input size, ``d_k``
and ``d_v`` the query/key and value sizes, ``c`` classes of the read-out.
"""

from __future__ import annotations

import numpy as np

from ..attention import scaled_dot_product_attention
from ..gradients import attention_backward

__all__: list[str] = []  # building blocks of the tasks; the tasks' functions are the API

HEAD_SHAPES = {"w_q": ("d", "d_k"), "w_k": ("d", "d_k"), "w_v": ("d", "d_v"),
               "w_out": ("d_v", "c"), "b_out": ("c",)}


def head_forward(
    params: dict[str, np.ndarray], x_q: np.ndarray, x_kv: np.ndarray, causal: bool
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """One attention head and a read-out: logits (B, t, c), weights (B, t, n), cache."""
    q = x_q @ params["w_q"]  # (B, t, d) @ (d, d_k) -> (B, t, d_k)
    k = x_kv @ params["w_k"]  # (B, n, d_k)
    v = x_kv @ params["w_v"]  # (B, n, d_v)
    z, weights = scaled_dot_product_attention(q, k, v, causal=causal)  # (B, t, d_v), (B, t, n)
    logits = z @ params["w_out"] + params["b_out"]  # (B, t, c)
    cache = {"x_q": x_q, "x_kv": x_kv, "q": q, "k": k, "v": v, "z": z}
    return logits, weights, cache


def cross_entropy(
    logits: np.ndarray, labels: np.ndarray, valid: np.ndarray
) -> tuple[float, np.ndarray]:
    """Mean cross-entropy over the valid entries and its gradient with respect to the logits.

    ``logits`` (B, t, c), integer ``labels`` (B, t), boolean ``valid`` (B, t): only the
    valid entries count, and the mean is over them.
    """
    shifted = logits - logits.max(axis=-1, keepdims=True)  # (B, t, c)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))  # (B, t, c)
    count = int(valid.sum())
    picked = np.take_along_axis(log_p, labels[..., None], axis=-1)[..., 0]  # (B, t)
    loss = -float(picked[valid].sum()) / count
    d_logits = np.exp(log_p)  # softmax, (B, t, c)
    np.put_along_axis(d_logits, labels[..., None],
                      np.take_along_axis(d_logits, labels[..., None], axis=-1) - 1.0, axis=-1)
    d_logits *= valid[..., None] / count
    return loss, d_logits


def head_backward(
    params: dict[str, np.ndarray], cache: dict[str, np.ndarray], d_logits: np.ndarray,
    causal: bool,
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Gradients of the head's weights, and of its two inputs x_q (B, t, d) and x_kv (B, n, d)."""
    z = cache["z"]
    grads = {
        "w_out": np.einsum("btv,btc->vc", z, d_logits),  # (d_v, c)
        "b_out": d_logits.sum(axis=(0, 1)),  # (c,)
    }
    d_z = d_logits @ params["w_out"].T  # (B, t, c) @ (c, d_v) -> (B, t, d_v)
    d_q, d_k, d_v = attention_backward(cache["q"], cache["k"], cache["v"], d_z, causal=causal)
    grads["w_q"] = np.einsum("btd,bte->de", cache["x_q"], d_q)  # (d, d_k)
    grads["w_k"] = np.einsum("bnd,bne->de", cache["x_kv"], d_k)  # (d, d_k)
    grads["w_v"] = np.einsum("bnd,bne->de", cache["x_kv"], d_v)  # (d, d_v)
    d_x_q = d_q @ params["w_q"].T  # (B, t, d)
    d_x_kv = d_k @ params["w_k"].T + d_v @ params["w_v"].T  # (B, n, d)
    return grads, d_x_q, d_x_kv


def scatter_rows(table_shape: tuple[int, ...], index: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Sum the gradient ``rows`` (..., d) into a table of ``table_shape`` at ``index`` (...)."""
    grad = np.zeros(table_shape)
    np.add.at(grad, index.reshape(-1), rows.reshape(-1, table_shape[1]))  # (B*n, d) rows
    return grad
