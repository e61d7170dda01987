/* The induction playground: the attention-only GPT of attention_lib.gpt on the typed tokens
   (model.js), as gpt_attention_weights and gpt_logits compute it (with head_mask), in double
   precision from the float64 weights carried by the element. */
const CFG = DATA("config"), ALPHABET = DATA("alphabet");
const SPAN = DATA("span"), MESSAGES = DATA("messages");
const SEPARATOR = new RegExp(DATA("separator"), "g");
const say = (name, slots) => fillText(MESSAGES[name], slots);
const field = $(".lc-seq"), error = $(".lc-error"), out = $(".lc-result");
const slider = $(".lc-pos"), posValue = $(".lc-pos-value"), boxes = $$(".lc-remove");
const chips = $(".lc-ind-tokens"), summary = $(".lc-summary"), headBody = $(".lc-heads tbody");
const H = CFG.n_heads;
let run = null;  /* the sequence shown: ids, weights [l][h][t][j], logits [t][v], targets */

/* the float64 weights, little-endian, by name: {shape, data}; null (and why) if they are not
   the model's */
let W = null, broken = null;
try {
  W = decodeWeights(base64Bytes(DATA("weights")), DATA("layout"), 8, DATA("weightsCheck"),
                    MESSAGES);
} catch (e) { broken = String(e.message || e); }

/* The same rules, in the same order and words, as the library's _sequence_problem. */
function parse(text) {
  const chars = [...text.replace(SEPARATOR, "")];
  if (chars.length === 0) {
    return { problem: say("empty", { example: ALPHABET.slice(0, 4) + ALPHABET.slice(0, 4) }) };
  }
  const bad = [...new Set(chars.filter((c) => !ALPHABET.includes(c)))];
  if (bad.length) {
    return { problem: say("not_token", { n: ALPHABET.length, span: SPAN,
                                         chars: bad.map((c) => JSON.stringify(c)).join(" ") }) };
  }
  if (chars.length > CFG.context) {
    return { problem: say("too_long", { most: CFG.context, n: chars.length }) };
  }
  return { ids: chars.map((c) => ALPHABET.indexOf(c)) };
}
/* attention_lib.controls.copy_targets: after the last earlier occurrence, or -1 */
function copyTargets(ids) {
  const last = new Map();
  return ids.map((tok, t) => {
    const k = last.has(tok) ? last.get(tok) + 1 : -1;
    last.set(tok, t);
    return k;
  });
}
function argmax(xs) { let best = 0; xs.forEach((x, i) => { if (x > xs[best]) { best = i; } }); return best; }
function show(pos) {
  const ids = run.ids, chars = ids.map((i) => ALPHABET[i]), k = run.targets[pos];
  slider.value = pos;
  posValue.textContent = "t = " + pos;
  chips.innerHTML = chars.map((c, j) => fill("token_chip", {
    j: j, token: esc(c), tail: "",
    cls: [["lc-new", j === pos], ["lc-target", j === k], ["lc-future", j > pos]]
      .filter((e) => e[1]).map((e) => e[0]).join(" ") })).join("");
  const logits = run.logits[pos], p = softmax(logits), top = argmax(p);
  const slots = { t: pos, token: esc(chars[pos]), top: esc(ALPHABET[top]), p_top: fmt(p[top], 3) };
  summary.innerHTML = k >= 0
    ? fill("ind_copy", Object.assign({ j: k - 1, k: k, next: esc(chars[k]),
                                       p_copy: fmt(p[ids[k]], 3) }, slots))
    : fill("ind_fresh", slots);
  const rows = [];
  for (let l = 0; l < CFG.n_layers; l++) {
    for (let h = 0; h < H; h++) {
      const w = run.weights[l][h][pos].slice(0, pos + 1), best = argmax(w), removed = run.keep[l][h] === 0;
      const cells = w.map((x, j) => fill("ind_cell", {
        cls: (x >= DARK_FROM ? " lc-dark" : "") + (j === k ? " lc-target" : ""),
        w: fmt(x, 4), exact: x, char: esc(chars[j]) })).join("");
      rows.push(fill("ind_head_row", { layer: l + 1, head: h + 1, cls: removed ? "lc-off" : "",
        note: removed ? " (removed)" : "", cells: cells, char: esc(chars[best]),
        back: pos - best, exact: w[best], weight: fmt(w[best], 2) }));
    }
  }
  headBody.innerHTML = rows.join("");
  out.dataset.logits = JSON.stringify(logits);
}
function keepMask() {
  const keep = [];
  for (let l = 0; l < CFG.n_layers; l++) { keep.push(new Array(H).fill(1)); }
  boxes.forEach((b) => { if (b.checked) { keep[Number(b.dataset.layer)][Number(b.dataset.head)] = 0; } });
  return keep;
}
/* Read the box; if it holds a sequence, run the model and show position `pos` (the last
   token when null). */
function update(pos) {
  const s = parse(field.value);
  if (s.problem) { field.setAttribute("aria-invalid", "true"); }
  else { field.removeAttribute("aria-invalid"); }
  if (s.problem || !W) {  // a sequence the model cannot read, or no weights to read it with
    error.textContent = s.problem ? fill("sequence_error", { problem: s.problem }) : broken;
    out.hidden = true;
    run = null;
    return;
  }
  error.textContent = "";
  const keep = keepMask(), f = stack(W, CFG, s.ids, { headMask: keep });
  run = { ids: s.ids, keep: keep, weights: f.self, targets: copyTargets(s.ids),
          logits: f.final.map((row) => tiedLogits(W, CFG, row)) };
  slider.max = s.ids.length - 1;
  out.hidden = false;
  show(pos === null ? s.ids.length - 1 : Math.min(pos, s.ids.length - 1));
}
activate();
field.addEventListener("input", () => update(null));
slider.addEventListener("input", () => { if (run) { show(Number(slider.value)); } });
boxes.forEach((b) => b.addEventListener("change", () => update(Number(slider.value))));
update(Number(slider.value));
