// Typesets the book's maths at build time with MathJax 3 (CommonHTML output), as
// MathJax did in the reader's browser: one MathJax document per page, so equation
// numbers and \label/\ref work as they did, with the assistive MathML that screen
// readers read. Reads JSON on stdin:
//   {"config": {tex options}, "pages": [{"fontURL": "...", "math": [["tex", true], ...]}]}
// and writes {"pages": [{"html": ["<mjx-container ...>", ...], "css": "..."}]} on stdout.
// A display formula's container carries its width in em (data-width, MathJax's own
// measure), so that _static/fit_math.js knows which formulas may be wider than their
// column without laying out the page.
"use strict";
const path = require("path");
const modules = process.env.BOOK_NODE_MODULES || path.join(__dirname, "node_modules");
const need = (name) => require(path.join(modules, "mathjax-full", "js", name));
const { mathjax } = need("mathjax.js");
const { TeX } = need("input/tex.js");
const { CHTML } = need("output/chtml.js");
const { liteAdaptor } = need("adaptors/liteAdaptor.js");
const { RegisterHTMLHandler } = need("handlers/html.js");
const { AssistiveMmlHandler } = need("a11y/assistive-mml.js");
const { AllPackages } = need("input/tex/AllPackages.js");
const { STATE } = need("core/MathItem.js");

const adaptor = liteAdaptor();
AssistiveMmlHandler(RegisterHTMLHandler(adaptor));

// MathDocument.convert, keeping the MathItem: its bounding box gives the width.
function typeset(doc, source, display, scale) {
  const item = new doc.options.MathItem(source, doc.inputJax[0], display);
  item.start.node = adaptor.body(doc.document);
  item.setMetrics(16, 8, 1280, 1000000, scale);
  item.convert(doc, STATE.LAST);
  const node = item.typesetRoot;
  if (display) {
    adaptor.setAttribute(node, "data-width", doc.outputJax.getBBox(item, doc).w.toFixed(2));
  }
  return adaptor.outerHTML(node);
}

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const request = JSON.parse(input);
  const tex = Object.assign({}, request.config || {});
  const pages = request.pages.map((page) => {
    const doc = mathjax.document("", {
      InputJax: new TeX(Object.assign({ packages: AllPackages }, tex)),
      OutputJax: new CHTML({ fontURL: page.fontURL, adaptiveCSS: true }),
    });
    // In the reader's browser MathJax matched each formula to the x-height of the text
    // around it: in Chromium with the theme's font it set inline maths at 127.3 % and
    // display maths at 100 %. The same sizes are set here.
    const html = page.math.map(([source, display]) =>
      typeset(doc, source, display, display ? 1 : 1.273));
    const css = adaptor.textContent(doc.outputJax.styleSheet(doc));
    return { html, css };
  });
  process.stdout.write(JSON.stringify({ pages }));
});
