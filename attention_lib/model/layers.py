r"""The layers around attention: each forward saves what its backward needs; the backward beside it.

Every ``*_forward`` returns ``(output, saved)``; the matching ``*_backward`` takes the
gradient of the loss with respect to the output and ``saved`` and returns the gradient with
respect to the input, and the parameters' gradients where the layer has parameters. No
checks: the public functions that teach each layer (:func:`~attention_lib.layer_norm`,
:func:`~attention_lib.rms_norm`, :func:`~attention_lib.feed_forward`,
:func:`~attention_lib.swiglu`) check their arguments and then compute with these.
Shapes: ``(..., d)`` rows; parameter gradients are summed over every leading axis.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .hooks import run_hook

__all__: list[str] = []

LN_EPS = 1e-5
_GELU_C = math.sqrt(2.0 / math.pi)


def _rows(a: np.ndarray) -> np.ndarray:
    """``a`` (..., n) as (rows, n)."""
    return a.reshape(-1, a.shape[-1])


# --------------------------------------------------------------------------- norms


def _row_mean(x: np.ndarray) -> np.ndarray:
    """``x.mean(axis=-1, keepdims=True)``, the same numbers, without numpy's Python wrapper
    (which costs more than the sum on a decoding step's single row)."""
    total = np.add.reduce(x, axis=-1, keepdims=True)
    total /= x.shape[-1]
    return total


def layer_norm_forward(x: np.ndarray, gamma: np.ndarray | None, beta: np.ndarray | None,
                       eps: Any = LN_EPS) -> tuple[np.ndarray, tuple]:
    r"""Layer norm over the last axis (population variance), saving the normalised rows.

    :math:`\hat x = (x - \mu)\,r`, :math:`r = 1/\sqrt{\sigma^2 + \varepsilon}`, output
    :math:`\gamma \odot \hat x + \beta`. ``eps`` may be an array (..., 1) (one per row);
    ``gamma``/``beta`` may be None (ones, zeros).
    """
    mu = _row_mean(x)  # (..., 1)
    centred = x - mu  # (..., d)
    var = _row_mean(centred * centred)  # (..., 1)
    rstd = 1.0 / np.sqrt(var + eps)  # (..., 1)
    xhat = centred * rstd  # (..., d)
    out = xhat if gamma is None else xhat * gamma
    if beta is not None:
        out = out + beta
    return out, (xhat, rstd, gamma)


def layer_norm_backward(dy: np.ndarray, saved: tuple) -> tuple[np.ndarray, np.ndarray,
                                                                np.ndarray]:
    r"""``(dx, dgamma, dbeta)``.

    With :math:`\hat x = (x - \mu)\,r` and :math:`g = dy \odot \gamma`,
    :math:`dx = r\,\bigl(g - \overline{g} - \hat x\,\overline{g \odot \hat x}\bigr)`
    (bars are means over the row).
    """
    xhat, rstd, gamma = saved
    rows = _rows(dy)
    dgamma = np.einsum("rd,rd->d", rows, xhat.reshape(rows.shape))
    dbeta = rows.sum(axis=0)
    g = dy * gamma  # (..., d)
    dx = rstd * (g - g.mean(axis=-1, keepdims=True)
                 - xhat * np.mean(g * xhat, axis=-1, keepdims=True))
    return dx, dgamma, dbeta


def rms_norm_forward(x: np.ndarray, gain: np.ndarray | None,
                     eps: Any = LN_EPS) -> tuple[np.ndarray, tuple]:
    r"""RMSNorm over the last axis: :math:`\hat x = x\,r`, :math:`r = 1/\sqrt{\overline{x^2}
    + \varepsilon}`, output :math:`g \odot \hat x`; ``eps`` may be an array (..., 1)."""
    rstd = 1.0 / np.sqrt(_row_mean(x * x) + eps)  # (..., 1)
    xhat = x * rstd  # (..., d)
    return (xhat if gain is None else xhat * gain), (xhat, rstd, gain)


def rms_norm_backward(dy: np.ndarray, saved: tuple) -> tuple[np.ndarray, np.ndarray]:
    r"""``(dx, dgain)``: with :math:`g = dy \odot \text{gain}`,
    :math:`dx = r\,\bigl(g - \hat x\,\overline{g \odot \hat x}\bigr)`."""
    xhat, rstd, gain = saved
    rows = _rows(dy)
    dgain = np.einsum("rd,rd->d", rows, xhat.reshape(rows.shape))
    g = dy * gain
    return rstd * (g - xhat * np.mean(g * xhat, axis=-1, keepdims=True)), dgain


def norm_forward(kind: str, x: np.ndarray, p: dict[str, np.ndarray],
                 name: str) -> tuple[np.ndarray, tuple]:
    """The norm ``kind`` ("layer" or "rms") with the parameters ``name.gamma`` (``.beta``)."""
    if kind == "rms":
        return rms_norm_forward(x, p[name + ".gamma"])
    return layer_norm_forward(x, p[name + ".gamma"], p[name + ".beta"])


def norm_backward(kind: str, dy: np.ndarray, saved: tuple, name: str,
                  grads: dict[str, np.ndarray]) -> np.ndarray:
    """Backward of :func:`norm_forward`: ``dx``; the parameters' gradients go into ``grads``."""
    if kind == "rms":
        dx, grads[name + ".gamma"] = rms_norm_backward(dy, saved)
        return dx
    dx, grads[name + ".gamma"], grads[name + ".beta"] = layer_norm_backward(dy, saved)
    return dx


# --------------------------------------------------------------------------- linear maps


def matmul(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``x @ w`` for rows ``x`` (..., n_in) and a matrix ``w`` (n_in, n_out), as one matrix
    product over every row (numpy would loop over the leading axes, slower)."""
    if x.ndim <= 2:
        return x @ w
    return (x.reshape(-1, x.shape[-1]) @ w).reshape(*x.shape[:-1], w.shape[-1])


def linear_backward(dy: np.ndarray, x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray,
                                                                         np.ndarray,
                                                                         np.ndarray]:
    """For ``y = x @ w + b`` over (..., n_in): ``(dx, dw, db)``."""
    x2 = _rows(x)  # (rows, n_in)
    dy2 = _rows(dy)  # (rows, n_out)
    return matmul(dy, w.T), x2.T @ dy2, dy2.sum(axis=0)


# --------------------------------------------------------------------------- activations


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


def relu_forward(h: np.ndarray) -> tuple[np.ndarray, tuple]:
    """``max(0, h)``, saving where it passes."""
    return np.maximum(h, h.dtype.type(0)), (h > 0,)


def relu_backward(dy: np.ndarray, saved: tuple) -> np.ndarray:
    return dy * saved[0]


def silu_gate(gate: np.ndarray) -> np.ndarray:
    r""":math:`\sigma(u) = \tfrac12(1 + \tanh(u/2))`, the logistic function without overflow."""
    return 0.5 * (1.0 + np.tanh(0.5 * gate))


# --------------------------------------------------------------------------- feed-forward


def feed_forward_forward(kind: str, x: np.ndarray, p: dict[str, np.ndarray], prefix: str, *,
                         hooks: Any = None, site: str = "") -> tuple[np.ndarray, tuple]:
    """The feed-forward network ``kind`` over (..., d) with the parameters ``prefix + ...``.

    ``"gelu"``/``"relu"``: ``act(x W_1 + b_1) W_2 + b_2``; ``"swiglu"``:
    ``(SiLU(x W_gate) * x W_up) W_down``. ``saved[1]`` is the hidden layer after the
    activation (what the network's second matrix reads); hooks at ``site + ".hidden"``
    and ``site + ".out"`` may read or replace it and the output.
    """
    if kind == "swiglu":
        gate = matmul(x, p[prefix + "w_gate"])  # (..., f)
        up = matmul(x, p[prefix + "w_up"])  # (..., f)
        sig = silu_gate(gate)
        act = gate * sig * up  # SiLU(gate) * up
        act_saved: tuple = (gate, up, sig)
        second, bias = p[prefix + "w_down"], None
    else:
        hidden = matmul(x, p[prefix + "w1"]) + p[prefix + "b1"]  # (..., f)
        act, act_saved = (gelu_forward if kind == "gelu" else relu_forward)(hidden)
        second, bias = p[prefix + "w2"], p[prefix + "b2"]
    if hooks is not None:
        act = run_hook(hooks, site + ".hidden", act)
    out = matmul(act, second)  # (..., d)
    if bias is not None:
        out += bias
    if hooks is not None:
        out = run_hook(hooks, site + ".out", out)
    return out, (x, act, act_saved)


def feed_forward_backward(kind: str, dy: np.ndarray, saved: tuple, p: dict[str, np.ndarray],
                          prefix: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Backward of :func:`feed_forward_forward`: ``(dx, grads)``."""
    x, act, act_saved = saved
    if kind == "swiglu":
        gate, up, sig = act_saved
        d_act, dw_down, _ = linear_backward(dy, act, p[prefix + "w_down"])
        silu = gate * sig
        d_up = d_act * silu
        d_gate = d_act * up * (sig * (1.0 + gate * (1.0 - sig)))  # SiLU'(u) = s (1 + u (1 - s))
        dx_up, dw_up, _ = linear_backward(d_up, x, p[prefix + "w_up"])
        dx_gate, dw_gate, _ = linear_backward(d_gate, x, p[prefix + "w_gate"])
        return dx_up + dx_gate, {prefix + "w_gate": dw_gate, prefix + "w_up": dw_up,
                                 prefix + "w_down": dw_down}
    d_act, dw2, db2 = linear_backward(dy, act, p[prefix + "w2"])
    d_hidden = (gelu_backward if kind == "gelu" else relu_backward)(d_act, act_saved)
    dx, dw1, db1 = linear_backward(d_hidden, x, p[prefix + "w1"])
    return dx, {prefix + "w1": dw1, prefix + "b1": db1, prefix + "w2": dw2, prefix + "b2": db2}


# --------------------------------------------------------------------------- embeddings


def embedding_backward(grad: np.ndarray, table_shape: tuple[int, ...], ids: np.ndarray,
                       d_rows: np.ndarray) -> np.ndarray:
    """Add every row of ``d_rows`` (..., d) to the row of ``grad`` (table_shape) its id names.

    ``ids`` (...) index the table's rows (flattened over every axis but the last); a row
    used twice gets both contributions.
    """
    np.add.at(grad.reshape(-1, table_shape[-1]), ids.reshape(-1), _rows(d_rows))
    return grad
