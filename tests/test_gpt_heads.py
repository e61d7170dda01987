"""Reading the heads: relations in text, weight on them, value sizes and ablation, each
against a plain computation written here."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attention_lib as al

CONFIG = al.GPTConfig(vocab_size=7, context=12, d_model=8, n_layers=2, n_heads=2)


def _relations_by_hand(text):
    n = len(text)
    out = {name: [-1] * n for name in al.RELATIONS}
    lines = text.split("\n")
    starts, pos = [], 0
    for line in lines:
        starts.append(pos)
        pos += len(line) + 1
    for t in range(n):
        out["previous"][t] = t - 1
        out["word_start"][t] = max([j for j in range(t) if text[j] in " \n"], default=-1)
        out["line_start"][t] = max([j for j in range(t) if text[j] == "\n"], default=-1)
        out["same_char"][t] = max([j for j in range(t) if text[j] == text[t]], default=-1)
        copies = [j for j in range(1, t) if text[j - 1:j + 1] == text[t - 1:t + 1]] if t else []
        out["induction"][t] = copies[-1] + 1 if copies and copies[-1] + 1 < t else -1
        colons = [s + len(lines[i]) - 1 for i, s in enumerate(starts)
                  if s + len(lines[i]) < t and len(lines[i]) > 1 and lines[i].endswith(":")
                  and (i == 0 or (i >= 2 and lines[i - 1] == ""))]
        out["speaker"][t] = colons[-1] if colons else -1
    return out


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab :\n", max_size=30))
def test_relations_against_a_search_by_hand(text):
    got = al.text_relations(text)
    want = _relations_by_hand(text)
    for name in al.RELATIONS:
        assert got[name].tolist() == want[name], (name, text)


def test_relations_on_a_speech():
    text = "Romeo:\nI fear, too\n\nJuliet:\nAy me"
    r = al.text_relations(text)
    t = text.index("Ay")
    assert r["speaker"][t] == text.index("Juliet:") + 6
    assert r["speaker"][text.index("fear")] == 5
    assert r["line_start"][t + 1] == t - 1 and r["word_start"][t + 3] == t + 2
    assert all(r[name][t] < t for name in al.RELATIONS)


def test_weight_on_relation_against_a_loop():
    rng = np.random.default_rng(0)
    L, B, h, T = 2, 3, 2, 6
    w = rng.random((L, B, h, T, T))
    targets = rng.integers(-1, T, (B, T))
    targets = np.minimum(targets, np.arange(T)[None, :])  # at or before the query
    mean, share = al.weight_on_relation(w, targets, threshold=0.6)
    for layer in range(L):
        for head in range(h):
            vals = [w[layer, b, head, q, targets[b, q]] for b in range(B) for q in range(T)
                    if targets[b, q] >= 0]
            assert mean[layer, head] == pytest.approx(np.mean(vals), rel=1e-12)
            assert share[layer, head] == pytest.approx(np.mean(np.array(vals) >= 0.6))


def test_weight_on_relation_refuses_what_it_cannot_measure():
    w = np.ones((1, 1, 1, 3, 3)) / 3
    with pytest.raises(ValueError, match="all -1"):
        al.weight_on_relation(w, [[-1, -1, -1]])
    with pytest.raises(ValueError, match="at or before its query"):
        al.weight_on_relation(w, [[-1, 2, 0]])
    with pytest.raises(ValueError, match=r"shape \(B, T\)"):
        al.weight_on_relation(w, [[0, 0]])
    with pytest.raises(ValueError, match=r"\(L, B, h, T, T\)"):
        al.weight_on_relation(w[0], [[0, 0, 0]])


def test_value_norms_are_what_each_head_moves():
    params = al.init_gpt(CONFIG, seed=1, dtype=np.float64, std=0.3)
    tokens = [[1, 4, 2, 6, 0], [3, 3, 1, 5, 2]]
    norms = al.head_value_norms(params, CONFIG, tokens)
    assert norms.shape == (2, 2, 2, 5)
    # Layer 0 by hand: layer norm of the embedded tokens, V, each head's rows of W_O.
    x = params["wte"][np.array(tokens)] + params["wpe"][:5]
    a = al.layer_norm(x, params["blocks.0.ln1.gamma"], params["blocks.0.ln1.beta"])
    v = a @ params["blocks.0.attn.w_v"] + params["blocks.0.attn.b_v"]  # (B, T, d)
    for head in range(2):
        cols = slice(4 * head, 4 * head + 4)
        moved = v[:, :, cols] @ params["blocks.0.attn.w_o"][cols]  # (B, T, d)
        np.testing.assert_allclose(norms[0, :, head], np.linalg.norm(moved, axis=-1),
                                   rtol=1e-12)
    # The head's output is the weighted sum of what it moves: its size is at most the
    # weighted sum of the sizes.
    w = al.gpt_attention_weights(params, CONFIG, tokens)
    assert (np.einsum("lbhts,lbhs->lbht", w, norms) > 0).all()
