"""attention_lib: scaled dot-product attention in numpy, for the attention book.

``import attention_lib as al`` gives every name of the submodules' ``__all__``
lists below (``al.softmax``, ``al.KVCache``, ...) and the namespaces
``al.examples`` and ``al.training``. The core needs only numpy; the figures
(``al.plotting``, matplotlib) and the browser-side controls (``al.controls``) are
imported on first use (``_LAZY``), so
``import attention_lib`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

from . import (
    attention,
    block,
    corpus,
    costs,
    examples,  # noqa: F401 - a namespace (see _NAMESPACES)
    exercises,
    features,
    gpt,
    gradients,
    implement,
    interpret,
    kv_cache,
    latent_attention,
    linear_attention,
    masks,
    measure,
    model,
    multihead,
    neurons,
    patching,
    positions,
    pytorch_bridge,
    recurrence,
    saturation,
    softmax,
    sparse_autoencoder,
    tiled,
    tiled_backward,
    tokens,
    training,
)

# The modules whose public names are the package's, in the order the chapters meet them.
_MODULES = (
    exercises,  # every chapter: the reader's exercise cells
    implement,  # ... and the functions the reader writes in them
    softmax,  # chapter 1: softmax turns scores into weights
    attention,  # chapters 2-3: queries, keys, values and the formula
    saturation,  # chapter 4: scaling by sqrt(d_k) and softmax saturation
    masks,  # chapter 5: masks (and chapter 17's tile kinds)
    multihead,  # chapter 6: heads
    recurrence,  # chapter 7: attention against recurrence ...
    costs,  # ... what each costs (and chapter 16's decoding costs)
    measure,  # ... timers and fits (and chapter 17's stored benchmark)
    gradients,  # chapter 9: gradients through softmax and attention
    kv_cache,  # chapter 16: the KV cache
    tiled,  # chapter 17: exact attention by tiles
    tiled_backward,  # ... and their backward pass (chapter 17)
    linear_attention,  # Part V: attention in time linear in n
    latent_attention,  # Part V: keys and values through a small latent
    positions,  # chapter 8: word order
    training,  # chapter 10: training attention
    block,  # chapter 11: the Transformer block
    model,  # the one transformer every model is a configuration of, and its hooks
    corpus,  # Part IV: the text a whole GPT learns from
    tokens,  # ... and its tokens: byte-pair encoding
    gpt,  # Part IV: a whole GPT, its gradients, generation
    interpret,  # after Part VI: how heads compose, what each layer predicts
    patching,  # where the coreference encoder carries its decision
    sparse_autoencoder,  # the residual stream as many sparse features ...
    features,  # ... what they cost the model, where they fire, clamping one
    neurons,  # what feed-forward neurons respond to, what removing them costs
    pytorch_bridge,  # the last chapter: the same weights in PyTorch's layouts
)

# Namespaces: imported here, or on first use (matplotlib; the controls).
_NAMESPACES = ("examples", "training", "plotting")
_LAZY = {"plotting", "controls"}

globals().update({name: getattr(module, name) for module in _MODULES for name in module.__all__})

__all__ = [name for module in _MODULES for name in module.__all__] + list(_NAMESPACES)

__version__ = "0.2.0"


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'attention_lib' has no attribute {name!r}")
