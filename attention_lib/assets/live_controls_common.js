/* Shared by the browser-side controls of attention_lib.live_controls (double precision,
   the same operations in the same order as the numpy functions they mirror). */
const $ = (sel) => root.querySelector(sel);
const $$ = (sel) => Array.from(root.querySelectorAll(sel));
const DATA = (name) => JSON.parse(root.dataset[name]);

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
/* One table row: label, optional extra cell, a bar and the number. */
function barRow(label, p, digits, extra, cls) {
  return '<tr' + (cls ? ' class="' + cls + '"' : '') + '><th scope="row">' + label + '</th>' +
    (extra === null ? '' : '<td class="lc-num lc-score">' + extra + '</td>') +
    '<td class="lc-bar-cell"><div class="lc-track"><div class="lc-bar" style="width: ' +
    (100 * p).toFixed(1) + '%"></div></div></td>' +
    '<td class="lc-num lc-weight" data-exact="' + p + '">' + fmt(p, digits) + '</td></tr>';
}
/* Cell colours of a heatmap: Blues from #f7fbff (0) to #08306b (1), text black or white,
   whichever contrasts more. */
function heatStyle(w) {
  const lo = [247, 251, 255], hi = [8, 48, 107];
  const rgb = lo.map((a, i) => Math.floor(a + (hi[i] - a) * w + 0.5));
  const lin = rgb.map((c) => { c /= 255; return c <= 0.04045 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); });
  const L = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
  const text = (L + 0.05) / 0.05 >= 1.05 / (L + 0.05) ? "#000000" : "#ffffff";
  return "background: rgb(" + rgb.join(", ") + "); color: " + text;
}
/* The script runs: the note for script-less viewers goes, the controls come alive. */
function activate() {
  const note = $(".lc-static-note");
  if (note) { note.remove(); }
  $$("input, select, button").forEach((el) => { el.disabled = false; });
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
        error.textContent = "c must be a number from " + lo + " to " + hi + "; still showing c = " +
          current + ".";
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
