/* The translation explorer: the sentence of the lists through the trained encoder, then
   greedy decoding with the decoder, one word at a time with a key-value cache (model.js), as
   attention_lib.TranslationModel.translate does it; the grammar's translation as
   attention_lib.translate_by_rule makes it. */
const CONFIGS = DATA("configs"), SRC = DATA("sourceVocabulary"), TGT = DATA("targetVocabulary");
const LEXICON = DATA("lexicon"), VERBS = DATA("verbs"), ADJECTIVES = DATA("adjectives");
const HELD_OUT = DATA("heldOut"), SLOTS = DATA("slots"), NONE = DATA("none");
const MAX_WORDS = DATA("maxWords"), MESSAGES = DATA("messages");
const BOS = TGT.indexOf("<s>"), EOS = TGT.indexOf("</s>");
const lists = SLOTS.map((name) => $(".lc-" + name)), headList = $(".lc-head");
const out = $(".lc-result");
const pick = onEachPick(4, MESSAGES, $(".lc-status"), $(".lc-error"), out);
/* the grammar's translation: det noun [adj], det noun [adj], verb */
function byRule(words) {
  const verbAt = words.findIndex((w) => VERBS.includes(w)), order = [];
  [[0, verbAt], [verbAt + 1, words.length]].forEach(([lo, hi]) => {
    const phrase = []; for (let i = lo; i < hi; i++) { phrase.push(i); }
    order.push(phrase[0], phrase[phrase.length - 1], ...phrase.slice(1, -1));
  });
  order.push(verbAt);
  return { words: order.map((i) => LEXICON[words[i]]), alignment: order };
}
function pairsNote(slots) {
  const pairs = [["adj1", "noun1"], ["adj2", "noun2"]].filter(([a]) => slots[a] !== NONE)
    .map(([a, n]) => [slots[a], slots[n]]);
  if (pairs.length === 0) { return MESSAGES.no_pair; }
  const unseen = pairs.filter((p) => HELD_OUT.some((h) => h[0] === p[0] && h[1] === p[1]))
    .map((p) => p[0] + " " + p[1]);
  return unseen.length ? fillText(MESSAGES.unseen, { pairs: unseen.join(", ") }) : MESSAGES.seen;
}
/* Greedy decoding: from the start mark, the most probable next word (or the end mark), one
   position at a time, each reading the cache of the positions before; the words and the
   cross-attention weights [layer][head][word][source word] of the positions that wrote them. */
function translate(W, words) {
  const [enc, dec] = CONFIGS, cache = newCache(dec);
  const memory = stack(W, enc, words.map((w) => SRC.indexOf(w))).final;
  const ids = [BOS], cross = Array.from({ length: dec.n_layers },
                                        () => Array.from({ length: dec.n_heads }, () => []));
  for (let step = 0; step < MAX_WORDS; step++) {
    const r = stack(W, dec, [ids[step]], { start: step, cache: cache, memory: memory });
    const z = tiedLogits(W, dec, r.final[0]);
    let best = EOS;
    for (let v = EOS + 1; v < z.length; v++) { if (z[v] > z[best]) { best = v; } }
    if (best === EOS) { break; }
    ids.push(best);
    r.cross.forEach((layer, l) => layer.forEach((head, h) => { cross[l][h].push(head[0]); }));
  }
  return { said: ids.slice(1).map((i) => TGT[i]), cross: cross };
}
let run = null;
function draw() {
  const [layer, head] = headList.value.split(",").map(Number);
  const source = run.source, rule = byRule(source), said = run.said;
  const rows = said.map((word, j) => {
    const w = run.cross[layer][head][j];
    const cells = source.map((_, i) => fill("align_cell", {
      w: fmt(w[i], 4), exact: w[i], weight: fmt(w[i], 2), dark: w[i] >= DARK_FROM ? " lc-dark" : "",
      gold: j < rule.words.length && rule.words[j] === word && rule.alignment[j] === i ? " lc-gold" : "" }));
    return fill("heat_row", { label: esc(word), cells: cells.join("") });
  });
  const heads = source.map((x) => fill("col_head", { word: esc(x) })).join("");
  out.innerHTML = fill("tr_result", {
    source: esc(source.join(" ")), translation: esc(said.join(" ")), rule: esc(rule.words.join(" ")),
    verdict: MESSAGES[said.join(" ") === rule.words.join(" ") ? "same" : "different"],
    pairs: pairsNote(run.slots), head: "layer " + (layer + 1) + ", head " + (head + 1),
    table: fill("tr_table", { heads: heads, rows: rows.join("") }) });
}
function update() {
  const slots = {};
  SLOTS.forEach((name, k) => { slots[name] = lists[k].value; });
  pick((W) => {
    const source = SLOTS.map((name) => slots[name]).filter((w) => w !== NONE);
    const t = translate(W, source);
    run = { slots: slots, source: source, said: t.said, cross: t.cross };
    draw();
    root.dataset.translation = t.said.join(" ");
  });
}
activate();
lists.forEach((el) => { el.addEventListener("change", update); });
headList.addEventListener("change", () => { if (run) { draw(); } else { update(); } });
