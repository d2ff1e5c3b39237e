// The roofline wheel inside Pyodide under Node: the package's golden cases, the Run cell's
// program and the calculator's view must give exactly what CPython gives.
//
// Run by tests/test_node_pyodide.py (pytest -m node), which builds the wheel, computes the
// CPython answers and passes everything through one JSON file named by ROOFLINE_NODE_FIXTURE:
//   {wheel, pyodide, program: {path, filename, output}, modules: [{name, path}], calculator,
//    cases: [{call, expected}], views: [{params, expected}],
//    simulation_program, simulations: [{call, expected}]}
// Standalone: node --test tests/node/golden.test.mjs (with that variable set).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";

const fixture = JSON.parse(readFileSync(process.env.ROOFLINE_NODE_FIXTURE, "utf8"));
// Floats: the same IEEE arithmetic in both runtimes, but libm's pow/log may differ in the
// last bit between glibc and Emscripten's musl; 1e-12 allows that and nothing more.
const REL = 1e-12;

let pyodide;

function assertSame(actual, expected, where) {
  if (typeof expected === "number" && typeof actual === "number" && !Number.isInteger(expected)) {
    const scale = Math.max(Math.abs(expected), Number.MIN_VALUE);
    assert.ok(Math.abs(actual - expected) <= REL * scale, `${where}: ${actual} != ${expected}`);
  } else if (expected && typeof expected === "object") {
    assert.deepEqual(Object.keys(actual ?? {}).sort(), Object.keys(expected).sort(), `${where}: keys`);
    for (const key of Object.keys(expected)) assertSame(actual[key], expected[key], `${where}.${key}`);
  } else {
    assert.equal(actual, expected, where);
  }
}

describe("roofline in Pyodide", () => {
  before(async () => {
    const { loadPyodide } = await import(new URL("pyodide.mjs", `file://${fixture.pyodide}/`).href);
    pyodide = await loadPyodide({ indexURL: `${fixture.pyodide}/`, packageBaseUrl: `${fixture.pyodide}/` });
    const loaded = await pyodide.loadPackage(fixture.wheel, { messageCallback: () => {} });
    assert.deepEqual(
      loaded.map((pkg) => pkg.name),
      ["roofline"],
      "loadPackage resolves [] when nothing loaded; the wheel must load",
    );
    pyodide.FS.mkdirTree("/home/pyodide/page");
    for (const { name, path } of fixture.modules) {
      pyodide.FS.writeFile(`/home/pyodide/page/${name}`, readFileSync(path, "utf8"));
    }
    pyodide.runPython("import sys; sys.path.insert(0, '/home/pyodide/page')");
  });

  after(() => {
    pyodide = null;
  });

  test("runs Python 3.14 with the package from the wheel", () => {
    const where = pyodide.runPython("import sys, roofline; f'{sys.version_info[:2]} {roofline.__file__}'");
    assert.match(where, /^\(3, 14\) \/lib\/python3\.14\/site-packages\/roofline\/__init__\.py$/);
  });

  for (const { call, expected } of fixture.cases) {
    test(`golden case ${JSON.stringify(call)}`, () => {
      pyodide.globals.set("call_json", JSON.stringify(call));
      const actual = JSON.parse(
        pyodide.runPython("import json, roofline; json.dumps(roofline.estimate(**json.loads(call_json)).to_dict())"),
      );
      assertSame(actual, expected, call.model);
    });
  }

  test("the Run cell's program prints what CPython prints", () => {
    const output = [];
    const run = pyodide.pyimport("roofline_cell").run;
    const answer = JSON.parse(
      run(readFileSync(fixture.program.path, "utf8"), fixture.program.filename, (_stream, text) => output.push(text)),
    );
    assert.deepEqual(answer, { status: "ok" });
    assert.equal(output.join(""), fixture.program.output);
  });

  test("a reader's exception keeps its frames and drops the runtime's", () => {
    const run = pyodide.pyimport("roofline_cell").run;
    const answer = JSON.parse(run("import roofline\nroofline.estimate('h100', 'x')\n", "cell.py", () => {}));
    assert.equal(answer.status, "error");
    assert.match(answer.traceback, /^Traceback \(most recent call last\):\n {2}File "cell\.py", line 2, in <module>/);
    assert.match(answer.traceback, /roofline\/loader\.py/);
    assert.doesNotMatch(answer.traceback, /_pyodide|roofline_cell/);
  });

  for (const { call, expected } of fixture.simulations) {
    test(`simulation ${JSON.stringify(call)} gives byte-identical JSON`, () => {
      pyodide.globals.set("call_json", JSON.stringify(call));
      pyodide.runPython(fixture.simulation_program);
      assert.equal(pyodide.globals.get("answer"), expected);
    });
  }

  for (const { params, expected } of fixture.views) {
    test(`calculator view ${JSON.stringify(params)}`, () => {
      const answer = pyodide.pyimport("roofline_views").answer;
      assertSame(JSON.parse(answer(fixture.calculator, JSON.stringify(params))), expected, "view");
    });
  }

  test("a Run cannot change what later Runs or the calculator compute", () => {
    const run = pyodide.pyimport("roofline_cell").run;
    const answer = pyodide.pyimport("roofline_views").answer;
    const { params, expected } = fixture.views[0];
    const hostile = [
      "from roofline.precisions import BYTES_PER_VALUE; BYTES_PER_VALUE['bf16'] = 1.0",
      "import builtins; builtins.print = lambda *a, **k: None",
      "import json; json.dumps = None",
    ].join("\n");
    assert.deepEqual(JSON.parse(run(hostile, "cell.py", () => {})), { status: "ok" });
    assertSame(JSON.parse(answer(fixture.calculator, JSON.stringify(params))), expected, "view after the Run");
    const output = [];
    const probe = "from roofline.precisions import BYTES_PER_VALUE\nprint(BYTES_PER_VALUE['bf16'])";
    assert.deepEqual(JSON.parse(run(probe, "cell.py", (_stream, text) => output.push(text))), { status: "ok" });
    assert.equal(output.join(""), "2.0\n");
  });
});
