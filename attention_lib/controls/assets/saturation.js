/* Saturation explorer: p = softmax(c * s) with s = q.k_j / sqrt(d_k), q.k_j, or the
   tutorial's row; entropy and the size of diag(p) - p p^T (attention_lib.saturation_stats). */
const rows = DATA("rows");
const choice = $(".lc-row"), divide = $(".lc-divide");
const slider = $(".lc-scale"), number = $(".lc-scale-number");
function update(c) {
  const row = rows[choice.selectedIndex];
  const random = row.d_k !== null;
  divide.disabled = !random;
  $(".lc-divide-hint").hidden = random;
  const root_d = random ? Math.sqrt(row.d_k) : 1;
  const s = row.scores.map((x) => (random && divide.checked ? x / root_d : x));
  const z = s.map((x) => x * c);
  const p = softmax(z);
  $(".lc-weights tbody").innerHTML = p.map((pi, j) =>
    barRow("key " + (j + 1), pi, 3, fmt(z[j], 2), "")).join("");
  const jac = jacobianSizes(p);
  $(".lc-entropy").textContent = fmt(entropy(p), 3);
  $(".lc-logn").textContent = fmt(Math.log(p.length), 3);
  $(".lc-jnorm").textContent = fmt(jac.norm, 4);
  $(".lc-jmax").textContent = fmt(jac.max, 4);
  $(".lc-formula").innerHTML = !random ? fill("formula_tutorial", { scores: esc(row.label) })
    : fill(divide.checked ? "formula_divided" : "formula_undivided", { d_k: row.d_k });
  root.dataset.weights = JSON.stringify(p);
}
activate();
const scale = linkScale(slider, number, $(".lc-error"), update);
const now = () => update(scale());
choice.addEventListener("change", now);
choice.addEventListener("input", now);
divide.addEventListener("change", now);
now();
