/* The engine of every control that runs a trained model in the page (the text generator,
   feature steering and the logit-lens explorer, the induction playground, the coreference
   and translation explorers):
   the weights, checked against the size and checksum the element gives, the model's pieces,
   in double precision with the operations of attention_lib.model (the one model core) in
   order, and text written as attention_lib.generate writes it. Rows are
   Float64Arrays; parameters are {shape, data} by name; a model's sizes are `cfg`:
   {prefix, n_layers, n_heads, n_kv_heads, positions: "learned" | "rope" | "none",
   attention_only, causal, cross}, as attention_lib.controls.element.engine_config writes it. */
const LN_EPS = 1e-5, GELU_C = Math.sqrt(2 / Math.PI), ROPE_BASE = 10000;

/* --- the weights ------------------------------------------------------------------------- */

/* base64 to bytes */
function base64Bytes(text) {
  const raw = atob(text.trim()), bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) { bytes[i] = raw.charCodeAt(i); }
  return bytes;
}
const CRC_TABLE = new Uint32Array(256).map((_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) { c = c & 1 ? 0xEDB88320 ^ (c >>> 1) : c >>> 1; }
  return c >>> 0;
});
/* CRC-32 of the bytes (IEEE, as Python's zlib.crc32), as 8 hexadecimal digits */
function crc32(bytes) {
  let c = 0xFFFFFFFF;
  for (let i = 0; i < bytes.length; i++) { c = CRC_TABLE[(c ^ bytes[i]) & 0xFF] ^ (c >>> 8); }
  return ((c ^ 0xFFFFFFFF) >>> 0).toString(16).padStart(8, "0");
}
/* float16 bits to a number (every float16 is exact in double precision) */
function half(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, f = h & 0x3ff;
  if (e === 0) { return s * f * Math.pow(2, -24); }
  if (e === 31) { return f ? NaN : s * Infinity; }
  return s * (1 + f / 1024) * Math.pow(2, e - 15);
}
/* Little-endian floats of `width` bytes (2, 4 or 8) to arrays by name, with `layout` =
   [[name, shape, offset in numbers], ...]. Bytes of another length than the layout's, or
   another CRC-32 than `expected.crc32`, are refused with the message of `messages` that says
   so: a file cut short, or another file, is never decoded as weights. */
function decodeWeights(bytes, layout, width, expected, messages) {
  const want = width * layout.reduce((n, [, shape]) => n + shape.reduce((a, b) => a * b, 1), 0);
  if (bytes.length !== want) {
    throw new Error(fillText(messages.weights_size, { got: bytes.length, want: want }));
  }
  const sum = crc32(bytes);
  if (sum !== expected.crc32) {
    throw new Error(fillText(messages.weights_checksum, { want: want, got: sum,
                                                          crc32: expected.crc32 }));
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const read = { 2: (at) => half(view.getUint16(at, true)), 4: (at) => view.getFloat32(at, true),
                 8: (at) => view.getFloat64(at, true) }[width];
  const params = {};
  layout.forEach(([name, shape, offset]) => {
    const size = shape.reduce((a, b) => a * b, 1), data = new Float64Array(size);
    for (let i = 0; i < size; i++) { data[i] = read(width * (offset + i)); }
    params[name] = { shape: shape, data: data };
  });
  return params;
}
/* The bytes a data element of class lc-blob holds: in a notebook, as base64 in the element;
   on the website, in a file of its own (its data-src), fetched now. */
async function blobBytes(blob, messages) {
  if (!blob.dataset.src) { return base64Bytes(blob.textContent); }
  const file = blob.dataset.src;
  let response;
  try { response = await fetch(new URL(file, document.baseURI)); } catch (e) {
    throw new Error(fillText(messages.weights_unreachable, { src: file }));
  }
  if (!response.ok) {
    throw new Error(fillText(messages.weights_status, { status: response.status, src: file }));
  }
  return new Uint8Array(await response.arrayBuffer());
}
/* A function that gives the weights of `blob`, loading them on the first call and checking
   them against the layout and the blob's data-crc32; after a failure the next call tries
   again. */
function weightsLoader(blob, layout, width, messages) {
  let pending = null;
  return () => {
    if (!pending) {
      pending = blobBytes(blob, messages).then((bytes) => decodeWeights(
        bytes, layout, width, { crc32: blob.dataset.crc32 }, messages));
      pending.catch(() => { pending = null; });
    }
    return pending;
  };
}
/* The weights from `load`, saying "loading" in `status` meanwhile; if they cannot be had, the
   reason goes to `error` (until they load) and the result is null. */
async function weightsOrSay(load, status, error, messages) {
  status.textContent = messages.loading;
  try {
    const W = await load();
    if (error.textContent === error.dataset.weightsError) { error.textContent = ""; }
    return W;
  } catch (e) {
    error.textContent = error.dataset.weightsError = String(e.message || e);
    return null;
  } finally {
    status.textContent = "";
  }
}
/* For a control that computes when the reader picks something: its lc-blob's weights
   (numbers of `width` bytes) load on the first pick. Returns pick(compute): compute(W) runs
   once the weights are here, unless a later pick came meanwhile (the later one wins;
   pick(null) only drops an earlier one); without the weights `error` says why and `out` is
   hidden. */
function onEachPick(width, messages, status, error, out) {
  const load = weightsLoader($(".lc-blob"), DATA("layout"), width, messages);
  let W = null, latest = 0;
  return async (compute) => {
    const mine = ++latest;
    if (!compute) { return; }
    W = W || await weightsOrSay(load, status, error, messages);
    if (mine !== latest) { return; }
    out.hidden = !W;
    if (W) { compute(W); }
  };
}

/* --- the layers -------------------------------------------------------------------------- */

/* x (n,) @ m (n, e) + b (e,), m row-major; no bias when b is null */
function linear(x, m, b) {
  const e = m.shape[1], y = new Float64Array(e);
  for (let i = 0; i < x.length; i++) {
    const xi = x[i], row = i * e;
    for (let j = 0; j < e; j++) { y[j] += xi * m.data[row + j]; }
  }
  if (b) { for (let j = 0; j < e; j++) { y[j] += b.data[j]; } }
  return y;
}
/* layer norm over the vector, population variance: (x - mu) * rstd * gamma + beta */
function layerNorm(x, gamma, beta) {
  const d = x.length;
  let mu = 0; for (let i = 0; i < d; i++) { mu += x[i]; } mu /= d;
  let v = 0; for (let i = 0; i < d; i++) { v += (x[i] - mu) * (x[i] - mu); } v /= d;
  const rstd = 1 / Math.sqrt(v + LN_EPS), y = new Float64Array(d);
  for (let i = 0; i < d; i++) { y[i] = (x[i] - mu) * rstd * gamma.data[i] + beta.data[i]; }
  return y;
}
/* layer norm `name` (its gamma and beta in W) of each row */
function normRows(W, name, rows) {
  return rows.map((x) => layerNorm(x, W[name + ".gamma"], W[name + ".beta"]));
}
/* GELU, tanh approximation, in place */
function gelu(h) {
  for (let j = 0; j < h.length; j++) {
    const t = Math.tanh(GELU_C * (h[j] + 0.044715 * (h[j] * h[j] * h[j])));
    h[j] = 0.5 * h[j] * (1 + t);
  }
  return h;
}
/* the feed-forward network of one row: GELU(x W1 + b1) W2 + b2 */
function feedForward(W, prefix, x) {
  const hidden = gelu(linear(x, W[prefix + "w1"], W[prefix + "b1"]));
  return linear(hidden, W[prefix + "w2"], W[prefix + "b2"]);
}
/* attention_lib.apply_rotary on every head's slice of a row at position `pos`, in place:
   pair i of a head turns by pos * ROPE_BASE^(-2i / d_head) */
function rotate(row, pos, nHeads) {
  const dh = row.length / nHeads;
  for (let h = 0; h < nHeads; h++) {
    for (let i = 0; i < dh / 2; i++) {
      const theta = pos * Math.pow(ROPE_BASE, -2 * i / dh), c = Math.cos(theta);
      const s = Math.sin(theta), at = h * dh + 2 * i, a = row[at], b = row[at + 1];
      row[at] = a * c - b * s;
      row[at + 1] = a * s + b * c;
    }
  }
  return row;
}
function addRows(a, b) { return a.map((x, t) => x.map((v, i) => v + b[t][i])); }

/* Multi-head attention (attention_lib.model.attention.attention_forward on one sequence).
   Queries from the rows `xs` (positions o.start, o.start + 1, ...); the keys and values of
   the rows `source` (xs for self-attention, a memory for cross-attention, none when the
   cache holds them all) are appended to o.cache = {k, v} (a fresh one when not given), and
   the queries read every key of it. Options: nHeads; nKvHeads (grouped key/value heads:
   query head i reads key/value head floor(i / (nHeads / nKvHeads))); causal (query at
   position p sees keys 0 .. p); keyMask (true = may attend, one per key: padding); rope
   (rotary positions on queries and keys); replace(weights) -> the weights the heads use
   instead; headScale (one factor per head on its output: 0 removes it); heads(rows) -> the
   heads' outputs to use instead (or nothing to keep them): rows [query][h * d_head], head i
   in columns i * d_head .. (i + 1) * d_head - 1, before the output projection (the site
   "attn.heads" of attention_lib.model.hooks). Returns the output rows and the weights
   [head][query][key], 0 on the keys a query may not see. */
function attention(W, prefix, xs, source, o) {
  const H = o.nHeads, KV = o.nKvHeads || H, start = o.start || 0;
  const cache = o.cache || { k: [], v: [] };
  const q = xs.map((x) => linear(x, W[prefix + "w_q"], W[prefix + "b_q"]));
  const k = source.map((x) => linear(x, W[prefix + "w_k"], W[prefix + "b_k"]));
  const v = source.map((x) => linear(x, W[prefix + "w_v"], W[prefix + "b_v"]));
  if (o.rope) {
    q.forEach((row, t) => rotate(row, start + t, H));
    k.forEach((row, t) => rotate(row, start + t, KV));
  }
  k.forEach((row) => cache.k.push(row));
  v.forEach((row) => cache.v.push(row));
  const keys = cache.k, values = cache.v, S = keys.length;
  const dh = q[0].length / H, dv = values[0].length / KV, group = H / KV;
  const inv = 1 / Math.sqrt(dh);
  let weights = [];
  for (let h = 0; h < H; h++) {
    const lo = h * dh, klo = Math.floor(h / group) * dh;
    weights.push(q.map((qt, t) => {
      const last = o.causal ? start + t : S - 1, seen = [], scores = [];
      for (let s = 0; s <= last; s++) {
        if (o.keyMask && !o.keyMask[s]) { continue; }
        let z = 0;
        for (let c = 0; c < dh; c++) { z += qt[lo + c] * inv * keys[s][klo + c]; }
        seen.push(s); scores.push(z);
      }
      if (!seen.length) { throw new Error("query " + (start + t) + " may attend to no key"); }
      const w = new Array(S).fill(0);
      softmax(scores).forEach((x, i) => { w[seen[i]] = x; });
      return w;
    }));
  }
  if (o.replace) { weights = o.replace(weights); }
  const merged = xs.map(() => new Float64Array(H * dv));
  weights.forEach((rows, h) => {
    const lo = h * dv, vlo = Math.floor(h / group) * dv;
    const scale = o.headScale ? o.headScale[h] : 1;
    rows.forEach((w, t) => {
      for (let c = 0; c < dv; c++) {
        let z = 0;
        for (let s = 0; s < S; s++) { if (w[s] !== 0) { z += w[s] * values[s][vlo + c]; } }
        merged[t][lo + c] = z * scale;
      }
    });
  });
  const heads = (o.heads && o.heads(merged)) || merged;
  return { out: heads.map((m) => linear(m, W[prefix + "w_o"], W[prefix + "b_o"])),
           weights: weights };
}

/* --- the stack --------------------------------------------------------------------------- */

/* An empty key/value cache for the stack `cfg`: per layer, self-attention's and
   cross-attention's keys and values. */
function newCache(cfg) {
  return Array.from({ length: cfg.n_layers },
                    () => ({ self: { k: [], v: [] }, cross: { k: [], v: [] } }));
}
/* The stack `cfg` on the tokens `ids` at positions o.start, o.start + 1, ...: the token
   embedding (plus the learned position embedding), pre-norm blocks (x + MHA(LN1 x), with
   o.memory x + MHA(LN_x x, memory), unless attention only x + FFN(LN2 x)), the final layer
   norm. o.cache (from newCache) holds the keys and values of the positions before, and
   receives these: one new position at a time is cached decoding. Options: keyMask and
   memoryMask (padding of the sequence and of the memory), headMask and crossHeadMask
   (per layer and head, scales each head's output), replace(layer, weights) (the weights
   self-attention's heads use instead), hooks: {site: fn} at sites named as in
   attention_lib.model.hooks, "embed" (the token embedding plus the positions),
   "blocks.l.resid_pre", "blocks.l.attn.heads" (the heads' outputs as attention's option
   heads gives them) and "blocks.l.resid_post", each fn given
   the rows [position][...] and returning the rows to use instead, or nothing to keep them
   (so a hook that copies them reads the run). Returns the final rows and every layer's
   weights, self [layer][head][query][key] and cross [layer][head][query][memory position]. */
function stack(W, cfg, ids, o) {
  o = o || {};
  const P = cfg.prefix || "", start = o.start || 0, wte = W[P + "wte"], d = wte.shape[1];
  const self = [], cross = [], hooks = o.hooks || {};
  const hook = (site, rows) => (hooks[site] && hooks[site](rows)) || rows;
  let x = ids.map((id, t) => {
    const row = wte.data.slice(id * d, id * d + d);
    if (cfg.positions === "learned") {
      const wpe = W[P + "wpe"].data, at = (start + t) * d;
      for (let i = 0; i < d; i++) { row[i] += wpe[at + i]; }
    }
    return row;
  });
  x = hook("embed", x);
  for (let l = 0; l < cfg.n_layers; l++) {
    const site = "blocks." + l + ".", p = P + site, cache = o.cache ? o.cache[l] : null;
    x = hook(site + "resid_pre", x);
    const a = normRows(W, p + "ln1", x);
    const att = attention(W, p + "attn.", a, a, {
      nHeads: cfg.n_heads, nKvHeads: cfg.n_kv_heads, causal: cfg.causal,
      rope: cfg.positions === "rope", keyMask: o.keyMask, start: start,
      headScale: o.headMask ? o.headMask[l] : null, cache: cache ? cache.self : null,
      replace: o.replace ? (w) => o.replace(l, w) : null,
      heads: (rows) => hook(site + "attn.heads", rows) });
    x = addRows(x, att.out);
    self.push(att.weights);
    if (cfg.cross) {
      const mine = cache ? cache.cross : { k: [], v: [] };
      const c = attention(W, p + "cross.", normRows(W, p + "ln_x", x),
                          mine.k.length ? [] : o.memory, {
        nHeads: cfg.n_heads, nKvHeads: cfg.n_kv_heads, keyMask: o.memoryMask, cache: mine,
        headScale: o.crossHeadMask ? o.crossHeadMask[l] : null });
      x = addRows(x, c.out);
      cross.push(c.weights);
    }
    if (!cfg.attention_only) {
      x = addRows(x, normRows(W, p + "ln2", x).map((r) => feedForward(W, p + "ff.", r)));
    }
    x = hook(site + "resid_post", x);
  }
  return { final: normRows(W, P + "ln_f", x), self: self, cross: cross };
}
/* The tied read-out of a final row: its dot product with the embedding of each token of
   `ids` (every token when not given). */
function tiedLogits(W, cfg, row, ids) {
  const wte = W[(cfg.prefix || "") + "wte"], d = wte.shape[1];
  const which = ids || Array.from({ length: wte.shape[0] }, (_, i) => i);
  return which.map((id) => {
    let s = 0; for (let i = 0; i < d; i++) { s += row[i] * wte.data[id * d + i]; }
    return s;
  });
}

/* --- writing text ------------------------------------------------------------------------ */

/* The small random generator the page samples with, as attention_lib.controls.mulberry32. */
function mulberry32(a) {
  return function () {
    a |= 0; a = a + 0x6D2B79F5 | 0;
    let t = Math.imul(a ^ a >>> 15, 1 | a);
    t = t + Math.imul(t ^ t >>> 7, 61 | t) ^ t;
    return ((t ^ t >>> 14) >>> 0) / 4294967296;
  };
}
/* attention_lib.next_token_distribution with a temperature (no top-k, no top-p) */
function distribution(z, tau) {
  const p = new Array(z.length).fill(0);
  if (tau === 0) {
    let best = 0; z.forEach((x, i) => { if (x > z[best]) { best = i; } });
    p[best] = 1; return p;
  }
  const m = Math.max.apply(null, z);
  const w = z.map((x) => Math.exp((x - m) / tau));
  const total = w.reduce((a, b) => a + b, 0);
  return w.map((x) => x / total);
}
/* the first token whose cumulative probability exceeds u (numpy's searchsorted, right) */
function draw(p, u) {
  let c = 0, last = 0;
  for (let i = 0; i < p.length; i++) {
    c += p[i]; if (p[i] > 0) { last = i; }
    if (c > u) { return i; }
  }
  return last;
}
/* attention_lib.generate(params, config, prompt, n, temperature=tau, uniform=uniform,
   hooks=o.hooks) for a GPT with tied embeddings and n <= context - prompt length: the
   prompt, then one token at a time with the key-value cache (each hook sees the prompt's
   rows, then each new position's). o.each(out, start) sees the stack's output of every
   pass. Returns the ids (the prompt's and the new ones) and the logits after the last. */
function generateIds(W, cfg, prompt, n, tau, uniform, o) {
  o = o || {};
  const ids = prompt.slice(), cache = newCache(cfg), hooks = o.hooks || null;
  let out = stack(W, cfg, ids, { cache: cache, hooks: hooks });
  if (o.each) { o.each(out, 0); }
  let logits = tiedLogits(W, cfg, out.final[out.final.length - 1]);
  for (let i = 0; i < n; i++) {
    ids.push(draw(distribution(logits, tau), uniform()));
    out = stack(W, cfg, ids.slice(-1), { cache: cache, start: ids.length - 1, hooks: hooks });
    if (o.each) { o.each(out, ids.length - 1); }
    logits = tiedLogits(W, cfg, out.final[0]);
  }
  return { ids: ids, logits: logits };
}
/* A prompt as token ids, or what is wrong with it: the rules, order and words of
   attention_lib.controls.generator's _prompt_problem (say(name, slots) fills its messages). */
function promptIds(text, alphabet, context, say) {
  const chars = [...text];
  if (text === "") { return { problem: say("empty") }; }
  const bad = [...new Set(chars.filter((c) => !alphabet.includes(c)))];
  if (bad.length) {
    return { problem: say("alphabet", { n: alphabet.length,
                                        chars: bad.map((c) => JSON.stringify(c)).join(" ") }) };
  }
  if (chars.length >= context) {
    return { problem: say("too_long", { most: context - 1, context: context }) };
  }
  return { ids: chars.map((c) => alphabet.indexOf(c)) };
}
/* The prompt box read and checked, in the library's words (problem(text) words what is wrong
   with it, e.g. in the library's gen_error template): its token ids, or null once
   the message is shown and the box marked invalid. */
function boxIds(box, error, alphabet, context, say, problem) {
  const r = promptIds(box.value, alphabet, context, say);
  if (r.problem) {
    error.textContent = problem(r.problem);
    box.setAttribute("aria-invalid", "true");
    return null;
  }
  error.textContent = ""; box.removeAttribute("aria-invalid");
  return r.ids;
}
/* The seed box and the prompt box of a generator read and checked, in the library's words
   (say(name) for the seed, problem(text) for the prompt): { seed, ids }, or null once the
   message is shown and the box marked invalid. */
function seedAndPrompt(seedBox, box, error, alphabet, context, say, problem) {
  const seedText = seedBox.value.trim(), seed = Number(seedText);
  if (!/^[0-9]+$/.test(seedText) || seed > 4294967295) {
    error.textContent = say("seed"); seedBox.setAttribute("aria-invalid", "true"); return null;
  }
  seedBox.removeAttribute("aria-invalid");
  const ids = boxIds(box, error, alphabet, context, say, problem);
  return ids ? { seed: seed, ids: ids } : null;
}
/* A character as a text control shows it (as generator._char in the library): in the text a
   new line is the gen_newline template, an arrow and a break; in a strip, the arrow alone;
   standing alone, a space is the visible-space sign. */
function shownChar(c, where) {
  if (c === "\n") { return where === "text" ? TEMPLATES.gen_newline : "↵"; }
  if (c === " " && where === "alone") { return "␣"; }
  return esc(c);
}
