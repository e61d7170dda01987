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
from .costs import (
    attention_flops,
    best_time,
    causal_pairs,
    decode_step_multiplications,
    generation_multiplications,
    kv_cache_bytes,
    layer_flops,
    power_law_fit,
    rnn_flops,
    score_matrix_bytes,
)
from .gradients import attention_backward, softmax_jvp
from .kv_cache import KVCache
from .masks import padding_mask
from .multihead import MultiHeadAttention, merge_heads, split_heads
from .recurrence import (
    recurrent_matrix,
    rnn_forward,
    rnn_jacobian_products,
    rnn_step_jacobians,
    rnn_sweep,
    spectral_radius,
)
from .saturation import SaturationStats, entropy, saturation_stats, softmax_jacobian
from .softmax import softmax
from .tiled import OnlineSoftmaxTrace, online_softmax_row, tiled_attention

__all__ = [
    "OnlineSoftmaxTrace",
    "online_softmax_row",
    "tiled_attention",
    "KVCache",
    "attention_backward",
    "softmax_jvp",
    "attention_flops",
    "best_time",
    "causal_pairs",
    "costs",
    "decode_step_multiplications",
    "generation_multiplications",
    "kv_cache_bytes",
    "layer_flops",
    "power_law_fit",
    "recurrence",
    "recurrent_matrix",
    "rnn_flops",
    "rnn_forward",
    "rnn_jacobian_products",
    "rnn_step_jacobians",
    "rnn_sweep",
    "score_matrix_bytes",
    "spectral_radius",
    "MultiHeadAttention",
    "merge_heads",
    "split_heads",
    "SaturationStats",
    "causal_mask",
    "entropy",
    "examples",
    "padding_mask",
    "plotting",
    "project_qkv",
    "saturation_stats",
    "scaled_dot_product_attention",
    "softmax",
    "softmax_jacobian",
]

__version__ = "0.1.0"

_LAZY = {"plotting", "widgets"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'attention_lib' has no attribute {name!r}")

# Part IV: word order, training, the Transformer block.
from . import training  # noqa: E402
from .block import (  # noqa: E402
    TransformerBlock,
    block_parameter_count,
    feed_forward,
    gpt_parameter_count,
    layer_norm,
)
from .positions import (  # noqa: E402
    apply_rotary,
    position_frequencies,
    sinusoidal_positions,
    sinusoidal_shift_matrix,
)
from .training import (  # noqa: E402
    Adam,
    TrainingResult,
    export_retrieval_model,
    load_retrieval_model,
    retrieval_forward,
    shift_forward,
    train_retrieval,
    train_shift,
)

__all__ += [
    "Adam",
    "TrainingResult",
    "TransformerBlock",
    "apply_rotary",
    "block_parameter_count",
    "export_retrieval_model",
    "feed_forward",
    "gpt_parameter_count",
    "layer_norm",
    "load_retrieval_model",
    "position_frequencies",
    "retrieval_forward",
    "shift_forward",
    "sinusoidal_positions",
    "sinusoidal_shift_matrix",
    "train_retrieval",
    "train_shift",
    "training",
]
