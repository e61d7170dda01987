/* Appended by the build (fast_pages.py) to the theme's script, which calls
   lcTabStop(el) for every code block and notebook output where it used to measure
   each at once: on load, on resize and whenever the article changes.

   The theme gives a box a tab stop (tabIndex 0) when its content scrolls, so that a
   keyboard can scroll it, and takes it away (-1) when it does not. Measuring a box
   lays it out, and measuring all of them at load laid out the whole chapter, sections
   the browser had skipped (content-visibility: auto in book.css) included: on a phone
   that held the first paint back by a second. Here a box is measured when it comes
   near the screen; until then it keeps a tab stop, since it may scroll. */
function lcTabStop(el) {
  if (!lcTabStop.watch) {
    lcTabStop.watch = new IntersectionObserver(function (entries) {
      entries.forEach(function (entry) {
        if (!entry.isIntersecting) return;
        var box = entry.target;
        box.tabIndex = box.scrollWidth > box.clientWidth ||
          box.scrollHeight > box.clientHeight ? 0 : -1;
      });
    }, { rootMargin: "200px 0px" });
  }
  if (!el.hasAttribute("tabindex")) el.tabIndex = 0;
  // Observing afresh reports the box's place at once: a resize re-measures what is shown.
  lcTabStop.watch.unobserve(el);
  lcTabStop.watch.observe(el);
}
