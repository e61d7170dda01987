/* Feature steering: the GPT of attention_lib.gpt writing twice with the same random numbers
   (generateIds of model.js), once with one feature of a sparse autoencoder clamped at the
   autoencoder's site (a hook of the stack, as attention_lib.feature_clamp_hooks) and once
   unchanged; the first character where the two texts part is marked in both. */
const CFG = DATA("config"), ALPHABET = DATA("alphabet"), N_NEW = DATA("nNew");
const SITE = DATA("site"), B_DEC = DATA("bDec"), FEATURES = DATA("features");
const MESSAGES = DATA("messages");
const say = (name, slots) => fillText(MESSAGES[name], slots || {});
const box = $(".lc-prompt-box"), pick = $(".lc-feature"), slider = $(".lc-value");
const number = $(".lc-value-number"), rangeNote = $(".lc-range"), temp = $(".lc-temp");
const tempValue = $(".lc-temp-value"), seedBox = $(".lc-seed"), button = $(".lc-generate");
const error = $(".lc-error"), status = $(".lc-status"), diffNote = $(".lc-diff-note");
const clampedTitle = $(".lc-clamped-title"), clampedOut = $(".lc-clamped");
const plainOut = $(".lc-plain");
const loadWeights = weightsLoader($(".lc-blob"), DATA("layout"), 2, MESSAGES);
let W = null;  // parameters by name: {shape, data: Float64Array}

/* The hook that holds feature f at `value` on every row x of the stream:
   x + (value - f(x)) w_dec[j], f(x) = relu((x - b_dec) . w_enc[:, j] + b_enc[j]). */
function clampRows(f, value) {
  return (rows) => rows.map((x) => {
    let z = 0;
    for (let i = 0; i < x.length; i++) { z += (x[i] - B_DEC[i]) * f.w_enc[i]; }
    const act = Math.max(z + f.b_enc, 0), y = new Float64Array(x.length);
    for (let i = 0; i < x.length; i++) { y[i] = x[i] + (value - act) * f.w_dec[i]; }
    return y;
  });
}
function textMarkup(chars, nPrompt, diff) {
  return [...chars].map((c, j) => fill("gen_char", {
    pos: j, char: shownChar(c, "text"),
    cls: (j < nPrompt ? " lc-prompt" : "") + (j === diff ? " lc-diff" : "") })).join("");
}
/* The feature picked: its slider's range and the note that says where it comes from; a
   value beyond the new range becomes its top. */
function showRange() {
  const f = FEATURES[pick.selectedIndex];
  slider.max = number.max = f.max;
  slider.step = f.step;
  if (!(parseFloat(number.value) <= f.max)) { number.value = f.max; }
  slider.value = number.value;
  rangeNote.textContent = f.note;
}
/* the clamp value the number field holds, or null (and the reason shown) */
function readValue() {
  const f = FEATURES[pick.selectedIndex], text = number.value.trim(), v = Number(text);
  if (text === "" || !Number.isFinite(v) || v < 0 || v > f.max) {
    error.textContent = say("value", { most: String(f.max) });
    number.setAttribute("aria-invalid", "true");
    return null;
  }
  number.removeAttribute("aria-invalid");
  return v;
}
async function generateBoth() {
  const value = readValue();
  if (value === null) { return; }
  const r = seedAndPrompt(seedBox, box, error, ALPHABET, CFG.context, say,
                          (p) => fill("gen_error", { problem: p }));
  if (!r) { return; }
  const seed = r.seed;
  button.disabled = true;
  W = W || await weightsOrSay(loadWeights, status, error, MESSAGES);
  if (!W) { button.disabled = false; return; }
  const f = FEATURES[pick.selectedIndex], tau = parseFloat(temp.value);
  const n = Math.min(N_NEW, CFG.context - r.ids.length), hooks = {};
  hooks[SITE] = clampRows(f, value);
  const chars = (ids) => ids.map((i) => ALPHABET[i]).join("");
  const clamped = chars(generateIds(W, CFG, r.ids, n, tau, mulberry32(seed),
                                    { hooks: hooks }).ids);
  const plain = chars(generateIds(W, CFG, r.ids, n, tau, mulberry32(seed)).ids);
  let diff = 0;
  while (diff < plain.length && clamped[diff] === plain[diff]) { diff++; }
  diff = diff < plain.length ? diff : null;
  clampedOut.innerHTML = textMarkup(clamped, r.ids.length, diff);
  plainOut.innerHTML = textMarkup(plain, r.ids.length, diff);
  const shownValue = String(value);  // as the library's repr, without a trailing ".0"
  clampedTitle.textContent = say("clamped", { label: f.label, value: shownValue });
  diffNote.textContent = diff === null ? say("same", { n: n })
    : say("differ", { pos: diff + 1, total: plain.length });
  status.textContent = say("steered", { n: n, temperature: fmt(tau, 2), seed: seed,
                                        label: f.label, value: shownValue });
  button.disabled = false;
}
activate();
temp.addEventListener("input", () => { tempValue.textContent = fmt(parseFloat(temp.value), 2); });
pick.addEventListener("change", () => { showRange(); error.textContent = ""; });
slider.addEventListener("input", () => {
  number.value = slider.value; number.removeAttribute("aria-invalid"); error.textContent = "";
});
number.addEventListener("input", () => {
  const v = Number(number.value);
  if (number.value.trim() !== "" && Number.isFinite(v) && v >= 0 && v <= parseFloat(slider.max)) {
    slider.value = v; number.removeAttribute("aria-invalid"); error.textContent = "";
  }
});
number.addEventListener("change", readValue);
number.addEventListener("keydown", (e) => { if (e.key === "Enter") { generateBoth(); } });
button.addEventListener("click", generateBoth);
