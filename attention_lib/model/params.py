r"""Initial parameters, drawn one way for every model.

:func:`draw_params` draws a dict of named arrays in the order of their shapes: gains
(``gamma``) are ones, biases (a name ending in ``b_...``, ``b1``, ``b2``, ``beta``) zeros,
every other array normal with the standard deviation a rule gives it. Two rules:

- :func:`gpt2_std`: ``std`` everywhere, except the projections that write into the
  residual stream (``w_o``, ``w2``, ``w_down``), which get :math:`\text{std}/\sqrt{2L}`
  so that the stream's variance does not grow with depth (GPT-2);
- :func:`fan_in_std`: :math:`1/\sqrt{\text{fan-in}}`, the rows of a matrix (or, for an
  embedding table, its width), so that a unit-variance input gives unit-variance outputs.

A normal draw with standard deviation ``s`` is ``s * rng.standard_normal(shape)``, the very
numbers ``rng.normal(0, s, shape)`` gives.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .config import GPTConfig, gpt_parameter_shapes

__all__: list[str] = []

RESIDUAL_WRITERS = ("w_o", "w2", "w_down")


def _leaf(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def is_bias(name: str, shape: tuple[int, ...]) -> bool:
    """A bias or a norm's shift: drawn as zeros."""
    leaf = _leaf(name)
    return leaf.startswith("b_") or (leaf.startswith("b") and len(shape) == 1)


def draw_params(shapes: dict[str, tuple[int, ...]], rng: np.random.Generator,
                std: Callable[[str, tuple[int, ...]], float], dtype: np.dtype = np.float64,
                ) -> dict[str, np.ndarray]:
    """Arrays of ``shapes``, drawn in their order from ``rng`` with ``std(name, shape)``."""
    params = {}
    for name, shape in shapes.items():
        if _leaf(name) == "gamma":
            params[name] = np.ones(shape, dtype)
        elif is_bias(name, shape):
            params[name] = np.zeros(shape, dtype)
        else:
            params[name] = (std(name, shape) * rng.standard_normal(shape)).astype(dtype)
    return params


def gpt2_std(std: float, n_layers: Callable[[str], int]) -> Callable[[str, tuple], float]:
    """GPT-2's rule: ``std``, and ``std / sqrt(2 L)`` for the residual writers of a stack of
    ``n_layers(name)`` blocks."""
    def rule(name: str, shape: tuple[int, ...]) -> float:
        if _leaf(name) in RESIDUAL_WRITERS:
            return std / math.sqrt(2 * n_layers(name))
        return std
    return rule


def fan_in_std(name: str, shape: tuple[int, ...]) -> float:
    """:math:`1/\\sqrt{\\text{fan-in}}`: the first axis of a matrix, the width of a table
    (a name ending in ``embed``, or ``wte``/``wpe``)."""
    table = name.endswith("embed") or _leaf(name) in ("wte", "wpe")
    return 1.0 / math.sqrt(shape[1] if table else shape[0])


def init_stacks(stacks: list[tuple[GPTConfig, str]], rng: np.random.Generator, *,
                std: float, dtype: np.dtype = np.float64) -> dict[str, np.ndarray]:
    """Fresh parameters of one or more stacks (``(config, prefix)`` each, drawn in that order)
    by GPT-2's rule."""
    shapes: dict[str, tuple[int, ...]] = {}
    layers: dict[str, int] = {}
    for config, prefix in stacks:
        shapes.update(gpt_parameter_shapes(config, prefix))
        layers[prefix] = config.n_layers

    def n_layers(name: str) -> int:  # the stack whose prefix (the longest that fits) it has
        return layers[max((p for p in layers if name.startswith(p)), key=len)]

    return draw_params(shapes, rng, gpt2_std(std, n_layers), np.dtype(dtype))
