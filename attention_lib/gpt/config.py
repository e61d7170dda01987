"""The GPT's configuration and its parameters: those of the one model core.

:class:`GPTConfig` and :func:`gpt_parameter_shapes` live in :mod:`attention_lib.model.config`
(every model of the book is a configuration of one transformer); this module gives them
their GPT-facing names.
"""

from __future__ import annotations

from ..model.config import (  # noqa: F401 - the GPT's names for the core's
    GPTConfig,
    check_head_mask,
    check_params,
    check_tokens,
    gpt_parameter_shapes,
)

__all__ = ["GPTConfig", "gpt_parameter_shapes"]
