/* Pick a query: row i of scaled dot-product attention, as
   attention_lib.scaled_dot_product_attention computes it, built up term by term. */
const tokens = DATA("tokens"), Q = DATA("q"), K = DATA("k"), V = DATA("v");
const choice = $(".lc-query");
const inv = 1 / Math.sqrt(Q[0].length);
function termItem(label, a, v, term, total) {
  return '<li><span>+ ' + fmt(a, 4) + ' × v<sub>' + label + '</sub> ' + vec(v, 4) + ' = ' +
    '<span class="lc-vec lc-term">' + vec(term, 4) + '</span></span>' +
    '<span>sum so far <span class="lc-vec lc-partial">' + vec(total, 4) + '</span></span></li>';
}
function update() {
  const i = choice.selectedIndex;
  const q = Q[i].map((x) => x * inv);  /* q / sqrt(d_k) first, as the library */
  const s = K.map((k) => dot(q, k));
  const a = softmax(s);
  $(".lc-weights tbody").innerHTML = a.map((aj, j) =>
    barRow(esc(tokens[j]), aj, 4, fmt(s[j], 4), "")).join("");
  let total = new Array(V[0].length).fill(0);
  const items = a.map((aj, j) => {
    const term = V[j].map((x) => aj * x);
    total = total.map((t, c) => t + term[c]);
    return termItem(esc(tokens[j]), aj, V[j], term, total);
  });
  $(".lc-terms").innerHTML = items.join("");
  $(".lc-output").textContent = vec(total, 4);
  $(".lc-output").dataset.exact = JSON.stringify(total);
  $$(".lc-name").forEach((el) => { el.textContent = tokens[i]; });
}
activate();
choice.addEventListener("change", update);
choice.addEventListener("input", update);
update();
