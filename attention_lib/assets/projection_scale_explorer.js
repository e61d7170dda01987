/* W_Q and W_K times c: softmax(c^2 Q K^T / sqrt(d_k)), as
   attention_lib.projection_scale_weights computes it. */
const tokens = DATA("tokens"), Q = DATA("q"), K = DATA("k");
const root_d = Math.sqrt(Q[0].length);
const S = Q.map((q) => K.map((k) => dot(q, k) / root_d));  /* (Q K^T) / sqrt(d_k) */
function update(c) {
  const f = c * c;
  $(".lc-c2").textContent = fmt(f, 2);
  $(".lc-heat tbody").innerHTML = S.map((row, i) => {
    const w = softmax(row.map((x) => f * x));
    return '<tr><th scope="row">' + esc(tokens[i]) + '</th>' + w.map((x) =>
      '<td style="' + heatStyle(x) + '" data-exact="' + x + '">' + fmt(x, 3) + '</td>').join("") +
      '</tr>';
  }).join("");
}
activate();
const scale = linkScale($(".lc-scale"), $(".lc-scale-number"), $(".lc-error"), update);
update(scale());
