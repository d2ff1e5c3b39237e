// Every calculator and program of the tests' site, in Pyodide under Node, booted once
// from the site's own wheel and memory snapshot through the page's boot module
// (docs/javascripts/runtime/boot.mjs), as the worker boots them.
//
// Run by tests/test_every_chapter.py: node tests/node/every_widget.mjs FIXTURE.json, where
//   FIXTURE = {pyodide, wheel, snapshot, modules: [{name, path}],
//              calculators: [{name, path, requests: [{...}, ...]}], programs: [{path, filename}], out}
// writes to `out`: {snapshot: bool, fallback, calculators: {name: [answer, ...]},
//                   programs: {path: {status, output}}}
// Each calculator's module is written and imported as the worker does (worker.mjs), and
// each request is answered by roofline_views.answer, as a reader's input would be; each
// program runs through roofline_cell.run, as the Run button runs it.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { bootPython, MODULE_DIR } from "../../docs/javascripts/runtime/boot.mjs";

const fixture = JSON.parse(readFileSync(process.argv[2], "utf8"));

/** fetch() for file paths and file: URLs, as the browser's fetch is for the served site. */
async function readFile(url) {
  const path = url.startsWith("file:") ? fileURLToPath(url) : url;
  try {
    return new Response(readFileSync(path), { status: 200 });
  } catch {
    return new Response(null, { status: 404 });
  }
}

const { pyodide, timings } = await bootPython({
  indexURL: `${fixture.pyodide}/`,
  wheelURL: fixture.wheel,
  snapshotURL: fixture.snapshot,
  modules: fixture.modules.map(({ name, path }) => ({ name, url: path })),
  fetch: readFile,
});
const answer = pyodide.pyimport("roofline_views").answer;
const run = pyodide.pyimport("roofline_cell").run;
const results = { snapshot: timings.snapshot === true, fallback: timings.fallback ?? null, calculators: {}, programs: {} };

for (const { name, path, requests } of fixture.calculators) {
  pyodide.FS.writeFile(`${MODULE_DIR}/roofline_calculator_${name}.py`, readFileSync(path, "utf8"));
  pyodide.runPython(`import importlib; importlib.invalidate_caches(); import roofline_calculator_${name}`);
  results.calculators[name] = requests.map((request) => JSON.parse(answer(name, JSON.stringify(request))));
}
for (const { path, filename } of fixture.programs) {
  const output = [];
  const status = JSON.parse(run(readFileSync(path, "utf8"), filename, (_stream, text) => output.push(text)));
  results.programs[path] = { status: status.status, traceback: status.traceback ?? null, output: output.join("") };
}
writeFileSync(fixture.out, JSON.stringify(results));
