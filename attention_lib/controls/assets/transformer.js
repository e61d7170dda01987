/* The encoder and the decoder of attention_lib.training.encoder_decoder, one sequence at a
   time, in double precision from the model's float32 weights (exact in a double), with the
   operations of attention_lib.gpt.layers in the same order. The weights travel in the
   element (a notebook) or in a file of their own (the website), fetched on first use. */
const LAYOUT = DATA("layout"), weightBlob = $(".lc-blob");
let W = null;            // parameters by name: {shape, data: Float64Array}
async function loadWeights() {
  if (!W) { W = decodeWeights(await blobBytes(weightBlob), LAYOUT, 4); }
}
/* rows (T, n) @ W[w] (n, e) + W[b] (e,): a new array of rows */
function project(rows, w, b) { return rows.map((x) => linear(x, W[w], W[b])); }
/* layer norm of each row */
function layerNormRows(rows, prefix) {
  return rows.map((x) => layerNorm(x, W[prefix + ".gamma"], W[prefix + ".beta"]));
}
function addRows(a, b) { return a.map((x, t) => x.map((v, i) => v + b[t][i])); }
/* Multi-head attention: queries from `rows`, keys and values from `source` (the same rows
   for self-attention); `causal` hides the later positions. Returns the layer's output rows
   and the weights [head][query][key]. */
function attention(rows, source, prefix, nHeads, causal) {
  const q = project(rows, prefix + "w_q", prefix + "b_q");
  const k = project(source, prefix + "w_k", prefix + "b_k");
  const v = project(source, prefix + "w_v", prefix + "b_v");
  const d = q[0].length, dh = d / nHeads, inv = 1 / Math.sqrt(dh);
  const merged = rows.map(() => new Float64Array(d)), weights = [];
  for (let h = 0; h < nHeads; h++) {
    const lo = h * dh, headWeights = [];
    q.forEach((qt, t) => {
      const seen = causal ? t + 1 : k.length, scores = [];
      for (let s = 0; s < seen; s++) {
        let dot = 0;
        for (let c = 0; c < dh; c++) { dot += qt[lo + c] * inv * k[s][lo + c]; }
        scores.push(dot);
      }
      const w = softmax(scores);
      while (w.length < k.length) { w.push(0); }
      w.forEach((ws, s) => {
        if (ws !== 0) { for (let c = 0; c < dh; c++) { merged[t][lo + c] += ws * v[s][lo + c]; } }
      });
      headWeights.push(w);
    });
    weights.push(headWeights);
  }
  return { out: project(merged, prefix + "w_o", prefix + "b_o"), weights: weights };
}
/* the feed-forward network, GELU (tanh approximation) between two linear maps */
function feedForward(rows, prefix) {
  const hidden = project(rows, prefix + "w1", prefix + "b1").map(gelu);
  return project(hidden, prefix + "w2", prefix + "b2");
}
function embed(ids, prefix) {
  const wte = W[prefix + "wte"], wpe = W[prefix + "wpe"], d = wte.shape[1];
  return ids.map((id, t) => {
    const x = new Float64Array(d);
    for (let i = 0; i < d; i++) { x[i] = wte.data[id * d + i] + wpe.data[t * d + i]; }
    return x;
  });
}
/* The encoder (no causal mask): the final layer norm's rows and each layer's weights. */
function encoderForward(ids, prefix, cfg) {
  let x = embed(ids, prefix);
  const weights = [];
  for (let l = 0; l < cfg.n_layers; l++) {
    const p = prefix + "blocks." + l + ".";
    const a = layerNormRows(x, p + "ln1");
    const att = attention(a, a, p + "attn.", cfg.n_heads, false);
    x = addRows(x, att.out);
    weights.push(att.weights);
    x = addRows(x, feedForward(layerNormRows(x, p + "ln2"), p + "ff."));
  }
  return { final: layerNormRows(x, prefix + "ln_f"), weights: weights };
}
/* The decoder: causal self-attention, cross-attention to `memory`, the feed-forward
   network; logits through the tied embedding, and each layer's cross-attention weights. */
function decoderForward(ids, memory, prefix, cfg) {
  let x = embed(ids, prefix);
  const cross = [];
  for (let l = 0; l < cfg.n_layers; l++) {
    const p = prefix + "blocks." + l + ".";
    const a = layerNormRows(x, p + "ln1");
    x = addRows(x, attention(a, a, p + "attn.", cfg.n_heads, true).out);
    const att = attention(layerNormRows(x, p + "ln_x"), memory, p + "cross.", cfg.n_heads, false);
    x = addRows(x, att.out);
    cross.push(att.weights);
    x = addRows(x, feedForward(layerNormRows(x, p + "ln2"), p + "ff."));
  }
  const wte = W[prefix + "wte"], d = wte.shape[1], V = wte.shape[0];
  const logits = layerNormRows(x, prefix + "ln_f").map((f) => {
    const z = new Array(V).fill(0);
    for (let w = 0; w < V; w++) { let s = 0; for (let i = 0; i < d; i++) { s += f[i] * wte.data[w * d + i]; } z[w] = s; }
    return z;
  });
  return { logits: logits, cross: cross };
}
