"""The Adam optimiser (with AdamW's decoupled weight decay) and gradient clipping."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from .._validation import real_number

__all__ = ["Adam", "clip_by_global_norm"]


class Adam:
    r"""The Adam optimiser (Kingma & Ba, 2015) over a dict of float arrays; AdamW with decay.

    Parameters
    ----------
    params : dict of numpy.ndarray
        Float arrays (float32 stays float32), updated in place by :meth:`step`.
    lr : float, default 0.01
        Learning rate, a finite number > 0 (Python or numpy; not a bool). It may be
        changed between steps (a schedule sets ``opt.lr``).
    betas : tuple of float, default (0.9, 0.999)
        Decay rates of the two running averages, each in [0, 1).
    eps : float, default 1e-8
        Added to the root of the second average, a finite number > 0.
    weight_decay : float, default 0
        Decoupled weight decay (Loshchilov & Hutter, 2019): each step also moves
        :math:`\theta` by :math:`-\text{lr}\cdot\text{weight\_decay}\cdot\theta`.
    decay : iterable of str, optional
        The names of the parameters that decay (e.g. the matrices, not the biases);
        by default every parameter when ``weight_decay > 0``.

    Notes
    -----
    For each parameter :math:`\theta` with gradient :math:`g` at step :math:`t`:

    .. math::

        m \leftarrow \beta_1 m + (1-\beta_1) g, \quad
        v \leftarrow \beta_2 v + (1-\beta_2) g^2, \quad
        \theta \leftarrow \theta - \text{lr}\,
        \frac{m / (1-\beta_1^t)}{\sqrt{v / (1-\beta_2^t)} + \varepsilon}.

    The step goes against the averaged gradient :math:`m`, divided coordinate by
    coordinate by the root of the averaged square: each entry moves by about
    ``lr`` whatever the scale of its gradient. With weight decay :math:`\lambda` the
    decaying parameters move by
    :math:`-\text{lr}\,\bigl(\hat m / (\sqrt{\hat v} + \varepsilon) + \lambda\theta\bigr)`
    (AdamW: the decay is not part of the gradient that :math:`m` and :math:`v` average).

    Examples
    --------
    >>> params = {"x": np.array([1.0, -2.0])}
    >>> opt = Adam(params, lr=0.1)
    >>> opt.step({"x": np.array([3.0, -0.5])})  # the first step moves each entry by lr
    >>> params["x"]
    array([ 0.9, -1.9])
    """

    def __init__(self, params: dict[str, np.ndarray], lr: float = 0.01,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, decay: Iterable[str] | None = None) -> None:
        if not isinstance(params, dict) or not all(
                isinstance(v, np.ndarray) and v.dtype.kind == "f" for v in params.values()):
            raise TypeError(f"params is a {type(params).__name__}; expected a dict of float "
                            "numpy arrays (updated in place)")
        self.lr = real_number(lr, "lr", minimum=0.0, strict_minimum=True)
        if not (isinstance(betas, tuple | list) and len(betas) == 2):
            raise ValueError(f"betas={betas!r}; expected two numbers in [0, 1)")
        b1, b2 = (real_number(b, "betas", minimum=0.0) for b in betas)
        if not (b1 < 1.0 and b2 < 1.0):
            raise ValueError(f"betas={betas!r}; expected two numbers in [0, 1)")
        self.betas = (b1, b2)
        self.eps = real_number(eps, "eps", minimum=0.0, strict_minimum=True)
        self.weight_decay = real_number(weight_decay, "weight_decay", minimum=0.0)
        decay = set(params) if decay is None else set(decay)
        unknown = sorted(decay - set(params))
        if unknown:
            raise ValueError(f"decay names {unknown}, which are not parameters; expected "
                             f"names among {sorted(params)}")
        self.decay = decay
        self.params = params
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}
        self.t = 0

    def step(self, grads: dict[str, Any]) -> None:
        """Update every parameter in place from its gradient (same names, same shapes)."""
        missing = [name for name in self.params if name not in grads]
        if missing:
            raise ValueError(f"grads lacks {missing}; expected one gradient per parameter")
        self.t += 1
        b1, b2 = self.betas
        c1, c2 = 1.0 - b1**self.t, 1.0 - b2**self.t
        for name, theta in self.params.items():
            g = grads[name]
            if np.shape(g) != theta.shape:
                raise ValueError(f"grads[{name!r}] has shape {np.shape(g)}; expected "
                                 f"{theta.shape}, the shape of the parameter")
            self.m[name] = b1 * self.m[name] + (1.0 - b1) * g
            self.v[name] = b2 * self.v[name] + (1.0 - b2) * g * g
            update = (self.m[name] / c1) / (np.sqrt(self.v[name] / c2) + self.eps)
            if self.weight_decay and name in self.decay:
                update = update + self.weight_decay * theta
            theta -= self.lr * update


def clip_by_global_norm(grads: dict[str, np.ndarray],
                        max_norm: float) -> tuple[dict[str, np.ndarray], float]:
    r"""Scale every gradient down by one factor when their joint norm exceeds ``max_norm``.

    Parameters
    ----------
    grads : dict of numpy.ndarray
    max_norm : float
        A finite number > 0.

    Returns
    -------
    clipped : dict of numpy.ndarray
        ``grads`` times :math:`\min(1, \text{max\_norm} / \lVert g \rVert)`, dtypes kept
        (the same arrays when no scaling is needed).
    norm : float
        :math:`\lVert g \rVert = \sqrt{\sum_k \sum g_k^2}` before clipping.

    Examples
    --------
    >>> clipped, norm = clip_by_global_norm({"a": np.array([3.0]), "b": np.array([4.0])}, 1.0)
    >>> norm, clipped["a"], clipped["b"]
    (5.0, array([0.6]), array([0.8]))
    """
    max_norm = real_number(max_norm, "max_norm", minimum=0.0, strict_minimum=True)
    norm = math.sqrt(sum(float(np.vdot(g, g)) for g in grads.values()))
    if not math.isfinite(norm):
        raise ValueError(f"the gradients' norm is {norm}; expected a finite norm (a NaN or "
                         "an infinity in a gradient)")
    if norm <= max_norm:
        return grads, norm
    scale = max_norm / norm
    return {k: g * g.dtype.type(scale) for k, g in grads.items()}, norm
