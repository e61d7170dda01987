/* W_Q and W_K times c: softmax(c^2 Q K^T / sqrt(d_k)), as
   attention_lib.projection_scale_weights computes it. */
const tokens = DATA("tokens"), Q = DATA("q"), K = DATA("k");
const S = Q.map((q) => scaledScores(q, K));  /* (Q K^T) / sqrt(d_k) */
function update(c) {
  const f = c * c;
  $(".lc-c2").textContent = fmt(f, 2);
  $(".lc-heat tbody").innerHTML = S.map((row, i) => fill("heat_row", {
    label: esc(tokens[i]), cells: softmax(row.map((x) => f * x)).map(heatCell).join("") }))
    .join("");
}
activate();
const scale = linkScale($(".lc-scale"), $(".lc-scale-number"), $(".lc-error"), update);
update(scale());
