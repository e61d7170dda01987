"""A whole GPT in numpy: the configuration, the model with every gradient, generation.

Modules, in the order a forward pass meets them:

- :mod:`.config`: :class:`GPTConfig` and the parameters' names and shapes;
- :mod:`.layers`: each layer's forward and, beside it, its backward;
- :mod:`.model`: :func:`init_gpt`, :func:`gpt_logits`, :func:`gpt_attention_weights`,
  :func:`gpt_loss_and_grads`;
- :mod:`.sampling`: :func:`next_token_distribution` and :func:`generate` (with the KV cache);
- :mod:`.heads`: reading the heads of a trained model (:func:`text_relations`,
  :func:`weight_on_relation`, :func:`head_value_norms`);
- :mod:`.stored`: the model file (:func:`save_gpt`, :func:`load_gpt`) and the book's
  trained model (:func:`book_language_model`);
- :mod:`.train`: training on a token stream (:func:`~attention_lib.gpt.train.train_gpt`).
"""

from __future__ import annotations

from .config import GPTConfig, gpt_parameter_shapes
from .heads import RELATIONS, head_value_norms, text_relations, weight_on_relation
from .model import gpt_attention_weights, gpt_logits, gpt_loss_and_grads, init_gpt
from .sampling import generate, next_token_distribution
from .stored import BookLanguageModel, book_language_model, load_gpt, round_to_half, save_gpt
from .train import GPTTrainingLog, sequence_loss, train_gpt

__all__ = [
    "RELATIONS",
    "BookLanguageModel",
    "GPTConfig",
    "GPTTrainingLog",
    "book_language_model",
    "generate",
    "gpt_attention_weights",
    "gpt_logits",
    "gpt_loss_and_grads",
    "gpt_parameter_shapes",
    "head_value_norms",
    "init_gpt",
    "load_gpt",
    "next_token_distribution",
    "round_to_half",
    "save_gpt",
    "sequence_loss",
    "text_relations",
    "train_gpt",
    "weight_on_relation",
]
