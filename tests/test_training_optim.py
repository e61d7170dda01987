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
