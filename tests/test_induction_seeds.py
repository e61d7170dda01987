"""The stored seed survey of chapter 20 is what the code trains (tools/induction_seeds.py).

Every build ties seed 0's row to the code: chapter 20 trains seed 0 and asserts that the
survey's row is its run. Training another seed again (half a minute) is for ``make
induction-seeds``, which runs this file with ``--retrain`` after it writes the survey. The
survey keeps only what each run reached after its 1,500 steps, so there are no first steps
to replay cheaply here.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

import attention_lib as al

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("induction_seeds",
                                                  ROOT / "tools" / "induction_seeds.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_survey_holds_several_seeds_each_forming_the_heads():
    rows = al.induction_seed_survey()
    assert [r["seed"] for r in rows] == list(range(len(rows))) and len(rows) >= 5
    half = 0.5 * math.log(64)
    for r in rows:
        assert r["phase_change_step"] is not None
        assert r["second_half_loss"] < half < r["first_half_loss"], r


def test_the_stored_model_is_seed_0s_run():
    """The stored weights (al.trained_induction_model) reach seed 0's row of the survey on
    the held-out sequences the training measured (128 of them, seed 0). Chapter 20 trains
    seed 0 in every build and checks its weights against these."""
    params, config = al.trained_induction_model()
    assert config == al.induction_config(2)
    row = {r["seed"]: r for r in al.induction_seed_survey()}[0]
    scores = al.induction_scores(params, config, n_sequences=128, seed=0)
    measured = {"first_half_loss": scores.first_half_loss,
                "second_half_loss": scores.second_half_loss,
                "previous_token": scores.previous_token[0].max(),
                "induction": scores.induction[1].max()}
    for key, value in measured.items():
        assert value == pytest.approx(row[key], abs=1e-4), key


def test_the_stored_model_is_checked_when_read(monkeypatch, tmp_path):
    from attention_lib.training import induction

    params, _ = al.trained_induction_model()
    params["wte"] = params["wte"][:, :16]
    (tmp_path / "data").mkdir()
    np.savez(tmp_path / "data" / induction.MODEL_FILE, **params)
    monkeypatch.setattr("importlib.resources.files", lambda package: tmp_path)
    with pytest.raises(ValueError, match="wte"):
        al.trained_induction_model()


@pytest.mark.retrains
def test_a_seed_trained_again_gives_its_stored_row():
    """Seed 1 (seed 0 is trained by the chapter itself): float64 training gives the same
    numbers on any CPU to about six digits, so the rounded row comes back."""
    stored = {r["seed"]: r for r in al.induction_seed_survey()}[1]
    again = _tool().seed_record(1)
    assert again["phase_change_step"] == stored["phase_change_step"]
    for key in ("first_half_loss", "second_half_loss", "previous_token", "induction"):
        assert again[key] == pytest.approx(stored[key], abs=1e-4), key
