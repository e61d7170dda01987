"""Feed-forward neurons: top-activating contexts against a brute-force search, the ablation
losses against a loop that runs the model window by window with hooks written here and
takes the cross-entropy by hand, and the properties an ablation must have (nothing removed
changes nothing; a neuron or a sublayer that never varies costs nothing to mean-ablate)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import attention_lib as al
from attention_lib.gpt import GPTConfig, gpt_parameter_shapes

CONFIGS = {
    "gelu": GPTConfig(vocab_size=11, context=6, d_model=8, n_layers=3, n_heads=2, d_ff=12),
    "rope_rms_swiglu": GPTConfig(11, 6, 8, 2, 2, d_ff=10, positions="rope", norm="rms",
                                 ffn="swiglu", tie_embeddings=False),
    "post_norm_relu": GPTConfig(11, 6, 8, 2, 2, d_ff=10, norm_position="post", ffn="relu"),
}


def _random_params(config, seed=0, scale=0.5):
    """Every entry random (gains, biases, embeddings), float64: no neuron is dead by chance."""
    rng = np.random.default_rng(seed)
    return {name: rng.normal(0.0, scale, shape) + (1.0 if name.endswith("gamma") else 0.0)
            for name, shape in gpt_parameter_shapes(config).items()}


def _stream(config, n=29, seed=1):
    """29 tokens: four full windows of 6 + 1 and a shorter last one (context 6)."""
    return np.random.default_rng(seed).integers(0, config.vocab_size, n)


# ---------------------------------------------------------------- the reference: a slow loop

def reference_loss(params, config, stream, hooks=None):
    """Mean next-token loss, window by window: window j reads stream[jT : jT + T] (at most up
    to the last token but one) and predicts the token after each position."""
    T = config.context
    total, count = 0.0, 0
    for s in range(0, len(stream) - 1, T):
        x = stream[s:min(s + T, len(stream) - 1)]
        y = stream[s + 1:s + 1 + len(x)]
        logits = al.gpt_logits(params, config, x[None], hooks=hooks)[0].astype(np.float64)
        for t in range(len(x)):
            z = logits[t]
            total += np.log(np.sum(np.exp(z - z.max()))) + z.max() - z[y[t]]
            count += 1
    return total / count


def reference_captures(params, config, stream, site):
    """What ``site`` holds at every position of the loss's windows, (n_tokens, width)."""
    T = config.context
    rows = []
    for s in range(0, len(stream) - 1, T):
        x = stream[s:min(s + T, len(stream) - 1)]
        seen = {}
        al.gpt_logits(params, config, x[None], hooks=al.capture_hooks(seen, [site]))
        rows.append(seen[site][0])
    return np.concatenate(rows)


def set_neurons(neurons, value_of):
    """Hooks written here: neuron (l, i) set to value_of(l, i) at every position."""
    hooks = {}
    for layer in {n_layer for n_layer, _ in neurons}:
        mine = [i for n_layer, i in neurons if n_layer == layer]

        def hook(a, layer=layer, mine=mine):
            a = a.copy()
            for i in mine:
                a[..., i] = value_of(layer, i)
            return a

        hooks[f"blocks.{layer}.ff.hidden"] = hook
    return hooks


def set_outputs(site_values):
    """Hooks written here: each site's output replaced by a vector at every position."""
    def constant(v):
        return lambda a: np.zeros_like(a) + v
    return {site: constant(v) for site, v in site_values.items()}


# ---------------------------------------------------------------- activation means

@pytest.mark.parametrize("name", CONFIGS)
def test_activation_means_are_the_means_of_stream_activations(name):
    config = CONFIGS[name]
    params, stream = _random_params(config), _stream(config)
    means = al.activation_means(params, config, stream, batch_size=2)
    assert sorted(means) == ["attn.out", "ff.hidden", "ff.out"]
    for site, a in means.items():
        for layer in range(config.n_layers):
            rows = al.stream_activations(params, config, stream, f"blocks.{layer}.{site}")
            np.testing.assert_allclose(a[layer], rows.mean(axis=0), atol=1e-12)


def test_activation_means_of_spread_windows():
    config = CONFIGS["gelu"]
    params, stream = _random_params(config), _stream(config, n=40)
    means = al.activation_means(params, config, stream, windows=3)
    starts = [0, 17, 34]  # round(j * (40 - 6) / 2)
    for layer in range(config.n_layers):
        site = f"blocks.{layer}.ff.hidden"
        rows = []
        for s in starts:
            seen = {}
            al.gpt_logits(params, config, stream[None, s:s + 6],
                          hooks=al.capture_hooks(seen, [site]))
            rows.append(seen[site][0])
        np.testing.assert_allclose(means["ff.hidden"][layer], np.concatenate(rows).mean(0),
                                   atol=1e-12)
    # as many windows as the stream has or more: every position, as without windows
    whole = al.activation_means(params, config, stream)
    for w in (7, 100):
        again = al.activation_means(params, config, stream, windows=w)
        assert all(np.array_equal(again[k], whole[k]) for k in whole)


def test_activation_means_keep_float32():
    config = CONFIGS["gelu"]
    params = al.init_gpt(config)  # float32
    means = al.activation_means(params, config, _stream(config))
    assert {a.dtype for a in means.values()} == {np.dtype(np.float32)}


# ---------------------------------------------------------------- neuron ablations

NEURON_SETS = [[(0, 3)], [(1, 0), (1, 7), (0, 9)], [(config_layer, 2) for config_layer in (0, 1)]]


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("neurons", NEURON_SETS)
def test_neuron_ablation_loss_equals_the_window_loop(name, neurons):
    config = CONFIGS[name]
    params, stream = _random_params(config), _stream(config)
    means = al.activation_means(params, config, _stream(config, n=50, seed=7))
    mean_loss = al.neuron_ablation_loss(params, config, stream, neurons, means=means,
                                        batch_size=3)
    zero_loss = al.neuron_ablation_loss(params, config, stream, np.array(neurons),
                                        mode="zero")
    clean = reference_loss(params, config, stream)
    expected_mean = reference_loss(
        params, config, stream,
        set_neurons(neurons, lambda layer, i: means["ff.hidden"][layer, i]))
    expected_zero = reference_loss(params, config, stream, set_neurons(neurons, lambda layer, i: 0))
    assert mean_loss == pytest.approx(expected_mean, abs=1e-12)
    assert zero_loss == pytest.approx(expected_zero, abs=1e-12)
    assert abs(mean_loss - clean) > 1e-6 and abs(zero_loss - clean) > 1e-6  # not a no-op
    # means given as the bare (n_layers, d_ff) array: the same loss
    assert al.neuron_ablation_loss(params, config, stream, neurons, means=means["ff.hidden"],
                                   batch_size=3) == mean_loss


@pytest.mark.parametrize("name", CONFIGS)
def test_single_neuron_costs_are_the_set_losses_of_one_neuron(name):
    config = CONFIGS[name]
    params, stream = _random_params(config, seed=3), _stream(config)
    means = al.activation_means(params, config, _stream(config, n=50, seed=7))
    neurons = [(layer, i) for layer in range(config.n_layers) for i in (0, 4, config.d_ff - 1)]
    neurons.append(neurons[0])  # a neuron twice: its cost twice
    clean = reference_loss(params, config, stream)
    for mode, value in (("mean", lambda layer, i: means["ff.hidden"][layer, i]),
                        ("zero", lambda layer, i: 0.0)):
        costs = al.single_neuron_costs(params, config, stream, neurons, mode=mode,
                                       means=means, batch_size=2)
        assert costs.shape == (len(neurons),) and costs.dtype == np.float64
        expected = [reference_loss(params, config, stream, set_neurons([n], value)) - clean
                    for n in neurons]
        np.testing.assert_allclose(costs, expected, atol=1e-11)
        assert np.abs(costs).min() > 1e-8  # every neuron of random weights matters a little


def test_single_neuron_costs_of_float32_parameters_match_the_set_losses():
    config = CONFIGS["gelu"]
    params = {k: v.astype(np.float32) for k, v in _random_params(config, seed=4).items()}
    stream = _stream(config)
    means = al.activation_means(params, config, stream)
    neurons = [(2, 1), (1, 5), (0, 0)]
    costs = al.single_neuron_costs(params, config, stream, neurons, means=means)
    clean = al.sequence_loss(params, config, stream)
    expected = [al.neuron_ablation_loss(params, config, stream, [n], means=means) - clean
                for n in neurons]
    np.testing.assert_allclose(costs, expected, atol=2e-6)


def test_ablating_nothing_or_a_constant_neuron_changes_nothing():
    config = CONFIGS["gelu"]
    params, stream = _random_params(config, seed=5), _stream(config)
    # neuron (1, 4) reads nothing: its activation is GELU(b1[4]) at every position
    params["blocks.1.ff.w1"][:, 4] = 0.0
    means = al.activation_means(params, config, _stream(config, n=40, seed=9))
    clean = al.sequence_loss(params, config, stream)
    assert al.neuron_ablation_loss(params, config, stream, [], means=means) == clean
    assert al.neuron_ablation_loss(params, config, stream, [], mode="zero") == clean
    assert al.single_neuron_costs(params, config, stream, [], means=means).shape == (0,)
    assert al.neuron_ablation_loss(params, config, stream, [(1, 4)],
                                   means=means) == pytest.approx(clean, abs=1e-13)
    cost = al.single_neuron_costs(params, config, stream, [(1, 4), (1, 3)], means=means)
    assert cost[0] == pytest.approx(0.0, abs=1e-13) and abs(cost[1]) > 1e-6
    # a neuron the second matrix does not read costs nothing, whatever it is set to
    params["blocks.2.ff.w2"][6] = 0.0
    cost = al.single_neuron_costs(params, config, stream, [(2, 6)], mode="zero")
    assert cost[0] == pytest.approx(0.0, abs=1e-13)


# ---------------------------------------------------------------- sublayer ablations

@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("mode", ["mean", "zero"])
def test_sublayer_ablation_losses_equal_the_window_loop(name, mode):
    config = CONFIGS[name]
    L = config.n_layers
    params, stream = _random_params(config, seed=2), _stream(config)
    means = al.activation_means(params, config, _stream(config, n=50, seed=7))
    result = al.sublayer_ablation_losses(params, config, stream, mode=mode,
                                         means=means if mode == "mean" else None,
                                         batch_size=3)
    assert isinstance(result, al.SublayerAblation) and result.mode == mode
    assert result.n_tokens == len(stream) - 1
    assert result.clean == pytest.approx(reference_loss(params, config, stream), abs=1e-12)

    def written(kind, layer):
        return means[f"{kind}.out"][layer] if mode == "mean" else np.zeros(config.d_model)

    for kind, losses, together in (("attn", result.attn, result.all_attn),
                                   ("ff", result.ff, result.all_ff)):
        assert losses.shape == (L,)
        for layer in range(L):
            site = f"blocks.{layer}.{kind}.out"
            expected = reference_loss(params, config, stream,
                                      set_outputs({site: written(kind, layer)}))
            assert losses[layer] == pytest.approx(expected, abs=1e-12)
        every = {f"blocks.{layer}.{kind}.out": written(kind, layer) for layer in range(L)}
        assert together == pytest.approx(reference_loss(params, config, stream,
                                                        set_outputs(every)), abs=1e-12)
        for layer in range(L):
            out = reference_captures(params, config, stream, f"blocks.{layer}.{kind}.out")
            norm = getattr(result, f"{kind}_norm")[layer]
            assert norm == pytest.approx(np.linalg.norm(out, axis=-1).mean(), abs=1e-12)


def test_a_sublayer_that_writes_a_constant_costs_nothing_to_mean_ablate():
    config = CONFIGS["gelu"]
    params, stream = _random_params(config, seed=6), _stream(config)
    params["blocks.1.ff.w2"][:] = 0.0  # block 1's FF writes b2 at every position
    params["blocks.0.attn.w_o"][:] = 0.0  # block 0's attention writes b_o
    means = al.activation_means(params, config, stream)
    result = al.sublayer_ablation_losses(params, config, stream, means=means)
    assert result.ff[1] == pytest.approx(result.clean, abs=1e-13)
    assert result.attn[0] == pytest.approx(result.clean, abs=1e-13)
    assert abs(result.ff[0] - result.clean) > 1e-6 and abs(result.attn[1] - result.clean) > 1e-6
    # zeroing them removes the bias they write: a cost, unless the bias is zero too
    params["blocks.1.ff.b2"][:] = 0.0
    zero = al.sublayer_ablation_losses(params, config, stream, mode="zero")
    assert zero.ff[1] == pytest.approx(zero.clean, abs=1e-13)
    assert abs(zero.attn[0] - zero.clean) > 1e-6


# ---------------------------------------------------------------- top-activating contexts

def brute_force_top(values, k, spacing):
    """Pick the largest value left (np.argmax: the first of equal ones), then rule out its
    neighbours closer than ``spacing``; k times, or until nothing is left."""
    left = np.asarray(values, dtype=np.float64).copy()
    allowed = np.ones(left.size, dtype=bool)
    chosen = []
    while len(chosen) < k and allowed.any():
        p = int(np.argmax(np.where(allowed, left, -np.inf)))
        chosen.append(p)
        allowed[max(p - spacing + 1, 0):p + spacing] = False
    return chosen


@given(values=st.lists(st.integers(-3, 3), min_size=1, max_size=60),
       k=st.integers(1, 10), before=st.integers(0, 4), after=st.integers(0, 4),
       spacing=st.one_of(st.none(), st.integers(1, 8)))
def test_top_contexts_equal_the_brute_force_search(values, k, before, after, spacing):
    text = "".join(chr(ord("a") + i % 26) for i in range(len(values)))
    found = al.top_activating_contexts(values, text, k=k, before=before, after=after,
                                       min_distance=spacing)
    expected = brute_force_top(values, k, before + after + 1 if spacing is None else spacing)
    assert [c.position for c in found] == expected
    for c in found:
        p = c.position
        assert c.value == values[p] and isinstance(c.value, float)
        assert c.token == text[p]
        assert c.before == text[max(p - before, 0):p] and c.after == text[p + 1:p + 1 + after]
        assert c.before + c.token + c.after == text[max(p - before, 0):p + after + 1]


def test_top_contexts_of_plain_top_k_ties_and_tokens():
    values = np.array([1.0, 5.0, 5.0, 2.0, 5.0], dtype=np.float32)
    found = al.top_activating_contexts(values, "ab\ncd", k=3, before=2, after=1,
                                       min_distance=1)
    assert [c.position for c in found] == [1, 2, 4]  # equal values: the earlier first
    assert found[1] == al.Context(2, 5.0, "ab", "\n", "c")
    assert found[1].marked() == "ab[↵]c" and found[1].marked("<", ">", None) == "ab<\n>c"
    # by default no two snippets overlap: positions at least before + after + 1 apart
    assert [c.position for c in al.top_activating_contexts(values, "ab\ncd", k=3, before=1,
                                                           after=1)] == [1, 4]
    assert [c.position for c in al.top_activating_contexts(values, "ab\ncd", k=3)] == [1]
    # one token per position: before and after count tokens
    tokens = ["The", " king", " is", " dead", "."]
    c = al.top_activating_contexts([0, 0, 0, 9, 0], tokens, k=1, before=2, after=1)[0]
    assert (c.before, c.token, c.after) == (" king is", " dead", ".")


def test_top_contexts_on_a_neuron_of_the_book_model():
    model = al.book_language_model()
    text = model.validation_text[:700]
    values = al.stream_activations(model.params, model.config, model.encode(text),
                                   "blocks.3.ff.hidden")[:, 17]
    found = al.top_activating_contexts(values, text, k=4)
    assert found[0].value == pytest.approx(float(values.max()))
    assert all(found[j].value >= found[j + 1].value for j in range(len(found) - 1))
    assert all(abs(a.position - b.position) >= 36 for a in found for b in found if a != b)


# ---------------------------------------------------------------- the book's model, lightly

def test_single_neuron_costs_on_the_book_model():
    model = al.book_language_model()
    params, config = model.params, model.config
    train, validation = al.shakespeare_split()
    means = al.activation_means(params, config, model.encode(train[:20_000]), windows=8)
    stream = model.encode(validation[:400])
    neurons = [(3, 0), (3, 100), (2, 7)]
    costs = al.single_neuron_costs(params, config, stream, neurons, means=means)
    clean = al.sequence_loss(params, config, stream)
    expected = [al.neuron_ablation_loss(params, config, stream, [n], means=means) - clean
                for n in neurons]
    np.testing.assert_allclose(costs, expected, atol=2e-6)
    result = al.sublayer_ablation_losses(params, config, stream, means=means)
    assert result.clean == pytest.approx(clean, abs=1e-6)  # float32, another BLAS count
    assert result.all_attn > result.clean and result.all_ff > result.clean


# ---------------------------------------------------------------- bad input

def test_bad_input_is_refused_with_a_clear_error():
    config = CONFIGS["gelu"]
    params, stream = _random_params(config), _stream(config)
    means = al.activation_means(params, config, stream)
    calls = (al.neuron_ablation_loss, al.single_neuron_costs)
    for f in calls:
        with pytest.raises(ValueError, match=r"neurons\[1\] = \(3, 0\) has the layer 3"):
            f(params, config, stream, [(0, 1), (3, 0)], means=means)
        with pytest.raises(ValueError, match=r"the index 12; expected a index from 0 to 11"):
            f(params, config, stream, [(0, 12)], means=means)
        with pytest.raises(ValueError, match=r"neurons\[0\] = \(0, -1\)"):
            f(params, config, stream, [(0, -1)], means=means)
        with pytest.raises(ValueError, match=r"shape \(n, 2\)"):
            f(params, config, stream, (0, 1), means=means)
        with pytest.raises(TypeError, match="neurons has dtype float64"):
            f(params, config, stream, [(0.0, 1.0)], means=means)
        with pytest.raises(ValueError, match="mode='mean' needs means"):
            f(params, config, stream, [(0, 1)])
        with pytest.raises(ValueError, match="mode='max'"):
            f(params, config, stream, [(0, 1)], mode="max", means=means)
        with pytest.raises(ValueError, match=r"means has shape \(2, 12\).*\(3, 12\)"):
            f(params, config, stream, [(0, 1)], means=means["ff.hidden"][:2])
        with pytest.raises(ValueError, match=r"means\['ff.hidden'\] has shape \(3, 8\)"):
            f(params, config, stream, [(0, 1)], means={"ff.hidden": means["ff.out"]})
        with pytest.raises(ValueError, match="NaN"):
            f(params, config, stream, [(0, 1)], means=np.full((3, 12), np.nan))
        with pytest.raises(ValueError, match="stream has 1 token id"):
            f(params, config, stream[:1], [(0, 1)], means=means)
        with pytest.raises(ValueError, match="stream contains 1 entry outside 0..10"):
            f(params, config, np.array([1, 11, 2]), [(0, 1)], means=means)
    with pytest.raises(ValueError, match="expected 'attn.out' among them"):
        al.sublayer_ablation_losses(params, config, stream, means={"ff.out": means["ff.out"]})
    with pytest.raises(TypeError, match="expected the dict of activation_means"):
        al.sublayer_ablation_losses(params, config, stream, means=means["ff.out"])
    with pytest.raises(ValueError, match="mode='mean' needs means"):
        al.sublayer_ablation_losses(params, config, stream)
    no_ff = GPTConfig(11, 6, 8, 2, 2, attention_only=True)
    for f, extra in ((al.activation_means, ()), (al.sublayer_ablation_losses, ()),
                     (al.neuron_ablation_loss, ([(0, 1)],))):
        with pytest.raises(ValueError, match="attention_only=True"):
            f(al.init_gpt(no_ff), no_ff, stream, *extra)
    with pytest.raises(ValueError, match="windows=0"):
        al.activation_means(params, config, stream, windows=0)
    with pytest.raises(TypeError, match="expected a GPTConfig"):
        al.activation_means(params, "gpt", stream)

    text = "abcde"
    with pytest.raises(ValueError, match="values has 4 entries but text has 5 characters"):
        al.top_activating_contexts([1, 2, 3, 4], text)
    with pytest.raises(ValueError, match="but text has 3 tokens"):
        al.top_activating_contexts([1, 2], ["a", "b", "c"])
    with pytest.raises(ValueError, match="k=0; expected a positive integer"):
        al.top_activating_contexts([1, 2, 3, 4, 5], text, k=0)
    with pytest.raises(ValueError, match="before=-1"):
        al.top_activating_contexts([1, 2, 3, 4, 5], text, before=-1)
    with pytest.raises(ValueError, match="min_distance=0"):
        al.top_activating_contexts([1, 2, 3, 4, 5], text, min_distance=0)
    with pytest.raises(ValueError, match="NaN"):
        al.top_activating_contexts([1, np.nan, 3, 4, 5], text)
    with pytest.raises(ValueError, match=r"shape \(N,\)"):
        al.top_activating_contexts(np.ones((5, 1)), text)
    with pytest.raises(TypeError, match="expected a str"):
        al.top_activating_contexts([1, 2], [1, 2])
