"""Independent references for the training tests: central differences and random weights.

Nothing here calls ``attention_lib``; the gradients of the package are compared with
these numbers, not with a copy of the code under test.
"""

from __future__ import annotations

import numpy as np


def small_params(shapes, seed, scale=0.7):
    """Random float64 weights of the given shapes (larger than the training initialisation,
    so that every term of a gradient matters)."""
    rng = np.random.default_rng(seed)
    return {name: rng.normal(0.0, scale, size=shape) for name, shape in shapes.items()}


def central_differences(loss, params, h=1e-6):
    """(loss(theta + h) - loss(theta - h)) / 2h in every entry of every array of ``params``."""
    grads = {}
    for name, value in params.items():
        g = np.zeros_like(value)
        for idx in np.ndindex(value.shape):
            old = value[idx]
            value[idx] = old + h
            up = loss(params)
            value[idx] = old - h
            down = loss(params)
            value[idx] = old
            g[idx] = (up - down) / (2 * h)
        grads[name] = g
    return grads


def assert_gradients_match(grads, fd, tol=1e-8):
    """Every array of ``grads`` within ``tol`` (relative to its largest entry, at least 1)."""
    assert set(grads) == set(fd), (sorted(grads), sorted(fd))
    for name in fd:
        scale = max(1.0, float(np.abs(fd[name]).max()))
        error = float(np.abs(grads[name] - fd[name]).max())
        assert error < tol * scale, (name, error)
        assert np.abs(fd[name]).max() > 0, f"{name}: a zero gradient checks nothing"


RETRIEVAL_SHAPES = {"key_embed": (5, 4), "value_embed": (3, 4), "query_embed": (5, 4),
                    "w_q": (4, 3), "w_k": (4, 3), "w_v": (4, 2), "w_out": (2, 3), "b_out": (3,)}
SHIFT_SHAPES = {"token_embed": (4, 6), "w_q": (6, 4), "w_k": (6, 4), "w_v": (6, 3),
                "w_out": (3, 4), "b_out": (4,)}
