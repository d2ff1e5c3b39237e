// The page's side of the Python runtime: two workers from the same script and snapshot,
// kept across Material's instant navigation (this module is loaded once per tab).
//
//   runtime        runs the reader's programs, for every Run cell of the page, one at a time;
//   runtime.calcs  answers every calculator of the page, and runs nothing a reader wrote.
//
// Isolation. A Run can change anything in its own Python: the package's files (gpus.toml),
// a function's code (roofline_views.answer.__code__), the worker's JavaScript. None of it
// reaches a calculator, which computes in another worker, another Python and another file
// system. Within the Run worker, each Run imports its own copy of the package and the worker
// puts every module's names back afterwards (roofline_cell.py); what that cannot see (a file
// a Run wrote, a class changed in place) lasts until Reset, which, once anything has run,
// replaces the worker.
//
// Trust. Python in a worker can post any message (js.postMessage) and throw any error, so
// the page reads nothing a worker posts on its global scope. Each worker gets a
// MessagePort as its first message, which only the worker's own module holds (worker.mjs
// says how it keeps it from the reader's code), and the page accepts on it only replies
// to requests it made, of the expected shape: a reply for another request, another kind or
// another worker is dropped. Stop stays enabled until the Run it stops has really ended.
//
// State of each worker, also mirrored on <html data-rf-runtime="..."> (Runs) and
// data-rf-calc-runtime (calculators); data-rf-boots and data-rf-calc-boots count starts:
//   idle -> booting -> ready;  booting -> failed (Retry calls start() again);
//   ready -> booting again after Stop had to restart the worker.
//
// How Stop works. When the page is cross-origin isolated (COOP same-origin +
// COEP require-corp), the Run worker shares an Int32Array on a SharedArrayBuffer
// with us and Pyodide polls it: writing SIGINT (2) raises KeyboardInterrupt in
// the reader's program, and Python stays warm. Without isolation there is no
// shared memory: each Run carries a blob: URL the page made for it, which the worker tries to
// read every 100 ms or so while the Run lasts, and Stop revokes it (worker.mjs, RevokedURLSignal):
// the same KeyboardInterrupt, a few hundred ms at most after Stop even on a loaded machine,
// where restarting took seconds. A standby Python booted beside the Runs' once the reader used
// a Run cell (see keepStandby) is swapped in instead when it is already up, or when the Runs'
// worker has not yet compiled the package's .pyc (the next Run would compile it), and when an
// interrupt is not honoured in time (a long call inside C code never checks it, a program
// catches it) Stop falls back to that restart; Reset uses it too. A Run waiting behind another is only taken
// out of the queue: Stop never touches a program it was not pressed for.

const WORKER_URL = new URL("./worker.mjs", import.meta.url);
// Where Pyodide's files are when the page does not say (data-rf-pyodide names its versioned folder).
const DEFAULT_INDEX_URL = new URL("../../assets/runtime/pyodide/", import.meta.url).href;
const MODULES = ["roofline_cell.py", "roofline_views.py"];
const SIGINT = 2;
const INTERRUPT_GRACE_MS = 1500;
// A run that leaves the worker's memory this far above a fresh worker's gets a new worker:
// wasm memory never shrinks, and after a MemoryError the tab would keep gigabytes.
const MEMORY_HEADROOM_BYTES = 512 * 1024 * 1024;
// A restore still running this long after the worker read and checked the snapshot is taken
// to spin (memory that is well-formed but wrong): the worker cannot end it itself, busy in
// wasm, so the page replaces it with one that boots plainly. A restore takes well under a
// second here, a few under heavy load.
const RESTORE_WATCHDOG_MS = 15_000;
// Without isolation, a Run running this long gets a standby Python booted beside it (keepStandby).
// A second: a program's first second is when a reader waits for its output, not when she reaches
// for Stop, and a boot beside it then only slows it (on two cores under load, by about as long as
// the Run itself).
const STANDBY_AFTER_MS = 1000;
// After Stop ended a Run (a standby swapped in, or the interrupt honoured), the next standby waits
// this long, and for a Run pressed meanwhile to end (or take STANDBY_AFTER_MS): the Run a reader
// presses right after Stop gets the cores, not the next standby's boot. Not longer: a reader who
// stops again soon wants that standby up.
const AFTER_STOP_MS = 300;
// Longest text a worker's message may put on the page (a boot failure, a fallback reason).
const MAX_REASON = 300;
const STATUSES = new Set(["ok", "error", "stopped"]);
const STREAMS = new Set(["stdout", "stderr"]);

/**
 * The line a Run cell or calculator shows while `worker` (a PythonWorker) starts: the bytes
 * downloaded of the files' whole (boot.mjs, progressCounter), and the time left at the rate seen
 * since the first bytes came (no estimate until a second of it has been seen). After the download,
 * Python restores its snapshot and unpacks the package (0.5 to 0.9 s from the last byte to
 * "Running…" at 9, 3 and 1.6 Mbit/s on the test machine, more on a slow phone): said as a step,
 * not as a number of seconds the page cannot know.
 */
export function startingText(worker) {
  const progress = worker.progress;
  if (!progress || !progress.total) return "Starting Python: requesting its files…";
  const { loaded, total, at } = progress;
  const mb = (bytes) => (bytes / 1e6).toFixed(1);
  const got = `${mb(loaded)} of ${mb(total)} MB`;
  if (loaded >= total) return `Starting Python: files downloaded (${got}); unpacking them…`;
  // The rate since the first bytes came: the time before (the worker's script, the requests' round
  // trips) would make the first estimates twice too long on a slow link.
  const since = worker.firstProgress;
  const elapsed = since ? at - since.at : 0;
  if (elapsed < 1000 || loaded <= since.loaded) return `Starting Python: downloading ${got}…`;
  const left = Math.max(1, Math.ceil(((total - loaded) / (loaded - since.loaded)) * (elapsed / 1000)));
  return `Starting Python: downloading ${got}, about ${left} s left at this speed, then it unpacks…`;
}

/** Why this browser cannot run Python here, or null if it can. */
export function unsupportedReason() {
  if (typeof WebAssembly !== "object") return "this browser has no WebAssembly";
  if (typeof Worker !== "function") return "this browser has no Web Workers";
  if (typeof BigInt64Array !== "function") return "this browser is too old for the Python runtime";
  if (typeof MessageChannel !== "function") return "this browser has no MessageChannel";
  return null;
}

const isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
const isCount = (value) => Number.isFinite(value) && value >= 0;
/** A worker's words, as text of at most a line: never markup, never a screenful. */
const reason = (value) => (typeof value === "string" ? value : "").split("\n")[0].slice(0, MAX_REASON);

/** What both workers share: where the files are, and why the page boots as it does. */
const settings = {
  wheelURL: null,
  snapshotURL: null,
  indexURL: null,
  // The runtime's files, absolute address -> bytes (data-rf-sizes), for the progress line's total.
  sizes: {},
  version: "",
  // Why this tab boots without the snapshot from now on (a restore the watchdog ended), or "".
  snapshotFailure: "",
  // Why Python waits for the reader (Save-Data, a slow connection), or "": see main.mjs.
  deferredBecause: "",
  // Without isolation: the compiled wasm and the raw snapshot the first Run worker restored from,
  // {module, snapshot}, which every later worker of the tab boots from (a standby in a few hundred
  // ms instead of seconds: no download, gunzip, digest or rebuild), or null. It costs the page the
  // snapshot's 31 MB, kept only where Stop swaps in standbys.
  prepared: null,
};

function withVersion(url) {
  const versioned = new URL(url);
  if (settings.version) versioned.searchParams.set("v", settings.version);
  return versioned.href;
}

/**
 * One worker and its private channel: boot, restart, requests and their replies. What the
 * worker is for (programs or calculators) is the subclass's; this class checks every reply.
 */
class PythonWorker extends EventTarget {
  constructor(role, stateAttribute, bootsAttribute) {
    super();
    this.role = role;
    this.stateAttribute = stateAttribute;
    this.bootsAttribute = bootsAttribute;
    this.state = "idle";
    this.failure = null;
    this.worker = null;
    this.port = null;
    this.pending = new Map(); // id -> {kind, message, resolve, ...}: requests sent and not answered
    this.nextId = 1;
    this.timings = null;
    this.boots = 0;
    this.notice = "";
    this.restoreTimer = null;
    this.bytecode = false;
  }

  setState(state, failure = null) {
    this.state = state;
    this.failure = failure;
    document.documentElement.dataset[this.stateAttribute] = state;
    this.dispatchEvent(new CustomEvent("state", { detail: { state, failure } }));
  }

  /** Boot the worker unless it is booting or ready. Safe to call any number of times. */
  start() {
    if (this.state === "booting" || this.state === "ready") return;
    const unsupported = unsupportedReason();
    if (unsupported) return this.fail(`Python cannot run in this browser: ${unsupported}.`);
    if (!settings.wheelURL) return this.fail("The page does not say where the roofline package is.");
    this.setState("booting");
    this.boots += 1;
    document.documentElement.dataset[this.bootsAttribute] = String(this.boots);
    const spawned = this.takeStandby() ?? this.spawn();
    if (spawned === null) return this.fail("Python cannot run in this browser: it has no module workers.");
    this.adopt(spawned);
  }

  /**
   * A new worker, booting, with its private channel: {worker, port, startedAt, inbox}. What it
   * says before it is adopted (a standby, see RunWorker) waits in `inbox`. Null when the browser
   * has no module workers.
   */
  spawn() {
    const prepared = settings.snapshotFailure ? null : settings.prepared;
    let moduleWorker = false;
    const options = {
      get type() {
        moduleWorker = true; // a browser that reads this option supports module workers
        return "module";
      },
    };
    // The worker boots from these settings as soon as its script runs (see worker.mjs).
    const script = new URL(withVersion(WORKER_URL));
    script.hash = encodeURIComponent(
      JSON.stringify({
        role: this.role,
        indexURL: settings.indexURL ?? DEFAULT_INDEX_URL,
        wheelURL: settings.wheelURL,
        snapshotURL: settings.snapshotFailure ? null : settings.snapshotURL,
        modules: MODULES.map((name) => ({ name, url: withVersion(new URL(name, WORKER_URL)) })),
        sizes: settings.sizes,
        share: this.sharesPrepared() && !prepared,
        prepared: prepared !== null,
      }),
    );
    const worker = new Worker(script.href, options);
    if (!moduleWorker) {
      worker.terminate();
      return null;
    }
    const { port1, port2 } = new MessageChannel();
    const spawned = { worker, port: port1, startedAt: performance.now(), inbox: [], spoken: false, broken: "" };
    port1.onmessage = ({ data }) => {
      spawned.spoken = true; // the worker's own code answered on the port
      if (spawned.worker === this.worker) this.receive(data);
      else spawned.inbox.push(data);
    };
    // Only a script that never ran is reported: once the worker speaks, an error event may be
    // a reader's program throwing in the worker's scope, with words of its choosing.
    worker.onerror = (event) => {
      event.preventDefault();
      if (spawned.spoken) return;
      const message = `The Python runtime could not start (${reason(event.message) || "its worker script failed to load"}).`;
      if (worker === this.worker) this.fail(message);
      else spawned.broken = message;
    };
    // The snapshot is copied into the message (the page keeps its own); the module is shared.
    worker.postMessage({ type: "channel", port: port2, prepared }, [port2]);
    return spawned;
  }

  /** Whether this worker hands the page what later workers boot from (RunWorker, without isolation). */
  sharesPrepared() {
    return false;
  }

  /** Make `spawned` this object's worker: what it said while it waited is read now. */
  adopt(spawned) {
    this.bytecode = false; // until it says it has written the package's .pyc (see RunWorker.stop)
    this.worker = spawned.worker;
    this.port = spawned.port;
    this.startedAt = spawned.startedAt;
    this.progress = null; // this worker's downloads, as it reports them (see progressed)
    this.firstProgress = null; // the first of them with any bytes: the estimate's rate counts from it
    this.connected();
    if (spawned.broken) return this.fail(spawned.broken);
    for (const data of spawned.inbox.splice(0)) if (this.worker === spawned.worker) this.receive(data);
  }

  /** A worker booted ahead of need (RunWorker), or null. */
  takeStandby() {
    return null;
  }

  /** Send `message` over the private port, if a worker is up (start() sends what waits). */
  post(message, transfer = []) {
    this.port?.postMessage(message, transfer);
  }

  /** A new worker was started: send it what it must know (the subclasses' requests). */
  connected() {}

  fail(message) {
    clearTimeout(this.restoreTimer);
    this.dropWorker();
    for (const [id, job] of this.pending) {
      this.pending.delete(id);
      job.resolve(job.kind === "run" ? { status: "failed", message } : { error: message, failed: true });
    }
    this.setState("failed", message);
  }

  dropWorker() {
    this.worker?.terminate();
    this.port?.close();
    this.worker = null;
    this.port = null;
  }

  /** A message from the worker's own code, over the port; anything out of place is dropped. */
  receive(data) {
    if (!isObject(data)) return;
    if (this.state === "booting") {
      if (data.type === "progress") this.progressed(data);
      else if (data.type === "prepared") this.keepPrepared(data);
      else if (data.type === "restoring") {
        clearTimeout(this.restoreTimer);
        this.restoreTimer = setTimeout(() => this.restoreTimedOut(), RESTORE_WATCHDOG_MS);
      } else if (data.type === "booted") this.booted(isObject(data.timings) ? data.timings : {});
      else if (data.type === "boot-failed") this.fail(`Python could not start: ${reason(data.message)}`);
      return;
    }
    if (this.state === "ready" && data.type === "bytecode") this.bytecode = true;
    const job = Number.isInteger(data.id) ? this.pending.get(data.id) : undefined;
    if (this.state === "ready" && job) this.answered(job, data);
  }

  /** Bytes downloaded of the total, from the booting worker: kept, and told to the widgets that wait. */
  progressed({ loaded, total }) {
    if (!isCount(loaded) || !isCount(total)) return;
    this.progress = { loaded, total, at: performance.now() };
    if (loaded > 0) this.firstProgress ??= this.progress;
    this.dispatchEvent(new Event("progress"));
  }

  /**
   * What a booting worker offers for later boots: kept, once, if this worker was asked to share and
   * it is of the right shape. It comes before the worker has run anything, over the private port.
   */
  keepPrepared({ module, snapshot }) {
    if (!this.sharesPrepared() || settings.prepared) return;
    if (!(module instanceof WebAssembly.Module) || !(snapshot instanceof Uint8Array) || !snapshot.byteLength) return;
    settings.prepared = { module, snapshot };
  }

  booted(timings) {
    clearTimeout(this.restoreTimer);
    const numbers = Object.fromEntries(Object.entries(timings).filter(([, value]) => Number.isFinite(value)));
    const fallback = reason(timings.fallback) || settings.snapshotFailure;
    this.timings = {
      ...numbers,
      snapshot: timings.snapshot === true,
      prepared: timings.prepared === true,
      kept: timings.kept === true,
      sinceStart: performance.now() - this.startedAt,
    };
    if (fallback) this.timings.fallback = fallback;
    // Said in the Run cell's status line: a plain boot is correct, only slower.
    this.notice = fallback ? `Python started without its snapshot (${fallback}).` : "";
    this.setState("ready");
  }

  /** A reply for `job`, one of this worker's pending requests (the subclasses know its shape). */
  answered() {}

  /** The watchdog: the worker's restore never finished; boot a worker without the snapshot instead. */
  restoreTimedOut() {
    if (this.state !== "booting") return;
    settings.snapshotFailure = `restoring it took over ${RESTORE_WATCHDOG_MS / 1000} s`;
    this.dropWorker();
    this.setState("idle");
    this.start();
  }

  /** Throw the worker away and boot a new one. */
  restart() {
    clearTimeout(this.restoreTimer);
    this.dropWorker();
    this.setState("idle");
    this.start();
  }
}

/** The Run cells' worker: programs run one at a time, in the order they were pressed. */
class RunWorker extends PythonWorker {
  constructor(calcs) {
    super("run", "rfRuntime", "rfBoots");
    this.calcs = calcs;
    this.queue = []; // runs pressed and not yet sent, oldest first
    this.standby = null; // without isolation: a booted worker for Stop to swap in (keepStandby)
    this.active = null; // the run the worker has, or will have once booted
    this.stopTimer = null;
    this.ranSinceBoot = false;
    this.touched = false; // whether the reader has used a Run cell in this tab (see keepStandby)
    this.standbyTimer = null;
    this.stoppedAt = -Infinity; // when Stop last ended a Run (see AFTER_STOP_MS)
    this.isolated = globalThis.crossOriginIsolated === true && typeof SharedArrayBuffer === "function";
    this.shared = null;
    this.interrupt = null;
    this.stopFlag = null;
    this.newSignal();
  }

  /**
   * A fresh shared buffer for the next worker (isolated pages only). [0]: the signal Pyodide
   * polls; [1]: set when Stop is pressed, so that a KeyboardInterrupt the program raises itself is
   * told apart from Stop. Never reused across workers: a Stop that ended in a restart leaves SIGINT
   * in the old buffer, and a new worker polling it would be interrupted in its own boot (which
   * broke every later Run); a worker being terminated can still write to its buffer, too.
   */
  newSignal() {
    if (!this.isolated) return;
    this.shared = new SharedArrayBuffer(8);
    this.interrupt = new Int32Array(this.shared, 0, 1);
    this.stopFlag = new Int32Array(this.shared, 4, 1);
  }

  /**
   * Where the package wheel and the snapshot are, read from a widget's markup
   * (data-rf-wheel, data-rf-version, data-rf-snapshot, data-rf-pyodide: scripts/sitegen/widgets.py); the
   * first widget seen sets them.
   */
  configureFrom(widget) {
    const { rfWheel, rfVersion, rfSnapshot, rfPyodide, rfSizes } = widget.dataset;
    if (rfSizes && !Object.keys(settings.sizes).length) {
      try {
        for (const [address, size] of Object.entries(JSON.parse(rfSizes))) {
          if (isCount(size)) settings.sizes[new URL(address, location.href).href] = size;
        }
      } catch {
        // Without the sizes the total is what the host says of each file: a guide, no more.
      }
    }
    if (rfWheel) settings.wheelURL ??= new URL(rfWheel, location.href).href;
    if (rfPyodide) settings.indexURL ??= new URL(rfPyodide, location.href).href;
    if (rfSnapshot) settings.snapshotURL ??= new URL(rfSnapshot, location.href).href;
    settings.version ||= rfVersion || "";
  }

  /** The runtime's files in MB as the build measured them (data-rf-sizes), "" before any is known. */
  downloadMegabytes() {
    const total = Object.values(settings.sizes).reduce((sum, size) => sum + size, 0);
    return total ? String(Math.round(total / 1e6)) : "";
  }

  sharesPrepared() {
    return !this.isolated;
  }

  get deferredBecause() {
    return settings.deferredBecause;
  }

  /** Hold the warm-up until the reader uses a widget; `why` is shown in each cell's status. */
  deferUntilUsed(why) {
    settings.deferredBecause = why;
    for (const target of [this, this.calcs]) {
      target.dispatchEvent(new CustomEvent("state", { detail: { state: target.state, failure: target.failure } }));
    }
  }

  /**
   * Start what the page needs: this worker for Run cells, the calculators' for calculators.
   * With both, the calculators' starts once this one is up (or has failed) and has no Run to
   * do, so that on two cores a Run pressed at once does not share them; a calculation asked
   * for earlier starts it at once (see CalcWorker.calculate).
   */
  startPage({ cells, calculators }) {
    if (cells) this.start();
    if (!calculators) return;
    if (!cells || this.state === "ready" || this.state === "failed") this.calcs.start();
    else this.calcs.startAfter(this);
  }

  start() {
    if (this.state !== "booting" && this.state !== "ready") this.ranSinceBoot = false;
    super.start();
  }

  /** The reader has used a Run cell (focused, pressed, typed): a standby may be wanted. */
  touch() {
    this.touched = true;
    this.keepStandby();
  }

  /**
   * Without isolation Stop can only end a program by replacing the worker, so once the reader
   * uses a Run cell a second worker boots beside it, idle, and Stop (or Reset) swaps it in at
   * once instead of waiting for a boot. It boots while nothing runs, or beside a Run that has
   * already taken STANDBY_AFTER_MS (the kind a reader stops), never against a short Run's
   * cores, nor in the AFTER_STOP_MS after Stop ended a Run, when the reader's next Run is likely
   * (a standby still booting when the interrupt ends a Run is dropped: see interrupted). It boots
   * from what the first worker restored (settings.prepared): no download or snapshot to read.
   * Isolated pages interrupt instead, and keep no standby.
   */
  keepStandby() {
    clearTimeout(this.standbyTimer);
    if (this.isolated || !this.touched || this.standby || this.state !== "ready") return;
    const now = performance.now();
    const wait = this.active ? STANDBY_AFTER_MS - (now - this.active.sentAt) : AFTER_STOP_MS - (now - this.stoppedAt);
    if (wait > 0) {
      this.standbyTimer = setTimeout(() => this.keepStandby(), wait);
      return;
    }
    this.standby = this.spawn();
  }

  booted(timings) {
    super.booted(timings);
    this.keepStandby();
  }

  takeStandby() {
    const standby = this.standby;
    this.standby = null;
    if (!standby) return null;
    const failed = standby.broken || standby.inbox.some((data) => isObject(data) && data.type === "boot-failed");
    if (!failed) {
      this.stoppedAt = performance.now();
      return standby;
    }
    standby.worker.terminate(); // a fresh boot says why, if it fails too
    return null;
  }

  connected() {
    this.newSignal();
    if (this.shared) this.post({ type: "interrupt", buffer: this.shared });
    // The run in progress when the worker was replaced (during boot) is asked again.
    if (this.active) this.post(this.active.message);
  }

  /**
   * Run a program; `onOutput(chunks, dropped)` gets what it prints as it prints it: [[stream, text]]
   * and how many characters and lines of a flood the worker dropped.
   * Resolves with {status: "ok" | "error" | "stopped" | "failed", traceback?, ms?}.
   * `owner` is the element that asked: Stop names it, and a run left behind by navigation is stopped.
   */
  run(code, filename, onOutput, owner = null) {
    const id = this.nextId++;
    return new Promise((resolve) => {
      const job = { kind: "run", id, owner, onOutput, resolve, message: { type: "run", id, code: String(code), filename: String(filename) } };
      this.pending.set(id, job);
      this.queue.push(job);
      this.ranSinceBoot = true;
      this.touched = true;
      this.next();
    });
  }

  /** Send the oldest queued run, if none is in progress; start the worker if it is not up. */
  next() {
    if (this.active || !this.queue.length) return;
    this.active = this.queue.shift();
    this.active.sentAt = performance.now();
    this.clearStop();
    if (!this.isolated && typeof URL.createObjectURL === "function") {
      // What Stop revokes (see "How Stop works"); the worker reads it while the Run lasts.
      this.active.stopURL = URL.createObjectURL(new Blob());
      this.active.message.stopURL = this.active.stopURL;
      this.active.message.sentAt = Date.now();
    }
    if (this.worker) this.post(this.active.message);
    else this.start();
    this.keepStandby();
  }

  answered(job, data) {
    if (job !== this.active) return; // only the run in progress prints or ends
    if (data.type === "out") {
      if (!Array.isArray(data.chunks)) return;
      const chunks = data.chunks.filter(
        (chunk) => Array.isArray(chunk) && STREAMS.has(chunk[0]) && typeof chunk[1] === "string",
      );
      const dropped = isObject(data.dropped) ? data.dropped : {};
      job.onOutput?.(chunks, { chars: isCount(dropped.chars) ? dropped.chars : 0, lines: isCount(dropped.lines) ? dropped.lines : 0 });
    } else if (data.type === "done") {
      const memoryGrowth = isCount(data.memoryGrowth) ? data.memoryGrowth : 0;
      const restartedForMemory = memoryGrowth > MEMORY_HEADROOM_BYTES;
      // A Pyodide that died answers nothing again: replaced as a worker that kept gigabytes is.
      const diedInRun = data.fatal === true;
      const result = {
        status: STATUSES.has(data.status) ? data.status : "error",
        ms: isCount(data.ms) ? data.ms : 0,
        memoryGrowth,
        restartedForMemory,
        diedInRun,
      };
      if (result.status === "error") result.traceback = typeof data.traceback === "string" ? data.traceback : "";
      if (result.status === "stopped") this.interrupted();
      this.finish(job, result);
      if (restartedForMemory || diedInRun) this.restart();
      else this.next();
    }
  }

  /** Whether the standby has said it is booted (it waits, not yet adopted, with that in its inbox). */
  standbyUp() {
    return Boolean(this.standby?.inbox.some((data) => isObject(data) && data.type === "booted"));
  }

  /**
   * A Run ended by the interrupt (Stop's, or one the program raised): a standby still booting
   * would share the cores with the Run the reader presses next, so it is dropped, and the next one
   * waits as after a swap (AFTER_STOP_MS). One already up stays: it costs nothing now.
   */
  interrupted() {
    this.stoppedAt = performance.now();
    if (!this.standby || this.standbyUp()) return;
    this.standby.worker.terminate();
    this.standby = null;
  }

  /** `job` ended with `result`: forget it and tell its cell. */
  finish(job, result) {
    clearTimeout(this.stopTimer);
    if (job.stopURL) URL.revokeObjectURL(job.stopURL);
    this.pending.delete(job.id);
    if (this.active === job) {
      this.active = null;
      // A Stop pressed as the run ended would otherwise interrupt the worker's background work.
      this.clearStop();
    }
    job.resolve(result);
    if (!this.active && !this.queue.length) {
      this.dispatchEvent(new Event("idle"));
      this.keepStandby();
    }
  }

  /** A clean Python for Reset: a new worker, unless nothing has run in this one (then it is clean). */
  resetPython() {
    if (this.active || this.queue.length || !this.ranSinceBoot || this.state !== "ready") return;
    this.restart();
  }

  /**
   * Stop `owner`'s run: taken out of the queue if it waits, interrupted when the page is
   * isolated and it runs, else the worker is restarted.
   */
  stop(owner) {
    const queued = this.queue.find((job) => job.owner === owner);
    if (queued) {
      this.queue.splice(this.queue.indexOf(queued), 1);
      this.finish(queued, { status: "stopped" });
      return;
    }
    if (!this.active || this.active.owner !== owner) return;
    // Without isolation a standby is swapped in when it is already up (quicker than the interrupt:
    // no request to wait for, and its Python holds the next Run's package copy ready), or when this
    // worker has not yet written the package's .pyc: the next Run here would compile the package
    // (seconds on a loaded machine), while the standby, booting already, brings a copy with it.
    const swap = !this.interrupt && this.standby && (this.standbyUp() || !this.bytecode);
    if (swap || this.state !== "ready" || !(this.interrupt || this.active.stopURL)) return this.restart();
    if (this.interrupt) {
      Atomics.store(this.stopFlag, 0, 1);
      Atomics.store(this.interrupt, 0, SIGINT);
    } else {
      URL.revokeObjectURL(this.active.stopURL);
    }
    clearTimeout(this.stopTimer);
    this.stopTimer = setTimeout(() => this.restart(), INTERRUPT_GRACE_MS);
  }

  /** The signal and the flag back to zero, so a Stop meant for one run never reaches the next. */
  clearStop() {
    if (!this.interrupt) return;
    Atomics.store(this.interrupt, 0, 0);
    Atomics.store(this.stopFlag, 0, 0);
  }

  /** Throw the worker away and boot a new one; the run in progress ends as "stopped". */
  restart() {
    const active = this.active;
    if (active) this.finish(active, { status: "stopped", restarted: true });
    super.restart();
    this.next();
  }

  fail(message) {
    this.active = null;
    this.queue = [];
    this.standby?.worker.terminate();
    this.standby = null;
    super.fail(message);
  }

  /** Whether a run other than `owner`'s is in progress (then `owner`'s waits for it). */
  busyWithOther(owner) {
    return this.active !== null && this.active.owner !== owner;
  }

  /** Stop the runs whose cells have left the page (instant navigation), so they do not hold the worker. */
  stopOrphans() {
    for (const job of [...this.queue, this.active]) {
      if (job?.owner && !job.owner.isConnected) this.stop(job.owner);
    }
  }

  // The calculators' side, through this object so that a widget needs one import.
  preloadCalculator(name, moduleURL) {
    this.calcs.preload(name, moduleURL);
  }

  calculate(name, moduleURL, params, own = null) {
    return this.calcs.calculate(name, moduleURL, params, own);
  }
}

/** The calculators' worker: it answers views, imports their modules, and runs no reader's code. */
class CalcWorker extends PythonWorker {
  constructor() {
    super("calc", "rfCalcRuntime", "rfCalcBoots");
    this.calculators = new Map(); // name -> module URL of the calculators shown so far
    this.waitingFor = null;
  }

  /**
   * Start once `other` (the Runs' worker) has failed, or is up with no Run to do: a Run pressed
   * while Python started gets the cores first (see RunWorker.startPage).
   */
  startAfter(other) {
    if (this.waitingFor) return;
    this.waitingFor = other;
    const go = () => {
      if (other.state === "booting" || other.state === "idle" || (other.state === "ready" && other.active)) return;
      other.removeEventListener("state", go);
      other.removeEventListener("idle", go);
      this.waitingFor = null;
      this.start();
    };
    other.addEventListener("state", go);
    other.addEventListener("idle", go);
  }

  connected() {
    // Anything asked for while the worker was away is asked again; then the page's calculator
    // modules are imported, so that a reader's first input pays only for the calculation.
    for (const job of this.pending.values()) this.post(job.message);
    for (const [calculator, module] of this.calculators) this.post({ type: "load", calculator, module });
  }

  /** Import calculator `name`'s module (at `moduleURL`) as soon as Python is up, and after every restart. */
  preload(name, moduleURL) {
    const module = withVersion(moduleURL);
    if (this.calculators.get(name) === module) return;
    this.calculators.set(name, module);
    this.post({ type: "load", calculator: name, module });
  }

  /**
   * Ask calculator `name` (its Python module at `moduleURL`); resolves with its parsed answer (or {error}).
   * `own`: the reader's own entries the inputs name, {model: {id, text}}, or null.
   */
  calculate(name, moduleURL, params, own = null) {
    const id = this.nextId++;
    const message = {
      type: "calc",
      id,
      calculator: name,
      module: withVersion(moduleURL),
      request: JSON.stringify(params),
      own: own ? JSON.stringify(own) : "",
    };
    return new Promise((resolve) => {
      this.pending.set(id, { kind: "calc", message, resolve });
      // A live worker takes it now (it queues work until booted); otherwise start() sends it.
      if (this.worker) this.post(message);
      else this.start();
    });
  }

  answered(job, data) {
    if (data.type !== "calc" || typeof data.response !== "string") return;
    let answer;
    try {
      answer = JSON.parse(data.response);
    } catch {
      answer = null;
    }
    this.pending.delete(data.id);
    job.resolve(isObject(answer) ? { ...answer, ms: isCount(data.ms) ? data.ms : 0 } : { error: "the answer was not a view" });
    // Pyodide died computing it (in a view, or reading a reader's text): every later answer of
    // this worker would fail, on this page and on the next chapters, so a new one boots now
    // (it reads the page's calculators again, and whatever else waits).
    if (data.fatal === true) this.restart();
  }
}

const calcs = new CalcWorker();
export const runtime = new RunWorker(calcs);
