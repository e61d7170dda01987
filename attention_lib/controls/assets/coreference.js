/* The coreference explorer: the sentence of the four lists through the trained encoder
   (model.js), the logits of its two nouns read at "it" as
   attention_lib.CoreferenceModel.probabilities reads them, and the weights from "it". */
const CFG = DATA("config"), VOCAB = DATA("vocabulary"), FRAME = DATA("frame");
const NOUNS = DATA("nouns"), CLASSES = DATA("classes"), HELD_OUT = DATA("heldOut");
const MESSAGES = DATA("messages");
const lists = { first: $(".lc-first"), verb: $(".lc-verb"), second: $(".lc-second"),
                adjective: $(".lc-adjective") };
const error = $(".lc-error"), out = $(".lc-result");
const pick = onEachPick(4, MESSAGES, $(".lc-status"), error, out);
/* where the sentence stands, as attention_lib.controls.coreference.sentence_status */
function where(w) {
  const has = (list, x) => CLASSES[list].includes(x);
  const cross = has("cross", w.verb) && has("agents", w.first) && has("places", w.second) &&
    (has("first", w.adjective) || has("place", w.adjective));
  const chase = has("chase", w.verb) && has("agents", w.first) && has("agents", w.second) &&
    w.first !== w.second && (has("first", w.adjective) || has("agent", w.adjective));
  if (!cross && !chase) { return "none"; }
  return HELD_OUT.some((p) => p[0] === w.first && p[1] === w.second) ? "test" : "train";
}
function resolve(W, w) {
  const words = fillText(FRAME, w).split(" ");
  const ids = words.map((x) => VOCAB.indexOf(x));
  const it = words.indexOf("it");
  const enc = stack(W, CFG, ids);
  const nouns = words.filter((x) => NOUNS.includes(x));
  const logits = tiedLogits(W, CFG, enc.final[it], nouns.map((x) => VOCAB.indexOf(x)));
  return { words: words, it: it, nouns: nouns, p: softmax(logits), weights: enc.self };
}
function render(w, r) {
  const answer = r.nouns[r.p[1] > r.p[0] ? 1 : 0];
  const expected = CLASSES.first.includes(w.adjective) ? r.nouns[0] : r.nouns[1];
  const said = fill("coref_answer", { answer: esc(answer), p: fmt(Math.max(r.p[0], r.p[1]), 2),
    expected: esc(expected), verdict: MESSAGES[answer === expected ? "right" : "wrong"] });
  const heads = [];
  for (let l = 0; l < CFG.n_layers; l++) {
    for (let h = 0; h < CFG.n_heads; h++) { heads.push(fill("col_head", { word: "L" + (l + 1) + " H" + (h + 1) })); }
  }
  const rows = r.words.map((word, j) => {
    let cells = "";
    for (let l = 0; l < CFG.n_layers; l++) {
      for (let h = 0; h < CFG.n_heads; h++) {
        const x = r.weights[l][h][r.it][j];
        cells += fill("heat_cell", { dark: x >= DARK_FROM ? " lc-dark" : "", w: fmt(x, 4),
                                     exact: x, weight: fmt(x, 2) });
      }
    }
    return fill("heat_row", { label: esc(word), cells: cells });
  });
  out.innerHTML = fill("coref_result", { sentence: esc(r.words.join(" ")), answer: said,
    status: MESSAGES[where(w)], table: fill("coref_table", { heads: heads.join(""), rows: rows.join("") }) });
  out.dataset.probabilities = JSON.stringify(r.p);
}
function update() {
  const w = {};
  Object.keys(lists).forEach((k) => { w[k] = lists[k].value; });
  const nounLists = [lists.first, lists.second];
  if (w.first === w.second) {
    error.textContent = MESSAGES.same;
    nounLists.forEach((el) => el.setAttribute("aria-invalid", "true"));
    out.hidden = true;
    pick(null);
    return;
  }
  error.textContent = "";
  nounLists.forEach((el) => el.removeAttribute("aria-invalid"));
  pick((W) => {
    render(w, resolve(W, w));
    root.dataset.shown = JSON.stringify(w);
  });
}
activate();
Object.values(lists).forEach((el) => {
  el.addEventListener("change", update);
});
