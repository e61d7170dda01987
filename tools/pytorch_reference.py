"""Run PyTorch and Hugging Face transformers once on small inputs and store what they return.

    pip install torch==2.13.0 transformers==5.25.0 numpy   # in a separate environment
    python tools/pytorch_reference.py                        # writes the file below

The closing chapter states how the book's functions correspond to PyTorch's
``torch.nn.functional.scaled_dot_product_attention`` and ``torch.nn.MultiheadAttention`` and
to a Hugging Face GPT-2's ``past_key_values``. Neither library is installed with the book, so
this script runs them on seeded inputs and writes the inputs and their outputs to
``attention_lib/data/pytorch_reference.npz``; the chapter and ``tests/test_pytorch_bridge.py``
compute the same things with the book's library and compare. Everything is float64, so the
comparisons hold to rounding on any CPU. Each array's name says what it is:

* ``sdpa.*``: ``q`` (1, 4, 3, 8), ``k``, ``v`` (1, 4, 5, 8) and ``k_gqa``, ``v_gqa``
  (1, 2, 5, 8), the masks ``bool_mask`` (True = may attend) and ``float_mask`` (added);
  outputs ``plain``, ``bool_mask_out``, ``float_mask_out``, ``is_causal`` (3 queries, 5 keys),
  ``causal_lower_right`` (``attn_mask=torch.nn.attention.bias.causal_lower_right(3, 5)``) and
  ``gqa`` (``enable_gqa=True``, 4 query heads and 2 key/value heads);
* ``mha.*``: ``torch.nn.MultiheadAttention(8, 2, bias=False, batch_first=True)``: its
  ``in_proj_weight`` (24, 8) and ``out_proj_weight`` (8, 8), the input ``x`` (1, 5, 8), the
  boolean ``attn_mask`` (5, 5) it was given (True = may NOT attend), the output ``out`` and
  the head-averaged ``weights``;
* ``gpt2.*``: a ``GPT2LMHeadModel`` with every parameter drawn from N(0, 0.3²)
  (``config`` holds vocab, context, width, layers, heads), every parameter under its
  Hugging Face name, the ``ids`` (1, 7),
  the ``logits`` of the whole sequence, and each layer's cached ``keys.l`` and ``values.l``
  (1, heads, 7, head size) after running the first 6 ids with ``use_cache=True`` and then
  the 7th alone; ``step_logits`` are that last step's logits.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 (PyTorch's own name)
import transformers
from torch.nn.attention.bias import causal_lower_right

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "attention_lib" / "data" / "pytorch_reference.npz"


def t(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a))


def main() -> None:
    torch.manual_seed(0)
    rng = np.random.default_rng(2222)
    out: dict[str, np.ndarray] = {
        "versions": np.array([torch.__version__, transformers.__version__])}

    # scaled_dot_product_attention
    q = rng.normal(size=(1, 4, 3, 8))
    k, v = rng.normal(size=(1, 4, 5, 8)), rng.normal(size=(1, 4, 5, 8))
    k_gqa, v_gqa = rng.normal(size=(1, 2, 5, 8)), rng.normal(size=(1, 2, 5, 8))
    bool_mask = rng.random((3, 5)) < 0.7
    bool_mask[:, 0] = True  # every query sees at least one key
    float_mask = rng.normal(size=(3, 5))
    out.update({"sdpa.q": q, "sdpa.k": k, "sdpa.v": v, "sdpa.k_gqa": k_gqa, "sdpa.v_gqa": v_gqa,
                "sdpa.bool_mask": bool_mask, "sdpa.float_mask": float_mask})
    sdpa = F.scaled_dot_product_attention
    out["sdpa.plain"] = sdpa(t(q), t(k), t(v)).numpy()
    out["sdpa.bool_mask_out"] = sdpa(t(q), t(k), t(v), attn_mask=t(bool_mask)).numpy()
    out["sdpa.float_mask_out"] = sdpa(t(q), t(k), t(v), attn_mask=t(float_mask)).numpy()
    out["sdpa.is_causal"] = sdpa(t(q), t(k), t(v), is_causal=True).numpy()
    lower_right = causal_lower_right(q.shape[-2], k.shape[-2])
    out["sdpa.causal_lower_right"] = sdpa(t(q), t(k), t(v), attn_mask=lower_right).numpy()
    out["sdpa.gqa"] = sdpa(t(q), t(k_gqa), t(v_gqa), enable_gqa=True).numpy()

    # nn.MultiheadAttention
    mha = torch.nn.MultiheadAttention(8, 2, bias=False, batch_first=True).double()
    x = rng.normal(size=(1, 5, 8))
    blocked = ~np.tri(5, 5, dtype=bool)  # True = may NOT attend: the future
    with torch.no_grad():
        y, w = mha(t(x), t(x), t(x), attn_mask=t(blocked))
    out.update({"mha.in_proj_weight": mha.in_proj_weight.detach().numpy(),
                "mha.out_proj_weight": mha.out_proj.weight.detach().numpy(),
                "mha.x": x, "mha.attn_mask": blocked, "mha.out": y.numpy(),
                "mha.weights": w.numpy()})

    # A Hugging Face GPT-2 and its past_key_values
    config = transformers.GPT2Config(vocab_size=11, n_positions=16, n_embd=8, n_layer=2,
                                     n_head=2, resid_pdrop=0.0, embd_pdrop=0.0,
                                     attn_pdrop=0.0)
    model = transformers.GPT2LMHeadModel(config).double().eval()
    with torch.no_grad():  # every parameter random, biases and norms included, so each is tested
        for p in model.parameters():
            p.copy_(0.3 * torch.randn_like(p))
    ids = rng.integers(0, config.vocab_size, size=(1, 7))
    with torch.no_grad():
        full = model(t(ids)).logits
        first = model(t(ids[:, :6]), use_cache=True)
        step = model(t(ids[:, 6:]), past_key_values=first.past_key_values, use_cache=True)
    out["gpt2.config"] = np.array([config.vocab_size, config.n_positions, config.n_embd,
                                   config.n_layer, config.n_head])
    out["gpt2.ids"] = ids
    out["gpt2.logits"] = full.numpy()
    out["gpt2.step_logits"] = step.logits.numpy()
    cache = step.past_key_values
    for layer in range(config.n_layer):
        out[f"gpt2.keys.{layer}"] = cache.layers[layer].keys.numpy()
        out[f"gpt2.values.{layer}"] = cache.layers[layer].values.numpy()
    for name, p in model.state_dict().items():
        if name.endswith((".attn.bias", ".attn.masked_bias")) or name == "lm_head.weight":
            continue  # buffers (the causal mask), and the head tied to the embedding
        out[f"gpt2.param.{name}"] = p.detach().numpy()
    np.savez_compressed(OUT, **out)
    print(f"wrote {OUT.relative_to(ROOT)}: {len(out)} arrays, torch {torch.__version__}, "
          f"transformers {transformers.__version__}")


if __name__ == "__main__":
    main()
