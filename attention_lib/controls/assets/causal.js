/* Causal generation step by step: at step t the new query q_t attends to the cached keys
   1..t; its weights are row t of scaled_dot_product_attention(q, k, v, causal=True). */
const tokens = DATA("tokens"), Q = DATA("q"), K = DATA("k"), V = DATA("v");
const n = tokens.length;
const prev = $(".lc-prev"), next = $(".lc-next"), slider = $(".lc-step");
function update(t) {
  slider.value = t;
  prev.setAttribute("aria-disabled", t <= 1 ? "true" : "false");
  next.setAttribute("aria-disabled", t >= n ? "true" : "false");
  $(".lc-now").innerHTML = fill("step_now", { t: t, n: n, token: esc(tokens[t - 1]) });
  $(".lc-tokens").innerHTML = tokens.map((x, j) => fill("token_chip", {
    cls: j + 1 === t ? "lc-new" : j + 1 < t ? "lc-seen" : "lc-future", j: j + 1,
    token: esc(x), tail: j + 1 === t ? " (new query)" : j + 1 > t ? " (masked)" : "" })).join("");
  $(".lc-t").textContent = t;
  $(".lc-cache").innerHTML = tokens.slice(0, t).map((x, j) => fill("cache_item", {
    j: j + 1, token: esc(x), k: vec(K[j], 2), v: vec(V[j], 2) })).join("");
  const s = scaledScores(Q[t - 1], K.slice(0, t));
  const a = softmax(s).concat(new Array(n - t).fill(0));
  $(".lc-weights tbody").innerHTML = tokens.map((x, j) =>
    barRow((j + 1) + " " + esc(x), a[j], 3, j < t ? fmt(s[j], 3) : "masked",
           j < t ? "" : "lc-off")).join("");
  const z = new Array(V[0].length).fill(0);
  for (let j = 0; j < t; j++) { for (let c = 0; c < z.length; c++) { z[c] += a[j] * V[j][c]; } }
  $(".lc-output").textContent = vec(z, 3);
  $(".lc-output").dataset.exact = JSON.stringify(z);
}
activate();
prev.addEventListener("click", () => { const t = parseInt(slider.value, 10); if (t > 1) { update(t - 1); } });
next.addEventListener("click", () => { const t = parseInt(slider.value, 10); if (t < n) { update(t + 1); } });
slider.addEventListener("input", () => update(parseInt(slider.value, 10)));
update(parseInt(slider.value, 10));
