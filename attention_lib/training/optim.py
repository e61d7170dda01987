"""The Adam optimiser over a dict of float64 arrays."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import real_number

__all__ = ["Adam"]


class Adam:
    r"""The Adam optimiser (Kingma & Ba, 2015) over a dict of float64 arrays.

    Parameters
    ----------
    params : dict of numpy.ndarray
        Updated in place by :meth:`step`.
    lr : float, default 0.01
        Learning rate, a finite number > 0 (Python or numpy; not a bool).
    betas : tuple of float, default (0.9, 0.999)
        Decay rates of the two running averages, each in [0, 1).
    eps : float, default 1e-8
        Added to the root of the second average, a finite number > 0.

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
    ``lr`` whatever the scale of its gradient.

    Examples
    --------
    >>> params = {"x": np.array([1.0, -2.0])}
    >>> opt = Adam(params, lr=0.1)
    >>> opt.step({"x": np.array([3.0, -0.5])})  # the first step moves each entry by lr
    >>> params["x"]
    array([ 0.9, -1.9])
    """

    def __init__(self, params: dict[str, np.ndarray], lr: float = 0.01,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
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
            theta -= self.lr * (self.m[name] / c1) / (np.sqrt(self.v[name] / c2) + self.eps)
