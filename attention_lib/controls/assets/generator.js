/* The text generator: the GPT of attention_lib.gpt, one position at a time with a key-value
   cache, in double precision from its float16 weights, sampling as attention_lib.generate
   does from the numbers of Mulberry32 (attention_lib.controls.mulberry32): generateIds of
   model.js. */
const CFG = DATA("config"), ALPHABET = DATA("alphabet");
const N_NEW = DATA("nNew"), STRIP = DATA("strip"), MESSAGES = DATA("messages");
const say = (name, slots) => fillText(MESSAGES[name], slots || {});
const box = $(".lc-prompt-box"), temp = $(".lc-temp"), tempValue = $(".lc-temp-value");
const seedBox = $(".lc-seed"), button = $(".lc-generate"), error = $(".lc-error");
const status = $(".lc-status"), textOut = $(".lc-gen-text"), posSlider = $(".lc-pos");
const posValue = $(".lc-pos-value"), headBody = $(".lc-heads tbody");
const loadWeights = weightsLoader($(".lc-blob"), DATA("layout"), 2, MESSAGES);
let W = null;            // parameters by name: {shape, data: Float64Array}
let run = { chars: DATA("generated"), nPrompt: DATA("nPrompt"), weights: null };

/* Every position's attention weights [position][layer][head] (keys 0 .. position) from the
   stack's output for the positions from `start` on. */
function byPosition(out, start) {
  return out.final.map((_, t) => out.self.map((layer) => layer.map(
    (head) => head[t].slice(0, start + t + 1))));
}
function drawText(sel) {
  textOut.innerHTML = [...run.chars].map((c, j) => fill("gen_char", {
    pos: j, char: shownChar(c, "text"),
    cls: (j < run.nPrompt ? " lc-prompt" : "") + (j === sel ? " lc-sel" : "") })).join("");
}
function drawHeads(pos) {
  if (!run.weights) { return; }
  const first = Math.max(0, pos - STRIP + 1), rows = [];
  for (let l = 0; l < CFG.n_layers; l++) {
    for (let h = 0; h < CFG.n_heads; h++) {
      const w = run.weights[pos][l][h];
      let cells = "";
      for (let j = first; j <= pos; j++) {
        cells += fill("gen_cell", { w: fmt(w[j], 4), exact: w[j],
                                    char: shownChar(run.chars[j], "strip"),
                                    dark: w[j] >= DARK_FROM ? " lc-dark" : "" });
      }
      let top = 0; w.forEach((x, j) => { if (x > w[top]) { top = j; } });
      rows.push(fill("head_row", { layer: l + 1, head: h + 1, cells: cells,
        char: shownChar(run.chars[top], "alone"), back: pos - top, exact: w[top],
        weight: fmt(w[top], 2) }));
    }
  }
  headBody.innerHTML = rows.join("");
}
let selected = run.chars.length - 1;  // the position whose heads are shown
function select(pos) {
  selected = pos;
  posSlider.value = pos;
  posValue.textContent = (pos + 1) + " of " + run.chars.length;
  $$(".lc-ch").forEach((el) => el.classList.toggle("lc-sel", Number(el.dataset.pos) === pos));
  drawHeads(pos);
}
async function generateText() {
  const r = seedAndPrompt(seedBox, box, error, ALPHABET, CFG.context, say,
                          (p) => fill("gen_error", { problem: p }));
  if (!r) { return; }
  const seed = r.seed;
  button.disabled = true;
  W = W || await weightsOrSay(loadWeights, status, error, MESSAGES);
  if (!W) { button.disabled = false; return; }
  const tau = parseFloat(temp.value), n = Math.min(N_NEW, CFG.context - r.ids.length);
  const weights = [];
  const g = generateIds(W, CFG, r.ids, n, tau, mulberry32(seed), {
    each: (out, start) => weights.push(...byPosition(out, start)) });
  run = { chars: g.ids.map((i) => ALPHABET[i]).join(""), nPrompt: r.ids.length,
          weights: weights };
  root.dataset.logits = JSON.stringify(g.logits);
  drawText(run.chars.length - 1);
  posSlider.max = run.chars.length - 1;
  status.textContent = say("generated", { n: n, temperature: fmt(tau, 2),
                                          seed: seed });
  select(run.chars.length - 1);
  button.disabled = false;
}
/* The text shown first came from the library; its heads need the weights too. False when
   the weights cannot be had (the reason is shown). */
async function headsOfShown() {
  W = W || await weightsOrSay(loadWeights, status, error, MESSAGES);
  if (W && !run.weights) {
    run.weights = byPosition(stack(W, CFG, [...run.chars].map((c) => ALPHABET.indexOf(c))), 0);
  }
  return W !== null;
}
activate();
temp.addEventListener("input", () => { tempValue.textContent = fmt(parseFloat(temp.value), 2); });
button.addEventListener("click", generateText);
posSlider.addEventListener("input", async () => {  // moving it loads the weights
  const pos = Number(posSlider.value);
  if (run.weights || await headsOfShown()) { select(pos); } else { posSlider.value = selected; }
});
textOut.addEventListener("mouseover", (e) => {  // only once the weights are here
  const el = e.target.closest(".lc-ch");
  if (el && run.weights) { select(Number(el.dataset.pos)); }
});
