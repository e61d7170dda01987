"""One transformer for every model of the book: configuration, forward, backward, hooks, training.

Modules, in the order a forward pass meets them:

- :mod:`.config`: :class:`GPTConfig` (a GPT by default; an encoder, a decoder with
  cross-attention, grouped key/value heads, RMSNorm, SwiGLU, post-norm by its fields), the
  parameters' names and shapes, their checks;
- :mod:`.params`: initial parameters, one way for every model;
- :mod:`.layers`: norms, feed-forward networks, embeddings: each forward beside its backward;
- :mod:`.attention`: the attention layer (self or cross, causal, masks, windows, rotary
  positions, grouped heads, softmax or linear), forward and backward;
- :mod:`.stack`: the block and the stack, forward and backward, and cached decoding;
- :mod:`.hooks`: named sites where a hook reads or changes the activations;
- :mod:`.loss`: cross-entropy over the positions and classes that count;
- :mod:`.train`: Adam, clipping, the learning-rate schedule and the one training loop.

The GPT of :mod:`attention_lib.gpt`, the tasks of :mod:`attention_lib.training`, and the
front doors :class:`~attention_lib.MultiHeadAttention` and
:class:`~attention_lib.TransformerBlock` all compute with these functions.
"""

from __future__ import annotations

from .config import GPTConfig, gpt_parameter_shapes
from .hooks import capture_hooks, head_scale_hooks, hook_sites
from .train import Adam, GPTTrainingLog, clip_by_global_norm, learning_rate

__all__ = ["capture_hooks", "head_scale_hooks", "hook_sites"]

# Importable from here, public as attention_lib.GPTConfig (with the GPT's functions) and
# attention_lib.training.Adam (with the tasks).
_ = (Adam, GPTConfig, GPTTrainingLog, clip_by_global_norm, gpt_parameter_shapes, learning_rate)
