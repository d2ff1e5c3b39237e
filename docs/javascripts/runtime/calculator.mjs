// The calculator "How fast can a GPU generate tokens?". Python (roofline_calculator.py,
// in the worker) computes and words every result; this file validates inputs, keeps
// them in the URL and puts the answer on the page.
//
// The form's data-state: static (the build-time answer for the defaults is shown),
// waiting (inputs differ from the defaults and Python is still starting), computing,
// ready (the numbers shown are Python's for the current inputs), failed.
// data-rf-rendered holds the inputs of the answer on screen, as a query string.
import { drawChart } from "./chart.mjs";
import { runtime } from "./runtime.mjs";

const FIELDS = ["gpu", "model", "precision", "gpus", "users", "context"];
const CHOICES = new Set(["gpu", "model", "precision"]);
const ANNOUNCE_DELAY_MS = 600;
const URL_DELAY_MS = 250;

const queryOf = (params) => new URLSearchParams(FIELDS.map((name) => [name, String(params[name])])).toString();

class Calculator {
  constructor(form, signal) {
    this.form = form;
    this.defaults = JSON.parse(form.dataset.rfDefaults);
    this.initial = JSON.parse(form.dataset.rfInitial);
    this.note = form.querySelector(".rf-calc__note");
    this.summary = form.querySelector(".rf-calc__summary");
    this.chart = form.querySelector("[data-rf-chart]");
    this.outputs = Object.fromEntries(
      [...form.querySelectorAll("[data-rf-out]")].map((element) => [element.dataset.rfOut, element]),
    );
    this.wanted = null;
    this.inFlight = false;
    this.lastInput = 0;
    form.addEventListener("submit", (event) => event.preventDefault());
    form.addEventListener("input", (event) => this.changed(event));
    runtime.addEventListener("state", () => this.showRuntime(), { signal });
    // Redraw the chart at its new width when the page is resized or rotated.
    let drawnWidth = 0;
    const resized = new ResizeObserver(() => {
      if (this.lastChart && this.chart.clientWidth !== drawnWidth) {
        drawnWidth = this.chart.clientWidth;
        drawChart(this.chart, this.lastChart);
      }
    });
    resized.observe(this.chart);
    signal.addEventListener("abort", () => resized.disconnect());
    this.render(this.initial, { announce: false });
    this.form.dataset.state = "static";
    const { params, problems } = this.fromURL();
    this.setControls(params);
    this.showNote(problems);
    if (queryOf(params) !== queryOf(this.defaults)) this.request(params);
  }

  control(name) {
    return this.form.elements.namedItem(name);
  }

  /** One field's value, or an error message saying what it must be. */
  check(name, raw) {
    const control = this.control(name);
    if (CHOICES.has(name)) {
      const known = [...control.options].map((option) => option.value);
      return known.includes(raw) ? { value: raw } : { error: `is not one of the choices` };
    }
    const low = Number(control.min);
    const high = Number(control.max);
    const text = String(raw).trim().replaceAll(",", "").replaceAll("_", "");
    const value = /^\d+$/.test(text) ? Number(text) : NaN;
    if (!Number.isSafeInteger(value) || value < low || value > high) {
      return { error: `must be a whole number from ${low.toLocaleString("en-US")} to ${high.toLocaleString("en-US")}` };
    }
    return { value };
  }

  /** The inputs named in the address bar, each checked; a bad one falls back to its default. */
  fromURL() {
    const query = new URLSearchParams(location.search);
    const params = { ...this.defaults };
    const problems = [];
    for (const name of FIELDS) {
      if (!query.has(name)) continue;
      const result = this.check(name, query.get(name));
      if ("value" in result) params[name] = result.value;
      else {
        const label = this.form.querySelector(`label[for="${this.control(name).id}"]`).textContent;
        problems.push(
          `The link's ${name}=${JSON.stringify(query.get(name))} ${result.error}, so ${label} shows its default, ${this.defaults[name]}.`,
        );
      }
    }
    return { params, problems };
  }

  setControls(params) {
    for (const name of FIELDS) this.control(name).value = String(params[name]);
  }

  showNote(problems) {
    this.note.hidden = problems.length === 0;
    this.note.textContent = problems.join(" ");
  }

  /** Read every control; mark the bad ones. Returns the inputs, or null if any is bad. */
  readControls() {
    const params = {};
    let valid = true;
    for (const name of FIELDS) {
      const control = this.control(name);
      const result = this.check(name, control.value);
      const message = this.form.querySelector(`#${control.id}-error`);
      if ("value" in result) {
        params[name] = result.value;
        control.removeAttribute("aria-invalid");
        if (message) message.textContent = "";
      } else {
        valid = false;
        control.setAttribute("aria-invalid", "true");
        if (message) message.textContent = `Must be ${result.error.replace(/^must be /, "")}.`;
      }
    }
    return valid ? params : null;
  }

  changed(event) {
    this.lastInput = event.timeStamp;
    const params = this.readControls();
    if (!params) {
      this.form.dataset.state = "invalid";
      return;
    }
    this.showNote([]);
    this.request(params);
    // The address bar follows once the reader pauses: replaceState costs a millisecond or
    // two, and Chrome ignores it when called hundreds of times in a few seconds.
    clearTimeout(this.urlTimer);
    this.urlTimer = setTimeout(() => this.saveToURL(params), URL_DELAY_MS);
  }

  saveToURL(params) {
    const query = queryOf(params);
    const url = new URL(location.href);
    url.search = query === queryOf(this.defaults) ? "" : query;
    if (url.href !== location.href && this.form.isConnected) history.replaceState(history.state, "", url);
  }

  /** Ask Python for `params`; while an answer is on its way, only the latest inputs are kept. */
  request(params) {
    this.wanted = params;
    this.form.dataset.state = runtime.state === "ready" ? "computing" : "waiting";
    if (this.form.dataset.state === "waiting") this.showStale(true);
    if (!this.inFlight) this.dispatch();
  }

  async dispatch() {
    const params = this.wanted;
    this.wanted = null;
    this.inFlight = true;
    const sent = performance.now();
    const answer = await runtime.calculate(params);
    const received = performance.now();
    this.inFlight = false;
    if (this.wanted) return this.dispatch(); // the reader moved on; this answer is already old
    if (answer.failed) return this.showRuntime();
    if (answer.error) {
      this.form.dataset.state = "failed";
      this.showNote([`Python could not compute this: ${answer.error}`]);
      return;
    }
    this.render(answer, { announce: true });
    this.form.dataset.state = "ready";
    this.form.dispatchEvent(
      new CustomEvent("rf-calc-rendered", {
        detail: {
          inputToNumbersMs: performance.now() - this.lastInput,
          inputToSendMs: sent - this.lastInput,
          roundTripMs: received - sent,
          pythonMs: answer.ms,
          renderMs: performance.now() - received,
        },
      }),
    );
  }

  showStale(stale) {
    this.form.classList.toggle("rf-calc--stale", stale);
  }

  showRuntime() {
    if (runtime.state !== "failed" || this.form.dataset.state === "static") return;
    // Live numbers need Python; go back to the build-time answer and say why.
    this.wanted = null;
    this.setControls(this.defaults);
    this.render(this.initial, { announce: false });
    this.form.dataset.state = "failed";
    this.showNote([`${runtime.failure} Showing the defaults computed when the site was built.`]);
  }

  render(view, { announce }) {
    for (const [name, element] of Object.entries(this.outputs)) {
      if (name in view) element.textContent = view[name];
    }
    this.outputs.verdict.textContent = view.fits ? "Fits in memory" : "Does not fit";
    this.form.dataset.fits = String(view.fits);
    const bar = this.form.querySelector(".rf-calc__bar span");
    bar.style.width = `${Math.min(view.memory_share, 1) * 100}%`;
    this.lastChart = view.chart;
    drawChart(this.chart, view.chart);
    this.form.dataset.rfRendered = queryOf(view.params);
    this.showStale(false);
    if (announce) {
      clearTimeout(this.announceTimer);
      const text = view.fits
        ? `${view.per_user} tokens/s per user, ${view.total} in all, ${view.bound}.`
        : `Does not fit: ${view.memory}.`;
      this.announceTimer = setTimeout(() => (this.summary.textContent = text), ANNOUNCE_DELAY_MS);
    }
  }
}

/** Set up every calculator under `container` that is not set up yet. */
export function mountCalculators(container, signal) {
  for (const form of container.querySelectorAll("[data-rf-calc]:not([data-rf-mounted])")) {
    form.dataset.rfMounted = "";
    runtime.configure({
      wheelURL: new URL(form.dataset.rfWheel, location.href).href,
      version: form.dataset.rfVersion,
      snapshotURL: form.dataset.rfSnapshot ? new URL(form.dataset.rfSnapshot, location.href).href : null,
    });
    new Calculator(form, signal);
  }
}
