/* The trained soft dictionary: the forward pass of attention_lib.retrieval_forward on the
   sequence typed in the box, with the embedded weights. */
const model = DATA("model"), P = model.params;
const keys = model.vocabulary.keys, values = model.vocabulary.values;
const SEPARATOR = new RegExp(DATA("separator")), MESSAGES = DATA("messages");
const field = $(".lc-seq"), error = $(".lc-error"), out = $(".lc-result");
const say = (name, slots) => fillText(MESSAGES[name], slots);
/* The same rules, in the same order, as attention_lib.controls.parse_retrieval_sequence;
   the separator and the messages come from the library. */
function parse(text) {
  const tokens = text.split(SEPARATOR).filter((t) => t !== "");
  const example = keys[0] + values[values.length - 1] + " ? " + keys[0];
  const span = { keys: keys[0] + "–" + keys[keys.length - 1],
                 values: values[0] + "–" + values[values.length - 1] };
  if (tokens.length === 0) { return { problem: say("empty", { example: example }) }; }
  if (tokens.filter((t) => t === "?").length !== 1 || tokens.indexOf("?") !== tokens.length - 2) {
    return { problem: say("no_query", { example: example }) };
  }
  const pairs = tokens.slice(0, -2), query = tokens[tokens.length - 1];
  if (pairs.length === 0) { return { problem: say("no_pair", {}) }; }
  if (pairs.length > keys.length) { return { problem: say("too_many", { n: keys.length }) }; }
  const k = [], v = [];
  for (const tok of pairs) {
    let split = null;
    for (let i = 1; i < tok.length && split === null; i++) {
      if (keys.includes(tok.slice(0, i)) && values.includes(tok.slice(i))) { split = [tok.slice(0, i), tok.slice(i)]; }
    }
    if (split === null) {
      return { problem: say("not_pair", { token: tok, like: keys[0] + values[values.length - 1],
                                         keys: span.keys, values: span.values }) };
    }
    if (k.includes(keys.indexOf(split[0]))) { return { problem: say("twice", { key: split[0] }) }; }
    k.push(keys.indexOf(split[0])); v.push(values.indexOf(split[1]));
  }
  if (!keys.includes(query)) { return { problem: say("not_key", { token: query, keys: span.keys }) }; }
  return { keys: k, values: v, query: keys.indexOf(query) };
}
function forward(s) {
  const X = s.keys.map((kk, j) => P.key_embed[kk].map((x, c) => x + P.value_embed[s.values[j]][c]));
  const q = vecmat(P.query_embed[s.query], P.w_q);
  const K = X.map((x) => vecmat(x, P.w_k)), V = X.map((x) => vecmat(x, P.w_v));
  const a = softmax(scaledScores(q, K));
  const z = new Array(V[0].length).fill(0);
  a.forEach((aj, j) => { for (let c = 0; c < z.length; c++) { z[c] += aj * V[j][c]; } });
  const logits = vecmat(z, P.w_out).map((x, c) => x + P.b_out[c]);
  return { weights: a, logits: logits };
}
function result(s, f) {
  const probs = softmax(f.logits);
  let best = 0;
  f.logits.forEach((x, c) => { if (x > f.logits[best]) { best = c; } });
  const slots = { answer: esc(values[best]), p: fmt(probs[best], 3), key: esc(keys[s.query]) };
  const at = s.keys.indexOf(s.query);
  let answer;
  if (at >= 0) {
    const stored = values[s.values[at]];
    answer = fill("answer_stored", Object.assign({ stored: esc(stored),
      verdict: stored === values[best] ? "right" : "wrong" }, slots));
  } else {
    answer = fill("answer_absent", slots);
  }
  const rows = s.keys.map((kk, j) => barRow((j + 1) + " " + esc(keys[kk] + values[s.values[j]]) +
    (kk === s.query ? " (looked up)" : ""), f.weights[j], 3, null, kk === s.query ? "lc-mark" : ""));
  return fill("retrieval_result", { answer: answer, key: esc(keys[s.query]), rows: rows.join("") });
}
function update() {
  const s = parse(field.value);
  if (s.problem) {
    error.textContent = fill("sequence_error", { problem: s.problem });
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
update();
