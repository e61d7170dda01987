"""The induction task: its data, the head scores against loops written here, head ablation,
a short deterministic training run, the general training loop, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attention_lib as al
from attention_lib import training as tr
from attention_lib.gpt.train import lm_windows, train_gpt, train_gpt_on_batches

SMALL = al.GPTConfig(vocab_size=9, context=11, d_model=8, n_layers=2, n_heads=2,
                     attention_only=True, positions="rope")


def _random_params(config, seed=0, scale=0.8):
    """Every entry random (biases too), so that the weights are far from uniform."""
    rng = np.random.default_rng(seed)
    return {name: rng.normal(0.0, scale, shape) + (1.0 if name.endswith("gamma") else 0.0)
            for name, shape in al.gpt_parameter_shapes(config).items()}


def _small_data(n=6, seed=1):
    return tr.make_induction_data(n, length=12, vocab_size=9, min_period=2, max_period=6,
                                  rng=np.random.default_rng(seed))


# ---------------------------------------------------------------- the data

def test_the_second_copy_repeats_the_first_and_nothing_else_is_forced():
    data = tr.make_induction_data(400, rng=np.random.default_rng(0))
    assert data.tokens.shape == (400, 33) and data.tokens.dtype == np.int64
    agree_elsewhere = []
    for row, s, L in zip(data.tokens, data.start, data.period, strict=True):
        assert 8 <= L <= 16 and 0 <= s <= 33 - 2 * L
        for i in range(L):
            assert row[s + L + i] == row[s + i]
        # outside the second copy, a token equals the one L places back by chance only
        agree_elsewhere += [row[t] == row[t - L] for t in range(L, 33)
                            if not s + L <= t < s + 2 * L]
    assert np.mean(agree_elsewhere) < 0.05  # about 1/64
    assert data.tokens.min() == 0 and data.tokens.max() == 63


def test_the_distance_and_the_place_of_the_copies_vary():
    data = tr.make_induction_data(2000, rng=np.random.default_rng(1))
    assert set(data.period.tolist()) == set(range(8, 17))
    assert set(data.start[data.period == 8].tolist()) == set(range(0, 33 - 16 + 1))
    assert set(data.start[data.period == 16].tolist()) == {0, 1}
    # where the second copy begins is no fixed position either: anywhere from 8 to 33 - 8
    assert set((data.start + data.period).tolist()) == set(range(8, 26))


def test_held_out_sequences_are_not_the_training_sequences():
    params, config = tr.train_induction_model(n_layers=1, steps=1)
    seen = []

    def sample(rng):  # the training batches of seed 0, as train_induction_model draws them
        batch = tr.make_induction_data(32, rng=rng)
        seen.append(batch.tokens)
        return batch.tokens[:, :-1], batch.tokens[:, 1:]

    train_gpt_on_batches(config, sample, steps=20, seed=0, progress=False)
    held_out = tr.make_induction_data(
        512, rng=np.random.default_rng(np.random.SeedSequence([0, 2])))
    train_rows = {row.tobytes() for row in np.concatenate(seen)}
    assert not any(row.tobytes() in train_rows for row in held_out.tokens)
    again = tr.make_induction_data(512, rng=np.random.default_rng(np.random.SeedSequence([0, 2])))
    assert np.array_equal(held_out.tokens, again.tokens)  # the same held-out set every time
    # and induction_scores measures on exactly these by default
    assert (tr.induction_scores(params, config).second_half_loss
            == tr.induction_scores(params, config, data=held_out).second_half_loss)


# ---------------------------------------------------------------- the scores

def _loop_scores(params, config, data):
    """The scores and losses of induction_scores, position by position."""
    x, y = data.tokens[:, :-1], data.tokens[:, 1:]
    w = al.gpt_attention_weights(params, config, x)  # (L, B, h, T, T)
    logits = al.gpt_logits(params, config, x)
    B, T = x.shape
    shape = (config.n_layers, config.n_heads)
    previous, induction = np.zeros(shape), np.zeros(shape)
    first, second, n_induction = [], [], 0
    for b in range(B):
        s, L = int(data.start[b]), int(data.period[b])
        for t in range(T):
            z = logits[b, t].astype(np.float64)
            nll = math.log(np.exp(z - z.max()).sum()) + z.max() - z[y[b, t]]
            if s <= t <= s + L - 2:
                first.append(nll)
            if s + L <= t <= s + 2 * L - 2:
                second.append(nll)
                # the token after the earlier copy of x_t is the next token
                assert x[b, t - L + 1] == y[b, t]
                induction += w[:, b, :, t, t - L + 1]
                n_induction += 1
            if t >= 1:
                previous += w[:, b, :, t, t - 1] / (B * (T - 1))
    return previous, induction / n_induction, np.mean(first), np.mean(second)


def test_scores_equal_a_loop_over_positions():
    params = _random_params(SMALL)
    data = _small_data()
    scores = tr.induction_scores(params, SMALL, data=data)
    previous, induction, first, second = _loop_scores(params, SMALL, data)
    np.testing.assert_allclose(scores.previous_token, previous, rtol=1e-12)
    np.testing.assert_allclose(scores.induction, induction, rtol=1e-12)
    assert scores.first_half_loss == pytest.approx(first, rel=1e-12)
    assert scores.second_half_loss == pytest.approx(second, rel=1e-12)
    assert scores.n_sequences == len(data)
    assert 0.0 < scores.previous_token.min() and scores.induction.max() < 1.0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_any_gpt_is_scored_on_a_segment_written_twice(dtype):
    # How chapter 20 measures the book's language model: a whole GPT (feed-forward layers,
    # learned positions, float32 weights), on random tokens that are one segment written
    # twice and nothing else (min_period = max_period = length / 2).
    config = al.GPTConfig(vocab_size=7, context=11, d_model=8, n_layers=3, n_heads=2)
    params = {k: a.astype(dtype) for k, a in _random_params(config, seed=5).items()}
    data = tr.make_induction_data(6, length=12, vocab_size=7, min_period=6, max_period=6,
                                  rng=np.random.default_rng(2))
    assert (data.start == 0).all() and (data.period == 6).all()
    assert np.array_equal(data.tokens[:, :6], data.tokens[:, 6:])
    scores = tr.induction_scores(params, config, data=data)
    previous, induction, first, second = _loop_scores(params, config, data)
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(scores.previous_token, previous, rtol=rtol)
    np.testing.assert_allclose(scores.induction, induction, rtol=rtol)
    assert scores.first_half_loss == pytest.approx(first, rel=rtol)
    assert scores.second_half_loss == pytest.approx(second, rel=rtol)
    assert scores.previous_token.shape == (3, 2)
    with pytest.raises(ValueError, match="^data has sequences of 13 tokens"):
        tr.induction_scores(params, config, data=tr.make_induction_data(
            2, length=13, vocab_size=7, min_period=6, max_period=6,
            rng=np.random.default_rng(0)))


# ---------------------------------------------------------------- ablation

def test_a_mask_of_ones_changes_nothing_and_a_zero_removes_exactly_that_head():
    params = _random_params(SMALL)
    tokens = _small_data().tokens[:, :-1]
    plain = al.gpt_logits(params, SMALL, tokens)
    assert np.array_equal(al.gpt_logits(params, SMALL, tokens, head_mask=np.ones((2, 2))),
                          plain)
    assert np.array_equal(al.gpt_logits(params, SMALL, tokens, head_mask=[[True] * 2] * 2),
                          plain)
    # Removing head 1 of layer 0 is zeroing its rows of that layer's output projection.
    mask = np.array([[True, False], [True, True]])
    cut = dict(params)
    w_o = params["blocks.0.attn.w_o"].copy()
    w_o[SMALL.d_head:2 * SMALL.d_head] = 0.0  # (d_head, d) rows fed by head 1
    cut["blocks.0.attn.w_o"] = w_o
    np.testing.assert_allclose(al.gpt_logits(params, SMALL, tokens, head_mask=mask),
                               al.gpt_logits(cut, SMALL, tokens), rtol=1e-12, atol=1e-12)
    # A layer's own weights do not depend on its mask; the next layer's do.
    w_plain = al.gpt_attention_weights(params, SMALL, tokens)
    w_cut = al.gpt_attention_weights(params, SMALL, tokens, head_mask=mask)
    assert np.array_equal(w_cut[0], w_plain[0])
    assert not np.allclose(w_cut[1], w_plain[1])
    last = np.array([[True, True], [False, True]])  # a head of the last layer
    assert np.array_equal(al.gpt_attention_weights(params, SMALL, tokens, head_mask=last),
                          w_plain)
    assert not np.allclose(al.gpt_logits(params, SMALL, tokens, head_mask=last), plain)


def test_float32_masks_keep_float32():
    params = {k: a.astype(np.float32) for k, a in _random_params(SMALL).items()}
    out = al.gpt_logits(params, SMALL, [[1, 2, 3]], head_mask=[[1, 0], [1, 1]])
    assert out.dtype == np.float32


def test_head_ablation_losses_remove_one_head_at_a_time():
    params = _random_params(SMALL, seed=3)
    data = _small_data(seed=4)
    first, second = tr.head_ablation_losses(params, SMALL, data=data)
    assert first.shape == second.shape == (2, 2)
    for layer in range(2):
        for head in range(2):
            mask = np.ones((2, 2))
            mask[layer, head] = 0
            scores = tr.induction_scores(params, SMALL, data=data, head_mask=mask)
            assert first[layer, head] == scores.first_half_loss
            assert second[layer, head] == scores.second_half_loss
    assert len(set(second.ravel().tolist())) == 4


# ---------------------------------------------------------------- training

def test_a_short_run_is_deterministic_and_logged():
    params, config, log = tr.train_induction_model(n_layers=2, seed=0, steps=30,
                                                   return_log=True)
    assert config == tr.induction_config(2)
    assert params["wte"].dtype == np.float64
    assert log.train_loss.shape == (30,)
    assert log.eval_steps.tolist() == [25, 30]
    assert log.previous_token.shape == log.induction.shape == (2, 2, 2)
    assert math.log(64) < log.train_loss[0] < math.log(64) + 0.3  # random weights: a guess
    assert log.phase_change_step() is None  # 30 steps are on the plateau
    again, _, log2 = tr.train_induction_model(n_layers=2, seed=0, steps=30, return_log=True)
    assert np.array_equal(log.train_loss, log2.train_loss)
    assert all(np.array_equal(params[k], again[k]) for k in params)
    assert np.array_equal(log.second_half_loss, log2.second_half_loss)
    # The warm-up does not depend on `steps`: a shorter run repeats the beginning.
    _, _, short = tr.train_induction_model(n_layers=2, seed=0, steps=10, return_log=True)
    assert np.array_equal(short.train_loss, log.train_loss[:10])
    _, _, other = tr.train_induction_model(n_layers=2, seed=1, steps=10, return_log=True)
    assert not np.array_equal(other.train_loss, short.train_loss)
    single, _, low = tr.train_induction_model(n_layers=2, seed=0, steps=10, return_log=True,
                                              dtype=np.float32)
    assert single["wte"].dtype == np.float32
    np.testing.assert_allclose(low.train_loss, short.train_loss, rtol=1e-5)
    # The last measurement is the held-out score of the returned parameters.
    final = tr.induction_scores(params, config, n_sequences=128)
    assert log.second_half_loss[-1] == final.second_half_loss
    np.testing.assert_array_equal(log.induction[-1], final.induction)


def test_the_phase_change_step_is_the_first_below_half_of_log_v():
    log = tr.InductionLog(train_loss=np.zeros(4), eval_steps=np.array([25, 50, 75, 100]),
                          first_half_loss=np.full(4, 4.2),
                          second_half_loss=np.array([4.1, 2.2, 1.0, 2.5]),
                          previous_token=np.zeros((4, 2, 2)), induction=np.zeros((4, 2, 2)),
                          settings={"config": {"vocab_size": 64}})
    assert log.phase_change_step() == 75  # 0.5 * log(64) = 2.08
    log.second_half_loss[:] = 3.0
    assert log.phase_change_step() is None


def test_training_on_batches_is_train_gpt_when_the_batches_are_its_windows():
    config = al.GPTConfig(vocab_size=6, context=5, d_model=8, n_layers=1, n_heads=2)
    rng = np.random.default_rng(0)
    train, val = rng.integers(0, 6, 300), rng.integers(0, 6, 100)
    kwargs = dict(steps=8, warmup=3, eval_every=4, seed=2, progress=False, dtype=np.float64)
    expected, log = train_gpt(config, train, val, batch_size=4, eval_windows=5, **kwargs)

    def sample(gen):
        return lm_windows(train, gen.integers(0, train.size - config.context - 1, size=4),
                          config.context)

    got, log2 = train_gpt_on_batches(config, sample, **kwargs)
    assert log2.train_loss == log.train_loss
    assert all(np.array_equal(expected[k], got[k]) for k in expected)
    assert log2.eval_steps == [] and log2.val_loss == []  # nothing to evaluate
    assert log2.settings["init_std"] == 0.02


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("kwargs, error, match", [
    ({"max_period": 17}, ValueError, r"^max_period=17 but length=33; expected 2 \* max_period"),
    ({"min_period": 1}, ValueError, r"^min_period=1; expected an integer >= 2"),
    ({"min_period": 9, "max_period": 8}, ValueError, r"^max_period=8; expected an integer >= 9"),
    ({"vocab_size": 0}, ValueError, "^vocab_size=0"),
    ({"length": 2.0}, TypeError, "^length=2.0"),
    ({"rng": 0}, TypeError, "^rng=0"),
])
def test_make_induction_data_refuses_bad_sizes(kwargs, error, match):
    kwargs = {"rng": np.random.default_rng(0), **kwargs}
    with pytest.raises(error, match=match):
        tr.make_induction_data(4, **kwargs)


def test_scores_training_and_masks_refuse_bad_input():
    params = _random_params(SMALL)
    with pytest.raises(TypeError, match="^data is dict; expected InductionData"):
        tr.induction_scores(params, SMALL, data={"tokens": [[1]]})
    with pytest.raises(ValueError, match="^data has sequences of 33 tokens"):
        tr.induction_scores(params, SMALL, data=tr.make_induction_data(
            2, rng=np.random.default_rng(0)))
    with pytest.raises(ValueError, match=r"^head_mask has shape \(2,\), dtype int64; "
                                         r"expected shape \(n_layers, n_heads\) = \(2, 2\)"):
        tr.induction_scores(params, SMALL, data=_small_data(), head_mask=[1, 0])
    with pytest.raises(ValueError, match="^head_mask contains 1 NaN"):
        al.gpt_logits(params, SMALL, [[1]], head_mask=[[1.0, np.nan], [1, 1]])
    with pytest.raises(TypeError, match="^head_mask has dtype <U1"):
        al.gpt_attention_weights(params, SMALL, [[1]], head_mask=[["a", "b"], ["c", "d"]])
    with pytest.raises(TypeError, match="^n_sequences=True"):
        tr.induction_scores(params, SMALL, n_sequences=True)
    with pytest.raises(ValueError, match="^n_layers=0"):
        tr.train_induction_model(n_layers=0)
    with pytest.raises(ValueError, match="^seed=-1"):
        tr.train_induction_model(seed=-1)
    with pytest.raises(TypeError, match="^return_log"):
        tr.train_induction_model(steps=1, return_log="yes")
    with pytest.raises(TypeError, match="^sample_batch is list"):
        train_gpt_on_batches(SMALL, [], steps=1)
    with pytest.raises(TypeError, match="^evaluate is int"):
        train_gpt_on_batches(SMALL, lambda rng: None, steps=1, evaluate=3)
    with pytest.raises(ValueError, match="^init_std=0"):
        train_gpt_on_batches(SMALL, lambda rng: None, steps=1, init_std=0)
