// Render TeX to HTML with the KaTeX in node_modules, for scripts/prerender_math.py.
// stdin: a JSON list of {"tex": "...", "display": true|false}; stdout: a JSON list of HTML
// strings in the same order. A formula KaTeX cannot parse stops the run with one line
// naming it, so a typo fails the build instead of reaching a reader as red text.
import { readFileSync } from "node:fs";
import katex from "katex";

const items = JSON.parse(readFileSync(0, "utf8"));
const out = [];
for (const { tex, display } of items) {
  try {
    // htmlAndMathml: the HTML is what a reader sees, the MathML what a screen reader reads.
    out.push(katex.renderToString(tex, { displayMode: display, throwOnError: true, output: "htmlAndMathml" }));
  } catch (error) {
    process.stderr.write(`KaTeX cannot render ${JSON.stringify(tex)}: ${error.message}\n`);
    process.exit(2);
  }
}
process.stdout.write(JSON.stringify(out));
