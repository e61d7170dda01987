r"""The block and the stack of every model, forward and backward, and cached decoding.

A stack reads token ids ``(..., T)`` and computes

.. math::

    x^{(0)} = W_E[t] + W_P[0{:}T], \qquad
    x^{(l)} = \operatorname{Block}_l\bigl(x^{(l-1)}\bigr), \qquad
    \text{logits} = N_f\bigl(x^{(L)}\bigr)\, W_E^{\mathsf T}

(learned positions; none, or rotary ones inside attention, by the configuration; an untied
read-out ``w_out``). A pre-norm block is :math:`x \leftarrow x + F_s(N_s(x))` for its
sublayers :math:`F_s` (self-attention, cross-attention to a memory, the feed-forward
network); a post-norm block :math:`x \leftarrow N_s(x + F_s(x))`. The backward pass runs the
same layers in reverse, each through the backward written beside its forward
(:mod:`.layers`, :mod:`.attention`); the embeddings' gradients are scatter-adds over the
token ids. An encoder is a stack with ``causal=False`` whose output is its final norm
(``readout=False``); a decoder is a stack with ``cross_attention=True`` reading the
encoder's output, the *memory*, and its backward returns the memory's gradient.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .attention import attention_backward, attention_forward
from .config import GPTConfig
from .hooks import Hooks, run_hook
from .layers import (
    embedding_backward,
    feed_forward_backward,
    feed_forward_forward,
    norm_backward,
    norm_forward,
)

__all__: list[str] = []


class StackRun(NamedTuple):
    """What :func:`stack_forward` returns."""

    out: np.ndarray  #: the logits (..., T, V), or the final norm's output (..., T, d)
    weights: list[np.ndarray]  #: each layer's self-attention weights (..., h, T, T)
    cross_weights: list[np.ndarray]  #: each layer's cross-attention weights (..., h, T, S)
    saved: list[Any]  #: what :func:`stack_backward` needs (empty unless ``keep``)


def embed(params: dict[str, np.ndarray], config: GPTConfig, tokens: np.ndarray,
          prefix: str = "", start: int = 0) -> np.ndarray:
    """Token embeddings (..., T, d), plus the learned positions ``start .. start + T - 1``."""
    x = params[prefix + "wte"][tokens]  # (..., T, d)
    if config.positions == "learned":
        x = x + params[prefix + "wpe"][start:start + tokens.shape[-1]]  # (T, d) broadcast
    return x


def _sublayer(config: GPTConfig, x: np.ndarray, params: dict[str, np.ndarray], norm: str,
              run: Any) -> tuple[np.ndarray, Any, tuple]:
    """One residual sublayer ``run`` around the norm ``norm``: (new x, run's extra, saved)."""
    if config.norm_position == "pre":
        a, n = norm_forward(config.norm, x, params, norm)
        y, extra, s = run(a)
        return x + y, extra, (n, s)
    y, extra, s = run(x)
    out, n = norm_forward(config.norm, x + y, params, norm)
    return out, extra, (n, s)


def _sublayer_backward(config: GPTConfig, dx: np.ndarray, saved: tuple, norm: str,
                       grads: dict[str, np.ndarray], run_backward: Any) -> np.ndarray:
    n, s = saved
    if config.norm_position == "pre":
        d_in = norm_backward(config.norm, run_backward(dx, s), n, norm, grads)
        return dx + d_in  # the residual passes dx through unchanged
    d_sum = norm_backward(config.norm, dx, n, norm, grads)  # through N(x + F(x))
    return d_sum + run_backward(d_sum, s)


def block_forward(x: np.ndarray, params: dict[str, np.ndarray], config: GPTConfig,
                  block: str, *, memory: np.ndarray | None = None,
                  key_mask: np.ndarray | None = None, memory_mask: np.ndarray | None = None,
                  positions: np.ndarray | None = None, cache: Any = None,
                  hooks: Hooks | None = None, site: str = "",
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, dict[str, Any]]:
    """One block over (..., T, d): ``(x, weights, cross_weights, saved)``.

    ``block`` is the parameters' prefix (``"blocks.0."``); ``site`` the hooks' (the same
    without a stack's prefix); ``cache`` (a :class:`~attention_lib.KVCache`) makes the
    self-attention read every cached key and value after adding the new ones.
    """
    x = run_hook(hooks, site + "resid_pre", x)
    saved: dict[str, Any] = {}
    common = dict(n_heads=config.n_heads, n_kv_heads=config.n_kv_heads, hooks=hooks)

    def attend_self(a: np.ndarray) -> tuple:
        return attention_forward(a, params, block + "attn.", causal=config.causal,
                                 mask=key_mask, window=config.window,
                                 rope=config.positions == "rope", positions=positions,
                                 cache=cache, site=site + "attn", **common)

    x, weights, saved["attn"] = _sublayer(config, x, params, block + "ln1", attend_self)
    cross_weights = None
    if config.cross_attention:
        def attend_memory(a: np.ndarray) -> tuple:
            return attention_forward(a, params, block + "cross.", memory=memory,
                                     mask=memory_mask, site=site + "cross", **common)

        x, cross_weights, saved["cross"] = _sublayer(config, x, params, block + "ln_x",
                                                     attend_memory)
    x = run_hook(hooks, site + "resid_mid", x)
    if not config.attention_only:
        def feed_forward(a: np.ndarray) -> tuple:
            y, s = feed_forward_forward(config.ffn, a, params, block + "ff.", hooks=hooks,
                                        site=site + "ff")
            return y, None, s

        x, _, saved["ff"] = _sublayer(config, x, params, block + "ln2", feed_forward)
    x = run_hook(hooks, site + "resid_post", x)
    return x, weights, cross_weights, saved


def block_backward(dx: np.ndarray, saved: dict[str, Any], params: dict[str, np.ndarray],
                   config: GPTConfig, block: str, grads: dict[str, np.ndarray],
                   ) -> tuple[np.ndarray, np.ndarray | None]:
    """Backward of :func:`block_forward`: ``(dx, d_memory)``; the parameters' gradients go
    into ``grads``."""
    if "ff" in saved:
        def ff_backward(dy: np.ndarray, s: tuple) -> np.ndarray:
            d_a, ff_grads = feed_forward_backward(config.ffn, dy, s, params, block + "ff.")
            grads.update(ff_grads)
            return d_a

        dx = _sublayer_backward(config, dx, saved["ff"], block + "ln2", grads, ff_backward)
    d_memory = None
    if "cross" in saved:
        def cross_backward(dy: np.ndarray, s: tuple) -> np.ndarray:
            nonlocal d_memory
            d_a, d_memory, g = attention_backward(dy, s, params, block + "cross.")
            grads.update(g)
            return d_a

        dx = _sublayer_backward(config, dx, saved["cross"], block + "ln_x", grads,
                                cross_backward)

    def self_backward(dy: np.ndarray, s: tuple) -> np.ndarray:
        d_a, _, g = attention_backward(dy, s, params, block + "attn.")
        grads.update(g)
        return d_a

    dx = _sublayer_backward(config, dx, saved["attn"], block + "ln1", grads, self_backward)
    return dx, d_memory


def read_out(params: dict[str, np.ndarray], config: GPTConfig, final: np.ndarray,
             prefix: str = "") -> np.ndarray:
    """The logits ``final @ W_E^T`` (tied) or ``final @ w_out``."""
    w_out = params[prefix + "wte"].T if config.tie_embeddings else params[prefix + "w_out"]
    return final @ w_out  # (..., V)


def stack_forward(params: dict[str, np.ndarray], config: GPTConfig, tokens: np.ndarray, *,
                  prefix: str = "", memory: np.ndarray | None = None,
                  key_mask: np.ndarray | None = None, memory_mask: np.ndarray | None = None,
                  hooks: Hooks | None = None, keep: bool = False, readout: bool = True,
                  caches: list | None = None, start: int = 0) -> StackRun:
    """The stack on token ids (..., T).

    Parameters
    ----------
    params, config, tokens
        Checked by the caller.
    prefix : str
        Of every parameter name (``"enc."``, ``"dec."``); hook sites have none.
    memory, memory_mask
        The encoder's output (..., S, d) that cross-attention reads, and its key mask
        (bool, broadcastable to (..., 1, 1, S)).
    key_mask
        Hides keys of the self-attention (padding): bool, broadcastable to (..., 1, T, T).
    hooks, keep
        Hooks at the sites of :func:`~attention_lib.hook_sites`; keep what the backward
        pass needs.
    readout : bool
        Return the logits (True) or the final norm's output.
    caches, start
        Cached decoding: one :class:`~attention_lib.KVCache` per layer, and the position of
        ``tokens``' first entry; only the last position's logits (..., V) are returned.
    """
    positions = None
    if caches is not None and config.positions == "rope":
        positions = np.arange(start, start + tokens.shape[-1], dtype=np.float64)
    x = run_hook(hooks, "embed", embed(params, config, tokens, prefix, start))  # (..., T, d)
    weights, cross_weights, saved = [], [], []
    for layer in range(config.n_layers):
        x, w, wx, s = block_forward(
            x, params, config, f"{prefix}blocks.{layer}.", memory=memory, key_mask=key_mask,
            memory_mask=memory_mask, positions=positions,
            cache=None if caches is None else caches[layer], hooks=hooks,
            site=f"blocks.{layer}.")
        weights.append(w)
        if wx is not None:
            cross_weights.append(wx)
        if keep:
            saved.append(s)
    if caches is not None:
        x = x[..., -1, :]  # (..., d): only the last position predicts the next token
    final, ln_f = norm_forward(config.norm, x, params, prefix + "ln_f")
    final = run_hook(hooks, "final", final)
    out = final
    if readout:
        out = run_hook(hooks, "logits", read_out(params, config, final, prefix))
    if keep:
        saved.append({"ln_f": ln_f, "final": final})
    return StackRun(out, weights, cross_weights, saved)


def stack_backward(d_out: np.ndarray, saved: list[Any], params: dict[str, np.ndarray],
                   config: GPTConfig, tokens: np.ndarray, grads: dict[str, np.ndarray], *,
                   prefix: str = "", readout: bool = True) -> np.ndarray | None:
    """Add the gradient of every parameter of the stack to ``grads`` (zeros, or what other
    paths contributed), given the gradient ``d_out`` of the logits (``readout``) or of the
    final norm's output; return the memory's gradient (summed over the layers' cross-attention)
    or None."""
    top = saved[-1]
    if readout:
        final = top["final"]
        d_rows = d_out.reshape(-1, d_out.shape[-1])  # (rows, V)
        final_rows = final.reshape(-1, final.shape[-1])  # (rows, d)
        if config.tie_embeddings:
            d_final = d_out @ params[prefix + "wte"]  # (..., T, d)
            grads[prefix + "wte"] += d_rows.T @ final_rows  # (V, d): the read-out's share
        else:
            d_final = d_out @ params[prefix + "w_out"].T
            grads[prefix + "w_out"] = final_rows.T @ d_rows  # (d, V)
    else:
        d_final = d_out
    dx = norm_backward(config.norm, d_final, top["ln_f"], prefix + "ln_f", grads)
    d_memory = None
    for layer in reversed(range(config.n_layers)):
        dx, d_mem = block_backward(dx, saved[layer], params, config,
                                   f"{prefix}blocks.{layer}.", grads)
        if d_mem is not None:
            d_memory = d_mem if d_memory is None else d_memory + d_mem
    # Embeddings: every position adds its row of dx to the row of the token it read.
    embedding_backward(grads[prefix + "wte"], params[prefix + "wte"].shape, tokens, dx)
    if config.positions == "learned":
        rows = dx.reshape(-1, *dx.shape[-2:]).sum(axis=0)  # (T, d)
        grads[prefix + "wpe"][:tokens.shape[-1]] += rows
    return d_memory
