// The Python runtime of the page: Pyodide, the roofline wheel and two helper modules,
// in a module Web Worker so that a long program never freezes the page. A page has up
// to two, from the same script and snapshot (runtime.mjs): one runs the reader's
// programs, the other answers the calculators, so that no Run can reach a calculator.
//
// It boots as soon as its script runs, from what the page put in the script URL's
// fragment: #<JSON {role, indexURL, wheelURL, snapshotURL, modules: [{name, url}], share, prepared}>,
// URI-encoded; role is "run" (the reader's programs) or "calc" (the calculators), and the worker
// does only that. `share`: once restored, hand the page the compiled wasm and the raw snapshot
// (see "prepared" below); `prepared`: boot from those, which come with the channel message,
// instead of downloading and reading them again (boot.mjs, bootPython's `prepared`).
// (Not from a first message: Chrome hands a new worker its messages only once the page's
// main thread is free to say the worker exists, and during page load it seldom is.)
//
// The channel. A reader's program runs in this worker and can call anything the
// worker's global scope holds (Pyodide's `js` module is globalThis): js.postMessage,
// self.onmessage, the prototypes of MessagePort and MessageEvent. So the page listens
// to nothing this worker posts globally. Its first message carries a MessagePort; every
// request and reply after that goes over the port, which lives only in this module's
// scope, and the few built-ins that touch it are captured before any program runs (a
// program may replace MessagePort.prototype.postMessage, or a getter the next reply
// would call, to catch the port as it passes). Whatever a program posts or throws
// never reaches the page as a reply.
//
// Protocol (every message is a plain object with a `type`):
//   page -> worker, on the worker itself, once and first
//     {type: "channel", port, prepared?}     the page's MessagePort; everything below goes over it.
//                                            prepared: {module, snapshot} (a WebAssembly.Module and a
//                                            Uint8Array) for a worker whose fragment asks for them
//   page -> worker, on the port
//     {type: "interrupt", buffer}            a SharedArrayBuffer whose first Int32 Pyodide polls
//                                            for Stop, the second set once Stop is pressed
//                                            (sent only when the page is cross-origin isolated)
//     {type: "run", id, code, filename, stopURL?, sentAt?}
//                                            run a reader's program; stopURL (without isolation): a blob:
//                                            URL the page revokes when Stop is pressed (RevokedURLSignal),
//                                            sentAt: Date.now() when the page sent it
//     {type: "load", calculator, module}     import calculator `calculator`'s module ahead of its first
//                                            use (the page sends one per calculator it shows)
//     {type: "calc", id, calculator, module, request, own}
//                                            calculator `calculator`'s view, from its Python module at
//                                            URL `module`; `request` is a JSON string, `own` the
//                                            reader's own GPU or model texts as one ("" for none;
//                                            roofline_views.answer)
//   worker -> page, on the port
//     {type: "prepared", module, snapshot}   (with `share`, before "booted") what a later worker of
//                                            this tab may boot from; sent before any program runs
//     {type: "restoring"}                    the snapshot is read and checked; Python's memory is being
//                                            restored (the page's watchdog runs until "booted")
//     {type: "booted", timings}              ready; timings in ms, and `fallback` if the snapshot failed
//     {type: "bytecode"}                     (the Runs' worker) the package's .pyc are written: the Run
//                                            after a Stop imports its package copy without compiling it
//     {type: "boot-failed", message}         a readable reason; the page offers Retry
//     {type: "out", id, chunks: [[stream, text]], dropped: {chars, lines}}
//                                            printed text, batched (see OutputBatcher); `dropped`
//                                            is what a flood printed that was never sent
//     {type: "done", id, status, traceback?, ms, memoryGrowth, fatal}
//                                            memoryGrowth: bytes of wasm memory above the booted worker's;
//                                            fatal: Pyodide died, the page replaces the worker
//     {type: "calc", id, response, ms, fatal} `response` is a JSON string; fatal as for "done"
// Messages that arrive during boot wait for it; after that each is handled one at a
// time, so a run and a calculation never interleave. What a reader waits for (run,
// calc) goes first, in order; background work (load, and importing the next Run's
// package copy) only when nothing else waits, so a Run pressed during boot is not
// queued behind the calculators' imports.

// Captured while nothing but this script has run (see "The channel" above).
const { apply } = Reflect;
const postOnPort = MessagePort.prototype.postMessage;
const dataOf = Object.getOwnPropertyDescriptor(MessageEvent.prototype, "data").get;
const parseJSON = JSON.parse;
const stringify = JSON.stringify;
// For Stop without isolation (RevokedURLSignal): a program may replace these before the next Run.
const Request = XMLHttpRequest;
const { open: openRequest, send: sendRequest } = XMLHttpRequest.prototype;
const clock = performance.now.bind(performance);
const SIGINT = 2;

let port = null; // the page's MessagePort, once its first message has brought it
let outbox = []; // what boot said before the port arrived

/** Send `message` to the page over the port (held until the port arrives: boot may finish first). */
function send(message, transfer = []) {
  if (port) apply(postOnPort, port, [message, transfer]);
  else outbox[outbox.length] = [message, transfer];
}

// What the channel message brought to boot from (a `prepared` worker waits for it), or null.
let resolvePrepared;
const preparedArrived = new Promise((resolve) => (resolvePrepared = resolve));

/** `value` if it is a compiled module and a raw snapshot, else null: a page's message is checked too. */
function preparedFrom(value) {
  if (typeof value !== "object" || value === null) return null;
  const { module, snapshot } = value;
  if (!(module instanceof WebAssembly.Module) || !(snapshot instanceof Uint8Array) || !snapshot.byteLength) return null;
  return { module, snapshot };
}

import { bootPython, MODULE_DIR } from "./boot.mjs";
// boot.mjs's own imports, named here too so that they download beside it, not after it.
import "./snapshot_codec.mjs";
import "./snapshot_store.mjs";
import "./wasm_memory.mjs";

/** Where the page's helper modules and calculators live in Pyodide's file system (boot.mjs writes them). */
const PAGE_DIRECTORY = MODULE_DIR;

async function fetchText(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${new URL(url).pathname}: HTTP ${response.status}`);
  return response.text();
}
let pyodide = null;
let booting = null;
let role = "run";
let interrupt = null; // Int32Array [signal] that Pyodide polls; the page writes SIGINT (2) for Stop
let stopFlag = null; // Int32Array [1 once Stop was pressed], beside it in the same shared buffer
let baselineMemory = 0; // bytes of wasm memory once booted: what a run is compared with
let runCell = null;
let prepareRun = null;
let writeBytecode = null;
let packageSources = null;
let answerCalculator = null;
const calculators = new Map(); // name -> module URL it was loaded from
const waiting = { reader: [], background: [] }; // tasks (async functions) not yet started
let draining = false;

/**
 * Run `task` once boot is over and every reader's task queued before it has run; a
 * `background` task also waits for every reader's task queued while it waits. A failing
 * task does not stop the ones after.
 */
function schedule(task, { background = false } = {}) {
  waiting[background ? "background" : "reader"].push(task);
  drain();
}

async function drain() {
  if (draining) return;
  draining = true;
  try {
    await booting.catch(() => {}); // a failed boot said so ("boot-failed"); each task checks for Python
    while (waiting.reader.length || waiting.background.length) {
      // Before background work, let the page's messages in (a Run pressed while the last task
      // ran): awaiting a task only waits for microtasks, and messages are tasks of their own.
      if (!waiting.reader.length) await new Promise((resolve) => setTimeout(resolve, 0));
      const task = waiting.reader.shift() ?? waiting.background.shift();
      if (!task) continue;
      try {
        await task();
      } catch {
        // each task reports its own failure to the page
      }
    }
  } finally {
    draining = false;
  }
}

/**
 * Send printed text to the page without flooding it. The worker is busy running Python
 * while a program prints, so no timer can fire: every decision is made inside write().
 *
 * - By time: a message costs a token; tokens come back one per INTERVAL_MS, up to BURST.
 *   A program that prints a few lines and then computes shows them at once; one that
 *   prints in a tight loop sends 1000 / INTERVAL_MS messages a second, each holding
 *   everything since the last.
 * - By size: what waits is capped at MAX_PENDING characters, the newest kept, whether or
 *   not it ends in a newline (sys.stdout.write in a loop never does), and at
 *   MAX_PENDING_RUNS runs of one stream: the page makes a span of each, and writes that
 *   switch stream every time (one character each) made 64k spans a message, for the
 *   page's main thread to receive, check and lay out. What is cut is counted and sent as
 *   `dropped`, so the page can say how much it never received.
 */
class OutputBatcher {
  static INTERVAL_MS = 50;
  static BURST = 4;
  static MAX_PENDING = 64 * 1024;
  // As many as the pane shows (runcell.mjs, MAX_OUTPUT_SPANS): a message with more could only be
  // shown from its newest this many, so nothing the pane would show is cut (1,024 made holes in
  // a few thousand lines of stdout and stderr in turn, which the pane holds whole).
  static MAX_PENDING_RUNS = 10_000;

  constructor(id) {
    this.id = id;
    this.parts = []; // [stream, text] as written; parts[0 .. head) are already dropped
    this.head = 0;
    this.pending = 0;
    this.runs = 0; // runs of one stream among parts[head ..): the spans the page would make
    this.midLine = false; // the last cut ended inside a line
    this.dropped = { chars: 0, lines: 0 };
    this.tokens = OutputBatcher.BURST;
    this.refilled = performance.now();
  }

  write(stream, text) {
    if (text) {
      const last = this.parts[this.parts.length - 1];
      if (this.head === this.parts.length || last[0] !== stream) this.runs += 1;
      this.parts.push([stream, text]);
      this.pending += text.length;
      if (this.pending > OutputBatcher.MAX_PENDING || this.runs > OutputBatcher.MAX_PENDING_RUNS) this.trim();
    }
    const now = performance.now();
    const earned = Math.floor((now - this.refilled) / OutputBatcher.INTERVAL_MS);
    if (earned > 0) {
      this.tokens = Math.min(OutputBatcher.BURST, this.tokens + earned);
      this.refilled += earned * OutputBatcher.INTERVAL_MS;
    }
    if (this.tokens > 0 && this.flush()) this.tokens -= 1;
  }

  /**
   * Keep the newest MAX_PENDING_RUNS runs and MAX_PENDING characters; count the lines and
   * characters cut. Whole writes go first.
   */
  trim() {
    while (this.runs > OutputBatcher.MAX_PENDING_RUNS) this.cutHead(Infinity);
    while (this.pending > OutputBatcher.MAX_PENDING) this.cutHead(this.pending - OutputBatcher.MAX_PENDING);
    if (this.head > 1024 && this.head * 2 > this.parts.length) {
      this.parts = this.parts.slice(this.head);
      this.head = 0;
    }
  }

  /** Cut the oldest write waiting, or its first `length` characters if it is longer, and count them. */
  cutHead(length) {
    const [stream, text] = this.parts[this.head];
    const cut = length >= text.length ? text : text.slice(0, length);
    this.midLine = !cut.endsWith("\n");
    this.dropped.chars += cut.length;
    this.dropped.lines += countLines(cut);
    this.pending -= cut.length;
    if (cut.length < text.length) this.parts[this.head] = [stream, text.slice(cut.length)];
    else {
      this.head += 1;
      if (this.parts[this.head][0] !== stream) this.runs -= 1;
    }
  }

  /**
   * A cut that ended inside a line left that line's tail at the head of `chunks`: drop it too,
   * through its newline, counting it, so the page starts at a line's start. Kept where nothing
   * follows it (one long line is shown by its end).
   */
  dropLineTail(chunks) {
    this.midLine = false;
    const first = chunks.findIndex(([, text]) => text.includes("\n"));
    if (first === -1) return;
    const [stream, text] = chunks[first];
    const end = text.indexOf("\n") + 1;
    if (end === text.length && first === chunks.length - 1) return;
    for (const [, whole] of chunks.slice(0, first)) this.dropped.chars += whole.length;
    this.dropped.chars += end;
    this.dropped.lines += 1;
    chunks.splice(0, first + 1, ...(end < text.length ? [[stream, text.slice(end)]] : []));
  }

  /** Send what waits, if anything, each stream's run of writes joined; returns whether a message went. */
  flush() {
    if (this.head === this.parts.length && !this.dropped.chars) return false;
    const chunks = [];
    for (let index = this.head; index < this.parts.length; index += 1) {
      const [stream, text] = this.parts[index];
      const last = chunks[chunks.length - 1];
      if (last && last[0] === stream) last[1].push(text);
      else chunks.push([stream, [text]]);
    }
    const joined = chunks.map(([stream, texts]) => [stream, texts.join("")]);
    if (this.midLine) this.dropLineTail(joined);
    send({ type: "out", id: this.id, chunks: joined, dropped: this.dropped });
    this.parts = [];
    this.head = 0;
    this.pending = 0;
    this.runs = 0;
    this.dropped = { chars: 0, lines: 0 };
    return true;
  }
}

function countLines(text) {
  let count = 0;
  for (let index = text.indexOf("\n"); index !== -1; index = text.indexOf("\n", index + 1)) count += 1;
  return count;
}

/** The boot settings from this script's URL fragment (see the top of this file). */
function bootSettings() {
  try {
    return JSON.parse(decodeURIComponent(self.location.hash.slice(1)));
  } catch {
    throw new Error("the worker's URL does not say where Python's files are");
  }
}

/** Share `buffer` with the page for Stop (see the protocol); Pyodide polls it once it is up. */
function useInterruptBuffer(buffer) {
  interrupt = new Int32Array(buffer, 0, 1);
  stopFlag = new Int32Array(buffer, 4, 1);
  pyodide?.setInterruptBuffer(interrupt);
}

async function boot({ indexURL, wheelURL, snapshotURL, modules, sizes = {}, share = false, prepared: waitForPrepared = false }) {
  // boot.mjs restores Python from the build's snapshot, or boots it plainly if it cannot;
  // either way the package is imported and the helper modules are on sys.path.
  const onRestoring = () => send({ type: "restoring" });
  const prepared = waitForPrepared && snapshotURL ? await preparedArrived : null;
  const keep = share === true && !prepared;
  // Bytes downloaded of the total so far, for the page's "Starting Python" line (runtime.mjs).
  const onProgress = ({ loaded, total }) => send({ type: "progress", loaded, total });
  const booted = await bootPython({ indexURL, wheelURL, snapshotURL, modules, onRestoring, prepared, keep, onProgress, sizes });
  if (booted.prepared) {
    // The snapshot's buffer goes to the page (no copy); Python has its own copy of the memory.
    const { module, snapshot } = booted.prepared;
    send({ type: "prepared", module, snapshot }, [snapshot.buffer]);
  }
  pyodide = booted.pyodide;
  // A program that calls input() gets EOFError at once: a worker has no prompt() to wait on.
  pyodide.setStdin({ error: true });
  // Calculator modules load when first asked (see calc); the spare package for the next
  // Run is imported once the queued work is done (see onmessage).
  const cell = pyodide.pyimport("roofline_cell");
  runCell = cell.run;
  prepareRun = cell.prepare;
  writeBytecode = cell.write_bytecode;
  packageSources = () => {
    const sources = cell.package_sources();
    const paths = sources.toJs();
    sources.destroy();
    return paths;
  };
  answerCalculator = pyodide.pyimport("roofline_views").answer;
  if (interrupt) pyodide.setInterruptBuffer(interrupt);
  baselineMemory = wasmMemory();
  return booted.timings;
}

/**
 * Stop without isolation, where no memory is shared: Pyodide's interrupt buffer is any object it
 * can read a signal from as buffer[0] (and reset with buffer[0] = 0), and Python reads it every
 * few dozen bytecodes. This one answers from a field, and every CHECK_MS tries to read `url`, a
 * blob: URL the page made for this Run, with a synchronous request: once the page has revoked it
 * (Stop), the request fails and the next read is SIGINT, so Python raises KeyboardInterrupt and
 * stays warm, as with the shared buffer. A check is a round trip to the browser: 2 ms here on a
 * quiet machine, 5–60 ms at a load average of 13, so the wait after one is at least WAIT_PER_CHECK
 * times what it took (a Run spends at most a fifth of its time checking, and Stop lands within a
 * few hundred ms). What a program does to this object or to the requests only keeps Stop from
 * reaching it: the page then replaces the worker, as when an interrupt is not honoured in time.
 */
class RevokedURLSignal {
  static CHECK_MS = 100;
  static WAIT_PER_CHECK = 4;

  /**
   * `queuedFor`: ms the Run waited in this worker (behind the next Run's package copy, say) before
   * it started; Stop may have come meanwhile, so such a Run checks at once, not CHECK_MS later.
   */
  constructor(url, queuedFor = 0) {
    this.url = url;
    this.signal = 0;
    this.stopped = false;
    this.nextCheck = clock() + (queuedFor > RevokedURLSignal.CHECK_MS ? 0 : RevokedURLSignal.CHECK_MS);
  }

  get 0() {
    if (!this.stopped && clock() >= this.nextCheck) this.check();
    return this.signal;
  }

  set 0(value) {
    this.signal = value;
  }

  check() {
    const started = clock();
    try {
      const request = new Request();
      apply(openRequest, request, ["GET", this.url, false]);
      apply(sendRequest, request, []);
    } catch {
      this.stopped = true; // revoked: the page pressed Stop
      this.signal = SIGINT;
      return;
    }
    const cost = clock() - started;
    this.nextCheck = clock() + Math.max(RevokedURLSignal.CHECK_MS, cost * RevokedURLSignal.WAIT_PER_CHECK);
  }
}
let revokable = null; // the RevokedURLSignal of the Run in progress, without isolation

function clearInterrupt() {
  if (interrupt) Atomics.store(interrupt, 0, 0);
  if (stopFlag) Atomics.store(stopFlag, 0, 0);
}

/** Whether the reader pressed Stop during this run (a program may raise KeyboardInterrupt itself). */
function stopPressed() {
  return (stopFlag !== null && Atomics.load(stopFlag, 0) === 1) || revokable?.stopped === true;
}

/** Bytes of wasm memory: it grows when a program allocates and never shrinks. */
function wasmMemory() {
  return pyodide._module.HEAP8.buffer.byteLength;
}

function run({ id, code, filename, stopURL, sentAt }) {
  const started = performance.now();
  const output = new OutputBatcher(id);
  const emit = (stream, text) => output.write(stream, text);
  clearInterrupt();
  if (!interrupt && typeof stopURL === "string" && stopURL.startsWith("blob:")) {
    // Date.now(): the page's clock and this worker's performance.now() do not share an origin.
    revokable = new RevokedURLSignal(stopURL, Number.isFinite(sentAt) ? Date.now() - sentAt : 0);
    pyodide.setInterruptBuffer(revokable);
  }
  let answer;
  let fatal = false;
  try {
    answer = parseJSON(runCell(code, filename, emit, stopPressed));
  } catch (error) {
    // Only an interrupt landing outside the reader's code gets here (or a runtime fault).
    const stopped = String(error && error.message).includes("KeyboardInterrupt");
    answer = stopped ? { status: "stopped" } : { status: "error", traceback: String(error && error.message) };
    fatal = isFatal(error);
  } finally {
    if (revokable) pyodide.setInterruptBuffer(undefined); // nothing to poll between Runs
    revokable = null;
  }
  output.flush();
  // The page restarts a worker whose memory a program left far above where it started, or whose
  // Pyodide died (then its memory cannot be read).
  const grown = fatal ? 0 : wasmMemory() - baselineMemory;
  // Only these fields, typed: the answer is what a program's Python returned.
  const status = ["ok", "error", "stopped"].includes(answer?.status) ? answer.status : "error";
  const traceback = typeof answer?.traceback === "string" ? answer.traceback : undefined;
  send({ type: "done", id, status, traceback, ms: performance.now() - started, memoryGrowth: grown, fatal });
}

/** Write calculator `name`'s module (from `url`) into Python's path and import it, once. */
async function loadCalculator(name, url) {
  if (calculators.get(name) === url) return;
  if (!/^[a-z][a-z0-9_]*$/.test(name)) throw new Error(`${JSON.stringify(name)} is not a calculator name`);
  const text = await fetchText(url);
  pyodide.FS.writeFile(`${PAGE_DIRECTORY}/roofline_calculator_${name}.py`, text);
  pyodide.runPython(
    `import importlib, sys; sys.modules.pop("roofline_calculator_${name}", None); importlib.invalidate_caches(); import roofline_calculator_${name}`,
  );
  calculators.set(name, url);
  // Everything imported so far lives as long as the page: move it out of the cyclic
  // collector's reach, so a collection during a calculation has little to walk.
  pyodide.runPython("import gc; gc.collect(); gc.freeze()");
}

/**
 * Whether `error` says Pyodide has died (a JavaScript stack overflow inside Python, say): every
 * later call then throws "Pyodide already fatally failed", so the page must replace the worker.
 */
function isFatal(error) {
  return error?.pyodide_fatal_error === true || /Pyodide already (fatally failed|exited)/.test(String(error?.message));
}

async function calc({ id, calculator, module, request, own }) {
  const started = performance.now();
  clearInterrupt();
  let response;
  let fatal = false;
  try {
    await loadCalculator(calculator, module);
    response = answerCalculator(calculator, request, typeof own === "string" ? own : "");
  } catch (error) {
    fatal = isFatal(error);
    response = stringify({ error: String(error && error.message) });
  }
  send({ type: "calc", id, response: String(response), ms: performance.now() - started, fatal });
}

/** Import the next Run's own copy of the package while nothing else waits. */
function prepareWhenIdle() {
  // A failure here is not lost: run() prepares again and reports it where a reader sees it.
  schedule(() => prepareRun(), { background: true });
}

booting = Promise.resolve()
  .then(() => {
    const settings = bootSettings();
    role = settings.role === "calc" ? "calc" : "run";
    return boot(settings);
  })
  .then(
    (timings) => {
      send({ type: "booted", timings });
      if (role !== "run") return;
      // The package's .pyc, one file a task, so that the copy after the first Run (or a Stop) reads them.
      // Listed in a task too: whatever goes wrong there (an interrupt, say) must not leave `booting`
      // rejected once the page has been told "booted", or no task would ever run.
      schedule(() => {
        try {
          for (const source of packageSources()) schedule(() => writeBytecode(source), { background: true });
          schedule(() => send({ type: "bytecode" }), { background: true });
        } finally {
          prepareWhenIdle();
        }
      }, { background: true });
    },
    (error) => send({ type: "boot-failed", message: String((error && error.message) || error) }),
  );

/** One request from the page (over the port). */
function handle(data) {
  if (data.type === "interrupt") {
    useInterruptBuffer(data.buffer);
    return;
  }
  const background = data.type === "load";
  schedule(async () => {
    if (!pyodide || !runCell) return; // boot failed; the page restarts the worker on Retry
    if (data.type === "run" && role === "run") {
      run(data);
      prepareWhenIdle();
    } else if (data.type === "calc" && role === "calc") await calc(data);
    else if (data.type === "load" && role === "calc") {
      // A failure shows at the calculator's first calc, which loads again and reports it.
      await loadCalculator(data.calculator, data.module).catch(() => {});
    }
  }, { background });
}

// The page's first message brings the port; nothing else is read from the worker's own
// queue, where a program could dispatch a message of its own (self.dispatchEvent).
self.onmessage = (event) => {
  if (port) return;
  const data = apply(dataOf, event, []);
  if (!data || data.type !== "channel" || !(data.port instanceof MessagePort)) return;
  port = data.port;
  port.onmessage = (message) => handle(apply(dataOf, message, []));
  resolvePrepared(preparedFrom(data.prepared));
  for (const [message, transfer] of outbox) apply(postOnPort, port, [message, transfer]);
  outbox = null;
};
