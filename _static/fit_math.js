/* The attention book: display equations fit their column.
 *
 * The maths is typeset when the book is built (_ext/fast_pages.py). Once the
 * page is parsed, again when its fonts have loaded, and whenever the window is
 * resized, a display equation wider than its column is shrunk to fit, down to
 * MIN_SCALE of its normal size. One that would need more shrinking keeps MIN_SCALE and
 * scrolls inside its own box, marked by a shadow and a "scroll" hint, so it is
 * never cut without a cue. Long equations are best broken in the source; this
 * is the safety net for narrow screens.
 */
(function () {
  "use strict";
  var MIN_SCALE = 0.72;

  function fit() {
    var boxes = document.querySelectorAll('mjx-container[display="true"]');
    boxes.forEach(function (m) {
      m.style.fontSize = "";
      m.classList.remove("math-scroll");
      /* The hint goes below the equation's block (div.math is a flex row). */
      var block = m.parentElement.matches("div.math") ? m.parentElement : m;
      var hint = block.nextElementSibling;
      if (hint && hint.classList.contains("math-scroll-hint")) { hint.remove(); }
      /* The room is the box's own width: an equation number beside it
         (Sphinx's span.eqno) narrows it below its column's width. */
      var room = function () { return Math.min(m.clientWidth, m.parentElement.clientWidth); };
      if (!room() || m.scrollWidth <= room()) { return; }
      var scale = 1;
      for (var i = 0; i < 4 && m.scrollWidth > room() && scale > MIN_SCALE; i++) {
        scale = Math.max(MIN_SCALE, scale * (room() - 2) / m.scrollWidth);
        m.style.fontSize = (100 * scale).toFixed(1) + "%";
      }
      if (m.scrollWidth > room()) {
        m.classList.add("math-scroll");
        var note = document.createElement("span");
        note.className = "math-scroll-hint";
        note.textContent = "scroll the equation sideways \u2192";
        block.after(note);
      }
    });
    document.documentElement.dataset.mathFitted = "1";
  }

  function start() {
    if (!document.querySelector(".math")) { return; }  /* no maths on this page */
    fit();
    if (document.fonts && document.fonts.ready) { document.fonts.ready.then(fit); }
  }

  var timer = null;
  window.addEventListener("resize", function () {
    clearTimeout(timer);
    timer = setTimeout(fit, 100);
  });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
