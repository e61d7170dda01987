"""The stored coreference encoder (tools/coreference_model.py) is what the code trains.

Every build ties the whole run to the code: chapter 21 trains seed 0 and checks that its
weights are the stored ones. Here the first steps are trained again and give the stored
losses; ``make coreference-model`` runs this file with ``--retrain``, which trains the whole
run again and compares the weights.
"""

from __future__ import annotations

import numpy as np
import pytest

import attention_lib as al
from attention_lib.training import coreference


def test_the_first_steps_of_the_stored_run_come_back():
    stored = al.trained_coreference_model()
    again = al.train_coreference_model(seed=0, steps=20)
    np.testing.assert_allclose(again.log["train_loss"], stored.log["train_loss"][:20],
                               rtol=1e-9)
    assert len(stored.log["train_loss"]) == coreference.STEPS


def test_the_stored_model_is_the_chapters_encoder():
    stored = al.trained_coreference_model()
    fresh = al.init_coreference_model(seed=0)
    assert stored.config == fresh.config and stored.vocabulary == fresh.vocabulary
    assert all(a.dtype == np.float64 for a in stored.params.values())
    # float32 numbers, as train_coreference_model rounds them
    assert all(np.array_equal(a, a.astype(np.float32)) for a in stored.params.values())
    # it learned the task: the tutorial's two sentences, which it never trained on
    assert [stored.predict(s) for s in coreference.TUTORIAL] == ["animal", "street"]


def test_a_file_without_its_training_loss_is_refused(monkeypatch, tmp_path):
    stored = al.trained_coreference_model()
    (tmp_path / "data").mkdir()
    np.savez(tmp_path / "data" / coreference.MODEL_FILE, **stored.params)
    monkeypatch.setattr("importlib.resources.files", lambda package: tmp_path)
    with pytest.raises(ValueError, match="training loss"):
        al.trained_coreference_model()


@pytest.mark.retrains
def test_the_whole_run_trained_again_gives_the_stored_weights():
    stored = al.trained_coreference_model()
    again = al.train_coreference_model(seed=0)
    for name, weights in stored.params.items():
        np.testing.assert_allclose(again.params[name], weights, rtol=1e-5, atol=1e-7,
                                   err_msg=name)
