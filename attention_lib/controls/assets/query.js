/* Pick a query: row i of scaled dot-product attention, as
   attention_lib.scaled_dot_product_attention computes it, built up term by term. */
const tokens = DATA("tokens"), Q = DATA("q"), K = DATA("k"), V = DATA("v");
const choice = $(".lc-query");
function update() {
  const i = choice.selectedIndex;
  const s = scaledScores(Q[i], K);
  const a = softmax(s);
  $(".lc-weights tbody").innerHTML = a.map((aj, j) =>
    barRow(esc(tokens[j]), aj, 4, fmt(s[j], 4), "")).join("");
  let total = new Array(V[0].length).fill(0);
  const items = a.map((aj, j) => {
    const term = V[j].map((x) => aj * x);
    total = total.map((t, c) => t + term[c]);
    return fill("term_item", { label: esc(tokens[j]), a: fmt(aj, 4), v: vec(V[j], 4),
                               term: vec(term, 4), total: vec(total, 4) });
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
