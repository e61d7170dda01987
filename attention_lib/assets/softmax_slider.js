
(function () {
  var root = document.getElementById(__ROOT_ID__);
  if (!root || root.dataset.ready) { return; }
  root.dataset.ready = "1";
  var scores = JSON.parse(root.dataset.scores);
  var input = root.querySelector("input[type=range]");
  var shown = root.querySelector(".ss-scale");
  var cells = root.querySelectorAll(".ss-weight");
  var bars = root.querySelectorAll(".ss-bar");
  var entropy = root.querySelector(".ss-entropy");
  var grad = root.querySelector(".ss-grad");
  var note = root.querySelector(".ss-static-note");
  if (note) { note.remove(); }  /* the script runs: the slider is live */
  function update() {
    var c = parseFloat(input.value);
    var z = scores.map(function (s) { return c * s; });
    var m = Math.max.apply(null, z);
    var e = z.map(function (x) { return Math.exp(x - m); });
    var total = e.reduce(function (a, b) { return a + b; }, 0);
    var p = e.map(function (x) { return x / total; });
    var h = 0, g = 0;
    p.forEach(function (pi, i) {
      if (pi > 0) { h -= pi * Math.log(pi); }
      g = Math.max(g, pi * (1 - pi));  /* largest entry of diag(p) - p p^T */
      cells[i].textContent = pi.toFixed(3);
      bars[i].style.width = (100 * pi).toFixed(1) + "%";
    });
    shown.textContent = c.toFixed(2);
    entropy.textContent = h.toFixed(3);
    grad.textContent = g.toFixed(4);
  }
  input.addEventListener("input", update);
  update();
})();
