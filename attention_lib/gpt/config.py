"""The shape of a GPT: its configuration, its parameters' names and shapes, and their checks.

Dimension letters used in the shape comments of the package:

- ``B``  sequences in a batch
- ``T``  positions of each sequence (at most ``context``)
- ``V``  vocabulary size
- ``d``  ``d_model``, the width of the residual stream
- ``h``  heads, each of width ``d_head = d / h``
- ``f``  ``d_ff``, the width of the feed-forward hidden layer
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import (
    _asarray,
    as_real_array,
    check_flag,
    describe,
    exact_keys,
    index_array,
    positive_int,
)

__all__ = ["GPTConfig", "gpt_parameter_shapes"]

POSITIONS = ("learned", "rope", "none")


@dataclass(frozen=True)
class GPTConfig:
    r"""The sizes and choices of a decoder-only, pre-norm transformer (a GPT).

    Parameters
    ----------
    vocab_size : int
        Number of token ids ``V``.
    context : int
        Longest sequence ``T`` the model reads at once.
    d_model : int
        Width ``d`` of the residual stream; a multiple of ``n_heads``.
    n_layers : int
        Number of blocks ``L``.
    n_heads : int
        Heads per attention layer ``h``.
    d_ff : int, optional
        Width of the feed-forward hidden layer; defaults to ``4 * d_model``.
    attention_only : bool, default False
        Blocks without layer norm 2 and the feed-forward network (attention and the
        residual stream only, as in interpretability studies).
    positions : {"learned", "rope", "none"}, default "learned"
        A learned position embedding added to the tokens (GPT-2), rotary positions
        applied to queries and keys in every layer (chapter 11), or none (only the
        causal mask then tells positions apart).
    tie_embeddings : bool, default True
        The output layer is the transposed token embedding (no parameters of its own).

    Notes
    -----
    Each block computes, with :math:`\operatorname{LN}` layer norm,

    .. math::

        x \leftarrow x + \operatorname{MHA}(\operatorname{LN}_1(x)), \qquad
        x \leftarrow x + \operatorname{FFN}(\operatorname{LN}_2(x)),

    and the logits are :math:`\operatorname{LN}_f(x)\,W_E^{\mathsf T}` when the
    embeddings are tied.

    Examples
    --------
    >>> config = GPTConfig(vocab_size=65, context=128, d_model=64, n_layers=2, n_heads=4)
    >>> config.d_ff, config.d_head
    (256, 16)
    """

    vocab_size: int
    context: int
    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int | None = None
    attention_only: bool = False
    positions: str = "learned"
    tie_embeddings: bool = True

    def __post_init__(self) -> None:
        for name in ("vocab_size", "context", "d_model", "n_layers", "n_heads"):
            object.__setattr__(self, name, positive_int(getattr(self, name), name))
        d_ff = 4 * self.d_model if self.d_ff is None else positive_int(self.d_ff, "d_ff")
        object.__setattr__(self, "d_ff", d_ff)
        for name in ("attention_only", "tie_embeddings"):
            object.__setattr__(self, name, check_flag(getattr(self, name), name))
        if not isinstance(self.positions, str) or self.positions not in POSITIONS:
            raise ValueError(f"positions={self.positions!r}; expected one of {POSITIONS}")
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}; "
                "expected d_model to be a multiple of n_heads"
            )
        if self.positions == "rope" and self.d_head % 2:
            raise ValueError(
                f"positions='rope' turns pairs of entries, but d_head = d_model / n_heads = "
                f"{self.d_head} is odd; expected an even d_head"
            )

    @property
    def d_head(self) -> int:
        """Width of one head, ``d_model // n_heads``."""
        return self.d_model // self.n_heads


def gpt_parameter_shapes(config: GPTConfig) -> dict[str, tuple[int, ...]]:
    """Every parameter's name and shape, in a fixed order.

    Parameters
    ----------
    config : GPTConfig

    Returns
    -------
    dict of str to tuple of int
        ``"wte"`` (V, d) the token embedding; ``"wpe"`` (context, d) with learned
        positions; per block ``l``: ``"blocks.l.ln1.gamma"`` ... ``"blocks.l.attn.w_q"``
        (d, d) and its bias ``b_q`` (d,), likewise ``k``, ``v`` and the output ``o``,
        and unless ``attention_only``: ``ln2`` and ``ff.w1`` (d, f), ``ff.b1``, ``ff.w2``
        (f, d), ``ff.b2``; then ``"ln_f.gamma"``, ``"ln_f.beta"``, and ``"w_out"`` (d, V)
        when the embeddings are not tied.

    Examples
    --------
    >>> shapes = gpt_parameter_shapes(GPTConfig(10, 8, 4, 1, 2, attention_only=True))
    >>> list(shapes)[:4], shapes["blocks.0.attn.w_q"]
    (['wte', 'wpe', 'blocks.0.ln1.gamma', 'blocks.0.ln1.beta'], (4, 4))
    """
    if not isinstance(config, GPTConfig):
        raise TypeError(f"config={config!r}; expected a GPTConfig")
    d, f, v = config.d_model, config.d_ff, config.vocab_size
    shapes: dict[str, tuple[int, ...]] = {"wte": (v, d)}
    if config.positions == "learned":
        shapes["wpe"] = (config.context, d)
    for layer in range(config.n_layers):
        p = f"blocks.{layer}."
        shapes[p + "ln1.gamma"] = (d,)
        shapes[p + "ln1.beta"] = (d,)
        for m in "qkvo":
            shapes[p + f"attn.w_{m}"] = (d, d)
            shapes[p + f"attn.b_{m}"] = (d,)
        if not config.attention_only:
            shapes[p + "ln2.gamma"] = (d,)
            shapes[p + "ln2.beta"] = (d,)
            shapes[p + "ff.w1"] = (d, f)
            shapes[p + "ff.b1"] = (f,)
            shapes[p + "ff.w2"] = (f, d)
            shapes[p + "ff.b2"] = (d,)
    shapes["ln_f.gamma"] = (d,)
    shapes["ln_f.beta"] = (d,)
    if not config.tie_embeddings:
        shapes["w_out"] = (d, v)
    return shapes


def check_params(params: Any, config: GPTConfig) -> np.dtype:
    """Check a parameter dict against ``config``: names, shapes, one float dtype, finite.

    Returns the dtype (float32 or float64). Raises ``TypeError``/``ValueError`` naming
    the parameter at fault.
    """
    shapes = gpt_parameter_shapes(config)
    if not isinstance(params, dict):
        raise TypeError(f"params is {type(params).__name__}; expected a dict of arrays "
                        "(from init_gpt)")
    exact_keys(params, shapes, "params", what="arrays of the config")
    dtypes = set()
    for name, shape in shapes.items():
        a = params[name]
        if not isinstance(a, np.ndarray) or a.dtype not in (np.float32, np.float64):
            got = describe(a) if isinstance(a, np.ndarray) else type(a).__name__
            raise TypeError(f"params[{name!r}] is {got}; expected a float32 or float64 array")
        if a.shape != shape:
            raise ValueError(f"params[{name!r}] has {describe(a)}; expected shape {shape}")
        dtypes.add(a.dtype)
    if len(dtypes) > 1:
        raise TypeError(f"params mix dtypes {sorted(str(t) for t in dtypes)}; expected one")
    for name in shapes:
        if not np.isfinite(params[name]).all():
            raise ValueError(f"params[{name!r}] has non-finite entries (NaN or inf)")
    return dtypes.pop()


def check_tokens(tokens: Any, config: GPTConfig, name: str = "tokens") -> np.ndarray:
    """``tokens`` as an int64 array (B, T) of ids in ``0 .. V - 1`` with ``1 <= T <= context``."""
    t = index_array(tokens, config.vocab_size, name, ndim=2)  # (B, T), no id wrapped
    if t.shape[1] > config.context:
        raise ValueError(f"{name} has T={t.shape[1]} positions ({describe(t)}); the model's "
                         f"context is {config.context}; expected T <= {config.context}")
    return t


def check_head_mask(head_mask: Any, config: GPTConfig, dtype: np.dtype) -> np.ndarray | None:
    """``head_mask`` as a ``dtype`` array (n_layers, n_heads) of finite scales, or None.

    True/1 keeps a head's output, False/0 removes it; booleans and real numbers are
    accepted. Raises ``TypeError``/``ValueError`` naming ``head_mask``.
    """
    if head_mask is None:
        return None
    m = _asarray(head_mask, "head_mask")
    if m.dtype != np.bool_:
        m = as_real_array(m, "head_mask")
    expected = (config.n_layers, config.n_heads)
    if m.shape != expected:
        raise ValueError(f"head_mask has {describe(m)}; expected shape (n_layers, n_heads) = "
                         f"{expected}, one entry per head (1 keeps it, 0 removes its output)")
    return m.astype(dtype)
