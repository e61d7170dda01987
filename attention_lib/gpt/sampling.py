r"""Text from a GPT: the next-token distribution, samplers, and generation with a KV cache.

Generation repeats one step: read the logits of the last position, turn them into a
distribution (temperature, top-k, top-p), draw a token, append it. With ``use_cache``
every layer keeps its keys and values in a :class:`~attention_lib.KVCache` (chapter 16), so
a step computes one new row per layer instead of the whole sequence again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._validation import check_flag, positive_int, real_number
from ..kv_cache import KVCache
from ..model.hooks import check_hooks
from ..model.stack import stack_forward
from .config import GPTConfig, check_params, check_tokens

__all__ = ["generate", "next_token_distribution"]


def next_token_distribution(logits: Any, *, temperature: float = 1.0, top_k: int | None = None,
                            top_p: float | None = None) -> np.ndarray:
    r"""The distribution a sampler draws the next token from.

    Parameters
    ----------
    logits : array_like, shape (V,)
        The model's scores for the next token.
    temperature : float, default 1.0
        Divides the logits; ``0`` puts all the probability on the largest logit (greedy;
        ties go to the lowest id).
    top_k : int, optional
        Keep only the ``top_k`` most likely tokens (ties at the cut keep the lower ids).
    top_p : float, optional
        Keep the smallest set of most likely tokens whose probability reaches ``top_p``
        (nucleus sampling), ``0 < top_p <= 1``.

    Returns
    -------
    numpy.ndarray of float64, shape (V,)
        Non-negative, sums to 1; zero outside the kept tokens.

    Notes
    -----
    .. math:: p_i = \frac{\exp(z_i / \tau)}{\sum_{j \in S} \exp(z_j / \tau)}
              \quad (i \in S), \qquad p_i = 0 \quad (i \notin S),

    with :math:`S` the tokens top-k and top-p keep (top-k first, then top-p on the
    renormalised rest).

    Examples
    --------
    >>> next_token_distribution([2.0, 1.0, 0.0], temperature=0)
    array([1., 0., 0.])
    >>> next_token_distribution([2.0, 1.0, 0.0], top_k=2).round(4)
    array([0.7311, 0.2689, 0.    ])
    """
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim != 1 or z.size == 0 or not np.isfinite(z).all():
        raise ValueError(f"logits have shape {z.shape}; expected a finite, non-empty 1-D array")
    temperature = real_number(temperature, "temperature", minimum=0.0)
    if top_k is not None:  # checked whatever the temperature, so a wrong setting never hides
        top_k = positive_int(top_k, "top_k")
    if top_p is not None:
        top_p = real_number(top_p, "top_p", minimum=0.0, maximum=1.0, strict_minimum=True)
    order = np.argsort(-z, kind="stable")  # most likely first, ties by id
    if temperature == 0.0:
        p = np.zeros_like(z)
        p[order[0]] = 1.0
        return p
    keep = np.ones(z.size, dtype=bool)
    if top_k is not None:
        keep[:] = False
        keep[order[:top_k]] = True
    w = np.where(keep, np.exp((z - z.max()) / temperature), 0.0)
    p = w / w.sum()
    if top_p is not None:
        sorted_p = p[order]
        # Keep a token while the probability before it is still short of top_p.
        before = np.cumsum(sorted_p) - sorted_p
        nucleus = order[before < top_p]
        keep = np.zeros(z.size, dtype=bool)
        keep[nucleus] = True
        p = np.where(keep, p, 0.0)
        p = p / p.sum()
    return p


def generate(params: dict[str, np.ndarray], config: GPTConfig, prompt: Any, n_new: int, *,
             temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None,
             seed: int = 0, use_cache: bool = True,
             uniform: Callable[[], float] | None = None, hooks: Any = None) -> np.ndarray:
    """Continue ``prompt`` by ``n_new`` tokens, one at a time.

    Parameters
    ----------
    params : dict of str to numpy.ndarray
        The model's weights, as :func:`~attention_lib.init_gpt` names them.
    config : GPTConfig
    prompt : array_like of int, shape (n,)
        At least one token id.
    n_new : int
        Tokens to add (0 returns the prompt).
    temperature, top_k, top_p : optional
        As in :func:`next_token_distribution`; ``temperature=0`` is greedy decoding.
    seed : int, default 0
        Seed of the generator the tokens are drawn with.
    use_cache : bool, default True
        Keep every layer's keys and values in a :class:`~attention_lib.KVCache` and
        compute one new position per step; ``False`` runs the whole window every step.
        Both give the same tokens.
    uniform : callable, optional
        A source of uniform numbers in ``[0, 1)``, one per new token, used instead of
        ``numpy.random.default_rng(seed)`` (the browser-side generator of
        ``attention_lib.controls`` passes the generator its script uses, so that both
        draw the same tokens).
    hooks : dict, optional
        ``{site: function}`` (:func:`~attention_lib.hook_sites`) run at every forward pass,
        e.g. to steer the model by changing its residual stream while it writes. With the
        cache, each step's arrays hold only the new position (the first step: the prompt).

    Returns
    -------
    numpy.ndarray of int64, shape (n + n_new,)
        The prompt followed by the new tokens.

    Notes
    -----
    The model reads at most ``config.context`` positions: once the sequence is longer, it
    sees the last ``context`` tokens (with the cache, the cache is then rebuilt from that
    window at each step, since every position moves). A token is drawn by inverting the
    cumulative distribution: the first token whose cumulative probability exceeds the
    uniform draw.

    Examples
    --------
    >>> from attention_lib.gpt import init_gpt
    >>> config = GPTConfig(10, 8, 8, 1, 2)
    >>> params = init_gpt(config)
    >>> out = generate(params, config, [1, 2], 5, temperature=0)
    >>> out.shape, bool((out == generate(params, config, [1, 2], 5, temperature=0,
    ...                                   use_cache=False)).all())
    ((7,), True)
    """
    check_params(params, config)
    if not config.causal or config.cross_attention:
        raise ValueError(f"config has causal={config.causal}, cross_attention="
                         f"{config.cross_attention}; expected a decoder-only model (causal, no "
                         "memory) to generate from")
    tokens = check_tokens(np.asarray(prompt)[None, :] if np.ndim(prompt) == 1 else prompt,
                          config, "prompt")
    if tokens.shape[0] != 1:
        raise ValueError(f"prompt has shape {np.shape(prompt)}; expected one sequence (n,)")
    n_new = positive_int(n_new, "n_new", minimum=0)
    seed = positive_int(seed, "seed", minimum=0)
    use_cache = check_flag(use_cache, "use_cache")
    next_token_distribution(np.zeros(1), temperature=temperature, top_k=top_k, top_p=top_p)
    if uniform is None:
        uniform = np.random.default_rng(seed).random
    elif not callable(uniform):
        raise TypeError(f"uniform is {type(uniform).__name__}; expected a callable returning "
                        "numbers in [0, 1)")
    hooks = check_hooks(hooks, config)
    seq = list(tokens[0])
    caches: list[KVCache] | None = None
    for _ in range(n_new):
        window = np.array(seq[-config.context:], dtype=np.int64)
        if not use_cache:
            logits = stack_forward(params, config, window[None, :], hooks=hooks).out[0, -1]
        elif caches is None or len(seq) > config.context:
            caches = [KVCache(initial_capacity=config.context) for _ in range(config.n_layers)]
            logits = stack_forward(params, config, window, caches=caches,
                                   hooks=hooks).out  # (V,)
        else:  # one new position reads every layer's cache and adds to it
            logits = stack_forward(params, config, window[-1:], caches=caches,
                                   start=len(seq) - 1, hooks=hooks).out
        p = next_token_distribution(logits, temperature=temperature, top_k=top_k, top_p=top_p)
        u = uniform()
        if not 0.0 <= u < 1.0:
            raise ValueError(f"uniform() returned {u!r}; expected a number in [0, 1)")
        token = int(np.searchsorted(np.cumsum(p), u, side="right"))
        seq.append(min(token, int(np.flatnonzero(p)[-1])))  # a cumsum may end just below 1
    return np.array(seq, dtype=np.int64)
