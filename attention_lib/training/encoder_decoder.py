r"""An encoder and a decoder built from the GPT's layers, forward and backward.

Both stacks are pre-norm, with learned positions, GELU feed-forward networks and a final
layer norm, and every layer is the GPT's (:mod:`attention_lib.gpt.layers`): its forward
saves what its backward needs. What changes is the wiring of chapter 13:

- the **encoder** lets every position see every other (no causal mask); ``key_mask``
  hides the padding of shorter sequences in a batch;
- the **decoder** masks its self-attention causally and, between self-attention and the
  feed-forward network, attends across to the encoder's output, the *memory*:

.. math::

    x \leftarrow x + \operatorname{MHA}\bigl(\operatorname{LN}_1(x)\bigr)_{\text{causal}},
    \quad
    x \leftarrow x + \operatorname{MHA}\bigl(\operatorname{LN}_x(x),\, M\bigr), \quad
    x \leftarrow x + \operatorname{FFN}\bigl(\operatorname{LN}_2(x)\bigr).

The decoder's logits are its final layer norm times the transposed token embedding (tied,
as in the GPT). The backward of cross-attention returns the gradient of the memory (it
reaches the memory through the keys and the values), which the caller hands to the
encoder's backward. A stack's sizes are a :class:`~attention_lib.GPTConfig` (learned
positions, tied embeddings); its parameters carry a prefix (``"enc."``, ``"dec."``) so that
two stacks live in one dict.

Dimension letters: ``B`` sequences, ``T`` positions of a stack's own sequence, ``S``
positions of the memory, ``d`` ``d_model``, ``h`` heads, ``V`` the vocabulary.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..gpt.config import GPTConfig, gpt_parameter_shapes
from ..gpt.layers import (
    attention_backward_layer,
    attention_forward,
    cross_attention_backward_layer,
    feed_forward_backward,
    feed_forward_forward,
    layer_norm_backward,
    layer_norm_forward,
)

__all__: list[str] = []

#: Called as ``weights_fn(layer, weights)`` with one layer's weights (B, h, T, S); returns the
#: weights that layer's heads then use (forward only).
WeightsFn = Callable[[int, np.ndarray], np.ndarray]


def stack_shapes(config: GPTConfig, prefix: str, *, cross: bool) -> dict[str, tuple[int, ...]]:
    """The parameters of one stack: the GPT's names with ``prefix``, and with ``cross`` a
    cross-attention sublayer per block (``blocks.l.ln_x.*`` and ``blocks.l.cross.*``)."""
    d = config.d_model
    shapes = {}
    for name, shape in gpt_parameter_shapes(config).items():
        shapes[prefix + name] = shape
        if cross and name.endswith("attn.b_o"):  # after the block's self-attention
            block = prefix + name[: -len("attn.b_o")]
            shapes[block + "ln_x.gamma"] = (d,)
            shapes[block + "ln_x.beta"] = (d,)
            for m in "qkvo":
                shapes[block + f"cross.w_{m}"] = (d, d)
                shapes[block + f"cross.b_{m}"] = (d,)
    return shapes


def init_stacks(shapes: dict[str, tuple[int, ...]], n_layers: dict[str, int],
                rng: np.random.Generator, std: float) -> dict[str, np.ndarray]:
    r"""Fresh float64 parameters, drawn as :func:`~attention_lib.init_gpt` draws them.

    Gammas 1, biases and betas 0, matrices and embeddings normal with standard deviation
    ``std``, except the projections that write into the residual stream (``w_o`` of every
    attention, ``ff.w2``): :math:`\text{std}/\sqrt{2L}` for a stack of ``L`` blocks.
    ``n_layers`` maps each prefix to its number of blocks.
    """
    params = {}
    for name, shape in shapes.items():
        leaf = name.rsplit(".", 1)[-1]
        if leaf == "gamma":
            params[name] = np.ones(shape)
        elif leaf.startswith("b") and len(shape) == 1:  # b_q, b1, beta, ...
            params[name] = np.zeros(shape)
        else:
            layers = next(n for prefix, n in n_layers.items() if name.startswith(prefix))
            scale = std / math.sqrt(2 * layers) if leaf in ("w_o", "w2") else std
            params[name] = scale * rng.standard_normal(shape)
    return params


def padding_mask(lengths: np.ndarray, T: int) -> np.ndarray:
    """Key mask (B, 1, 1, T): True for the first ``lengths[b]`` positions of sequence ``b``."""
    return (np.arange(T) < np.asarray(lengths)[:, None])[:, None, None, :]


def _embed(params: dict[str, np.ndarray], prefix: str, tokens: np.ndarray) -> np.ndarray:
    T = tokens.shape[1]
    return params[prefix + "wte"][tokens] + params[prefix + "wpe"][:T]  # (B, T, d)


def _feed_forward_block(x: np.ndarray, params: dict[str, np.ndarray], p: str
                        ) -> tuple[np.ndarray, dict[str, Any]]:
    a2, ln2 = layer_norm_forward(x, params[p + "ln2.gamma"], params[p + "ln2.beta"])
    y2, ff = feed_forward_forward(a2, params, p + "ff.")
    return x + y2, {"ln2": ln2, "ff": ff}


def _feed_forward_block_backward(dx: np.ndarray, s: dict[str, Any],
                                 params: dict[str, np.ndarray], p: str,
                                 grads: dict[str, np.ndarray]) -> np.ndarray:
    d_a2, ff_grads = feed_forward_backward(dx, s["ff"], params, p + "ff.")
    grads.update(ff_grads)
    d_in, grads[p + "ln2.gamma"], grads[p + "ln2.beta"] = layer_norm_backward(d_a2, s["ln2"])
    return dx + d_in  # the residual passes dx through unchanged


def _embedding_backward(dx: np.ndarray, tokens: np.ndarray, prefix: str,
                        grads: dict[str, np.ndarray]) -> None:
    """Every position adds its row of dx to the row of the token it read, and to its
    position's row."""
    np.add.at(grads[prefix + "wte"], tokens.reshape(-1), dx.reshape(-1, dx.shape[-1]))
    grads[prefix + "wpe"][:tokens.shape[1]] += dx.sum(axis=0)  # (T, d)


def encoder_forward(params: dict[str, np.ndarray], config: GPTConfig, tokens: np.ndarray,
                    key_mask: np.ndarray | None = None, *, prefix: str = "",
                    keep: bool = False, head_mask: np.ndarray | None = None,
                    weights_fn: WeightsFn | None = None,
                    ) -> tuple[np.ndarray, list[np.ndarray], list[Any]]:
    """The encoder on token ids (B, T): ``(final, weights, saved)``.

    ``final`` (B, T, d) is the output of the final layer norm; ``weights`` one array
    (B, h, T, T) per layer; ``saved`` what :func:`encoder_backward` needs (empty unless
    ``keep``). ``head_mask`` (L, h) scales each head's output (forward only).
    """
    x = _embed(params, prefix, tokens)
    weights, saved = [], []
    for layer in range(config.n_layers):
        p = f"{prefix}blocks.{layer}."
        a, ln1 = layer_norm_forward(x, params[p + "ln1.gamma"], params[p + "ln1.beta"])
        fn = None if weights_fn is None else (lambda w, layer=layer: weights_fn(layer, w))
        y, w, attn = attention_forward(a, params, p + "attn.", config.n_heads, False,
                                       None if head_mask is None else head_mask[layer],
                                       causal=False, mask=key_mask, weights_fn=fn)
        x = x + y
        weights.append(w)  # (B, h, T, T)
        x, ff = _feed_forward_block(x, params, p)
        if keep:
            saved.append({"ln1": ln1, "attn": attn, **ff})
    final, ln_f = layer_norm_forward(x, params[prefix + "ln_f.gamma"],
                                     params[prefix + "ln_f.beta"])  # (B, T, d)
    if keep:
        saved.append({"ln_f": ln_f})
    return final, weights, saved


def encoder_backward(d_final: np.ndarray, saved: list[Any], params: dict[str, np.ndarray],
                     config: GPTConfig, tokens: np.ndarray, grads: dict[str, np.ndarray], *,
                     prefix: str = "") -> None:
    """Add the gradient of every encoder parameter to ``grads`` (which holds zeros or the
    contributions of other paths), given ``d_final`` (B, T, d)."""
    dx, grads[prefix + "ln_f.gamma"], grads[prefix + "ln_f.beta"] = layer_norm_backward(
        d_final, saved[-1]["ln_f"])
    for layer in reversed(range(config.n_layers)):
        p = f"{prefix}blocks.{layer}."
        s = saved[layer]
        dx = _feed_forward_block_backward(dx, s, params, p, grads)
        d_a, attn_grads = attention_backward_layer(dx, s["attn"], params, p + "attn.",
                                                   config.n_heads, False)
        grads.update(attn_grads)
        d_in, grads[p + "ln1.gamma"], grads[p + "ln1.beta"] = layer_norm_backward(d_a, s["ln1"])
        dx = dx + d_in
    _embedding_backward(dx, tokens, prefix, grads)


def decoder_forward(params: dict[str, np.ndarray], config: GPTConfig, tokens: np.ndarray,
                    memory: np.ndarray, memory_mask: np.ndarray | None = None, *,
                    prefix: str = "dec.", keep: bool = False,
                    cross_head_mask: np.ndarray | None = None,
                    ) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray], list[Any]]:
    """The decoder on token ids (B, T), reading ``memory`` (B, S, d):
    ``(logits, self_weights, cross_weights, saved)``.

    ``logits`` (B, T, V); ``self_weights`` one (B, h, T, T) per layer (causal);
    ``cross_weights`` one (B, h, T, S) per layer; ``memory_mask`` (B, 1, 1, S) hides the
    memory's padding. ``cross_head_mask`` (L, h) scales each cross-attention head's output
    (forward only).
    """
    x = _embed(params, prefix, tokens)
    self_weights, cross_weights, saved = [], [], []
    for layer in range(config.n_layers):
        p = f"{prefix}blocks.{layer}."
        a, ln1 = layer_norm_forward(x, params[p + "ln1.gamma"], params[p + "ln1.beta"])
        y, w, attn = attention_forward(a, params, p + "attn.", config.n_heads, False)
        x = x + y
        ax, ln_x = layer_norm_forward(x, params[p + "ln_x.gamma"], params[p + "ln_x.beta"])
        yx, wx, cross = attention_forward(
            ax, params, p + "cross.", config.n_heads, False,
            None if cross_head_mask is None else cross_head_mask[layer],
            causal=False, mask=memory_mask, memory=memory)
        x = x + yx
        self_weights.append(w)  # (B, h, T, T)
        cross_weights.append(wx)  # (B, h, T, S)
        x, ff = _feed_forward_block(x, params, p)
        if keep:
            saved.append({"ln1": ln1, "attn": attn, "ln_x": ln_x, "cross": cross, **ff})
    final, ln_f = layer_norm_forward(x, params[prefix + "ln_f.gamma"],
                                     params[prefix + "ln_f.beta"])  # (B, T, d)
    logits = final @ params[prefix + "wte"].T  # (B, T, V): the tied output layer
    if keep:
        saved.append({"ln_f": ln_f, "final": final})
    return logits, self_weights, cross_weights, saved


def decoder_backward(d_logits: np.ndarray, saved: list[Any], params: dict[str, np.ndarray],
                     config: GPTConfig, tokens: np.ndarray, grads: dict[str, np.ndarray], *,
                     prefix: str = "dec.") -> np.ndarray:
    """Add the gradient of every decoder parameter to ``grads`` given ``d_logits`` (B, T, V);
    return the gradient of the memory (B, S, d), summed over the layers' cross-attention."""
    top = saved[-1]
    d = config.d_model
    d_final = d_logits @ params[prefix + "wte"]  # (B, T, d)
    grads[prefix + "wte"] += d_logits.reshape(-1, d_logits.shape[-1]).T @ top["final"].reshape(
        -1, d)  # (V, d): the output layer's share of the tied embedding
    dx, grads[prefix + "ln_f.gamma"], grads[prefix + "ln_f.beta"] = layer_norm_backward(
        d_final, top["ln_f"])
    d_memory = None
    for layer in reversed(range(config.n_layers)):
        p = f"{prefix}blocks.{layer}."
        s = saved[layer]
        dx = _feed_forward_block_backward(dx, s, params, p, grads)
        d_ax, d_mem, cross_grads = cross_attention_backward_layer(dx, s["cross"], params,
                                                                  p + "cross.", config.n_heads)
        grads.update(cross_grads)
        d_memory = d_mem if d_memory is None else d_memory + d_mem
        d_in, grads[p + "ln_x.gamma"], grads[p + "ln_x.beta"] = layer_norm_backward(
            d_ax, s["ln_x"])
        dx = dx + d_in
        d_a, attn_grads = attention_backward_layer(dx, s["attn"], params, p + "attn.",
                                                   config.n_heads, False)
        grads.update(attn_grads)
        d_in, grads[p + "ln1.gamma"], grads[p + "ln1.beta"] = layer_norm_backward(d_a, s["ln1"])
        dx = dx + d_in
    _embedding_backward(dx, tokens, prefix, grads)
    return d_memory
