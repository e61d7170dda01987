/* The patching map: the trained coreference encoder (model.js) on a minimal pair, run clean,
   corrupt, and corrupt again for every site with the clean run's activation put back there
   (stack's hooks, at the sites of attention_lib.model.hooks), as
   attention_lib.coreference_patching computes it for that one pair. */
const CFG = DATA("config"), VOCAB = DATA("vocabulary"), PAIRS = DATA("pairs");
const NOUNS = DATA("nouns"), FIRST = DATA("first"), TWINS = DATA("twins");
const KINDS = DATA("kinds"), SITES = DATA("sites"), MESSAGES = DATA("messages");
const list = $(".lc-patch-pair"), typed = $(".lc-typed"), error = $(".lc-error");
const out = $(".lc-result");
const pick = onEachPick(4, MESSAGES, $(".lc-status"), error, out);
const has = (obj, key) => Object.prototype.hasOwnProperty.call(obj, key);
const quoted = (words) => words.map((w) => "“" + w + "”").join(", ");
let shown = null;  // the pair on display with every run of it, once computed here
let chosen = { site: "blocks.0.attn.heads", index: 0 };  // the cell whose run is shown

/* Why the encoder cannot patch the sentence of `words`, or null: the checks and words of
   attention_lib.controls.patching.patching_twin. */
function problem(words) {
  if (!words.length) { return MESSAGES.empty; }
  const unknown = [...new Set(words.filter((w) => w === VOCAB[0] || !VOCAB.includes(w)))];
  if (unknown.length) { return fillText(MESSAGES.unknown, { words: quoted(unknown) }); }
  if (words.length > CFG.context) {
    return fillText(MESSAGES.long, { n: words.length, most: CFG.context });
  }
  const its = words.filter((w) => w === "it").length;
  if (its !== 1) { return fillText(MESSAGES.it, { n: its }); }
  const nouns = words.filter((w) => has(NOUNS, w));
  if (nouns.length !== 2 || nouns[0] === nouns[1]) {
    return fillText(MESSAGES.nouns, { choices: quoted(Object.keys(NOUNS)),
                                      nouns: nouns.length ? quoted(nouns) : "none" });
  }
  const twins = TWINS[NOUNS[nouns[1]]], word = words[words.length - 1];
  if (!has(twins, word)) {
    const any = Object.values(TWINS).some((t) => has(t, word));
    return fillText(MESSAGES[any ? "kind" : "adjective"], {
      word: word, kind: KINDS[NOUNS[nouns[1]]], noun: nouns[1],
      choices: quoted(Object.keys(twins)) });
  }
  return null;
}
/* The twin: the last word swapped by the table exported from the library's rule. */
function twin(words) {
  const second = words.filter((w) => has(NOUNS, w))[1];
  return words.slice(0, -1).concat([TWINS[NOUNS[second]][words[words.length - 1]]]).join(" ");
}
/* Every run of the pair: clean, corrupt, and one patched run per site, each with the two
   nouns' logits at "it", their probabilities and the logit difference (the clean
   referent's minus the other noun's); a site restores (patched - corrupt) / (clean -
   corrupt) of it. */
function patchAll(W, clean, corrupt) {
  const a = clean.split(" "), b = corrupt.split(" "), T = a.length, L = CFG.n_layers;
  const changed = a.findIndex((w, j) => w !== b[j]);
  const r = FIRST.includes(a[changed]) ? 0 : 1, it = a.indexOf("it");
  const nouns = a.filter((w) => has(NOUNS, w)), cand = nouns.map((w) => VOCAB.indexOf(w));
  const ids = (words) => words.map((w) => VOCAB.indexOf(w));
  function run(words, hooks) {
    const logits = tiedLogits(W, CFG, stack(W, CFG, ids(words), { hooks: hooks }).final[it], cand);
    return { logits: logits, p: softmax(logits), diff: logits[r] - logits[1 - r] };
  }
  const headSites = [], residSites = [];
  for (let l = 0; l < L; l++) {
    headSites.push("blocks." + l + ".attn.heads");
    residSites.push("blocks." + l + ".resid_pre");
  }
  residSites.push("blocks." + (L - 1) + ".resid_post");
  const kept = {}, keep = {};
  headSites.concat(residSites).forEach((s) => {
    keep[s] = (rows) => { kept[s] = rows.map((x) => Float64Array.from(x)); };
  });
  const cleanRun = run(a, keep), corruptRun = run(b, null);
  const gap = cleanRun.diff - corruptRun.diff;
  function patched(site, index, head) {
    const hook = head ? (rows) => rows.map((x, t) => {  // one head's slice, every position
      const y = Float64Array.from(x), w = x.length / CFG.n_heads;
      y.set(kept[site][t].subarray(index * w, (index + 1) * w), index * w);
      return y;
    }) : (rows) => rows.map((x, t) => (t === index ? Float64Array.from(kept[site][t]) : x));
    const p = run(b, { [site]: hook });
    p.restored = gap !== 0 ? (p.diff - corruptRun.diff) / gap : NaN;
    return p;
  }
  const labels = a.map((w, j) => (w === b[j] ? w : w + "/" + b[j]));
  return {
    clean: clean, corrupt: corrupt, nouns: nouns, referent: nouns[r], labels: labels,
    runs: { clean: cleanRun, corrupt: corruptRun },
    heads: headSites.map((s, l) => Array.from({ length: CFG.n_heads }, (_, i) => Object.assign(
      patched(s, i, true), { site: s, index: i, what: "head L" + (l + 1) + " H" + (i + 1) }))),
    resid: residSites.map((s, k) => Array.from({ length: T }, (_, j) => Object.assign(
      patched(s, j, false), { site: s, index: j, what: labels[j] + ", " + SITES[k] }))),
  };
}
function find(res, site, index) {
  for (const row of res.heads.concat(res.resid)) {
    for (const cell of row) { if (cell.site === site && cell.index === index) { return cell; } }
  }
  return null;
}
function cell(c) {
  const on = c.site === chosen.site && c.index === chosen.index, x = c.restored;
  const shade = Number.isFinite(x) ? Math.min(Math.max(x, 0), 1) : 0;
  return fill("patch_cell", { dark: shade >= DARK_FROM ? " lc-dark" : "", on: on ? " lc-on" : "",
    w: fmt(shade, 4), site: c.site, index: c.index, exact: x, pressed: String(on),
    what: esc(c.what), value: Number.isFinite(x) ? fmt(x, 2) : "–", disabled: "" });
}
function runRow(name, run) {
  return fill("patch_run", { run: esc(name), p0: fmt(run.p[0], 3), e0: run.p[0],
                             p1: fmt(run.p[1], 3), e1: run.p[1], diff: fmt(run.diff, 2) });
}
function runRows(res) {
  const c = find(res, chosen.site, chosen.index);
  return runRow("clean", res.runs.clean) + runRow("corrupt", res.runs.corrupt) +
    (c ? runRow("patched: " + c.what, c) : "");
}
function render(res) {
  const headCols = Array.from({ length: CFG.n_heads },
                              (_, i) => fill("col_head", { word: "H" + (i + 1) })).join("");
  const heads = res.heads.map((row, l) => fill("heat_row", {
    label: "L" + (l + 1), cells: row.map(cell).join("") })).join("");
  const resid = res.labels.map((label, j) => fill("heat_row", {
    label: esc(label), cells: res.resid.map((row) => cell(row[j])).join("") })).join("");
  out.innerHTML = fill("patch_result", {
    clean: esc(res.clean), corrupt: esc(res.corrupt), referent: esc(res.referent),
    noun0: esc(res.nouns[0]), noun1: esc(res.nouns[1]), runs: runRows(res),
    heads: fill("patch_heads", { cols: headCols, rows: heads }),
    resid: fill("patch_resid", { cols: SITES.map((s) => fill("col_head", { word: s })).join(""),
                                 rows: resid }) });
  root.dataset.shown = JSON.stringify([res.clean, res.corrupt]);
  root.dataset.chosen = JSON.stringify([chosen.site, chosen.index]);
}
/* A cell pressed: its run goes in the table, the map keeps its place and the focus. */
function choose(site, index) {
  chosen = { site: site, index: index };
  $$(".lc-site").forEach((b) => {
    const on = b.dataset.site === site && Number(b.dataset.index) === index;
    b.setAttribute("aria-pressed", String(on));
    b.parentElement.classList.toggle("lc-on", on);
  });
  $(".lc-runs tbody").innerHTML = runRows(shown);
  root.dataset.chosen = JSON.stringify([site, index]);
}
function showPair(clean, corrupt) {
  pick((W) => {
    shown = patchAll(W, clean, corrupt);
    if (!find(shown, chosen.site, chosen.index)) { chosen = { site: "blocks.0.attn.heads", index: 0 }; }
    render(shown);
  });
}
function fromList() {
  error.textContent = "";
  typed.removeAttribute("aria-invalid");
  const [clean, corrupt] = PAIRS[Number(list.value)];
  showPair(clean, corrupt);
}
function fromTyped() {
  const words = typed.value.trim().split(/\s+/).filter((w) => w !== "");
  const why = problem(words);
  if (why) {
    error.textContent = fill("patch_error", { problem: why });
    typed.setAttribute("aria-invalid", "true");
    out.hidden = true;
    pick(null);
    return;
  }
  error.textContent = "";
  typed.removeAttribute("aria-invalid");
  showPair(words.join(" "), twin(words));
}
activate();
list.addEventListener("change", fromList);
$(".lc-use").addEventListener("click", fromTyped);
typed.addEventListener("keydown", (e) => { if (e.key === "Enter") { fromTyped(); } });
out.addEventListener("click", (e) => {
  const b = e.target.closest(".lc-site");
  if (!b) { return; }
  const site = b.dataset.site, index = Number(b.dataset.index);
  if (shown) { choose(site, index); return; }
  const [clean, corrupt] = PAIRS[Number(list.value)];  // the page's first view, from Python
  pick((W) => {
    shown = patchAll(W, clean, corrupt);
    chosen = { site: site, index: index };
    render(shown);
    const again = $$(".lc-site").find((x) => x.dataset.site === site &&
                                             Number(x.dataset.index) === index);
    if (again) { again.focus(); }
  });
});
