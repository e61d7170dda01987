"""attention_lib: scaled dot-product attention in numpy, for the attention book.

The core (softmax, attention, masks, projections, the texts' example numbers)
needs only numpy. ``attention_lib.plotting`` (matplotlib) and
``attention_lib.widgets`` (ipywidgets) are imported on first use, so
``import attention_lib`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

from . import examples
from .attention import causal_mask, project_qkv, scaled_dot_product_attention
from .softmax import softmax

__all__ = [
    "causal_mask",
    "examples",
    "plotting",
    "project_qkv",
    "scaled_dot_product_attention",
    "softmax",
]

__version__ = "0.1.0"

_LAZY = {"plotting", "widgets"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'attention_lib' has no attribute {name!r}")
