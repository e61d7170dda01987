"""The stored character-against-BPE run (chapter 12) is what tools/tokens_comparison.py trains.

Every test run replays the first steps of both runs (a few seconds) and compares their
minibatch losses with the stored log, recomputes the token counts and checks the stored
bits per character against the stored nats per token. ``--retrain`` trains both in full
again (about six minutes) and compares what they reach.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from repo_scripts import load_script

import attention_lib as al

REPLAY_STEPS = 12


@pytest.fixture(scope="module")
def tool():
    return load_script("tokens_comparison")


@pytest.fixture(scope="module")
def stored():
    return al.tokenizer_comparison()


def test_the_stored_settings_are_the_scripts(tool, stored):
    assert stored["settings"]["sizes"] == tool.SIZES
    assert stored["settings"]["bpe_vocab_size"] == tool.BPE_VOCAB
    training = {k: (list(v) if isinstance(v, tuple) else v) for k, v in tool.SETTINGS.items()}
    assert stored["settings"]["training"] == training
    for run in stored["runs"].values():
        assert len(run["log"]["train_loss"]) == tool.SETTINGS["steps"]


@pytest.mark.parametrize("name", ["characters", "bpe"])
def test_a_run_replayed_gives_its_stored_first_steps_and_token_counts(tool, stored, name):
    run = stored["runs"][name]
    _, log, (tokenizer, config, train_ids, val_ids) = tool.train(name, steps=REPLAY_STEPS)
    assert (config.vocab_size, train_ids.size, val_ids.size) == (
        run["vocab_size"], run["train_tokens"], run["val_tokens"])
    assert len(tokenizer.decode(val_ids)) == run["val_characters"]
    # float32 training: the first steps agree to a few digits on any CPU
    np.testing.assert_allclose(log.train_loss, run["log"]["train_loss"][:REPLAY_STEPS],
                               rtol=1e-4)


def test_bits_per_character_follow_from_the_stored_losses(stored):
    for run in stored["runs"].values():
        predicted_chars = run["val_characters"] - 1 if run["vocab_size"] < 100 else None
        nats = run["val_loss_nats_per_token"] * (run["val_tokens"] - 1)
        bits = run["val_bits_per_character"]
        if predicted_chars is not None:  # characters: every character but the first
            assert bits == pytest.approx(nats / math.log(2) / predicted_chars, rel=1e-5)
        else:  # BPE: the characters of every token but the first, a few fewer than all
            assert nats / math.log(2) / run["val_characters"] <= bits
            assert bits == pytest.approx(nats / math.log(2) / run["val_characters"], rel=1e-3)


def test_the_bpe_model_predicts_the_validation_text_better_per_character(stored):
    runs = stored["runs"]
    assert runs["bpe"]["val_bits_per_character"] < runs["characters"]["val_bits_per_character"]
    assert runs["bpe"]["characters_per_token"] > 1.5 > runs["characters"][
        "characters_per_token"]


@pytest.mark.retrains
@pytest.mark.parametrize("name", ["characters", "bpe"])
def test_a_run_trained_again_reaches_its_stored_loss(tool, stored, name):
    again = tool.record(name)
    assert again["val_bits_per_character"] == pytest.approx(
        stored["runs"][name]["val_bits_per_character"], abs=0.01)
