/* The trained soft dictionary: the forward pass of attention_lib.retrieval_forward on the
   sequence typed in the field, with the embedded weights. */
const model = DATA("model"), P = model.params;
const keys = model.vocabulary.keys, values = model.vocabulary.values;
const field = $(".lc-seq"), error = $(".lc-error"), out = $(".lc-result");
const inv = 1 / Math.sqrt(P.w_q[0].length);
/* The same rules and words as attention_lib.live_controls.parse_retrieval_sequence. */
function parse(text) {
  const tokens = text.split(/\s+/).filter((t) => t !== "");
  const example = keys[0] + values[values.length - 1] + " ? " + keys[0];
  const range = (xs) => xs[0] + "–" + xs[xs.length - 1];
  if (tokens.length === 0) { return { problem: "type the pairs, then ? and the key to look up, e.g. " + example }; }
  if (tokens.filter((t) => t === "?").length !== 1 || tokens.indexOf("?") !== tokens.length - 2) {
    return { problem: "end the sequence with ? and one key to look up, e.g. " + example };
  }
  const pairs = tokens.slice(0, -2), query = tokens[tokens.length - 1];
  if (pairs.length === 0) { return { problem: "store at least one pair before ?" }; }
  if (pairs.length > keys.length) {
    return { problem: "at most " + keys.length + " pairs: there are " + keys.length +
             " keys and each is stored once" };
  }
  const k = [], v = [];
  for (const tok of pairs) {
    let split = null;
    for (let i = 1; i < tok.length && split === null; i++) {
      if (keys.includes(tok.slice(0, i)) && values.includes(tok.slice(i))) { split = [tok.slice(0, i), tok.slice(i)]; }
    }
    if (split === null) {
      return { problem: '"' + tok + '" is not a pair: write a key ' + range(keys) +
               " followed by a value " + range(values) + ", like " + keys[0] + values[values.length - 1] };
    }
    if (k.includes(keys.indexOf(split[0]))) {
      return { problem: "the key " + split[0] + " is stored twice; each key may be stored once" };
    }
    k.push(keys.indexOf(split[0])); v.push(values.indexOf(split[1]));
  }
  if (!keys.includes(query)) { return { problem: '"' + query + '" is not a key: look up one of ' + range(keys) }; }
  return { keys: k, values: v, query: keys.indexOf(query) };
}
function forward(s) {
  const X = s.keys.map((kk, j) => P.key_embed[kk].map((x, c) => x + P.value_embed[s.values[j]][c]));
  const q = vecmat(P.query_embed[s.query], P.w_q).map((x) => x * inv);
  const K = X.map((x) => vecmat(x, P.w_k)), V = X.map((x) => vecmat(x, P.w_v));
  const a = softmax(K.map((k) => dot(q, k)));
  const z = new Array(V[0].length).fill(0);
  a.forEach((aj, j) => { for (let c = 0; c < z.length; c++) { z[c] += aj * V[j][c]; } });
  const logits = vecmat(z, P.w_out).map((x, c) => x + P.b_out[c]);
  return { weights: a, logits: logits };
}
function result(s, f) {
  const probs = softmax(f.logits);
  let best = 0;
  f.logits.forEach((x, c) => { if (x > f.logits[best]) { best = c; } });
  let answer = "The model answers <strong>" + esc(values[best]) + "</strong> (probability " +
    fmt(probs[best], 3) + "); ";
  const at = s.keys.indexOf(s.query);
  if (at >= 0) {
    const stored = values[s.values[at]];
    answer += "the value stored with " + esc(keys[s.query]) + " is " + esc(stored) + ": " +
      (stored === values[best] ? "right" : "wrong") + ".";
  } else {
    answer += "no pair holds the key " + esc(keys[s.query]) + ", so no answer is right.";
  }
  const rows = s.keys.map((kk, j) => barRow((j + 1) + " " + esc(keys[kk] + values[s.values[j]]) +
    (kk === s.query ? " (looked up)" : ""), f.weights[j], 3, null, kk === s.query ? "lc-mark" : ""));
  return '<p class="lc-answer">' + answer + '</p>\n<p>Attention of the query <strong>? ' +
    esc(keys[s.query]) + '</strong> over the stored pairs:</p>\n<table class="lc-weights"><thead>' +
    '<tr><th scope="col">pair</th><th scope="col">weight</th><th scope="col" class="lc-num">a</th>' +
    '</tr></thead><tbody>' + rows.join("") + '</tbody></table>';
}
function update() {
  const s = parse(field.value);
  if (s.problem) {
    error.textContent = "Not a sequence the model reads: " + s.problem + ".";
    field.setAttribute("aria-invalid", "true");
    out.hidden = true;
    return;
  }
  error.textContent = ""; field.removeAttribute("aria-invalid");
  const f = forward(s);
  out.innerHTML = result(s, f);
  out.dataset.logits = JSON.stringify(f.logits);
  out.hidden = false;
}
activate();
field.addEventListener("input", update);
field.addEventListener("keydown", (e) => { if (e.key === "Enter") { update(); } });
update();
