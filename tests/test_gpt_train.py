"""Training a GPT: the schedule, the windows, the stream loss, and a run that learns."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attention_lib as al
from attention_lib.gpt.train import learning_rate, lm_windows, sequence_loss, train_gpt


def test_learning_rate_warms_up_then_follows_a_cosine():
    lr = [learning_rate(t, lr=1e-3, warmup=10, steps=110, min_lr=1e-4) for t in range(1, 111)]
    assert lr[:10] == pytest.approx([1e-4 * t for t in range(1, 11)])
    assert lr[59] == pytest.approx(1e-4 + 0.5 * 9e-4 * (1 + math.cos(math.pi * 0.5)))
    assert lr[-1] == pytest.approx(1e-4)
    assert all(a >= b for a, b in zip(lr[9:], lr[10:], strict=False))


def test_windows_read_consecutive_tokens():
    stream = np.arange(100) * 3
    x, y = lm_windows(stream, np.array([0, 17, 90]), 8)
    for row, s in enumerate((0, 17, 90)):
        assert x[row].tolist() == [3 * (s + i) for i in range(8)]
        assert y[row].tolist() == [3 * (s + i + 1) for i in range(8)]


def test_sequence_loss_predicts_every_token_but_the_first_once():
    config = al.GPTConfig(vocab_size=6, context=4, d_model=8, n_layers=1, n_heads=2)
    rng = np.random.default_rng(0)
    params = {k: rng.normal(0, 0.5, a.shape) for k, a in al.init_gpt(config).items()}
    stream = rng.integers(0, 6, 23)
    # Reference: windows of context + 1 tokens overlapping by one, each scored separately.
    total, count = 0.0, 0
    for s in range(0, 22, 4):
        window = stream[s:s + 5]
        logits = al.gpt_logits(params, config, window[None, :-1])[0]
        for t in range(len(window) - 1):
            z = logits[t]
            total += math.log(np.exp(z - z.max()).sum()) + z.max() - z[window[t + 1]]
            count += 1
    assert count == 22
    assert sequence_loss(params, config, stream, batch_size=2) == pytest.approx(total / count,
                                                                                 rel=1e-12)


def test_sequence_loss_runs_its_hooks_on_every_window():
    config = al.GPTConfig(vocab_size=6, context=4, d_model=8, n_layers=1, n_heads=2)
    rng = np.random.default_rng(1)
    params = {k: rng.normal(0, 0.5, a.shape) for k, a in al.init_gpt(config).items()}
    stream = rng.integers(0, 6, 19)
    hooks = {"blocks.0.ff.hidden": lambda h: np.zeros_like(h)}  # no feed-forward layer
    total, count = 0.0, 0
    for s in range(0, 18, 4):
        window = stream[s:s + 5]
        logits = al.gpt_logits(params, config, window[None, :-1], hooks=hooks)[0]
        for t in range(len(window) - 1):
            z = logits[t]
            total += math.log(np.exp(z - z.max()).sum()) + z.max() - z[window[t + 1]]
            count += 1
    hooked = sequence_loss(params, config, stream, batch_size=3, hooks=hooks)
    assert hooked == pytest.approx(total / count, rel=1e-12)
    assert abs(hooked - sequence_loss(params, config, stream)) > 1e-3


def _copy_task(seed, n=4000):
    """A stream where every token repeats the one 3 places back: learnable, not by bigrams."""
    rng = np.random.default_rng(seed)
    stream = rng.integers(0, 8, n)
    for i in range(3, n):
        if i % 4:
            stream[i] = stream[i - 3]
    return stream


def test_training_learns_and_repeats_itself():
    config = al.GPTConfig(vocab_size=8, context=16, d_model=16, n_layers=1, n_heads=2)
    train, val = _copy_task(0), _copy_task(1, 1000)
    params, log = train_gpt(config, train, val, steps=120, batch_size=16, lr=1e-2, warmup=10,
                            eval_every=40, progress=False, dtype=np.float64)
    assert log.eval_steps == [40, 80, 120]
    before = sequence_loss(al.init_gpt(config, dtype=np.float64), config, val)
    after = sequence_loss(params, config, val)
    assert before == pytest.approx(math.log(8), abs=0.05)
    assert after < 0.75 * before
    # Same seed, same settings: the same losses; the first steps do not depend on `steps`.
    _, again = train_gpt(config, train, val, steps=5, batch_size=16, lr=1e-2, warmup=10,
                         eval_every=40, progress=False, dtype=np.float64)
    assert again.train_loss == log.train_loss[:5]


def test_training_refuses_bad_settings():
    config = al.GPTConfig(vocab_size=8, context=16, d_model=16, n_layers=1, n_heads=2)
    stream = _copy_task(0, 200)
    for kwargs, message in (({"lr": True}, "lr"), ({"steps": 0}, "steps"),
                            ({"min_lr": 1.0}, "min_lr"), ({"clip": 0}, "clip"),
                            ({"seed": -1}, "seed")):
        with pytest.raises((TypeError, ValueError), match=message):
            train_gpt(config, stream, stream, **{"steps": 2, **kwargs}, progress=False)
    with pytest.raises(ValueError, match="val_tokens"):
        train_gpt(config, stream, stream[:10], steps=2, progress=False)
    with pytest.raises(ValueError, match="train_tokens"):
        train_gpt(config, stream + 8, stream, steps=2, progress=False)


def test_in_a_notebook_the_bar_is_one_output_that_ends_full(monkeypatch):
    """In a kernel the training bar is one display updated in place, so a saved notebook
    keeps its final state (100 %), never tqdm's widget and its first state."""
    import IPython.display

    from attention_lib.model import train as core_train

    shown: list[str] = []
    created = []

    class Handle:
        def update(self, data, raw=False):
            assert raw and set(data) == {"text/plain"}
            shown.append(data["text/plain"])

    def display(data, raw=False, display_id=False):
        assert raw and display_id and set(data) == {"text/plain"}
        created.append(data["text/plain"])
        shown.append(data["text/plain"])
        return Handle()

    monkeypatch.setattr(core_train, "_in_kernel", lambda: True)
    monkeypatch.setattr(IPython.display, "display", display)
    params = {"w": np.zeros(2)}
    log = core_train.train_loop(params, lambda p, b: (1.5, {"w": np.ones(2)}), lambda r: None,
                                np.random.default_rng(0), steps=7, lr=0.1, progress=True)
    assert len(log.train_loss) == 7
    assert len(created) == 1, "the bar made more than one output"
    assert shown[0].startswith("training:") and "0/7" in shown[0]
    assert shown[-1].startswith("training: 100%|") and "7/7" in shown[-1]
    assert "loss=1.500" in shown[-1]
    assert all("\r" not in s and "\n" not in s for s in shown)
