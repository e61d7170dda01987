"""Adam against its update written out, and its arguments."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attention_lib as al


def test_adam_matches_its_update_written_out():
    params = {"w": np.array([1.0, -2.0, 0.5])}
    opt = al.Adam(params, lr=0.1, betas=(0.8, 0.9), eps=1e-8)
    g1, g2 = np.array([3.0, -0.5, 0.0]), np.array([1.0, 1.0, 2.0])
    opt.step({"w": g1})
    opt.step({"w": g2})
    expected = []
    for i in range(3):
        w, m, v = [1.0, -2.0, 0.5][i], 0.0, 0.0
        for t, g in enumerate((g1[i], g2[i]), start=1):
            m = 0.8 * m + 0.2 * g
            v = 0.9 * v + 0.1 * g * g
            w -= 0.1 * (m / (1 - 0.8**t)) / (math.sqrt(v / (1 - 0.9**t)) + 1e-8)
        expected.append(w)
    np.testing.assert_allclose(params["w"], expected, rtol=1e-14)


def test_the_first_step_moves_each_entry_by_lr_against_the_gradient():
    params = {"w": np.array([0.0, 0.0, 0.0])}
    al.Adam(params, lr=0.5).step({"w": np.array([1e-3, -3.0, 200.0])})
    np.testing.assert_allclose(params["w"], [-0.5, 0.5, -0.5], rtol=1e-4)


def test_a_numpy_learning_rate_is_a_learning_rate():
    a, b = {"w": np.ones(2)}, {"w": np.ones(2)}
    al.Adam(a, lr=np.float32(0.25)).step({"w": np.array([1.0, -1.0])})
    al.Adam(b, lr=0.25).step({"w": np.array([1.0, -1.0])})
    np.testing.assert_array_equal(a["w"], b["w"])


@pytest.mark.parametrize("kwargs, error, match", [
    ({"lr": 0.0}, ValueError, "^lr=0.0"),
    ({"lr": -1}, ValueError, "^lr=-1"),
    ({"lr": True}, TypeError, "^lr=True"),
    ({"lr": "0.1"}, TypeError, "^lr="),
    ({"lr": math.nan}, ValueError, "^lr=nan"),
    ({"betas": (0.9, 1.0)}, ValueError, "^betas="),
    ({"betas": (0.9,)}, ValueError, "^betas="),
    ({"eps": 0}, ValueError, "^eps=0"),
])
def test_adam_refuses_bad_settings(kwargs, error, match):
    with pytest.raises(error, match=match):
        al.Adam({"w": np.ones(2)}, **kwargs)


def test_adam_refuses_bad_gradients():
    opt = al.Adam({"w": np.ones(2)})
    with pytest.raises(ValueError, match="grads lacks"):
        opt.step({})
    with pytest.raises(ValueError, match=r"grads\['w'\] has shape \(3,\)"):
        opt.step({"w": np.ones(3)})
    with pytest.raises(TypeError, match="params"):
        al.Adam({"w": [1.0]})


def test_weight_decay_is_decoupled_and_only_on_the_named_parameters():
    params = {"w": np.array([2.0, -1.0]), "b": np.array([3.0])}
    opt = al.Adam(params, lr=0.1, betas=(0.9, 0.99), weight_decay=0.5, decay=["w"])
    grads = [{"w": np.array([1.0, 0.0]), "b": np.array([-2.0])},
             {"w": np.array([-0.5, 4.0]), "b": np.array([1.0])}]
    for g in grads:
        opt.step(g)
    # Written out: AdamW moves a decaying entry by -lr * (adam step + wd * theta); the
    # moments see the gradient alone. "b" is not named, so it does not decay.
    for name, start, decays in (("w", [2.0, -1.0], True), ("b", [3.0], False)):
        for i, theta in enumerate(start):
            m = v = 0.0
            for t, g in enumerate(grads, start=1):
                gi = g[name][i]
                m = 0.9 * m + 0.1 * gi
                v = 0.99 * v + 0.01 * gi * gi
                step = (m / (1 - 0.9**t)) / (math.sqrt(v / (1 - 0.99**t)) + 1e-8)
                theta -= 0.1 * (step + (0.5 * theta if decays else 0.0))
            assert params[name][i] == pytest.approx(theta, rel=1e-13)


def test_without_weight_decay_the_update_is_adams():
    a, b = {"w": np.array([1.0, -3.0])}, {"w": np.array([1.0, -3.0])}
    al.Adam(a, lr=0.2, weight_decay=0.0).step({"w": np.array([0.3, 2.0])})
    al.Adam(b, lr=0.2).step({"w": np.array([0.3, 2.0])})
    np.testing.assert_array_equal(a["w"], b["w"])


def test_float32_parameters_stay_float32():
    params = {"w": np.ones(3, dtype=np.float32)}
    opt = al.Adam(params, lr=0.1, weight_decay=0.1)
    opt.step({"w": np.array([1.0, -1.0, 0.5], dtype=np.float32)})
    assert params["w"].dtype == np.float32 and opt.m["w"].dtype == np.float32


def test_decay_must_name_parameters():
    with pytest.raises(ValueError, match=r"decay names \['x'\]"):
        al.Adam({"w": np.ones(2)}, weight_decay=0.1, decay=["x"])
    with pytest.raises(ValueError, match="^weight_decay=-1"):
        al.Adam({"w": np.ones(2)}, weight_decay=-1)


def test_clipping_scales_every_gradient_by_one_factor():
    rng = np.random.default_rng(0)
    grads = {"a": rng.standard_normal((3, 4)), "b": rng.standard_normal(5).astype(np.float32)}
    norm = math.sqrt(sum(float((g.astype(np.float64) ** 2).sum()) for g in grads.values()))
    clipped, reported = al.clip_by_global_norm(grads, norm / 4)
    assert reported == pytest.approx(norm, rel=1e-6)
    after = math.sqrt(sum(float((g.astype(np.float64) ** 2).sum()) for g in clipped.values()))
    assert after == pytest.approx(norm / 4, rel=1e-6)
    for k in grads:  # same direction: one factor for all
        np.testing.assert_allclose(clipped[k], grads[k] / 4, rtol=1e-6)
        assert clipped[k].dtype == grads[k].dtype
    same, _ = al.clip_by_global_norm(grads, norm * 2)  # under the limit: untouched
    assert all(same[k] is grads[k] for k in grads)


def test_clipping_refuses_a_non_finite_norm_and_a_bad_limit():
    with pytest.raises(ValueError, match="norm is nan"):
        al.clip_by_global_norm({"a": np.array([np.nan])}, 1.0)
    with pytest.raises(ValueError, match="^max_norm=0"):
        al.clip_by_global_norm({"a": np.ones(2)}, 0)
