r"""The loss of every model: cross-entropy over the positions that count, and its gradient.

.. math::

    L = -\frac{1}{N} \sum_{(b, t)\ \text{valid}} \log
        \frac{\exp z_{bt, y_{bt}}}{\sum_{c\ \text{allowed}} \exp z_{bt, c}},
    \qquad
    \frac{\partial L}{\partial z_{bt, c}} = \frac{p_{bt, c} - [c = y_{bt}]}{N}
    \ \text{(valid positions, allowed classes; 0 elsewhere)},

with :math:`N` the number of valid positions. A next-token loss counts every position; a
padded batch leaves out the padding (``valid``); a choice among a few candidates (which
noun "it" names) allows only those classes (``allowed``).
"""

from __future__ import annotations

import numpy as np

__all__: list[str] = []


def log_softmax(logits: np.ndarray, allowed: np.ndarray | None = None) -> np.ndarray:
    """``log softmax`` over the last axis, stable; classes not ``allowed`` get ``-inf``."""
    z = logits if allowed is None else np.where(allowed, logits, -np.inf)
    shifted = z - z.max(axis=-1, keepdims=True)  # (..., C)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def cross_entropy(logits: np.ndarray, targets: np.ndarray, valid: np.ndarray | None = None,
                  allowed: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """Mean cross-entropy (nats) and its gradient with respect to ``logits``.

    Parameters
    ----------
    logits : (..., C)
    targets : int (...)
        The right class at every position (ignored where not ``valid``).
    valid : bool (...), optional
        The positions that count (default: all); the mean is over them.
    allowed : bool, broadcastable to (..., C), optional
        The classes the softmax runs over (default: all); each target must be allowed.

    Returns
    -------
    loss : float
    d_logits : (..., C), the dtype of ``logits``
    """
    log_p = log_softmax(logits, allowed)  # (..., C)
    picked = np.take_along_axis(log_p, targets[..., None], axis=-1)[..., 0]  # (...)
    n = targets.size if valid is None else int(np.count_nonzero(valid))
    if valid is None:
        loss = float(-picked.sum(dtype=np.float64) / n)
    else:
        loss = float(-picked[valid].sum(dtype=np.float64) / n)
    grad = np.exp(log_p)  # softmax; 0 for classes not allowed
    np.put_along_axis(grad, targets[..., None],
                      np.take_along_axis(grad, targets[..., None], axis=-1) - 1, axis=-1)
    grad = grad / logits.dtype.type(n)
    if valid is not None:
        grad *= valid[..., None]  # positions that do not count contribute nothing
    return loss, grad
