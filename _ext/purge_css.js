// Keeps of the pages' stylesheet only the rules that can apply somewhere on the site
// (PurgeCSS): a rule stays when every class, id and element it names occurs in a page or
// in a script of the site (scripts add classes as the reader acts: Bootstrap's "show",
// the theme's "pst-squeeze"...), or when it matches one of the patterns kept whole
// because Bootstrap builds those names at run time. Reads JSON on stdin:
//   {"css": "...", "pages": ["<html>...", ...], "content": ["glob", ...], "keep": ["regexp", ...]}
// ("pages": the pages as they will be served; "content": the other files to read)
// and writes {"css": "..."} on stdout.
"use strict";
const path = require("path");
const modules = process.env.BOOK_NODE_MODULES || path.join(__dirname, "node_modules");
const { PurgeCSS } = require(path.join(modules, "purgecss"));

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", async () => {
  const request = JSON.parse(input);
  const [result] = await new PurgeCSS().purge({
    content: request.content.concat(request.pages.map((raw) => ({ raw: raw, extension: "html" }))),
    css: [{ raw: request.css }],
    safelist: { greedy: request.keep.map((p) => new RegExp(p)) },
  });
  process.stdout.write(JSON.stringify({ css: result.css }));
});
