"""Edges the models must hold: odd input gets a ValueError/TypeError that names the argument,
never a silent or a confusing result.

Each case was once silently wrong or failed deep inside numpy: sampling settings ignored at
temperature 0, a stream loss that wrapped negative ids, an initial scale of NaN, betas that
failed to unpack, a damaged model file that raised a zip error, NaN head weights, training
losses that wrapped ids their forwards refuse, and batch helpers that crashed on an empty
list.
"""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

import attention_lib as al
from attention_lib.corpus import CharTokenizer
from attention_lib.gpt.stored import load_gpt, save_gpt

CONFIG = al.GPTConfig(vocab_size=5, context=4, d_model=4, n_layers=1, n_heads=2)


@pytest.mark.parametrize("kwargs, pattern", [
    ({"top_k": 0}, "^top_k=0"), ({"top_k": 2.5}, "^top_k=2.5"),
    ({"top_p": 0.0}, "^top_p=0.0"), ({"top_p": 1.5}, "^top_p=1.5"),
    ({"top_p": float("nan")}, "^top_p=nan"),
])
def test_sampling_settings_are_checked_at_every_temperature(kwargs, pattern):
    for temperature in (0.0, 1.0):
        with pytest.raises((TypeError, ValueError), match=pattern):
            al.next_token_distribution([1.0, 2.0, 0.5], temperature=temperature, **kwargs)
    params = al.init_gpt(CONFIG)
    with pytest.raises((TypeError, ValueError), match=pattern):
        al.generate(params, CONFIG, [1, 2], 3, temperature=0, **kwargs)


@pytest.mark.parametrize("stream, exc, pattern", [
    ([1, 2, -1, 3], ValueError, "^stream contains 1 entry outside 0..4, the first -1"),
    ([1, 2, 7], ValueError, "^stream contains 1 entry outside 0..4, the first 7"),
    ([1.0, 2.5, 3.0], TypeError, "^stream has dtype float64"),
    ([True, False, True], TypeError, "^stream has dtype bool"),
    ([[1, 2, 3]], ValueError, "^stream has 2 dimension"),
    ([3], ValueError, "^stream has 1 token id; expected at least 2"),
])
def test_sequence_loss_refuses_what_it_cannot_score(stream, exc, pattern):
    with pytest.raises(exc, match=pattern):
        al.sequence_loss(al.init_gpt(CONFIG), CONFIG, stream)


@pytest.mark.parametrize("batch_size", [0, -3, 2.0, True, "8"])
def test_sequence_loss_checks_its_batch_size(batch_size):
    with pytest.raises((TypeError, ValueError), match="^batch_size="):
        al.sequence_loss(al.init_gpt(CONFIG), CONFIG, [1, 2, 3, 4, 0, 1],
                         batch_size=batch_size)


@pytest.mark.parametrize("std, exc", [(float("nan"), ValueError), (float("inf"), ValueError),
                                      (-0.02, ValueError), (0.0, ValueError),
                                      ("0.02", TypeError), (True, TypeError)])
def test_init_gpt_refuses_a_scale_that_is_not_a_positive_number(std, exc):
    with pytest.raises(exc, match="^std="):
        al.init_gpt(CONFIG, std=std)


@pytest.mark.parametrize("dtype", [None, np.int64, "float16", "no such dtype", np.complex128])
def test_init_gpt_refuses_a_dtype_it_does_not_compute_in(dtype):
    with pytest.raises(TypeError, match="^dtype="):
        al.init_gpt(CONFIG, dtype=dtype)


@pytest.mark.parametrize("betas, exc", [(0.9, TypeError), ((0.9,), ValueError),
                                        ((0.9, 0.99, 0.999), ValueError), ("ab", TypeError),
                                        ((0.9, 1.0), ValueError), ((0.9, -0.1), ValueError),
                                        ((0.9, "x"), TypeError), (None, TypeError)])
def test_malformed_betas_are_named(betas, exc):
    stream = np.arange(40) % 5
    with pytest.raises(exc, match="^betas="):
        al.train_gpt(CONFIG, stream, stream, steps=2, betas=betas, progress=False)
    with pytest.raises(exc, match="^betas="):
        al.training.Adam({"x": np.zeros(2)}, betas=betas)


def _model_file(tmp_path):
    path = tmp_path / "m.npz"
    save_gpt(path, al.init_gpt(CONFIG), CONFIG, CharTokenizer("abcde"))
    return path


def test_a_flipped_byte_is_reported_by_the_loader_naming_the_file(tmp_path):
    path = _model_file(tmp_path)
    data = path.read_bytes()
    with zipfile.ZipFile(io.BytesIO(data)) as z:  # a byte inside an array's compressed data
        info = z.getinfo("blocks.0.attn.w_q.npy")
    at = info.header_offset + 30 + len(info.filename) + info.compress_size // 2
    broken = data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]
    (tmp_path / "broken.npz").write_bytes(broken)
    with pytest.raises(ValueError, match="broken.npz"):
        load_gpt(tmp_path / "broken.npz")
    for cut in (len(data) // 2, 40):  # a truncated file
        (tmp_path / "short.npz").write_bytes(data[:cut])
        with pytest.raises(ValueError, match="short.npz"):
            load_gpt(tmp_path / "short.npz")


@pytest.mark.parametrize("weights, threshold, pattern", [
    (np.full((1, 1, 1, 2, 2), np.nan), 0.5, "^weights contains"),
    (np.ones((1, 1, 1, 2, 2)), float("nan"), "^threshold=nan"),
    (np.ones((1, 1, 1, 2, 2)), 1.5, "^threshold=1.5"),
    (np.ones((1, 1, 1, 2, 2)), "0.5", "^threshold="),
])
def test_weight_on_relation_refuses_nan(weights, threshold, pattern):
    with pytest.raises((TypeError, ValueError), match=pattern):
        al.weight_on_relation(weights, [[-1, 0]], threshold=threshold)


def test_retrieval_training_losses_refuse_ids_their_forwards_refuse():
    result = al.train_retrieval(seed=0, steps=1)
    data = al.training.make_retrieval_data(3, rng=np.random.default_rng(0))
    for field, value, name in (("keys", -1, "data.keys"), ("values", 8, "data.values"),
                               ("query", -2, "data.query")):
        arrays = {f: getattr(data, f).copy() for f in ("keys", "values", "query", "target",
                                                         "answer")}
        arrays[field].flat[0] = value  # (a negative id would read the last row)
        with pytest.raises(ValueError, match=f"^{name} contains 1 entr"):
            al.training.retrieval_loss_and_grads(result.params,
                                                 al.training.RetrievalData(**arrays))
    multi = al.train_multihead_retrieval(seed=0, steps=1)
    bad = al.training.RetrievalData(data.keys, data.values, data.query.copy(), data.target,
                                    data.answer)
    bad.query[1] = -1
    with pytest.raises(ValueError, match="^data.query contains 1 entr"):
        al.training.multihead_retrieval_loss_and_grads(multi.params, bad)
    shift = al.train_shift(seed=0, steps=1)
    tokens = al.training.make_shift_data(2, rng=np.random.default_rng(1)).tokens.copy()
    tokens[0, 0] = -1
    with pytest.raises(ValueError, match="^data.tokens contains 1 entr"):
        al.training.shift_loss_and_grads(shift.params, al.training.ShiftData(tokens, 2))


def test_the_induction_trainer_refuses_ids_outside_the_vocabulary():
    config = al.training.induction_config(n_layers=1)

    def sample(rng):
        x = rng.integers(0, 64, size=(2, 8))
        x[0, 0] = -1  # would read the last row of the embedding
        return x, x

    with pytest.raises(ValueError, match="^tokens contains 1 entr"):
        al.gpt.train.train_gpt_on_batches(config, sample, steps=1, progress=False)


def test_the_trained_models_batch_helpers_refuse_an_empty_list():
    coref = al.init_coreference_model()
    for method in (coref.predict_many, coref.probabilities, coref.it_weights_many):
        with pytest.raises(ValueError, match="^sentences is empty"):
            method([])
    with pytest.raises(ValueError, match="^examples is empty"):
        coref.accuracy([])
    translator = al.init_translation_model()
    with pytest.raises(ValueError, match="^sources is empty"):
        translator.translate_many([])
    for method in (translator.exact_match, translator.cross_attention_many):
        with pytest.raises(ValueError, match="^examples is empty"):
            method([])
