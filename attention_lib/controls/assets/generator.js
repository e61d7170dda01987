/* The text generator: the GPT of attention_lib.gpt, step by step with a key-value cache, in
   double precision from its float16 weights (attention_lib.gpt.sampling's _cached_step),
   sampling as attention_lib.generate does from the numbers of Mulberry32
   (attention_lib.controls.mulberry32). */
const CFG = DATA("config"), LAYOUT = DATA("layout"), ALPHABET = DATA("alphabet");
const N_NEW = DATA("nNew"), STRIP = DATA("strip"), MESSAGES = DATA("messages");
const say = (name, slots) => fillText(MESSAGES[name], slots || {});
const box = $(".lc-prompt-box"), temp = $(".lc-temp"), tempValue = $(".lc-temp-value");
const seedBox = $(".lc-seed"), button = $(".lc-generate"), error = $(".lc-error");
const status = $(".lc-status"), textOut = $(".lc-gen-text"), posSlider = $(".lc-pos");
const posValue = $(".lc-pos-value"), headBody = $(".lc-heads tbody"), blob = $(".lc-blob");
const D = CFG.d_model, H = CFG.n_heads, DH = D / H;
let W = null;            // parameters by name: {shape, data: Float64Array}
let run = { chars: DATA("generated"), nPrompt: DATA("nPrompt"), weights: null };

async function loadWeights() {
  if (!W) { W = decodeWeights(await blobBytes(blob), LAYOUT, 2); }
}
/* One position through the model; the cache grows by its keys and values. Returns the
   logits and this position's attention weights per layer and head. */
function step(cache, token, pos) {
  let x = new Float64Array(D);
  for (let i = 0; i < D; i++) {
    x[i] = W.wte.data[token * D + i] + (CFG.learned_positions ? W.wpe.data[pos * D + i] : 0);
  }
  const seen = [];
  for (let l = 0; l < CFG.n_layers; l++) {
    const p = "blocks." + l + ".";
    const a = layerNorm(x, W[p + "ln1.gamma"], W[p + "ln1.beta"]);
    const q = linear(a, W[p + "attn.w_q"], W[p + "attn.b_q"]);
    cache[l].k.push(linear(a, W[p + "attn.w_k"], W[p + "attn.b_k"]));
    cache[l].v.push(linear(a, W[p + "attn.w_v"], W[p + "attn.b_v"]));
    const merged = new Float64Array(D), heads = [];
    for (let h = 0; h < H; h++) {
      const lo = h * DH, inv = 1 / Math.sqrt(DH);
      const scores = cache[l].k.map((k) => { let s = 0; for (let c = 0; c < DH; c++) { s += q[lo + c] * inv * k[lo + c]; } return s; });
      const w = softmax(scores);
      w.forEach((wj, j) => { const v = cache[l].v[j]; for (let c = 0; c < DH; c++) { merged[lo + c] += wj * v[lo + c]; } });
      heads.push(w);
    }
    seen.push(heads);
    const y = linear(merged, W[p + "attn.w_o"], W[p + "attn.b_o"]);
    for (let i = 0; i < D; i++) { x[i] += y[i]; }
    if (!CFG.attention_only) {
      const a2 = layerNorm(x, W[p + "ln2.gamma"], W[p + "ln2.beta"]);
      const hid = gelu(linear(a2, W[p + "ff.w1"], W[p + "ff.b1"]));
      const y2 = linear(hid, W[p + "ff.w2"], W[p + "ff.b2"]);
      for (let i = 0; i < D; i++) { x[i] += y2[i]; }
    }
  }
  const f = layerNorm(x, W["ln_f.gamma"], W["ln_f.beta"]);
  const logits = new Array(CFG.vocab_size).fill(0);
  for (let v = 0; v < CFG.vocab_size; v++) {
    let s = 0; for (let i = 0; i < D; i++) { s += f[i] * W.wte.data[v * D + i]; } logits[v] = s;
  }
  return { logits: logits, seen: seen };
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
function mulberry32(a) {
  return function () {
    a |= 0; a = a + 0x6D2B79F5 | 0;
    let t = Math.imul(a ^ a >>> 15, 1 | a);
    t = t + Math.imul(t ^ t >>> 7, 61 | t) ^ t;
    return ((t ^ t >>> 14) >>> 0) / 4294967296;
  };
}
function shown(c, where) {
  if (c === "\n") { return where === "text" ? TEMPLATES.gen_newline : "↵"; }
  if (c === " " && where === "alone") { return "␣"; }
  return esc(c);
}
function readPrompt() {
  /* the same rules, in the same order and words, as the library's _prompt_problem */
  const text = box.value, chars = [...text];
  if (text === "") { return { problem: say("empty") }; }
  const bad = [...new Set(chars.filter((c) => !ALPHABET.includes(c)))];
  if (bad.length) {
    return { problem: say("alphabet", { n: ALPHABET.length,
                                        chars: bad.map((c) => JSON.stringify(c)).join(" ") }) };
  }
  if (chars.length >= CFG.context) {
    return { problem: say("too_long", { most: CFG.context - 1, context: CFG.context }) };
  }
  return { ids: chars.map((c) => ALPHABET.indexOf(c)) };
}
function drawText(sel) {
  textOut.innerHTML = [...run.chars].map((c, j) => fill("gen_char", {
    pos: j, char: shown(c, "text"),
    cls: (j < run.nPrompt ? " lc-prompt" : "") + (j === sel ? " lc-sel" : "") })).join("");
}
function drawHeads(pos) {
  if (!run.weights) { return; }
  const first = Math.max(0, pos - STRIP + 1), rows = [];
  for (let l = 0; l < CFG.n_layers; l++) {
    for (let h = 0; h < H; h++) {
      const w = run.weights[pos][l][h];
      let cells = "";
      for (let j = first; j <= pos; j++) {
        cells += fill("gen_cell", { w: fmt(w[j], 4), exact: w[j], char: shown(run.chars[j], "strip"),
                                    dark: w[j] >= DARK_FROM ? " lc-dark" : "" });
      }
      let top = 0; w.forEach((x, j) => { if (x > w[top]) { top = j; } });
      rows.push(fill("head_row", { layer: l + 1, head: h + 1, cells: cells,
        char: shown(run.chars[top], "alone"), back: pos - top, exact: w[top], weight: fmt(w[top], 2) }));
    }
  }
  headBody.innerHTML = rows.join("");
}
function select(pos) {
  posSlider.value = pos;
  posValue.textContent = (pos + 1) + " of " + run.chars.length;
  $$(".lc-ch").forEach((el) => el.classList.toggle("lc-sel", Number(el.dataset.pos) === pos));
  drawHeads(pos);
}
async function generateText() {
  const seedText = seedBox.value.trim(), seed = Number(seedText);
  if (!/^[0-9]+$/.test(seedText) || seed > 4294967295) {
    error.textContent = say("seed"); seedBox.setAttribute("aria-invalid", "true"); return;
  }
  seedBox.removeAttribute("aria-invalid");
  const r = readPrompt();
  if (r.problem) {
    error.textContent = fill("gen_error", { problem: r.problem });
    box.setAttribute("aria-invalid", "true");
    return;
  }
  error.textContent = ""; box.removeAttribute("aria-invalid");
  button.disabled = true;
  if (!W) { status.textContent = say("loading"); }
  try { await loadWeights(); } catch (e) {
    status.textContent = String(e.message || e); button.disabled = false; return;
  }
  const tau = parseFloat(temp.value), uniform = mulberry32(seed);
  const cache = [];
  for (let l = 0; l < CFG.n_layers; l++) { cache.push({ k: [], v: [] }); }
  const ids = r.ids.slice(), weights = [];
  let out;
  for (let t = 0; t < ids.length; t++) { out = step(cache, ids[t], t); weights.push(out.seen); }
  const n = Math.min(N_NEW, CFG.context - ids.length);
  for (let i = 0; i < n; i++) {
    const token = draw(distribution(out.logits, tau), uniform());
    ids.push(token);
    out = step(cache, token, ids.length - 1);
    weights.push(out.seen);
  }
  run = { chars: ids.map((i) => ALPHABET[i]).join(""), nPrompt: r.ids.length, weights: weights };
  root.dataset.logits = JSON.stringify(out.logits);
  drawText(run.chars.length - 1);
  posSlider.max = run.chars.length - 1;
  status.textContent = say("generated", { n: n, temperature: fmt(tau, 2),
                                          seed: seed });
  select(run.chars.length - 1);
  button.disabled = false;
}
activate();
temp.addEventListener("input", () => { tempValue.textContent = fmt(parseFloat(temp.value), 2); });
button.addEventListener("click", generateText);
posSlider.addEventListener("input", async () => {  // moving it loads the weights
  if (!run.weights) {
    status.textContent = say("loading");
    await ensureWeightsForShown();
    status.textContent = "";
  }
  select(Number(posSlider.value));
});
textOut.addEventListener("mouseover", (e) => {  // only once the weights are here
  const el = e.target.closest(".lc-ch");
  if (el && run.weights) { select(Number(el.dataset.pos)); }
});
/* The text shown first came from the library; its heads need the weights too. */
async function ensureWeightsForShown() {
  await loadWeights();
  const cache = [];
  for (let l = 0; l < CFG.n_layers; l++) { cache.push({ k: [], v: [] }); }
  const weights = [];
  [...run.chars].forEach((c, t) => { weights.push(step(cache, ALPHABET.indexOf(c), t).seen); });
  run.weights = weights;
}
