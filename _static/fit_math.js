/* The attention book: display equations fit their column.
 *
 * The maths is typeset when the book is built (_ext/fast_pages.py). A display equation
 * wider than its column is shrunk to fit, down to MIN_SCALE of its normal size. One that
 * would need more shrinking keeps MIN_SCALE and scrolls inside its own box, marked by a
 * shadow, a "scroll" hint and a tab stop, so it is never cut without a cue. Long
 * equations are best broken in the source; this is the safety net for narrow screens.
 *
 * When. book.css lays a chapter's sections out only when the reader nears them
 * (content-visibility: auto), so that a phone paints the first screen without working
 * through the whole chapter, and measuring an equation would lay its section out. So:
 * - At the start, nothing is measured but the article's width: the build wrote each
 *   equation's width (data-width, in em, MathJax's own measure), and an equation that
 *   could be wider than its column (wider than the column less what notes, lists and an
 *   equation number may take of it, INSETS) is marked "math-wide": book.css lets it
 *   scroll sideways with a shadow on the side where more of it is hidden, and it gets a
 *   tab stop, so that a keyboard can scroll it. A page checked whole without scrolling
 *   (an accessibility checker, a keyboard user, a script that opens every fold) finds
 *   every equation either narrower than its column or marked. <html data-math-fitted> is
 *   set once this is done.
 * - When an equation comes near the screen (IntersectionObserver), again when the fonts
 *   have loaded, and whenever the window's width changes, it is measured in its page and
 *   fitted: shrunk, or scrolling with its hint and tab stop; one that fits loses the mark
 *   and the tab stop.
 */
(function () {
  "use strict";
  var MIN_SCALE = 0.72;
  var INSETS = 0.25;  /* the share of the column an equation's surroundings may take */

  /* The room is the box's own width: an equation number beside it (Sphinx's
     span.eqno) narrows it below its column's width. */
  function room(m) { return Math.min(m.clientWidth, m.parentElement.clientWidth); }
  /* The hint goes below the equation's block (div.math is a flex row). */
  function blockOf(m) { return m.parentElement.matches("div.math") ? m.parentElement : m; }

  /* Writes, then reads, then writes, for all equations at once: a few layouts per page
     instead of a few per equation. An equation that is not shown (in a closed fold) is
     left as it is. Returns the equations fitted. */
  function fit(list) {
    var boxes = list.filter(function (m) { return m.parentElement.clientWidth > 0; });
    boxes.forEach(function (m) {  /* undo an earlier fit */
      if (m.style.fontSize) { m.style.fontSize = ""; }
      m.classList.remove("math-wide");
      m.removeAttribute("tabindex");
      if (m.classList.contains("math-scroll")) {
        m.classList.remove("math-scroll");
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
    return boxes;
  }

  /* The equations not yet measured that could be wider than their column, from the
     widths the build wrote: one read of the article's width, no section laid out. An
     equation without a width is taken to be wide. */
  function mark(boxes) {
    var article = document.querySelector(".bd-article") || document.body;
    var px = parseFloat(getComputedStyle(article).fontSize) || 16;
    var column = article.clientWidth * (1 - INSETS);
    boxes.forEach(function (m) {
      if (m.dataset.fitted) { return; }
      var wide = !(parseFloat(m.dataset.width) * px <= column);
      m.classList.toggle("math-wide", wide);
      if (wide) { m.tabIndex = 0; } else { m.removeAttribute("tabindex"); }
    });
    document.documentElement.dataset.mathFitted = "1";
  }

  function start() {
    var boxes = Array.prototype.slice.call(
      document.querySelectorAll('mjx-container[display="true"]'));
    if (!boxes.length) {  /* no display maths on this page */
      document.documentElement.dataset.mathFitted = "1";
      return;
    }
    var fitted = function () {
      return boxes.filter(function (m) { return m.dataset.fitted; });
    };
    mark(boxes);
    if (!("IntersectionObserver" in window)) {
      fit(boxes);
    } else {
      var observer = new IntersectionObserver(function (entries) {
        var near = entries.filter(function (e) { return e.isIntersecting; })
          .map(function (e) { return e.target; });
        fit(near).forEach(function (m) { observer.unobserve(m); });
      }, { rootMargin: "50% 0px" });
      boxes.forEach(function (m) { observer.observe(m); });
    }
    if (document.fonts && document.fonts.ready) {
      document.fonts.ready.then(function () { fit(fitted()); });
    }
    var width = window.innerWidth;
    var timer = null;
    window.addEventListener("resize", function () {
      if (window.innerWidth === width) { return; }  /* a phone's address bar */
      width = window.innerWidth;
      clearTimeout(timer);
      timer = setTimeout(function () { fit(fitted()); mark(boxes); }, 100);
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
