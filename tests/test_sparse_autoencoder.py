"""Sparse autoencoders (attention_lib.sparse_autoencoder, attention_lib.features) and the
stored one of the book's model (tools/sparse_autoencoder.py).

The gradient is checked against central differences, encoding and decoding against loops,
the clamp hook against its formula written out position by position, and the spliced loss
with an autoencoder that reconstructs exactly. The stored run is tied to the code: the
windows of its first steps are read again and their steps replayed; ``make
sparse-autoencoder`` runs this file with ``--retrain``, which trains the whole run again
and compares the weights.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import attention_lib as al
from attention_lib import sparse_autoencoder as sae_module
from tests.repo_scripts import load_script

WEIGHTS = ("w_enc", "b_enc", "w_dec", "b_dec")


def random_sae(d: int = 3, m: int = 5, seed: int = 0, site: str = "blocks.1.resid_post"):
    rng = np.random.default_rng(seed)
    return al.SparseAutoencoder(rng.normal(size=(d, m)), rng.normal(size=m) * 0.3,
                                rng.normal(size=(m, d)), rng.normal(size=d) * 0.3, site=site)


def exact_sae(d: int, site: str = "blocks.1.resid_post"):
    """relu(x) - relu(-x) = x: m = 2d features that reconstruct every x exactly."""
    eye = np.eye(d)
    return al.SparseAutoencoder(np.hstack([eye, -eye]), np.zeros(2 * d),
                                np.vstack([eye, -eye]), np.zeros(d), site=site)


def loop_loss(w: dict, x: np.ndarray, l1: float) -> float:
    """The training loss, one row and one feature at a time."""
    total = 0.0
    for row in x:
        f = [max(sum((row[i] - w["b_dec"][i]) * w["w_enc"][i, j] for i in range(len(row)))
                 + w["b_enc"][j], 0.0) for j in range(len(w["b_enc"]))]
        for i in range(len(row)):
            x_hat = sum(f[j] * w["w_dec"][j, i] for j in range(len(f))) + w["b_dec"][i]
            total += (row[i] - x_hat) ** 2
        total += l1 * sum(f)
    return total / len(x)


def test_the_gradient_matches_central_differences():
    sae = random_sae()
    x = np.random.default_rng(1).normal(size=(4, 3))
    l1 = 0.3
    parts, grads = al.sae_loss_and_grads(sae, x, l1=l1)
    w = {k: np.array(getattr(sae, k), dtype=np.float64) for k in WEIGHTS}
    assert math.isclose(parts["loss"], loop_loss(w, x, l1), rel_tol=1e-12)
    h = 1e-6
    for name in WEIGHTS:
        numeric = np.zeros_like(w[name])
        for i in np.ndindex(w[name].shape):
            up = {k: v.copy() for k, v in w.items()}
            down = {k: v.copy() for k, v in w.items()}
            up[name][i] += h
            down[name][i] -= h
            numeric[i] = (loop_loss(up, x, l1) - loop_loss(down, x, l1)) / (2 * h)
        np.testing.assert_allclose(grads[name], numeric, rtol=1e-6, atol=1e-8, err_msg=name)


def test_encode_and_decode_match_loops():
    sae = random_sae(d=4, m=6)
    x = np.random.default_rng(2).normal(size=(2, 3, 4))
    f = sae.encode(x)
    assert f.shape == (2, 3, 6)
    for b, t, j in np.ndindex(2, 3, 6):
        z = sum((x[b, t, i] - sae.b_dec[i]) * sae.w_enc[i, j] for i in range(4)) + sae.b_enc[j]
        assert math.isclose(f[b, t, j], max(z, 0.0), rel_tol=1e-12, abs_tol=1e-14)
        assert math.isclose(sae.feature(x, j)[b, t], f[b, t, j], rel_tol=1e-12, abs_tol=1e-14)
    x_hat = sae.decode(f)
    for b, t, i in np.ndindex(2, 3, 4):
        want = sum(f[b, t, j] * sae.w_dec[j, i] for j in range(6)) + sae.b_dec[i]
        assert math.isclose(x_hat[b, t, i], want, rel_tol=1e-12, abs_tol=1e-14)
    np.testing.assert_array_equal(sae.reconstruct(x), x_hat)


def test_training_keeps_unit_decoder_rows_and_a_short_run_repeats_a_long_one():
    x = np.random.default_rng(3).normal(size=(300, 5)) @ np.diag([3, 2, 1, 1, 0.5])
    long = al.train_sparse_autoencoder(x, 12, l1=0.1, steps=40, batch_size=32, buffer=64,
                                       seed=4)
    short = al.train_sparse_autoencoder(x, 12, l1=0.1, steps=15, batch_size=32, buffer=64,
                                        seed=4)
    np.testing.assert_allclose(np.linalg.norm(long.w_dec, axis=1), 1.0, rtol=1e-6)  # float32
    for k, values in short.log.items():
        np.testing.assert_array_equal(values, long.log[k][:15], err_msg=k)
    # b_dec starts at the mean of the first buffer
    start = al.train_sparse_autoencoder(x[:64], 12, l1=0.1, steps=1, batch_size=32,
                                        buffer=64, lr=1e-12)
    np.testing.assert_allclose(start.b_dec, x[:64].mean(axis=0), atol=1e-9)
    assert long.log["loss"][-10:].mean() < long.log["loss"][:5].mean()


def clamp_by_hand(sae, x, j, value):
    out = np.array(x, dtype=np.float64)
    for pos in np.ndindex(x.shape[:-1]):
        z = sum((x[pos][i] - sae.b_dec[i]) * sae.w_enc[i, j] for i in range(x.shape[-1]))
        f = max(z + sae.b_enc[j], 0.0)
        for i in range(x.shape[-1]):
            out[pos][i] = x[pos][i] + (value - f) * sae.w_dec[j, i]
    return out


def test_the_clamp_hook_holds_one_feature_and_keeps_the_error():
    sae = random_sae(d=4, m=6, site="blocks.0.resid_post")
    x = np.random.default_rng(5).normal(size=(2, 3, 4))
    hooks = al.feature_clamp_hooks(sae, 2, 1.5)
    assert list(hooks) == ["blocks.0.resid_post"]
    out = hooks["blocks.0.resid_post"](x)
    np.testing.assert_allclose(out, clamp_by_hand(sae, x, 2, 1.5), rtol=1e-12, atol=1e-14)
    # the error term x - x_hat is kept; the clamped feature is at 1.5 in the reconstruction
    f = sae.encode(x)
    f[..., 2] = 1.5
    np.testing.assert_allclose(out - (f @ sae.w_dec + sae.b_dec), x - sae.reconstruct(x),
                               atol=1e-12)
    # float32 stays float32
    assert hooks["blocks.0.resid_post"](x.astype(np.float32)).dtype == np.float32


def test_clamping_a_feature_to_its_own_value_changes_nothing():
    sae = random_sae(d=4, m=6)
    x = np.random.default_rng(6).normal(size=(1, 1, 4))
    for j in range(6):
        own = float(sae.feature(x, j)[0, 0])
        np.testing.assert_allclose(al.feature_clamp_hooks(sae, j, own)[sae.site](x), x,
                                   atol=1e-14)


def test_the_clamp_hook_refuses_bad_features_and_values():
    sae = random_sae()
    with pytest.raises(ValueError, match="feature"):
        al.feature_clamp_hooks(sae, 5, 1.0)
    with pytest.raises(TypeError, match="feature"):
        al.feature_clamp_hooks(sae, 1.0, 1.0)
    with pytest.raises(ValueError, match="value"):
        al.feature_clamp_hooks(sae, 0, -1.0)
    with pytest.raises(ValueError, match="value"):
        al.feature_clamp_hooks(sae, 0, float("nan"))
    with pytest.raises(ValueError, match="width"):
        al.feature_clamp_hooks(sae, 0, 1.0)[sae.site](np.zeros((2, 4)))


def tiny_model():
    config = al.GPTConfig(12, 16, 6, 2, 2)
    return al.init_gpt(config, seed=1, dtype=np.float64), config


def test_an_exact_autoencoder_spliced_in_gives_the_clean_loss():
    params, config = tiny_model()
    stream = np.random.default_rng(7).integers(0, 12, size=50)
    sae = exact_sae(6, site="blocks.0.resid_post")
    out = al.sae_spliced_loss(params, config, sae, stream)
    assert math.isclose(out.clean, al.sequence_loss(params, config, stream), rel_tol=1e-12)
    assert math.isclose(out.spliced, out.clean, rel_tol=1e-12)
    assert math.isclose(out.recovered, 1.0, abs_tol=1e-9)
    # the references: the site replaced by zeros, or by its mean over the stream's positions
    zero = al.sequence_loss(params, config, stream,
                            hooks={sae.site: lambda a: np.zeros_like(a)})
    assert math.isclose(out.zero_ablated, zero, rel_tol=1e-12)
    mean = al.stream_activations(params, config, stream, sae.site).mean(axis=0)
    ablated = al.sequence_loss(params, config, stream,
                               hooks={sae.site: lambda a: np.broadcast_to(mean, a.shape)})
    assert math.isclose(out.mean_ablated, ablated, rel_tol=1e-12)


def test_frequencies_and_error_by_hand():
    sae = random_sae(d=3, m=5)
    x = np.random.default_rng(8).normal(size=(40, 3))
    f = np.array([[max(float((row - sae.b_dec) @ sae.w_enc[:, j] + sae.b_enc[j]), 0.0)
                   for j in range(5)] for row in x])
    np.testing.assert_allclose(al.feature_frequencies(sae, x, batch_size=7),
                               (f > 0).mean(axis=0))
    x_hat = f @ sae.w_dec + sae.b_dec
    want = ((x - x_hat) ** 2).sum() / ((x - x.mean(axis=0)) ** 2).sum()
    assert math.isclose(al.reconstruction_error(sae, x), want, rel_tol=1e-12)


def test_window_activations_are_the_stream_activations_of_those_windows():
    params, config = tiny_model()
    stream = np.random.default_rng(9).integers(0, 12, size=70)
    starts = al.sae_training_windows(stream.size, config.context, 3, seed=2)
    rows = al.window_activations(params, config, stream, starts, "blocks.1.resid_mid",
                                 batch_size=2)
    whole = al.stream_activations(params, config, stream[:64], "blocks.1.resid_mid")
    want = np.concatenate([whole[s:s + config.context] for s in starts])
    np.testing.assert_allclose(rows, want, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="site"):
        al.window_activations(params, config, stream, starts, "blocks.1.ff.hidden")


# -- the stored run ---------------------------------------------------------------------


REPLAYED = 12  # steps: 12 batches of 1024 rows, three buffers, the first 96 windows


def test_the_first_steps_of_the_stored_run_come_back():
    stored = al.trained_sparse_autoencoder()
    tool = load_script("sparse_autoencoder")
    s = stored.settings
    assert {k: s[k] for k in tool.TRAINING} == tool.TRAINING
    assert (stored.site, s["n_windows"], s["window_seed"]) == (tool.SITE, tool.N_WINDOWS,
                                                               tool.WINDOW_SEED)
    buffers = math.ceil(REPLAYED * s["batch_size"] / s["buffer"])
    model = al.book_language_model()
    rows = tool.training_activations(buffers * s["buffer"] // model.config.context)
    again = al.train_sparse_autoencoder(rows, s["n_features"], l1=s["l1"], steps=REPLAYED,
                                        batch_size=s["batch_size"], buffer=s["buffer"],
                                        lr=s["lr"], seed=s["seed"], site=stored.site)
    for k, values in again.log.items():
        np.testing.assert_allclose(values, stored.log[k][:REPLAYED], rtol=1e-9, err_msg=k)


def test_the_stored_autoencoder_is_whole():
    sae = al.trained_sparse_autoencoder()
    assert sae.site == "blocks.1.resid_post"
    assert sae.w_enc.shape == (128, sae.settings["n_features"])
    assert all(getattr(sae, k).dtype == np.float64 for k in WEIGHTS)
    # float32 numbers, as train_sparse_autoencoder rounds them
    assert all(np.array_equal(getattr(sae, k), getattr(sae, k).astype(np.float32))
               for k in WEIGHTS)
    np.testing.assert_allclose(np.linalg.norm(sae.w_dec, axis=1), 1.0, rtol=1e-6)
    assert all(len(v) == sae.settings["steps"] for v in sae.log.values())
    assert sae.log["loss"][-100:].mean() < sae.log["loss"][:10].mean() / 5


def test_a_file_without_its_log_is_refused(monkeypatch, tmp_path):
    stored = al.trained_sparse_autoencoder()
    (tmp_path / "data").mkdir()
    np.savez(tmp_path / "data" / sae_module.SAE_FILE, site=np.array(stored.site),
             **{k: getattr(stored, k) for k in WEIGHTS})
    monkeypatch.setattr("importlib.resources.files", lambda package: tmp_path)
    with pytest.raises(ValueError, match="training log"):
        al.trained_sparse_autoencoder()


@pytest.mark.retrains
def test_the_whole_run_trained_again_gives_the_stored_weights():
    stored = al.trained_sparse_autoencoder()
    again = load_script("sparse_autoencoder").train()
    for name in WEIGHTS:
        np.testing.assert_allclose(getattr(again, name), getattr(stored, name), rtol=1e-6,
                                   atol=1e-9, err_msg=name)
