// The roofline wheel inside Pyodide under Node: the package's golden cases, the Run cell's
// program and the calculator's view must give exactly what CPython gives, both when Python
// is restored from the build's memory snapshot and when it boots plainly; a broken snapshot
// must be refused, with its reason, and a refused one must give a plain boot that prints the same.
//
// Both boots go through the page's own docs/javascripts/runtime/boot.mjs, with a `fetch`
// that reads files instead of a server.
//
// Run by tests/test_node_pyodide.py (pytest -m node), which builds the wheel and the
// snapshot, computes the CPython answers and passes everything through one JSON file
// named by ROOFLINE_NODE_FIXTURE:
//   {wheel, snapshot, pyodide, program: {path, filename, output}, modules: [{name, path}], calculator,
//    cases: [{call, expected}], views: [{params, expected}],
//    simulation_program, simulations: [{call, expected}]}
// Standalone: node --test tests/node/golden.test.mjs (with that variable set).
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { gunzipSync, gzipSync } from "node:zlib";
import { after, before, describe, test } from "node:test";
import { bootPython, MODULE_DIR, readSnapshot } from "../../docs/javascripts/runtime/boot.mjs";
import {
  decodeSnapshot,
  readContainer,
  recordsDigest,
  SNAPSHOT_FORMAT,
  sealedSnapshot,
} from "../../docs/javascripts/runtime/snapshot_codec.mjs";
import { dataSegments, initialMemory } from "../../docs/javascripts/runtime/wasm_memory.mjs";

const fixture = JSON.parse(readFileSync(process.env.ROOFLINE_NODE_FIXTURE, "utf8"));
// Floats: the same IEEE arithmetic in both runtimes, but libm's pow/log may differ in the
// last bit between glibc and Emscripten's musl; 1e-12 allows that and nothing more.
const REL = 1e-12;

/** fetch() for file paths and file: URLs, as the browser's fetch is for the served site. */
async function readFile(url, init = {}) {
  const path = url.startsWith("file:") ? fileURLToPath(url) : url;
  let bytes;
  try {
    bytes = readFileSync(path);
  } catch {
    return new Response(null, { status: 404 });
  }
  return new Response(init.method === "HEAD" ? null : bytes, { status: 200 });
}

function boot(snapshotURL) {
  return bootPython({
    indexURL: `${fixture.pyodide}/`,
    wheelURL: fixture.wheel,
    snapshotURL,
    modules: fixture.modules.map(({ name, path }) => ({ name, url: path })),
    fetch: readFile,
  });
}

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

function runProgram(pyodide) {
  const output = [];
  const run = pyodide.pyimport("roofline_cell").run;
  const answer = JSON.parse(
    run(readFileSync(fixture.program.path, "utf8"), fixture.program.filename, (_stream, text) => output.push(text)),
  );
  return { answer, output: output.join("") };
}

/** Every golden check against a Python booted by `start()`, which must say how it started. */
function goldenSuite(title, start, expectSnapshot) {
  describe(title, () => {
    let pyodide;
    let timings;

    before(async () => {
      ({ pyodide, timings } = await start());
    });

    after(() => {
      pyodide = null;
    });

    test("started the expected way", () => {
      assert.equal(timings.snapshot === true, expectSnapshot, JSON.stringify(timings));
      assert.equal(timings.fallback, undefined, JSON.stringify(timings));
    });

    test("runs Python 3.14 with the package from the wheel and its spec files on disk", () => {
      const where = pyodide.runPython("import sys, roofline; f'{sys.version_info[:2]} {roofline.__file__}'");
      assert.match(where, /^\(3, 14\) \/lib\/python3\.14\/site-packages\/roofline\/__init__\.py$/);
      // The snapshot holds memory, not files: the data files must be there again.
      assert.ok(pyodide.FS.analyzePath("/lib/python3.14/site-packages/roofline/data/gpus.toml").exists);
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
      const { answer, output } = runProgram(pyodide);
      assert.deepEqual(answer, { status: "ok" });
      assert.equal(output, fixture.program.output);
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
}

goldenSuite("roofline in Pyodide, plain boot", () => boot(null), false);
// As a page asks for it: with the digest the build recorded (hooks/runtime.py), checked before restoring.
const builtDigest = readContainer(gunzipSync(readFileSync(fixture.snapshot))).header.sha256;
goldenSuite("roofline in Pyodide, restored from the snapshot", () => boot(`${fixture.snapshot}#sha256=${builtDigest}`), true);

test("a snapshot the host sent with Content-Encoding: gzip (so it arrives unzipped) restores too", async () => {
  const path = join(mkdtempSync(join(tmpdir(), "roofline-snapshot-")), "unzipped.snapshot.gz");
  writeFileSync(path, gunzipSync(readFileSync(fixture.snapshot)));
  const { pyodide, timings } = await boot(path);
  assert.equal(timings.snapshot, true, JSON.stringify(timings));
  const { answer, output } = runProgram(pyodide);
  assert.deepEqual(answer, { status: "ok" });
  assert.equal(output, fixture.program.output);
});

test("a restored Python holds the first Run's package copy, the rest frozen out of the collector's way", async () => {
  const { pyodide } = await boot(fixture.snapshot);
  const spare = "import roofline_cell, sys\nsorted(roofline_cell._spare or ())[:1] == ['roofline'] and roofline_cell._spare['roofline'] is not sys.modules['roofline']";
  assert.equal(pyodide.runPython(spare), true);
  // The package, its specs and the helper modules are frozen (gc.freeze at build time);
  // the spare copy is not, so it can be collected once a Run has used it.
  const collectable =
    "import gc, sys, roofline_cell\nseen = {id(o) for o in gc.get_objects()}\n" +
    "(id(roofline_cell._spare) in seen, id(sys.modules['roofline'].__dict__) in seen, gc.get_freeze_count() > 0)";
  assert.deepEqual(pyodide.runPython(collectable).toJs(), [true, false, true]);
});

test("a snapshot taken after Python's heap outgrew pyodide.asm.wasm's initial memory restores", async () => {
  // Pyodide copies a snapshot over a fresh instance's memory as it is; the page grows that
  // memory first (boot.mjs withMemory). The build's own snapshot may or may not have outgrown
  // it, so this one is made to: 48 MB held by Python, past the wasm's 30 MiB.
  const { loadPyodide, version } = await import(pathToFileURL(`${fixture.pyodide}/pyodide.mjs`).href);
  const maker = await loadPyodide({ indexURL: `${fixture.pyodide}/`, _makeSnapshot: true, stdout: () => {}, stderr: () => {} });
  const initial = maker._module.HEAP8.length;
  // The page's helper modules live in MODULE_DIR, on sys.path as make_snapshot.mjs leaves it.
  maker.runPython(`import sys\nsys.path.insert(0, ${JSON.stringify(MODULE_DIR)})\nheld = bytearray(b'roofline' * 6_000_000)`);
  const raw = maker.makeMemorySnapshot();
  assert.ok(raw.length > initial + 40e6, `the snapshot holds ${raw.length} bytes, the fresh memory ${initial}`);
  const sealed = await sealedSnapshot(raw, { pyodide: version, wheel: "test", modules: [] });
  const path = join(mkdtempSync(join(tmpdir(), "roofline-snapshot-")), "grown.snapshot.gz");
  writeFileSync(path, gzipSync(sealed));
  const { pyodide, timings } = await boot(path);
  assert.equal(timings.snapshot, true, JSON.stringify(timings));
  assert.equal(pyodide.runPython("bytes(held[-8:]).decode(), len(held)").toJs().join(" "), "roofline 48000000");
  const { answer, output } = runProgram(pyodide);
  assert.deepEqual(answer, { status: "ok" });
  assert.equal(output, fixture.program.output);
});

test("two restores of one snapshot draw different random numbers", async () => {
  const draw = async () => (await boot(fixture.snapshot)).pyodide.runPython("import random; random.random()");
  assert.notEqual(await draw(), await draw());
});

/** The served container with one byte of its memory changed after it was made (its digest left as it was). */
function alteredAfterwards(container) {
  const bytes = gunzipSync(container);
  const body = bytes.indexOf(10, bytes.indexOf(10) + 1) + 1;
  assert.equal(bytes.readUInt32LE(body), 0, "the snapshot starts with a literal record");
  bytes[body + 16] ^= 0xff; // after the first record's four words: Pyodide's magic number
  return gzipSync(bytes);
}

/** The served container with `edit(header)` applied to its header line. */
function withHeader(container, edit) {
  const bytes = gunzipSync(container);
  const formatEnd = bytes.indexOf(10);
  const headerEnd = bytes.indexOf(10, formatEnd + 1);
  const header = JSON.parse(bytes.subarray(formatEnd + 1, headerEnd).toString("utf8"));
  edit(header);
  const rest = bytes.subarray(headerEnd);
  return gzipSync(Buffer.concat([bytes.subarray(0, formatEnd + 1), Buffer.from(JSON.stringify(header)), rest]));
}

/**
 * The served container, its header saying it was encoded against another wasm build's memory,
 * sealed again with a digest that covers that header: what a snapshot made from another build
 * of pyodide.asm.wasm looks like.
 */
async function otherWasm(container) {
  const bytes = gunzipSync(container);
  const { header, recordsAt } = readContainer(bytes);
  assert.ok(header.base, "the snapshot is encoded against pyodide.asm.wasm's initial memory");
  header.base.digest = header.base.digest === "00000000" ? "00000001" : "00000000";
  const records = bytes.subarray(recordsAt);
  header.sha256 = await recordsDigest(header, records);
  const head = Buffer.from(`${SNAPSHOT_FORMAT}\n${JSON.stringify(header)}\n`);
  return gzipSync(Buffer.concat([head, records]));
}

/** The base image a container was encoded against, from the fixture's pyodide.asm.wasm. */
function baseOf(header) {
  const segments = dataSegments(new Uint8Array(readFileSync(`${fixture.pyodide}/pyodide.asm.wasm`)));
  return initialMemory(segments, { total: header.rawBytes, at: header.base.at });
}

/**
 * A tampered snapshot made as carefully as a tamperer could: the A100's bandwidth in the parsed
 * specs multiplied by ten in memory, the container rebuilt, and a fresh, correct digest in its
 * header. Only the page's own record of the digest can tell.
 */
async function tamperedAndDigestedAgain(container) {
  const bytes = gunzipSync(container);
  const { header } = readContainer(bytes);
  const raw = decodeSnapshot(bytes, baseOf(header));
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  let changed = 0;
  for (let at = 0; at + 8 <= raw.length; at += 8) {
    if (view.getFloat64(at, true) === 2.039e12) {
      view.setFloat64(at, 20.39e12, true);
      changed += 1;
    }
  }
  assert.ok(changed > 0, "the parsed A100 bandwidth is in the snapshot's memory");
  const { sha256, rawBytes, ...made } = header;
  return gzipSync(await sealedSnapshot(raw, made, baseOf(header)));
}

// Made before the suite (its callback cannot wait): rebuilding 31 MB of memory takes a few seconds.
const tampered = await tamperedAndDigestedAgain(readFileSync(fixture.snapshot));
const fromOtherWasm = await otherWasm(readFileSync(fixture.snapshot));

// Every reason a snapshot is refused comes from readSnapshot, and bootPython falls back on any of
// them the same way: each reason is checked on readSnapshot alone, and one of them (the last check
// it makes, after the wasm's bytes were used) all the way to a plain boot that prints the same.
// A plain boot takes seconds; seven of them were most of this file's time.
describe("a broken snapshot is refused, and Python boots plainly instead", () => {
  const container = readFileSync(fixture.snapshot);
  const folder = mkdtempSync(join(tmpdir(), "roofline-snapshot-"));
  const digest = readContainer(gunzipSync(container)).header.sha256;
  const pageSays = `#sha256=${digest}`; // what the built page names beside the file's address
  const version = import(pathToFileURL(`${fixture.pyodide}/pyodide.mjs`).href).then((script) => script.version);
  const wasm = new Uint8Array(readFileSync(`${fixture.pyodide}/pyodide.asm.wasm`));
  const broken = {
    "a truncated download": [container.subarray(0, container.length >> 1), /truncated or corrupted/],
    "a snapshot made for another Pyodide": [
      gzipSync(`${SNAPSHOT_FORMAT}\n${JSON.stringify({ pyodide: "0.27.0", rawBytes: 0 })}\n`),
      /made for Pyodide 0\.27\.0, and this is 314\./,
    ],
    "memory altered after the digest was taken": [alteredAfterwards(container), /does not match its digest/],
    "a snapshot made from another pyodide.asm.wasm": [fromOtherWasm, /made from another pyodide\.asm\.wasm/],
    "a snapshot with no digest": [withHeader(container, (header) => delete header.sha256), /carries no digest/],
    "a snapshot whose digest is not the page's": [
      withHeader(container, (header) => (header.sha256 = "0".repeat(64))),
      /not the one this page was built with/,
      pageSays,
    ],
    "tampered memory with a fresh digest of its own": [
      tampered,
      /not the one this page was built with/,
      pageSays,
    ],
  };
  const written = (what, bytes) => {
    const path = join(folder, `${what.replaceAll(" ", "-").replaceAll("'", "")}.snapshot.gz`);
    writeFileSync(path, bytes);
    return path;
  };
  for (const [what, [bytes, reason, fragment = ""]] of Object.entries(broken)) {
    test(`refused: ${what}`, async () => {
      const url = written(what, bytes) + fragment;
      await assert.rejects(readSnapshot(readFile, url, version, Promise.resolve(wasm)), reason);
    });
  }

  test("a refused snapshot gives a plain boot that prints the same, and says why", async () => {
    const what = "a snapshot made from another pyodide.asm.wasm";
    const [bytes, reason] = broken[what];
    const { pyodide, timings } = await boot(written(what, bytes));
    assert.notEqual(timings.snapshot, true);
    assert.match(timings.fallback, reason);
    const { answer, output } = runProgram(pyodide);
    assert.deepEqual(answer, { status: "ok" });
    assert.equal(output, fixture.program.output);
  });
});

/** A Cache API (CacheStorage) in memory, as a browser's caches is to the worker: what was put, by key. */
function memoryCaches() {
  const entries = new Map();
  const cache = {
    match: async (key) => (entries.has(String(key)) ? new Response(entries.get(String(key)).slice()) : undefined),
    keys: async () => [...entries.keys()].map((url) => ({ url })),
    put: async (key, response) => void entries.set(String(key), new Uint8Array(await response.arrayBuffer())),
    delete: async (key) => entries.delete(typeof key === "string" ? key : key.url),
  };
  return { entries, open: async () => cache };
}

describe("the raw snapshot kept between pages (snapshot_store.mjs)", () => {
  const { header } = readContainer(gunzipSync(readFileSync(fixture.snapshot)));
  const pageSays = `${fixture.snapshot}#sha256=${header.sha256}&raw=${header.rawSha256}`;
  const bootKeeping = (caches) =>
    bootPython({
      indexURL: `${fixture.pyodide}/`,
      wheelURL: fixture.wheel,
      snapshotURL: pageSays,
      modules: fixture.modules.map(({ name, path }) => ({ name, url: path })),
      fetch: readFile,
      caches,
    });
  const settled = () => new Promise((resolve) => setTimeout(resolve, 50)); // the copy is kept in the background

  test("the first page keeps it; the next restores from it and prints the same", async () => {
    const caches = memoryCaches();
    const first = await bootKeeping(caches);
    assert.equal(first.timings.snapshot, true);
    assert.notEqual(first.timings.kept, true);
    await settled();
    assert.equal(caches.entries.size, 1);
    const [copy] = caches.entries.values();
    assert.equal(copy.length, header.rawBytes);
    const second = await bootKeeping(caches);
    assert.equal(second.timings.kept, true, JSON.stringify(second.timings));
    const { answer, output } = runProgram(second.pyodide);
    assert.deepEqual(answer, { status: "ok" });
    assert.equal(output, fixture.program.output);
  });

  test("a kept copy that is not the page's (written by anything on the origin) is replaced, never restored", async () => {
    const caches = memoryCaches();
    await bootKeeping(caches);
    await settled();
    const [key] = caches.entries.keys();
    const poisoned = caches.entries.get(key).slice();
    // The parsed A100 bandwidth, ten times larger, as a hostile Run could write it.
    const view = new DataView(poisoned.buffer);
    for (let at = 0; at + 8 <= poisoned.length; at += 8) {
      if (view.getFloat64(at, true) === 2.039e12) view.setFloat64(at, 20.39e12, true);
    }
    caches.entries.set(key, poisoned);
    const { pyodide, timings } = await bootKeeping(caches);
    assert.equal(timings.snapshot, true);
    assert.notEqual(timings.kept, true);
    const bandwidth = "from roofline import builtin_specs\nbuiltin_specs().gpus['a100-80gb'].bandwidth_bytes_per_s";
    assert.notEqual(pyodide.runPython(bandwidth), 20.39e12);
    const { answer, output } = runProgram(pyodide);
    assert.deepEqual(answer, { status: "ok" });
    assert.equal(output, fixture.program.output);
    await settled();
    assert.deepEqual([...caches.entries.keys()], [key]);
    assert.notDeepEqual(caches.entries.get(key), poisoned); // the served snapshot's bytes again
  });

  test("a page that names no raw digest keeps nothing", async () => {
    const caches = memoryCaches();
    const { timings } = await bootPython({
      indexURL: `${fixture.pyodide}/`,
      wheelURL: fixture.wheel,
      snapshotURL: `${fixture.snapshot}#sha256=${header.sha256}`,
      modules: fixture.modules.map(({ name, path }) => ({ name, url: path })),
      fetch: readFile,
      caches,
    });
    assert.equal(timings.snapshot, true);
    await settled();
    assert.equal(caches.entries.size, 0);
  });
});
