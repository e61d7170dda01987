"""The page's model engine, ``controls/assets/model.js``, in headless Chromium, piece by piece.

Every control that runs a model computes with this one file; here each of its pieces runs on
its own in a bare page and is compared with ``attention_lib``: the weights' decoding and its
checks (CRC-32 against zlib, every float16 against numpy), layer norm and the feed-forward
network, multi-head attention in each of its modes (self or cross, causal or not, a key mask,
head scales, replaced weights, grouped key/value heads, rotary positions, a cache), the
stack against ``gpt_logits`` and ``gpt_attention_weights``, cached decoding against the
whole sequence, and the encoder and decoder against the trained coreference and translation
models (padding, forced weights and removed heads included).
"""

from __future__ import annotations

import base64
import zlib

import numpy as np
import pytest
from chromium import ARGS, CHROMIUM, needs_chromium
from controls_helpers import data_json, trained_models

import attention_lib as al
from attention_lib import controls as lc
from attention_lib.controls.element import WEIGHT_MESSAGES, asset, engine_config, fill

pytestmark = needs_chromium

EXPOSED = ("base64Bytes crc32 half decodeWeights linear layerNorm normRows gelu feedForward "
           "rotate attention newCache stack tiedLogits softmax").split()

# Arrays travel as [shape, flat numbers]; rows as lists; results come back as plain lists.
HARNESS = """
const asW = (p) => Object.fromEntries(Object.entries(p).map(
  ([k, [shape, data]]) => [k, { shape: shape, data: Float64Array.from(data) }]));
const asRows = (xs) => xs.map((r) => Float64Array.from(r));
const plain = (x) => (x instanceof Float64Array ? Array.from(x)
                      : Array.isArray(x) ? x.map(plain) : x);
/* every row of head `head` (in layer `layer` when given) all on key `key` */
const onto = (head, key) => (w) => w.map((rows, h) => (h !== head ? rows : rows.map((r) => {
  const one = new Array(r.length).fill(0); one[key] = 1; return one; })));
"""


@pytest.fixture(scope="module")
def engine():
    """A bare page that has run common.js and model.js, their functions on ``window.E``."""
    from playwright.sync_api import sync_playwright

    script = ("(function () {\nconst root = document.getElementById('r');\n" + asset("common.js")
              + asset("model.js") + HARNESS
              + f"window.E = {{ {', '.join(EXPOSED)}, asW, asRows, plain, onto }};\n}})();")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.set_content('<!doctype html><html lang="en"><head><title>engine</title></head>'
                         f'<body><div id="r" data-templates="{{}}"></div><script>{script}'
                         "</script></body></html>")
        assert page.evaluate("() => typeof window.E.stack") == "function"
        yield page
        assert not errors, errors
        browser.close()


def run(page, body: str, **args):
    """Evaluate ``body`` (a function body of E and the named ``args``) in the page."""
    names = list(args)
    return page.evaluate(f"([{', '.join(names)}]) => {{ const E = window.E; {body} }}",
                         [args[n] for n in names])


def wire(params) -> dict:
    return {k: [list(np.shape(a)), np.asarray(a, dtype=np.float64).ravel().tolist()]
            for k, a in params.items()}


# --- the weights ------------------------------------------------------------------------------

def test_crc32_is_zlibs(engine):
    rng = np.random.default_rng(0)
    for n in (0, 1, 3, 255, 4096):
        raw = rng.integers(0, 256, size=n, dtype=np.uint8).tobytes()
        got = run(engine, "return E.crc32(E.base64Bytes(text));",
                  text=base64.b64encode(raw).decode())
        assert got == f"{zlib.crc32(raw):08x}", n


def test_every_float16_decodes_to_numpys_number(engine):
    got = np.array(run(engine, "return Array.from({ length: 65536 }, (_, h) => E.half(h));"),
                   dtype=np.float64)
    expected = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float64)
    np.testing.assert_array_equal(got, expected)  # NaN where numpy has NaN
    numbers = ~np.isnan(expected)
    assert (np.signbit(got) == np.signbit(expected))[numbers].all()
    assert run(engine, "return [Object.is(E.half(0x8000), -0), Object.is(E.half(0), 0)];") == [
        True, True]


@pytest.mark.parametrize("width, dtype", [(2, "<f2"), (4, "<f4"), (8, "<f8")])
def test_weights_decode_only_when_their_size_and_checksum_are_the_models(engine, width, dtype):
    rng = np.random.default_rng(width)
    arrays = {"a": rng.normal(size=(3, 4)), "b": rng.normal(size=(5,))}
    layout = [["a", [3, 4], 0], ["b", [5], 12]]
    raw = b"".join(np.asarray(arrays[n], dtype=dtype).tobytes() for n in ("a", "b"))
    crc = f"{zlib.crc32(raw):08x}"

    def decode(data: bytes, expected: str):
        return run(engine, """
            try {
              const W = E.decodeWeights(E.base64Bytes(text), layout, width, { crc32: crc },
                                        messages);
              return { a: Array.from(W.a.data), b: Array.from(W.b.data), shape: W.a.shape };
            } catch (e) { return { error: e.message }; }""",
                   text=base64.b64encode(data).decode(), layout=layout, width=width,
                   crc=expected, messages=WEIGHT_MESSAGES)

    good = decode(raw, crc)
    assert good["shape"] == [3, 4]
    for name in arrays:
        np.testing.assert_array_equal(good[name], np.asarray(arrays[name], dtype).ravel())
    want = len(raw)
    cut = decode(raw[:-width], crc)
    assert cut == {"error": fill(WEIGHT_MESSAGES["weights_size"], got=want - width, want=want)}
    assert decode(raw + b"\0" * width, crc)["error"].startswith(
        f"The weights did not load: the file holds {want + width} bytes")
    other = bytes(reversed(raw))  # the right length, other bytes
    assert decode(other, crc) == {"error": fill(
        WEIGHT_MESSAGES["weights_checksum"], want=want, got=f"{zlib.crc32(other):08x}",
        crc32=crc)}


# --- the layers -------------------------------------------------------------------------------

def test_layer_norm_gelu_and_the_feed_forward_network_are_the_librarys(engine):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(5, 8)) * 3 + 1
    p = {"ln.gamma": rng.normal(size=8), "ln.beta": rng.normal(size=8),
         "ff.w1": rng.normal(size=(8, 12)), "ff.b1": rng.normal(size=12),
         "ff.w2": rng.normal(size=(12, 8)), "ff.b2": rng.normal(size=8)}
    got = run(engine, """
        const W = E.asW(p), xs = E.asRows(x);
        return { ln: E.plain(E.normRows(W, "ln", xs)),
                 ff: E.plain(xs.map((r) => E.feedForward(W, "ff.", r))),
                 lin: E.plain(E.linear(xs[0], W["ff.w1"], null)) };""", p=wire(p),
              x=x.tolist())
    np.testing.assert_allclose(got["ln"], al.layer_norm(x, p["ln.gamma"], p["ln.beta"]),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(got["ff"], al.feed_forward(x, p["ff.w1"], p["ff.b1"], p["ff.w2"],
                                                          p["ff.b2"], activation="gelu"),
                               rtol=0, atol=1e-11)
    np.testing.assert_allclose(got["lin"], x[0] @ p["ff.w1"], rtol=0, atol=1e-12)


def test_rotary_positions_are_apply_rotarys(engine):
    rng = np.random.default_rng(2)
    rows = rng.normal(size=(6, 12))  # 3 heads of 4 at positions 0 .. 5, then 40 .. 45
    for start in (0, 40):
        got = run(engine, "return E.plain(E.asRows(rows).map((r, t) => "
                          "E.rotate(r, start + t, 3)));", rows=rows.tolist(), start=start)
        heads = al.split_heads(rows, 3)  # (3, 6, 4)
        expected = al.merge_heads(al.apply_rotary(heads, np.arange(start, start + 6)))
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12, err_msg=str(start))


def projections(rng, d, d_kv):
    return {"a.w_q": rng.normal(size=(d, d)), "a.b_q": rng.normal(size=d),
            "a.w_k": rng.normal(size=(d, d_kv)), "a.b_k": rng.normal(size=d_kv),
            "a.w_v": rng.normal(size=(d, d_kv)), "a.b_v": rng.normal(size=d_kv),
            "a.w_o": rng.normal(size=(d, d)), "a.b_o": rng.normal(size=d)}


def reference_attention(p, x, source, heads, kv_heads, *, causal=False, key_mask=None,
                        scale=None, rope=False, onto=None):
    """Multi-head attention from the library's pieces: projections, split_heads,
    apply_rotary, scaled_dot_product_attention (or grouped_query_attention), merge_heads."""
    q = al.split_heads(x @ p["a.w_q"] + p["a.b_q"], heads)  # (h, T, d_head)
    k = al.split_heads(source @ p["a.w_k"] + p["a.b_k"], kv_heads)  # (h_kv, S, d_head)
    v = al.split_heads(source @ p["a.w_v"] + p["a.b_v"], kv_heads)
    if rope:
        q, k = al.apply_rotary(q), al.apply_rotary(k)
    mask = None if key_mask is None else np.asarray(key_mask)[None, None, :]
    if kv_heads == heads:
        out, w = al.scaled_dot_product_attention(q, k, v, mask, causal=causal)
    else:
        out, w = al.grouped_query_attention(q, k, v, causal=causal, mask=mask)
    if onto is not None:  # every row of one head all on one key, then the values again
        head, key = onto
        w = w.copy()
        w[head] = 0.0
        w[head, :, key] = 1.0
        out = w @ v
    if scale is not None:
        out = out * np.asarray(scale)[:, None, None]
    return al.merge_heads(out) @ p["a.w_o"] + p["a.b_o"], w


ATTENTION_CASES = {
    "self": {},
    "causal": {"causal": True},
    "key mask": {"key_mask": [True, False, True, True, False, True]},
    "causal and key mask": {"causal": True, "key_mask": [True, True, False, True, True, False]},
    "cross": {"cross": 4},
    "cross and key mask": {"cross": 4, "key_mask": [False, True, True, False]},
    "head scales": {"causal": True, "scale": [1.0, 0.0, 0.5, -2.0]},
    "weights replaced": {"causal": True, "onto": (2, 0)},
    "grouped key/value heads": {"causal": True, "kv_heads": 2},
    "one key/value head": {"kv_heads": 1, "key_mask": [True] * 5 + [False]},
    "rotary": {"causal": True, "rope": True},
    "rotary, grouped": {"causal": True, "rope": True, "kv_heads": 2, "scale": [1, 1, 0, 1]},
}


@pytest.mark.parametrize("case", ATTENTION_CASES)
def test_attention_is_the_librarys_in_every_mode(engine, case):
    opts = dict(ATTENTION_CASES[case])
    heads, kv_heads, d, T = 4, opts.pop("kv_heads", 4), 16, 6
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    p = projections(rng, d, d // heads * kv_heads)
    x = rng.normal(size=(T, d))
    source = rng.normal(size=(opts.pop("cross"), d)) if "cross" in opts else x
    out, w = reference_attention(p, x, source, heads, kv_heads, **opts)
    js = {"nHeads": heads, "nKvHeads": kv_heads, "causal": opts.get("causal", False),
          "keyMask": opts.get("key_mask"), "headScale": opts.get("scale"),
          "rope": opts.get("rope", False)}
    got = run(engine, """
        const o = Object.assign({}, js, onto ? { replace: E.onto(onto[0], onto[1]) } : {});
        const r = E.attention(E.asW(p), "a.", E.asRows(x), E.asRows(source), o);
        return { out: E.plain(r.out), weights: r.weights };""",
              p=wire(p), x=x.tolist(), source=source.tolist(), js=js, onto=opts.get("onto"))
    np.testing.assert_allclose(got["weights"], w, rtol=0, atol=1e-12, err_msg=case)
    np.testing.assert_allclose(got["out"], out, rtol=0, atol=1e-10, err_msg=case)


@pytest.mark.parametrize("rope", [False, True])
def test_attention_with_a_cache_reads_what_the_whole_sequence_reads(engine, rope):
    # Positions 0-3 at once, then 4, then 5 and 6: each reads the keys and values the cache
    # holds, as causal attention over all seven positions does.
    rng = np.random.default_rng(3)
    p = projections(rng, 8, 8)
    x = rng.normal(size=(7, 8))
    out, w = reference_attention(p, x, x, 2, 2, causal=True, rope=rope)
    got = run(engine, """
        const W = E.asW(p), xs = E.asRows(x), cache = { k: [], v: [] }, outs = [], rows = [];
        [[0, 4], [4, 5], [5, 7]].forEach(([a, b]) => {
          const r = E.attention(W, "a.", xs.slice(a, b), xs.slice(a, b),
                                { nHeads: 2, causal: true, rope: rope, cache: cache, start: a });
          outs.push(...E.plain(r.out));
          r.weights[0].forEach((_, t) => rows.push(r.weights.map((h) => h[t])));
        });
        return { out: outs, rows: rows, cached: cache.k.length };""",
              p=wire(p), x=x.tolist(), rope=rope)
    assert got["cached"] == 7
    np.testing.assert_allclose(got["out"], out, rtol=0, atol=1e-10)
    for t, row in enumerate(got["rows"]):  # the keys the cache held at that step
        np.testing.assert_allclose(row, w[:, t, :len(row[0])], rtol=0, atol=1e-12)
        assert np.all(w[:, t, len(row[0]):] == 0)


def test_a_query_that_may_see_no_key_is_an_error_not_a_nan(engine):
    rng = np.random.default_rng(4)
    message = run(engine, """
        try { E.attention(E.asW(p), "a.", E.asRows(x), E.asRows(x),
                          { nHeads: 2, causal: true, keyMask: [false, true, true] }); }
        catch (e) { return e.message; }""", p=wire(projections(rng, 4, 4)),
                  x=rng.normal(size=(3, 4)).tolist())
    assert message == "query 0 may attend to no key"


# --- the stack and cached decoding ------------------------------------------------------------

GPTS = {
    "learned positions": al.GPTConfig(13, 10, 8, 2, 2),
    "rotary, attention only": al.GPTConfig(13, 10, 8, 2, 2, attention_only=True,
                                           positions="rope"),
    "no positions": al.GPTConfig(13, 10, 12, 3, 3, d_ff=20, positions="none"),
}


def random_gpt(config, seed):
    """Every parameter random (gains near 1), so that no head is near uniform."""
    rng = np.random.default_rng(seed)
    return {name: rng.normal(0.0, 0.5, shape) + (1.0 if name.endswith("gamma") else 0.0)
            for name, shape in al.gpt_parameter_shapes(config).items()}


@pytest.mark.parametrize("name", GPTS)
def test_the_stack_is_gpt_logits_and_gpt_attention_weights(engine, name):
    config = GPTS[name]
    params = random_gpt(config, 5)
    ids = [3, 1, 4, 1, 5, 9, 2, 6, 5]
    mask = np.full((config.n_layers, config.n_heads), 0.75)  # scaled, removed, kept
    mask[0, 1], mask[-1, 0] = 0.0, 1.0
    for head_mask in (None, mask):
        logits = al.gpt_logits(params, config, [ids], head_mask=head_mask)[0]
        w = al.gpt_attention_weights(params, config, [ids], head_mask=head_mask)[:, 0]
        got = run(engine, """
            const W = E.asW(p), r = E.stack(W, cfg, ids, { headMask: mask });
            return { logits: r.final.map((f) => E.tiedLogits(W, cfg, f)), weights: r.self };""",
                  p=wire(params), cfg=engine_config(config), ids=ids,
                  mask=None if head_mask is None else np.asarray(head_mask).tolist())
        np.testing.assert_allclose(got["logits"], logits, rtol=0, atol=1e-10, err_msg=name)
        np.testing.assert_allclose(got["weights"], w, rtol=0, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("name", GPTS)
def test_cached_decoding_one_position_at_a_time_is_the_whole_sequence(engine, name):
    config = GPTS[name]
    params = random_gpt(config, 6)
    ids = [7, 0, 12, 7, 0, 3, 3, 8]
    logits = al.gpt_logits(params, config, [ids])[0]
    w = al.gpt_attention_weights(params, config, [ids])[:, 0]  # (L, h, T, T)
    got = run(engine, """
        const W = E.asW(p), cache = E.newCache(cfg), logits = [], rows = [];
        const steps = [[0, 3]].concat(ids.slice(3).map((_, i) => [3 + i, 4 + i]));
        steps.forEach(([a, b]) => {  // a prompt of three, then one token at a time
          const r = E.stack(W, cfg, ids.slice(a, b), { cache: cache, start: a });
          r.final.forEach((f, t) => {
            logits.push(E.tiedLogits(W, cfg, f));
            rows.push(r.self.map((layer) => layer.map((head) => head[t])));
          });
        });
        return { logits: logits, rows: rows, cached: cache.map((c) => c.self.k.length) };""",
              p=wire(params), cfg=engine_config(config), ids=ids)
    assert got["cached"] == [len(ids)] * config.n_layers
    np.testing.assert_allclose(got["logits"], logits, rtol=0, atol=1e-10, err_msg=name)
    for t, row in enumerate(got["rows"]):
        seen = len(row[0][0])  # 3 during the prompt, then t + 1
        assert seen == max(3, t + 1)
        np.testing.assert_allclose(row, w[:, :, t, :seen], rtol=0, atol=1e-12)


# --- the encoder and the decoder of the trained models ----------------------------------------

def test_the_encoder_is_the_coreference_models_with_padding_forcing_and_removed_heads(engine):
    model = trained_models()[0]
    cfg = engine_config(model.config)  # an encoder: causal=False
    vocab = list(model.vocabulary)
    sentences = ["The dog didn't chase the cat because it was too fast",
                 "The girl didn't walk across the park because it was too sleepy"]
    settings = [{}, {"head_mask": [[1.0, 0.0], [1.0, 1.0]]}, {"force": (0, 1, "dog")},
                {"force": (1, 0, "cat"), "head_mask": [[0.0, 1.0], [1.0, 0.5]]}]
    for sentence in sentences:
        words = sentence.split()
        ids = [vocab.index(x) for x in words]
        padded = ids + [0] * (model.config.context - len(ids))  # entry 0 is the padding
        keys = [True] * len(ids) + [False] * (len(padded) - len(ids))
        it, nouns = words.index("it"), list(model.candidates(sentence))
        for s in settings:
            force = s.get("force")
            if force and force[2] not in words:
                continue
            p = model.probabilities([sentence], **s)[0]
            w = model.it_weights(sentence, **s)  # (L, h, n)
            got = run(engine, """
                const W = E.asW(params), replace = force
                  ? (l, w) => (l === force[0] ? w.map((rows, h) => (h !== force[1] ? rows
                      : rows.map((r, t) => (t !== it ? r : r.map((_, j) => (j === at ? 1 : 0))))))
                    : w)
                  : null;
                const r = E.stack(W, cfg, ids, { keyMask: keys, headMask: mask,
                                                 replace: replace });
                return { p: E.softmax(E.tiedLogits(W, cfg, r.final[it], nouns)),
                         w: r.self.map((layer) => layer.map((head) => head[it])) };""",
                      params=wire(model.params), cfg=cfg, ids=padded, keys=keys, it=it,
                      nouns=[vocab.index(x) for x in nouns], mask=s.get("head_mask"),
                      force=list(force[:2]) if force else None,
                      at=words.index(force[2]) if force else -1)
            what = f"{sentence!r} {s}"
            np.testing.assert_allclose(got["p"], p, rtol=0, atol=1e-10, err_msg=what)
            np.testing.assert_allclose(np.asarray(got["w"])[:, :, :len(words)], w, rtol=0,
                                       atol=1e-10, err_msg=what)
            assert np.all(np.asarray(got["w"])[:, :, len(words):] == 0), what  # the padding


def test_the_decoder_is_the_translation_models_with_cross_attention_and_a_cache(engine):
    model = trained_models()[1]
    markup = lc.translation_explorer(model)._repr_html_()
    enc, dec = data_json(markup, "configs")
    assert dec["cross"] is True and dec["causal"] is True and enc["causal"] is False
    src, tgt = data_json(markup, "source-vocabulary"), data_json(markup, "target-vocabulary")
    eos = tgt.index("</s>")
    source = "the small bird likes a dog"
    n = len(source.split())
    padded = [src.index(x) for x in source.split()] + [0] * (7 - n)  # to the encoder's 7
    memory_keys = [True] * n + [False] * (7 - n)

    def decode(said: str, mask):
        """The decoder on the start mark and ``said``, whole and one position at a time."""
        targets = [tgt.index("<s>")] + [tgt.index(x) for x in said.split()]
        return run(engine, """
            const W = E.asW(params), keys = memoryKeys;
            const memory = E.stack(W, enc, padded, { keyMask: keys }).final;
            const o = { memory: memory, memoryMask: keys, crossHeadMask: mask };
            const whole = E.stack(W, dec, targets, o);
            const cache = E.newCache(dec), stepped = [];
            targets.forEach((id, t) => {
              const r = E.stack(W, dec, [id], Object.assign({ cache: cache, start: t }, o));
              stepped.push({ logits: E.tiedLogits(W, dec, r.final[0]),
                             cross: r.cross.map((layer) => layer.map((head) => head[0])) });
            });
            return { logits: whole.final.map((f) => E.tiedLogits(W, dec, f)),
                     cross: whole.cross, stepped: stepped };""",
                   params=wire(model.params), enc=enc, dec=dec, padded=padded,
                   memoryKeys=memory_keys, mask=mask, targets=targets)

    def check_cross(got, said, mask):
        whole = np.asarray(got["cross"])  # (L, h, m + 1, 7)
        stepped = np.stack([s["cross"] for s in got["stepped"]], axis=2)
        np.testing.assert_allclose(stepped, whole, rtol=0, atol=1e-12)
        m = len(said.split())
        expected = model.cross_attention(source, said, cross_head_mask=mask)  # (L, h, m, n)
        np.testing.assert_allclose(whole[:, :, :m, :n], expected, rtol=0, atol=1e-10)
        assert np.all(whole[..., n:] == 0)  # the padding of the source gets no weight

    said = model.translate(source)
    assert said, "the model says nothing: nothing to compare"
    got = decode(said, None)
    check_cross(got, said, None)
    words = said.split()
    for j in range(min(len(words) + 1, 7)):  # position j predicts word j, or the end
        expected = model.next_word_probabilities(source, " ".join(words[:j]))
        for logits in (got["logits"][j], got["stepped"][j]["logits"]):
            z = np.asarray(logits[eos:])
            p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
            np.testing.assert_allclose(p, [expected[x] for x in tgt[eos:]], rtol=0, atol=1e-10)

    mask = [[1.0, 0.0], [0.0, 1.0]]  # heads removed: the greedy choices follow the library's
    said = model.translate(source, cross_head_mask=mask)
    got = decode(said, mask)
    check_cross(got, said, mask)
    chosen = [tgt[eos + int(np.argmax(z[eos:]))] for z in got["logits"]]
    assert chosen[:len(said.split())] == said.split()
    assert len(said.split()) == 7 or chosen[len(said.split())] == "</s>"
