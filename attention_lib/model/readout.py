r"""The smallest model of the book: one attention layer whose output projection is the read-out.

The tasks of chapters 10, 18 and 19 (the soft dictionary, the shift task) read their answer
straight from attention: :math:`\text{logits} = \operatorname{Concat}_i(\text{head}_i)\,
W_{\text{out}} + b_{\text{out}}`, the attention layer of :mod:`.attention` with
:math:`W_O = W_{\text{out}}` mapping to the classes. A task names its parameters its own way
(``w_out`` of shape ``(h, e, f, c)``, say); :func:`readout_forward` views them as the layer's
matrices and :func:`readout_backward` returns the gradients in the task's names and shapes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .attention import attention_backward, attention_forward

__all__: list[str] = []

#: The layer's roles and the task's usual names for them.
ROLES = {"w_q": "w_q", "w_k": "w_k", "w_v": "w_v", "w_o": "w_out", "b_o": "b_out"}


def _layer(params: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The task's arrays as the attention layer's 2-D matrices and 1-D bias (views)."""
    layer = {}
    for role, name in ROLES.items():
        a = params[name]
        if role == "b_o":
            layer[role] = a.reshape(-1)  # (f, c) -> (f c,)
        elif role == "w_o":
            layer[role] = a.reshape(-1, params["b_out"].size)  # (h e, f c)
        else:
            layer[role] = a.reshape(a.shape[0], -1)  # (d, heads, e) -> (d, heads e)
    return layer


def readout_forward(params: dict[str, np.ndarray], x_q: np.ndarray, x_kv: np.ndarray | None,
                    *, n_heads: int = 1, n_kv_heads: int | None = None, causal: bool = False,
                    mask: np.ndarray | None = None, kind: str = "softmax",
                    ) -> tuple[np.ndarray, np.ndarray, tuple]:
    """Logits (B, T, f c), each head's weights (B, h, T, S) and what the backward needs.

    ``x_kv`` None is self-attention (``x_q`` gives the keys and values too).
    """
    layer = _layer(params)
    logits, weights, saved = attention_forward(x_q, layer, "", n_heads=n_heads,
                                               n_kv_heads=n_kv_heads, memory=x_kv,
                                               causal=causal, mask=mask, kind=kind)
    return logits, weights, (layer, saved)


def readout_backward(params: dict[str, np.ndarray], d_logits: np.ndarray, saved: tuple,
                     ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray | None]:
    """``(grads, d_x_q, d_x_kv)``: the gradients in the task's names and shapes, and those of
    the two inputs (``d_x_kv`` None for self-attention, whose ``d_x_q`` has both)."""
    layer, s = saved
    d_x_q, d_x_kv, g = attention_backward(d_logits, s, layer, "")
    grads: dict[str, Any] = {name: g[role].reshape(params[name].shape)
                             for role, name in ROLES.items()}
    return grads, d_x_q, d_x_kv
