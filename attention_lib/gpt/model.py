r"""A whole GPT in numpy: initialisation, the forward pass, the loss and every gradient.

The model reads token ids ``(B, T)`` and predicts, at every position, the next token:

.. math::

    x^{(0)} = W_E[t] + W_P[0{:}T], \qquad
    x^{(l)} = \operatorname{Block}_l\bigl(x^{(l-1)}\bigr), \qquad
    \text{logits} = \operatorname{LN}_f\bigl(x^{(L)}\bigr)\, W_E^{\mathsf T} .

The backward pass runs the same layers in reverse, each through the backward written
beside its forward in :mod:`attention_lib.gpt.layers`; the embedding's gradient is a
scatter-add over the token ids.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validation import positive_int
from .config import (
    GPTConfig,
    check_head_mask,
    check_params,
    check_tokens,
    gpt_parameter_shapes,
)
from .layers import (
    attention_backward_layer,
    attention_forward,
    feed_forward_backward,
    feed_forward_forward,
    layer_norm_backward,
    layer_norm_forward,
)

__all__ = ["gpt_attention_weights", "gpt_logits", "gpt_loss_and_grads", "init_gpt"]


def init_gpt(config: GPTConfig, seed: int = 0, *, dtype: Any = np.float32,
             std: float = 0.02) -> dict[str, np.ndarray]:
    r"""Fresh parameters for ``config``, drawn as GPT-2 draws them.

    Parameters
    ----------
    config : GPTConfig
    seed : int, default 0
        Seed of ``numpy.random.default_rng``; the same seed gives the same parameters.
    dtype : {numpy.float32, numpy.float64}, default float32
    std : float, default 0.02
        Standard deviation of the weight matrices and embeddings.

    Returns
    -------
    dict of str to numpy.ndarray
        Names and shapes of :func:`gpt_parameter_shapes`. Biases and betas are 0,
        gammas 1, other matrices normal with standard deviation ``std``, except the two
        projections that write into the residual stream (``attn.w_o``, ``ff.w2``), which
        get :math:`\text{std} / \sqrt{2L}` so that the stream's variance does not grow
        with depth.

    Examples
    --------
    >>> params = init_gpt(GPTConfig(10, 8, 4, 1, 2))
    >>> params["wte"].shape, params["wte"].dtype, float(params["blocks.0.ln1.gamma"][0])
    ((10, 4), dtype('float32'), 1.0)
    """
    shapes = gpt_parameter_shapes(config)
    seed = positive_int(seed, "seed", minimum=0)
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"dtype={dtype}; expected float32 or float64")
    rng = np.random.default_rng(seed)
    residual_std = std / math.sqrt(2 * config.n_layers)
    params = {}
    for name, shape in shapes.items():
        leaf = name.rsplit(".", 1)[-1]
        if leaf == "gamma":
            params[name] = np.ones(shape, dtype)
        elif leaf.startswith("b") and len(shape) == 1:  # b_q, b1, beta, ...
            params[name] = np.zeros(shape, dtype)
        else:
            scale = residual_std if leaf in ("w_o", "w2") else std
            params[name] = (scale * rng.standard_normal(shape)).astype(dtype)
    return params


def _forward(params: dict[str, np.ndarray], config: GPTConfig, tokens: np.ndarray,
             *, keep: bool, head_mask: np.ndarray | None = None,
             ) -> tuple[np.ndarray, list[np.ndarray], list[Any]]:
    """Logits (B, T, V), the weights of every layer, and what the backward pass needs.

    ``head_mask`` (L, h), checked, scales each head's output (forward only).
    """
    T = tokens.shape[1]
    rope = config.positions == "rope"
    x = params["wte"][tokens]  # (B, T, d)
    if config.positions == "learned":
        x = x + params["wpe"][:T]  # (T, d) broadcast over the batch
    weights, saved = [], []
    for layer in range(config.n_layers):
        p = f"blocks.{layer}."
        a, ln1 = layer_norm_forward(x, params[p + "ln1.gamma"], params[p + "ln1.beta"])
        y, w, attn = attention_forward(a, params, p + "attn.", config.n_heads, rope,
                                       None if head_mask is None else head_mask[layer])
        x = x + y
        weights.append(w)  # (B, h, T, T)
        layer_saved: dict[str, Any] = {"ln1": ln1, "attn": attn}
        if not config.attention_only:
            a2, ln2 = layer_norm_forward(x, params[p + "ln2.gamma"], params[p + "ln2.beta"])
            y2, ff = feed_forward_forward(a2, params, p + "ff.")
            x = x + y2
            layer_saved.update(ln2=ln2, ff=ff)
        if keep:
            saved.append(layer_saved)
    final, ln_f = layer_norm_forward(x, params["ln_f.gamma"], params["ln_f.beta"])  # (B, T, d)
    w_out = params["wte"].T if config.tie_embeddings else params["w_out"]  # (d, V)
    logits = final @ w_out  # (B, T, V)
    if keep:
        saved.append({"ln_f": ln_f, "final": final})
    return logits, weights, saved


def gpt_logits(params: dict[str, np.ndarray], config: GPTConfig, tokens: Any, *,
               head_mask: Any = None) -> np.ndarray:
    r"""The next-token logits at every position.

    Parameters
    ----------
    params : dict of str to numpy.ndarray
        From :func:`init_gpt` (or a trained model), float32 or float64.
    config : GPTConfig
    tokens : array_like of int, shape (B, T)
        Token ids in ``0 .. vocab_size - 1``, ``T <= context``.
    head_mask : array_like of bool or float, shape (n_layers, n_heads), optional
        Multiplies each head's output before the layer's output projection: 1 (True)
        keeps the head, 0 (False) removes it (an ablation). By default every head
        counts, and the logits are the very numbers computed without a mask.

    Returns
    -------
    numpy.ndarray, shape (B, T, vocab_size)
        Row ``(b, t)`` scores every token as the one after ``tokens[b, :t + 1]``; it
        depends on no later position (the causal mask). In the parameters' dtype.

    Examples
    --------
    >>> config = GPTConfig(10, 8, 4, 1, 2)
    >>> params = init_gpt(config)
    >>> gpt_logits(params, config, [[1, 2, 3]]).shape
    (1, 3, 10)
    >>> ablated = gpt_logits(params, config, [[1, 2, 3]], head_mask=[[True, False]])
    >>> bool(np.array_equal(ablated, gpt_logits(params, config, [[1, 2, 3]])))
    False
    """
    dtype = check_params(params, config)
    tokens = check_tokens(tokens, config)
    mask = check_head_mask(head_mask, config, dtype)
    return _forward(params, config, tokens, keep=False, head_mask=mask)[0]


def gpt_attention_weights(params: dict[str, np.ndarray], config: GPTConfig,
                          tokens: Any, *, head_mask: Any = None) -> np.ndarray:
    """Every head's attention weights, layer by layer.

    Parameters
    ----------
    params, config, tokens, head_mask
        As in :func:`gpt_logits`. A removed head still has weights (the mask scales its
        output), but the later layers' weights change with what it no longer writes.

    Returns
    -------
    numpy.ndarray, shape (n_layers, B, n_heads, T, T)
        Entry ``[l, b, i, t, s]`` is the weight position ``t`` of head ``i`` in layer ``l``
        puts on position ``s <= t``; each row sums to 1.

    Examples
    --------
    >>> config = GPTConfig(10, 8, 4, 2, 2)
    >>> w = gpt_attention_weights(init_gpt(config), config, [[1, 2, 3]])
    >>> w.shape, float(w[0, 0, 0, 0, 0])
    ((2, 1, 2, 3, 3), 1.0)
    """
    dtype = check_params(params, config)
    tokens = check_tokens(tokens, config)
    mask = check_head_mask(head_mask, config, dtype)
    return np.stack(_forward(params, config, tokens, keep=False, head_mask=mask)[1])


def cross_entropy(logits: np.ndarray, targets: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean cross-entropy in nats over every position, and its gradient w.r.t. the logits."""
    shifted = logits - logits.max(axis=-1, keepdims=True)  # (B, T, V)
    log_z = np.log(np.exp(shifted).sum(axis=-1, keepdims=True))  # (B, T, 1)
    log_p = shifted - log_z
    picked = np.take_along_axis(log_p, targets[..., None], axis=-1)  # (B, T, 1)
    n = targets.size
    loss = float(-picked.sum(dtype=np.float64) / n)
    grad = np.exp(log_p)  # softmax
    np.put_along_axis(grad, targets[..., None],
                      np.take_along_axis(grad, targets[..., None], axis=-1) - 1, axis=-1)
    return loss, grad / logits.dtype.type(n)


def gpt_loss_and_grads(params: dict[str, np.ndarray], config: GPTConfig, tokens: Any,
                       targets: Any) -> tuple[float, dict[str, np.ndarray]]:
    r"""The mean next-token cross-entropy and its gradient with respect to every parameter.

    Parameters
    ----------
    params, config, tokens
        As in :func:`gpt_logits`.
    targets : array_like of int, shape (B, T)
        The token that should follow each position (usually ``tokens`` shifted by one).

    Returns
    -------
    loss : float
        :math:`-\frac1{BT}\sum_{b,t} \log p(\text{targets}_{bt} \mid \text{tokens}_{b,\le t})`
        in nats.
    grads : dict of str to numpy.ndarray
        One gradient per parameter, with its name, shape and dtype.

    Notes
    -----
    The gradient of the loss with respect to the logits is
    :math:`(\operatorname{softmax}(\text{logits}) - \text{onehot}(\text{targets})) / BT`;
    from there every layer's backward runs in reverse order. A tied embedding gets two
    contributions: from the output layer and, by scatter-add, from the tokens it
    embedded.

    Examples
    --------
    >>> config = GPTConfig(10, 8, 8, 1, 2)
    >>> params = init_gpt(config, dtype=np.float64)
    >>> loss, grads = gpt_loss_and_grads(params, config, [[1, 2, 3]], [[2, 3, 4]])
    >>> round(loss, 1), grads["wte"].shape      # about log(10) at initialisation
    (2.3, (10, 8))
    """
    dtype = check_params(params, config)
    tokens = check_tokens(tokens, config)
    targets = check_tokens(targets, config, "targets")
    if targets.shape != tokens.shape:
        raise ValueError(f"targets have shape {targets.shape} but tokens {tokens.shape}; "
                         "expected one target per token")
    rope = config.positions == "rope"
    logits, _, saved = _forward(params, config, tokens, keep=True)
    loss, d_logits = cross_entropy(logits, targets)  # d_logits: (B, T, V)
    grads = {name: np.zeros_like(a) for name, a in params.items()}

    top = saved.pop()
    final = top["final"]  # (B, T, d)
    d_rows = d_logits.reshape(-1, config.vocab_size)  # (B*T, V)
    final_rows = final.reshape(-1, config.d_model)  # (B*T, d)
    if config.tie_embeddings:
        d_final = d_logits @ params["wte"]  # (B, T, d)
        grads["wte"] += d_rows.T @ final_rows  # (V, d)
    else:
        d_final = d_logits @ params["w_out"].T
        grads["w_out"] = final_rows.T @ d_rows  # (d, V)
    dx, grads["ln_f.gamma"], grads["ln_f.beta"] = layer_norm_backward(d_final, top["ln_f"])

    for layer in reversed(range(config.n_layers)):
        p = f"blocks.{layer}."
        s = saved[layer]
        if not config.attention_only:
            d_a2, ff_grads = feed_forward_backward(dx, s["ff"], params, p + "ff.")
            grads.update(ff_grads)
            d_in, grads[p + "ln2.gamma"], grads[p + "ln2.beta"] = layer_norm_backward(
                d_a2, s["ln2"])
            dx = dx + d_in  # the residual passes dx through unchanged
        d_a, attn_grads = attention_backward_layer(dx, s["attn"], params, p + "attn.",
                                                   config.n_heads, rope)
        grads.update(attn_grads)
        d_in, grads[p + "ln1.gamma"], grads[p + "ln1.beta"] = layer_norm_backward(
            d_a, s["ln1"])
        dx = dx + d_in

    # Embeddings: every position adds its row of dx to the row of the token it read.
    d_rows_in = dx.reshape(-1, config.d_model)  # (B*T, d)
    np.add.at(grads["wte"], tokens.reshape(-1), d_rows_in)
    if config.positions == "learned":
        grads["wpe"][:tokens.shape[1]] += dx.sum(axis=0)  # (T, d)
    return loss, {name: g.astype(dtype, copy=False) for name, g in grads.items()}
