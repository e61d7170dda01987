/* The logit-lens explorer: the GPT of attention_lib.gpt run on the reader's text (stack of
   model.js), its residual stream captured after the embedding and after each block (hooks at
   "embed" and "blocks.l.resid_post") and read through the final norm and the tied read-out,
   as attention_lib.logit_lens: a grid of each reading's top next character and its
   probability, and each reading's mean loss on the text. */
const CFG = DATA("config"), ALPHABET = DATA("alphabet"), COLUMNS = DATA("columns");
const READINGS = DATA("readings"), MESSAGES = DATA("messages");
const say = (name, slots) => fillText(MESSAGES[name], slots || {});
const box = $(".lc-prompt-box"), button = $(".lc-read"), error = $(".lc-error");
const status = $(".lc-status"), out = $(".lc-lens-out"), grid = $(".lc-lens-scroll");
const shownCount = $(".lc-shown"), intro = $(".lc-lens-intro"), items = $(".lc-lens-items");
const pick = onEachPick(2, MESSAGES, status, error, out);
let W = null;  // parameters by name, once loaded: {shape, data: Float64Array}

/* log softmax of a row, the maximum subtracted first, as attention_lib's log_softmax */
function logSoftmax(z) {
  const m = Math.max.apply(null, z), shifted = z.map((x) => x - m);
  const lse = Math.log(shifted.reduce((a, x) => a + Math.exp(x), 0));
  return shifted.map((x) => x - lse);
}
/* attention_lib.logit_lens(params, config, ids): [reading][position][token] log-probabilities,
   reading 0 the stream after the embedding, reading l the stream after block l - 1. */
function logitLens(W, cfg, ids) {
  const streams = [], hooks = { embed: (rows) => { streams.push(rows); } };
  for (let l = 0; l < cfg.n_layers; l++) {
    hooks["blocks." + l + ".resid_post"] = (rows) => { streams.push(rows); };
  }
  stack(W, cfg, ids, { hooks: hooks });
  return streams.map((rows) => normRows(W, (cfg.prefix || "") + "ln_f", rows)
    .map((row) => logSoftmax(tiedLogits(W, cfg, row))));
}
function drawGrid(ids, lens) {
  const T = ids.length, first = Math.max(0, T - COLUMNS);
  const cols = [];
  for (let t = first; t < T; t++) {
    cols.push(fill("lens_col", { pos: t, char: shownChar(ALPHABET[ids[t]], "alone") }));
  }
  const rows = lens.map((reading, r) => {
    let cells = "";
    for (let t = first; t < T; t++) {
      const p = reading[t].map(Math.exp);
      let top = 0; p.forEach((x, i) => { if (x > p[top]) { top = i; } });
      const char = shownChar(ALPHABET[top], "alone");
      if (t + 1 < T) {
        const w = p[ids[t + 1]];
        cells += fill("lens_cell", { dark: w >= DARK_FROM ? " lc-dark" : "", w: fmt(w, 4),
          exact_next: w, char: char, exact: p[top], p: fmt(p[top], 2),
          next: "next " + shownChar(ALPHABET[ids[t + 1]], "alone"), p_next: fmt(w, 2) });
      } else {
        cells += fill("lens_last", { char: char, exact: p[top], p: fmt(p[top], 2) });
      }
    }
    return fill("lens_row", { reading: esc(READINGS[r]), cells: cells });
  });
  grid.innerHTML = fill("lens_table", { cols: cols.join(""), rows: rows.join("") });
  shownCount.textContent = T - first;
  if (T > 1) {
    intro.textContent = say("losses", { n: T - 1 });
    items.innerHTML = lens.map((reading, r) => {
      let total = 0;
      for (let t = 0; t + 1 < T; t++) { total -= reading[t][ids[t + 1]]; }
      const loss = total / (T - 1);
      return fill("lens_loss", { reading: esc(READINGS[r]), exact: loss, loss: fmt(loss, 2) });
    }).join(", ");
  } else {
    intro.textContent = say("no_loss");
    items.innerHTML = "";
  }
  status.textContent = say("read", { n: T, shown: T - first });
}
/* Read the text in the box: its checks first (in the library's words), then the weights (on
   the first read), then the grid. */
function read() {
  const ids = boxIds(box, error, ALPHABET, CFG.context, say,
                     (problem) => fill("gen_error", { problem: problem }));
  if (!ids) { pick(null); return; }
  pick((weights) => { W = weights; drawGrid(ids, logitLens(W, CFG, ids)); });
}
activate();
button.addEventListener("click", read);
// live once the weights are here; before that, the status says the edit waits for Read
box.addEventListener("input", () => {
  if (W) { read(); } else { status.textContent = say("edited"); }
});
