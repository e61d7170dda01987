"""attention_lib: scaled dot-product attention in numpy, for the attention book.

The core (softmax, attention, masks, projections, the texts' example numbers)
needs only numpy. ``attention_lib.plotting`` (matplotlib) and
``attention_lib.widgets`` (ipywidgets) are imported on first use, so
``import attention_lib`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

from . import examples, gpt, training
from .attention import causal_mask, project_qkv, scaled_dot_product_attention, scaled_scores
from .block import (
    TransformerBlock,
    block_parameter_count,
    feed_forward,
    gpt_parameter_count,
    layer_norm,
)
from .costs import (
    attention_flops,
    causal_pairs,
    decode_step_multiplications,
    generation_multiplications,
    kv_cache_bytes,
    layer_flops,
    rnn_flops,
    score_matrix_bytes,
)
from .exercises import answer_verdict, check_answer
from .gpt import (
    GPTConfig,
    generate,
    gpt_attention_weights,
    gpt_logits,
    gpt_loss_and_grads,
    gpt_parameter_shapes,
    init_gpt,
    next_token_distribution,
)
from .gradients import attention_backward, softmax_vjp
from .kv_cache import KVCache
from .masks import causal_tile_kinds, padding_mask
from .measure import benchmark_machine, best_time, cpu_description, power_law_fit, stored_benchmark
from .multihead import MultiHeadAttention, merge_heads, split_heads
from .positions import (
    apply_rotary,
    position_frequencies,
    sinusoidal_positions,
    sinusoidal_shift_matrix,
)
from .recurrence import (
    recurrent_matrix,
    rnn_forward,
    rnn_jacobian_products,
    rnn_step_jacobians,
    rnn_sweep,
    spectral_radius,
)
from .saturation import (
    SaturationStats,
    entropy,
    projection_scale_weights,
    saturation_scores,
    saturation_stats,
    softmax_jacobian,
)
from .softmax import softmax
from .tiled import OnlineSoftmaxTrace, online_softmax_row, tiled_attention
from .training import (
    Adam,
    TrainingResult,
    export_retrieval_model,
    load_retrieval_model,
    retrieval_forward,
    shift_forward,
    train_retrieval,
    train_shift,
)

__all__ = [
    # Every chapter: the reader's exercise cells
    "answer_verdict",
    "check_answer",
    # Chapter 1: softmax turns scores into weights
    "softmax",
    "examples",
    "plotting",
    # Chapters 2-3: queries, keys, values and the formula
    "project_qkv",
    "scaled_dot_product_attention",
    "scaled_scores",
    "projection_scale_weights",
    # Chapter 4: scaling by sqrt(d_k) and softmax saturation
    "SaturationStats",
    "entropy",
    "saturation_scores",
    "saturation_stats",
    "softmax_jacobian",
    # Chapter 5: masks
    "causal_mask",
    "padding_mask",
    # Chapter 6: heads
    "MultiHeadAttention",
    "merge_heads",
    "split_heads",
    # Chapter 7: attention against recurrence, and what each costs
    "recurrent_matrix",
    "rnn_forward",
    "rnn_jacobian_products",
    "rnn_step_jacobians",
    "rnn_sweep",
    "spectral_radius",
    "attention_flops",
    "causal_pairs",
    "layer_flops",
    "rnn_flops",
    "score_matrix_bytes",
    "best_time",
    "power_law_fit",
    # Chapter 8: gradients through softmax and attention
    "attention_backward",
    "softmax_vjp",
    # Chapter 9: the KV cache
    "KVCache",
    "decode_step_multiplications",
    "generation_multiplications",
    "kv_cache_bytes",
    # Chapter 10: exact attention by tiles, and the stored benchmark
    "OnlineSoftmaxTrace",
    "causal_tile_kinds",
    "online_softmax_row",
    "tiled_attention",
    "cpu_description",
    "stored_benchmark",
    "benchmark_machine",
    # Chapter 11: word order
    "apply_rotary",
    "position_frequencies",
    "sinusoidal_positions",
    "sinusoidal_shift_matrix",
    # Chapter 12: training attention
    "training",
    "Adam",
    "TrainingResult",
    "export_retrieval_model",
    "load_retrieval_model",
    "retrieval_forward",
    "shift_forward",
    "train_retrieval",
    "train_shift",
    # Chapter 13: the Transformer block
    "TransformerBlock",
    "block_parameter_count",
    "feed_forward",
    "gpt_parameter_count",
    "layer_norm",
    # Part V: a whole GPT
    "gpt",
    "GPTConfig",
    "generate",
    "gpt_attention_weights",
    "gpt_logits",
    "gpt_loss_and_grads",
    "gpt_parameter_shapes",
    "init_gpt",
    "next_token_distribution",
]

__version__ = "0.2.0"

_LAZY = {"plotting", "widgets", "live_controls"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'attention_lib' has no attribute {name!r}")
