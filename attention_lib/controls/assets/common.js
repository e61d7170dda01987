/* Shared by the browser-side controls of attention_lib.controls (double precision, the
   same operations in the same order as the numpy functions they mirror). `root` is the
   control's element; its data-* attributes hold the numbers and the markup templates. */
const $ = (sel) => root.querySelector(sel);
const $$ = (sel) => Array.from(root.querySelectorAll(sel));
const DATA = (name) => JSON.parse(root.dataset[name]);
const TEMPLATES = DATA("templates");
const DARK_FROM = root.dataset.darkFrom === undefined ? null : DATA("darkFrom");

/* `template` with its {name} slots filled in one pass, as attention_lib's
   controls.element.fill; inserted text is never scanned again. */
function fillText(template, values) {
  return template.replace(/\{(\w+)\}/g, (m, key) => {
    if (!(key in values)) { throw new Error("no value for {" + key + "} in " + template); }
    return String(values[key]);
  });
}
/* The template `name` of attention_lib.controls.element.TEMPLATES, filled. */
function fill(name, values) { return fillText(TEMPLATES[name], values); }
/* x.toFixed(d), without the sign of a negative number that rounds to zero. */
function fmt(x, d) {
  const s = x.toFixed(d);
  return /^-0\.?0*$/.test(s) ? s.slice(1) : s;
}
function vec(xs, d) { return "[" + xs.map((x) => fmt(x, d)).join(", ") + "]"; }
function esc(s) {
  return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;").replace(/'/g, "&#x27;");
}
function dot(a, b) { let s = 0; for (let i = 0; i < a.length; i++) { s += a[i] * b[i]; } return s; }
/* row vector times matrix: (d,) @ (d, e) -> (e,) */
function vecmat(x, m) {
  const out = new Array(m[0].length).fill(0);
  for (let i = 0; i < x.length; i++) {
    for (let j = 0; j < out.length; j++) { out[j] += x[i] * m[i][j]; }
  }
  return out;
}
/* q . k_j / sqrt(d_k) for every key, the queries scaled first, as
   attention_lib.attention.scaled_scores */
function scaledScores(q, keys) {
  const inv = 1 / Math.sqrt(q.length);
  const qs = q.map((x) => x * inv);
  return keys.map((k) => dot(qs, k));
}
/* softmax with the maximum subtracted first, as attention_lib.softmax */
function softmax(z) {
  const m = Math.max.apply(null, z);
  const e = z.map((x) => Math.exp(x - m));
  const total = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / total);
}
/* entropy in nats with 0 log 0 = 0, as attention_lib.entropy */
function entropy(p) { let h = 0; p.forEach((x) => { if (x > 0) { h -= x * Math.log(x); } }); return h + 0; }
/* Frobenius norm and largest |entry| of diag(p) - p p^T, as attention_lib.saturation_stats */
function jacobianSizes(p) {
  let sq = 0, mx = 0;
  for (let i = 0; i < p.length; i++) {
    for (let j = 0; j < p.length; j++) {
      const J = (i === j ? p[i] : 0) - p[i] * p[j];
      sq += J * J; mx = Math.max(mx, Math.abs(J));
    }
  }
  return { norm: Math.sqrt(sq), max: mx };
}
/* One row of a weights table (label already escaped; score null for none). */
function barRow(label, p, digits, score, cls) {
  return fill("bar_row", {
    cls: cls, label: label, width: fmt(100 * p, 1), exact: p, weight: fmt(p, digits),
    score: score === null ? "" : fill("score_cell", { score: score }) });
}
/* One heatmap cell of weight w. */
function heatCell(w) {
  return fill("heat_cell", { dark: w >= DARK_FROM ? " lc-dark" : "", w: fmt(w, 4),
                             exact: w, weight: fmt(w, 3) });
}
/* The script runs: the note for script-less viewers goes, the controls come alive. */
function activate() {
  const note = $(".lc-static-note");
  if (note) { note.remove(); }
  $$("input, select, button, textarea").forEach((el) => { el.disabled = false; });
}
/* A scale slider and a number field kept in step; onChange(c) gets every valid value. */
function linkScale(slider, number, error, onChange) {
  const lo = parseFloat(number.min), hi = parseFloat(number.max);
  let current = parseFloat(number.value);
  function valid(text) {
    const c = Number(text);
    return text.trim() !== "" && Number.isFinite(c) && c >= lo && c <= hi ? c : null;
  }
  slider.addEventListener("input", () => {
    number.value = slider.value; error.textContent = "";
    number.removeAttribute("aria-invalid"); current = parseFloat(slider.value); onChange(current);
  });
  function fromNumber(final) {
    const c = valid(number.value);
    if (c === null) {
      if (final) {
        error.textContent = fill("scale_error", { lo: lo, hi: hi, c: current });
        number.setAttribute("aria-invalid", "true");
      }
      return;
    }
    error.textContent = ""; number.removeAttribute("aria-invalid");
    slider.value = c; current = c; onChange(c);
  }
  number.addEventListener("input", () => fromNumber(false));
  number.addEventListener("change", () => fromNumber(true));
  number.addEventListener("keydown", (e) => { if (e.key === "Enter") { fromNumber(true); } });
  return () => current;
}
