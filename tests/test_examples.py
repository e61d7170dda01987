"""The fixed numbers of the two source texts (``attention_lib.examples``).

Entries are checked against values written out by hand from the texts, and the
products against dot products written out term by term.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from attention_lib import examples, project_qkv, scaled_dot_product_attention


def softmax_by_hand(xs):
    """Softmax of a list of numbers with math.exp (an independent reference)."""
    biggest = max(xs)
    exps = [math.exp(x - biggest) for x in xs]
    total = math.fsum(exps)
    return [e / total for e in exps]


# --------------------------------------------------------------------------------------
# "The cat sat on"
# --------------------------------------------------------------------------------------


def test_cat_sat_on_shapes_and_tokens():
    ex = examples.cat_sat_on()
    assert ex.tokens == ("The", "cat", "sat", "on")
    assert ex.x.shape == (4, 4)
    assert ex.w_q.shape == (4, 3)
    assert ex.w_k.shape == (4, 3)
    assert ex.w_v.shape == (4, 3)
    for a in (ex.x, ex.w_q, ex.w_k, ex.w_v):
        assert a.dtype == np.float64


def test_cat_sat_on_entries_as_printed():
    ex = examples.cat_sat_on()
    assert ex.x[0].tolist() == [0.1, 0.2, 0.3, 0.4]  # "The"
    assert ex.x[1].tolist() == [0.5, 0.1, 0.8, 0.2]  # "cat"
    assert ex.x[3].tolist() == [0.4, 0.3, 0.5, 0.1]  # "on"
    assert ex.w_q[:, 0].tolist() == [0.1, 0.0, 0.2, 0.1]
    assert ex.w_k[1].tolist() == [0.1, 0.2, 0.1]
    assert ex.w_v[3].tolist() == [0.0, 0.2, 0.1]


def test_cat_sat_on_projections_by_hand():
    ex = examples.cat_sat_on()
    q, k, v = project_qkv(ex.x, ex.w_q, ex.w_k, ex.w_v)
    # Q[0] = X[0] @ W_Q, "The" as a query.
    q0 = [
        0.1 * 0.1 + 0.2 * 0.0 + 0.3 * 0.2 + 0.4 * 0.1,  # = 0.11
        0.1 * 0.0 + 0.2 * 0.3 + 0.3 * 0.1 + 0.4 * 0.2,  # = 0.17
        0.1 * 0.2 + 0.2 * 0.1 + 0.3 * 0.0 + 0.4 * 0.3,  # = 0.16
    ]
    np.testing.assert_allclose(q[0], q0, rtol=1e-12)
    np.testing.assert_allclose(q[0], [0.11, 0.17, 0.16], rtol=1e-12)
    # K[1] = X[1] @ W_K, "cat" as a key.
    k1 = [
        0.5 * 0.3 + 0.1 * 0.1 + 0.8 * 0.0 + 0.2 * 0.2,  # = 0.20
        0.5 * 0.1 + 0.1 * 0.2 + 0.8 * 0.1 + 0.2 * 0.0,  # = 0.15
        0.5 * 0.0 + 0.1 * 0.1 + 0.8 * 0.3 + 0.2 * 0.2,  # = 0.29
    ]
    np.testing.assert_allclose(k[1], k1, rtol=1e-12)
    np.testing.assert_allclose(k[1], [0.20, 0.15, 0.29], rtol=1e-12)
    # V[2] = X[2] @ W_V, "sat" as a value.
    v2 = [
        0.3 * 0.2 + 0.7 * 0.1 + 0.2 * 0.3 + 0.6 * 0.0,  # = 0.19
        0.3 * 0.1 + 0.7 * 0.3 + 0.2 * 0.0 + 0.6 * 0.2,  # = 0.36
        0.3 * 0.3 + 0.7 * 0.1 + 0.2 * 0.2 + 0.6 * 0.1,  # = 0.26
    ]
    np.testing.assert_allclose(v[2], v2, rtol=1e-12)
    np.testing.assert_allclose(v[2], [0.19, 0.36, 0.26], rtol=1e-12)


def test_cat_sat_on_score_and_weight_by_hand():
    # scores[0, 1] = Q[0] . K[1] / sqrt(3): how much "The" attends to "cat".
    ex = examples.cat_sat_on()
    q, k, v = project_qkv(ex.x, ex.w_q, ex.w_k, ex.w_v)
    _, w = scaled_dot_product_attention(q, k, v)
    q0 = [0.11, 0.17, 0.16]
    keys = [
        [0.1 * 0.3 + 0.2 * 0.1 + 0.3 * 0.0 + 0.4 * 0.2,
         0.1 * 0.1 + 0.2 * 0.2 + 0.3 * 0.1 + 0.4 * 0.0,
         0.1 * 0.0 + 0.2 * 0.1 + 0.3 * 0.3 + 0.4 * 0.2],
        [0.20, 0.15, 0.29],
        [0.3 * 0.3 + 0.7 * 0.1 + 0.2 * 0.0 + 0.6 * 0.2,
         0.3 * 0.1 + 0.7 * 0.2 + 0.2 * 0.1 + 0.6 * 0.0,
         0.3 * 0.0 + 0.7 * 0.1 + 0.2 * 0.3 + 0.6 * 0.2],
        [0.4 * 0.3 + 0.3 * 0.1 + 0.5 * 0.0 + 0.1 * 0.2,
         0.4 * 0.1 + 0.3 * 0.2 + 0.5 * 0.1 + 0.1 * 0.0,
         0.4 * 0.0 + 0.3 * 0.1 + 0.5 * 0.3 + 0.1 * 0.2],
    ]
    np.testing.assert_allclose(k, keys, rtol=1e-12)
    scores = [sum(a * b for a, b in zip(q0, key, strict=True)) / math.sqrt(3) for key in keys]
    np.testing.assert_allclose(w[0], softmax_by_hand(scores), rtol=1e-12)


@pytest.mark.parametrize("field", ["x", "w_q", "w_k", "w_v"])
def test_cat_sat_on_arrays_are_read_only(field):
    ex = examples.cat_sat_on()
    a = getattr(ex, field)
    assert not a.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        a[0, 0] = 99.0
    a.copy()[0, 0] = 99.0  # a copy is for experimenting
    assert getattr(examples.cat_sat_on(), field)[0, 0] != 99.0


def test_cat_sat_on_fields_cannot_be_replaced():
    ex = examples.cat_sat_on()
    with pytest.raises(dataclasses.FrozenInstanceError):
        ex.x = np.zeros((4, 4))


# --------------------------------------------------------------------------------------
# The coreference sentence
# --------------------------------------------------------------------------------------


def test_coreference_tokens_and_query():
    ex = examples.coreference()
    assert len(ex.tokens) == 11
    assert " ".join(ex.tokens) == "The animal didn't cross the street because it was too tired"
    assert ex.query == "it"
    assert ex.tokens.index(ex.query) == 7
    assert ex.raw_scores.shape == (11,)
    assert ex.printed_weights.shape == (11,)


def test_coreference_values_as_printed():
    ex = examples.coreference()
    by_token = dict(zip(ex.tokens, zip(ex.raw_scores.tolist(), ex.printed_weights.tolist(),
                                       strict=True), strict=False))
    assert by_token["animal"] == (2.14, 0.43)
    assert by_token["street"] == (1.02, 0.12)
    assert by_token["it"] == (1.15, 0.15)
    assert by_token["tired"] == (1.08, 0.13)
    assert ex.tokens[int(np.argmax(ex.printed_weights))] == "animal"
    assert ex.tokens[int(np.argmax(ex.raw_scores))] == "animal"


def test_coreference_printed_weights_sum_to_one():
    ex = examples.coreference()
    assert math.fsum(ex.printed_weights.tolist()) == pytest.approx(1.0, abs=1e-12)


def test_coreference_printed_weights_are_not_the_softmax_of_the_scores():
    # A documented discrepancy of the source text: if the printed weights were the
    # softmax of the printed scores, rounding to 2 decimals would keep every entry
    # within 0.005 of it. They are not.
    ex = examples.coreference()
    exact = softmax_by_hand(ex.raw_scores.tolist())
    gaps = [abs(a - b) for a, b in zip(exact, ex.printed_weights.tolist(), strict=True)]
    assert max(gaps) > 0.05
    # "animal" gets about 0.32 from the softmax, not the printed 0.43.
    assert exact[1] == pytest.approx(0.32, abs=0.01)


@pytest.mark.parametrize("field", ["raw_scores", "printed_weights"])
def test_coreference_arrays_are_read_only(field):
    a = getattr(examples.coreference(), field)
    assert not a.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        a[0] = 1.0


# --------------------------------------------------------------------------------------
# Saturation example
# --------------------------------------------------------------------------------------


def test_saturation_scores():
    assert examples.SATURATION_SCORES.tolist() == [0.5, 0.3, 0.1, 0.2]
    assert not examples.SATURATION_SCORES.flags.writeable


def test_saturation_printed_values():
    printed = examples.SATURATION_PRINTED
    assert set(printed) == {1.0, 10.0}
    assert printed[1.0].tolist() == [0.357, 0.293, 0.254, 0.281]
    assert printed[10.0].tolist() == [0.999, 0.0, 0.0, 0.0]
    for a in printed.values():
        assert a.shape == (4,)
        assert not a.flags.writeable


@pytest.mark.parametrize("factor", [1.0, 10.0])
def test_saturation_printed_values_are_not_the_softmax(factor):
    # The text's printed softmax values are not what its code computes (the small
    # ones do not even sum to one); the chapter shows the real values and says so.
    exact = softmax_by_hand([factor * s for s in examples.SATURATION_SCORES.tolist()])
    printed = examples.SATURATION_PRINTED[factor].tolist()
    assert max(abs(a - b) for a, b in zip(exact, printed, strict=True)) > 0.04
    # The qualitative point survives: ten times the scores concentrates the weight.
    if factor == 10.0:
        assert max(exact) > 0.8
    else:
        assert max(exact) < 0.35


def test_examples_all_lists_the_public_names():
    for name in examples.__all__:
        assert hasattr(examples, name), name
