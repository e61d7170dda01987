/* The attention book: display equations fit their column.
 *
 * The maths is typeset when the book is built (_ext/fast_pages.py). When it
 * comes near the screen, again when the fonts have loaded, and whenever the
 * window is resized, a display equation wider than its column is shrunk to fit,
 * down to MIN_SCALE of its normal size. One that would need more shrinking keeps MIN_SCALE and
 * scrolls inside its own box, marked by a shadow and a "scroll" hint, so it is
 * never cut without a cue. Long equations are best broken in the source; this
 * is the safety net for narrow screens.
 */
(function () {
  "use strict";
  var MIN_SCALE = 0.72;

  /* The room is the box's own width: an equation number beside it (Sphinx's
     span.eqno) narrows it below its column's width. */
  function room(m) { return Math.min(m.clientWidth, m.parentElement.clientWidth); }
  /* The hint goes below the equation's block (div.math is a flex row). */
  function blockOf(m) { return m.parentElement.matches("div.math") ? m.parentElement : m; }

  /* Writes, then reads, then writes, for all equations at once: a few layouts per page
     instead of a few per equation. */
  function fit(boxes) {
    boxes.forEach(function (m) {  /* undo an earlier fit */
      if (m.style.fontSize) { m.style.fontSize = ""; }
      if (m.classList.contains("math-scroll")) {
        m.classList.remove("math-scroll");
        m.removeAttribute("tabindex");
        var hint = blockOf(m).nextElementSibling;
        if (hint && hint.classList.contains("math-scroll-hint")) { hint.remove(); }
      }
    });
    var wide = boxes.map(function (m) {
      return { m: m, room: room(m), width: m.scrollWidth, scale: 1 };
    }).filter(function (b) { return b.room && b.width > b.room; });
    for (var i = 0; i < 4 && wide.length; i++) {
      var shrinking = wide.filter(function (b) { return b.scale > MIN_SCALE; });
      if (!shrinking.length) { break; }
      shrinking.forEach(function (b) {
        b.scale = Math.max(MIN_SCALE, b.scale * (b.room - 2) / b.width);
        b.m.style.fontSize = (100 * b.scale).toFixed(1) + "%";
      });
      shrinking.forEach(function (b) { b.room = room(b.m); b.width = b.m.scrollWidth; });
      wide = wide.filter(function (b) { return b.width > b.room; });
    }
    wide.forEach(function (b) {
      b.m.classList.add("math-scroll");
      b.m.tabIndex = 0;  /* a box that scrolls can be scrolled by keyboard */
      var note = document.createElement("span");
      note.className = "math-scroll-hint";
      note.textContent = "scroll the equation sideways \u2192";
      blockOf(b.m).after(note);
    });
    boxes.forEach(function (m) { m.dataset.fitted = "1"; });
    document.documentElement.dataset.mathFitted = "1";
  }

  /* book.css lays sections out only when the reader nears them (content-visibility),
     so equations are fitted as they come near the screen, a few at a time, and never
     measured while their section is skipped. */
  function start() {
    var boxes = Array.prototype.slice.call(
      document.querySelectorAll('mjx-container[display="true"]'));
    if (!boxes.length) { return; }  /* no display maths on this page */
    var fitted = function () {
      return boxes.filter(function (m) { return m.dataset.fitted; });
    };
    if (!("IntersectionObserver" in window)) {
      fit(boxes);
    } else {
      var observer = new IntersectionObserver(function (entries) {
        var near = entries.filter(function (e) { return e.isIntersecting; })
          .map(function (e) { return e.target; });
        near.forEach(function (m) { observer.unobserve(m); });
        if (near.length) { fit(near); }
      }, { rootMargin: "50% 0px" });
      boxes.forEach(function (m) { observer.observe(m); });
    }
    if (document.fonts && document.fonts.ready) {
      document.fonts.ready.then(function () { fit(fitted()); });
    }
    var timer = null;
    window.addEventListener("resize", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { fit(fitted()); }, 100);
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
