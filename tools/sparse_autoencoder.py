"""Train the book's sparse autoencoder of the Shakespeare model and store it in the package.

    make sparse-autoencoder                # or: python tools/sparse_autoencoder.py
    python tools/sparse_autoencoder.py --report   # also print what the chapter measures

Reads the residual stream between blocks 2 and 3 of ``al.book_language_model()`` (hook site
``"blocks.1.resid_post"``, d = 128) on the training text only: ``N_WINDOWS`` windows of 128
characters, the first of a seeded permutation of the text's whole windows
(``al.sae_training_windows``), run through a float64 copy of the model
(``al.window_activations``), in that order. Trains ``al.train_sparse_autoencoder`` on those
rows with the settings below and writes attention_lib/data/sparse_autoencoder.npz, which
``al.trained_sparse_autoencoder()`` reads: the weights (float32, the float32 numbers that
``al.train_sparse_autoencoder`` returns), the log of every step and the settings (the
windows' and the training's). About two and a half minutes on 2 idle cores (reading
the windows and training; seven when other work shares them). The test suite reads the
windows of the first steps again and replays them (tests/test_sparse_autoencoder.py);
``--retrain`` trains the whole run again and compares the weights.

Settings tried (m = 1024, batch 1024; on the first 20,000 characters of the validation text,
whose clean loss is 1.44 nats): l1 = 1, lr 1e-3, 1,000 steps: 120 features firing per
position, relative reconstruction error 0.12, 1.58 nats with the reconstruction spliced in;
l1 = 3, lr 1e-3, 1,000 steps: 29 features, 0.34, 2.18 nats; l1 = 2.5, lr 1e-3, 2,000 steps
(on the whole validation text, clean 1.49): 26 features, 0.23, 1.91 nats; l1 = 2, lr 2e-3,
4,000 steps: 18 features, 0.14, 1.64 nats, the one stored.

``--report`` prints, on the validation text: the fraction of features alive, the features
firing per position, the relative reconstruction error, the loss clean / spliced / ablated,
the top contexts of some features, and greedy text with a feature clamped.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import attention_lib as al

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "attention_lib" / "data" / "sparse_autoencoder.npz"

SITE = "blocks.1.resid_post"
N_WINDOWS = 2048  # 262,144 positions of the 988,470 of the training text
WINDOW_SEED = 0
TRAINING = {"n_features": 1024, "l1": 2.0, "steps": 4000, "batch_size": 1024,
            "buffer": 4096, "lr": 2e-3, "seed": 0}


def training_activations(n_windows: int = N_WINDOWS) -> np.ndarray:
    """The rows the autoencoder trains on (the first ``n_windows`` windows of the order)."""
    model = al.book_language_model()
    tokens = model.encode(al.shakespeare_split()[0])
    starts = al.sae_training_windows(tokens.size, model.config.context, N_WINDOWS,
                                     seed=WINDOW_SEED)[:n_windows]
    return al.window_activations(model.params, model.config, tokens, starts, SITE)


def train(activations: np.ndarray | None = None) -> al.SparseAutoencoder:
    """The stored run: TRAINING on the activations of the N_WINDOWS windows."""
    x = training_activations() if activations is None else activations
    return al.train_sparse_autoencoder(x, site=SITE, **TRAINING)


def save(sae: al.SparseAutoencoder) -> None:
    settings = {**sae.settings, "n_windows": N_WINDOWS, "window_seed": WINDOW_SEED}
    weights = {k: getattr(sae, k).astype(np.float32) for k in ("w_enc", "b_enc", "w_dec",
                                                                "b_dec")}
    assert all(np.array_equal(a, getattr(sae, k)) for k, a in weights.items())  # exact
    np.savez_compressed(
        OUT, **weights, site=np.array(sae.site), **{f"log.{k}": v for k, v in sae.log.items()},
        **{f"settings.{k}": np.array(v) for k, v in settings.items()})
    print(f"wrote {OUT.relative_to(ROOT)} ({OUT.stat().st_size} bytes)")


def report(sae: al.SparseAutoencoder) -> None:
    """What the chapter measures, printed."""
    model = al.book_language_model()
    text = model.validation_text
    tokens = model.encode(text)
    v = al.stream_activations(model.params, model.config, tokens, sae.site)
    freq = al.feature_frequencies(sae, v)
    alive = np.flatnonzero(freq > 0)
    print(f"alive on the validation text: {alive.size} of {sae.n_features} "
          f"({alive.size / sae.n_features:.3f}); features firing per position "
          f"{freq.sum():.1f}; relative reconstruction error "
          f"{al.reconstruction_error(sae, v):.4f}")
    loss = al.sae_spliced_loss(model.params, model.config, sae, tokens)
    print(f"validation loss (nats): clean {loss.clean:.4f}, spliced {loss.spliced:.4f}, "
          f"mean-ablated {loss.mean_ablated:.4f}, zero-ablated {loss.zero_ablated:.4f}; "
          f"recovered {loss.recovered:.3f}")
    common = np.argsort(-freq, kind="stable")[:5]
    rare = alive[np.argsort(freq[alive], kind="stable")][:5]
    for title, chosen in (("most frequent", common), ("rare but alive", rare)):
        print(f"\n== {title} ==")
        for j in chosen:
            print(f"feature {j}: fires at {freq[j]:.4f} of positions")
            for c in al.top_activating_contexts(sae.feature(v, int(j)), text, k=5,
                                                before=40, after=10, min_distance=1):
                print(f"   {c.value:7.3f}  {c.marked()}")
    prompt = model.encode("ROMEO:\n")
    plain = model.decode(al.generate(model.params, model.config, prompt, 80, temperature=0))
    print(f"\n== greedy from 'ROMEO:\\n' ==\n{plain!r}")
    for j in [*common[:2], *rare[:1]]:
        f = sae.feature(v, int(j))
        value = 3 * float(np.quantile(f[f > 0], 0.99))
        out = al.generate(model.params, model.config, prompt, 80, temperature=0,
                          hooks=al.feature_clamp_hooks(sae, int(j), value))
        print(f"feature {j} clamped at {value:.2f}:\n{model.decode(out)!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", action="store_true", help="print the measurements")
    args = parser.parse_args()
    start = time.perf_counter()
    x = training_activations()
    print(f"collected {x.shape[0]} rows at {SITE} in {time.perf_counter() - start:.0f} s")
    start = time.perf_counter()
    sae = train(x)
    print(f"trained {TRAINING} in {time.perf_counter() - start:.0f} s")
    save(sae)
    if args.report:
        report(al.trained_sparse_autoencoder())


if __name__ == "__main__":
    main()
