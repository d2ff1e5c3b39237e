// Every calculator: a form declared in Python (roofline.forms: FORM in
// docs/chapters/<slug>/calculators/NAME.py, rendered by scripts/sitegen/widgets.py) whose
// view, run in the worker, computes and words every result. This file knows no
// calculator: it checks inputs against the declaration as the markup carries it (a
// <select>'s options; a number's min, max and step, decimal steps included; the
// cross-field rules in data-rf-rules), the same checks roofline.forms makes in Python,
// keeps them in the URL under the calculator's name, and puts each answer's fields
// where the form says: text into data-rf-out, drawings through outputs.mjs's kinds.
//
// The form's data-state: static (the build-time answer for the defaults is shown),
// waiting (inputs differ from the defaults and Python is still starting), computing,
// ready (the numbers shown are Python's for the current inputs), invalid (an input is
// bad, or inputs break a rule; the results are greyed and stay until it is fixed), failed
// (Python could not compute these inputs: the note says why and no result is shown, since
// every one on screen would belong to other inputs).
// data-rf-rendered holds the inputs of the answer on screen, as a query string.
//
// A GPU or model menu (Field.gpu, Field.model) has "Your GPU…" / "Your model…" under it
// (.rf-own): a pasted file, or typed numbers written into one, goes to Python with the
// inputs, read by the same code as --gpu/--model. Until Python has read it the menu and the
// results stay as they were; a text it refuses gets one line under the box. Once read, the
// entry is kept in this browser (own.mjs), joins the menu under "Yours", and the link names it
// by its hash only.
import { brokenRule, checkChoice, checkNumber, ruleMessage } from "./checks.mjs";
import { KINDS, SIZED } from "./outputs.mjs";
import { KIND_WORDS, OWN_ID, ownId, recall, remember, stored, typedText } from "./own.mjs";
import { runtime, startingText } from "./runtime.mjs";

const ANNOUNCE_DELAY_MS = 600;
// Longest piece of a link's value a note quotes, as the package's errors quote input (SHOWN_LENGTH).
const ECHO_LENGTH = 60;

/** `text` quoted for a note, cut to ECHO_LENGTH characters: a 30,000-character link value stays a line. */
function echo(text) {
  const quoted = JSON.stringify(text);
  return quoted.length <= ECHO_LENGTH ? quoted : `${quoted.slice(0, ECHO_LENGTH - 1)}…`;
}
const URL_DELAY_MS = 250;
const isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
// Typing in a paste box is read once the reader pauses; a paste or a drop is read at once.
const TYPING_DELAY_MS = 400;

class Calculator {
  constructor(form, signal) {
    this.form = form;
    this.name = form.dataset.rfCalc;
    this.moduleURL = new URL(form.dataset.rfModule, location.href).href;
    // The page this calculator is on: instant navigation changes the address before it swaps the
    // content, so an input's pending write could otherwise land on the next page's address.
    this.pagePath = location.pathname;
    this.defaults = JSON.parse(form.dataset.rfDefaults);
    this.fields = Object.keys(this.defaults);
    this.rules = JSON.parse(form.dataset.rfRules || "[]");
    this.initial = JSON.parse(form.dataset.rfInitial);
    this.note = form.querySelector(".rf-calc__note");
    this.summary = form.querySelector(".rf-calc__summary");
    this.drawings = [...form.querySelectorAll("[data-rf-draw]")];
    this.outputs = Object.fromEntries(
      [...form.querySelectorAll("[data-rf-out]")].map((element) => [element.dataset.rfOut, element]),
    );
    this.wanted = null;
    this.wantedEntry = null;
    this.inFlight = false;
    this.lastInput = 0;
    // Fields that take the reader's own entry: name -> {kind, panel}.
    this.owns = {};
    for (const panel of form.querySelectorAll("details[data-rf-own]")) {
      const name = panel.closest(".rf-field").querySelector("select").name;
      this.owns[name] = { kind: panel.dataset.rfOwn, panel };
      for (const entry of stored(panel.dataset.rfOwn).reverse()) this.addOwnOption(name, entry);
      this.wireOwn(name, panel);
    }
    form.addEventListener("submit", (event) => event.preventDefault());
    form.addEventListener("input", (event) => this.changed(event));
    // "Load this section's example" (sitegen/widgets.py): the prose's inputs, checked at build time.
    const example = form.querySelector("button[data-rf-example]");
    if (example) example.addEventListener("click", () => this.loadExample(JSON.parse(example.dataset.rfExample)));
    runtime.calcs.addEventListener("state", () => this.showRuntime(), { signal });
    // While the numbers are greyed for want of Python, a line above them says why and how far
    // along its start is (runtime.mjs, startingText); it follows the form's data-state.
    this.loading = document.createElement("p");
    this.loading.className = "rf-calc__loading";
    this.loading.hidden = true;
    this.note.before(this.loading);
    runtime.calcs.addEventListener("progress", () => this.showLoading(), { signal });
    runtime.calcs.addEventListener("state", () => this.showLoading(), { signal });
    new MutationObserver(() => this.showLoading()).observe(form, { attributes: true, attributeFilter: ["data-state"] });
    // Redraw what is drawn to its width when the page is resized or rotated.
    const widths = new WeakMap();
    const resized = new ResizeObserver((entries) => {
      for (const { target } of entries) {
        if (target.clientWidth === widths.get(target) || !this.shown) continue;
        widths.set(target, target.clientWidth);
        KINDS[target.dataset.rfDraw](target, this.shown[target.dataset.rfKey]);
      }
    });
    for (const element of this.drawings) if (SIZED.has(element.dataset.rfDraw)) resized.observe(element);
    signal.addEventListener("abort", () => resized.disconnect());
    this.render(this.initial, this.defaults, { announce: false });
    this.form.dataset.state = "static";
    const { params, problems, named } = this.fromURL();
    this.setControls(params);
    this.showNote(problems);
    // A shared link that sets this calculator lands on it, not at the top of the page
    // (unless the link names a place of its own with #).
    if (named && !location.hash) this.form.scrollIntoView({ block: "start" });
    if (this.queryOf(params) !== this.queryOf(this.defaults)) this.request(params);
    this.showRuntime(); // Python starts before the widgets are set up, and may have failed already
  }

  /** The inputs as a query string, in the form's order (the page's data-rf-rendered). */
  queryOf(params) {
    return new URLSearchParams(this.fields.map((name) => [name, String(params[name])])).toString();
  }

  /** This calculator's key in the address bar: NAME.FIELD, so two calculators never share one. */
  urlKey(field) {
    return `${this.name}.${field}`;
  }

  control(name) {
    return this.form.elements.namedItem(name);
  }

  /** One field's value, or an error message saying what it must be (checks.mjs, from the markup). */
  check(name, raw) {
    const control = this.control(name);
    const describe = control.dataset.rfDescribe;
    if (control.tagName === "SELECT") {
      return checkChoice({ values: [...control.options].map((option) => option.value), describe }, raw);
    }
    return checkNumber({ min: control.min, max: control.max, step: control.step, describe }, raw);
  }

  /**
   * The first of the form's rules that `params` break ({fields, message, …}), or null. A rule
   * listing combinations lists built-in entries only: with the reader's own GPU or model in one
   * of its fields, the package's checks speak instead (roofline.forms.Rule.holds says the same).
   */
  brokenRule(params) {
    const own = (rule) => rule.kind === "allowed" && rule.fields.some((name) => OWN_ID.test(String(params[name])));
    return brokenRule(this.rules.filter((rule) => !own(rule)), params);
  }

  /** The rule's message for `params`, each {field} in it the text of the option chosen there. */
  ruleMessage(rule, params) {
    const texts = {};
    for (const name of rule.fields) {
      const control = this.control(name);
      if (control.tagName !== "SELECT") continue;
      const option = [...control.options].find((item) => item.value === String(params[name]));
      if (option) texts[name] = option.textContent;
    }
    return ruleMessage(rule, texts);
  }

  /**
   * The inputs named in the address bar, each checked; a bad one falls back to its default.
   * `named`: whether the address named any of them.
   * A link from before calculators had names (?users=32) still works on a page with one calculator.
   */
  fromURL() {
    const query = new URLSearchParams(location.search);
    const alone = document.querySelectorAll("[data-rf-calc]").length === 1;
    const params = { ...this.defaults };
    const problems = [];
    let named = false;
    for (const name of this.fields) {
      const key = query.has(this.urlKey(name)) ? this.urlKey(name) : alone && query.has(name) ? name : null;
      if (key === null) continue;
      named = true;
      const result = this.check(name, query.get(key));
      if ("value" in result) params[name] = result.value;
      else if (this.owns[name] && OWN_ID.test(query.get(key))) {
        // The link names a reader's own entry, and only the browser it was pasted in holds it.
        const word = KIND_WORDS[this.owns[name].kind];
        problems.push(
          `The link's ${key}=${query.get(key)} is a ${word} pasted in another browser, which this one does not hold, so ${this.label(name)} shows its default, ${this.optionText(name, this.defaults[name])}.`,
        );
      } else {
        const label = this.label(name);
        problems.push(
          `The link's ${key}=${echo(query.get(key))} ${result.error}, so ${label} shows its default, ${this.defaults[name]}.`,
        );
      }
    }
    const broken = this.brokenRule(params);
    if (broken) {
      // Linked values that cannot stand together: all fall back, and the note says why.
      const message = this.ruleMessage(broken, params);
      for (const name of broken.fields) params[name] = this.defaults[name];
      const which = broken.fields.length === 2 ? "both" : `all ${broken.fields.length}`;
      problems.push(`${message} The link's values for ${which} are replaced by the defaults.`);
    }
    return { params, problems, named };
  }

  label(name) {
    return this.form.querySelector(`label[for="${this.control(name).id}"]`).textContent;
  }

  optionText(name, value) {
    const option = [...this.control(name).options].find((item) => item.value === String(value));
    return option ? option.textContent : String(value);
  }

  /** Put the reader's entry {id, name} into `field`'s menu, under "Yours" (its text updated if there). */
  addOwnOption(field, { id, name }) {
    const select = this.control(field);
    const known = [...select.options].find((option) => option.value === id);
    if (known) return void (known.textContent = name);
    let group = select.querySelector("optgroup.rf-own__group");
    if (!group) {
      group = document.createElement("optgroup");
      group.className = "rf-own__group";
      group.label = "Yours";
      select.append(group);
    }
    const option = document.createElement("option");
    option.value = id;
    option.textContent = name; // the package's name for it, from the reader's text: never markup
    group.prepend(option);
  }

  /** The paste box and the typed numbers of `field`'s "Your …" panel. */
  wireOwn(field, panel) {
    const box = panel.querySelector("textarea");
    const max = Number(panel.dataset.rfOwnMax);
    const tooLarge = (length) =>
      `That is ${length.toLocaleString("en-US")} characters; a ${panel.dataset.rfOwn === "model" ? "config.json" : "GPU file"} is a few kB and at most ${(max / 1e6).toLocaleString("en-US")} MB: paste that file, not a weights file.`;
    // A huge paste is refused by its size before it lands in the box or is read at all.
    box.addEventListener("paste", (event) => {
      const length = event.clipboardData?.getData("text/plain").length ?? 0;
      if (length <= max) return;
      event.preventDefault();
      this.ownError(field, tooLarge(length));
    });
    let timer = null;
    box.addEventListener("input", (event) => {
      clearTimeout(timer);
      const read = () => {
        if (box.value.length > max) return this.ownError(field, tooLarge(box.value.length));
        this.lastInput = event.timeStamp;
        this.useOwn(field, box.value);
      };
      if (event.inputType === "insertFromPaste" || event.inputType === "insertFromDrop") read();
      else timer = setTimeout(read, TYPING_DELAY_MS);
    });
    panel.querySelector(".rf-own__use").addEventListener("click", (event) => {
      const typed = typedText(panel);
      if (typed.error) return this.ownError(field, typed.error);
      box.value = typed.text; // what is read is what the reader sees
      this.lastInput = event.timeStamp;
      this.useOwn(field, typed.text);
    });
  }

  /** One line under `field`'s paste box ("" clears it). */
  ownError(field, message) {
    const { panel } = this.owns[field];
    const box = panel.querySelector("textarea");
    panel.querySelector(".rf-own__error").textContent = message;
    if (message) box.setAttribute("aria-invalid", "true");
    else box.removeAttribute("aria-invalid");
  }

  /** Ask Python for the current inputs with `text` as `field`'s entry; nothing changes until it answers. */
  useOwn(field, text) {
    if (!text.trim()) return this.ownError(field, "");
    const params = this.readControls();
    if (!params) return this.ownError(field, "Fix the marked input first; then paste again.");
    const entry = { field, kind: this.owns[field].kind, id: ownId(text), text, state: this.form.dataset.state };
    this.request({ ...params, [field]: entry.id }, entry);
  }

  /** The texts of the reader's entries that `params` name, as runtime.calculate takes them, or null. */
  ownPayload(params, entry) {
    const own = {};
    for (const [field, { kind }] of Object.entries(this.owns)) {
      const id = String(params[field]);
      if (!OWN_ID.test(id)) continue;
      const held = entry?.field === field && entry.id === id ? entry : recall(kind, id);
      if (held) own[kind] = { id, text: held.text };
    }
    return Object.keys(own).length ? own : null;
  }

  setControls(params) {
    for (const name of this.fields) this.control(name).value = String(params[name]);
  }

  showNote(problems) {
    this.note.hidden = problems.length === 0;
    this.note.textContent = problems.join(" ");
  }

  /** Show `message` under `name`'s control (or clear it), and mark the control invalid or not. */
  mark(name, message) {
    const control = this.control(name);
    const box = this.form.querySelector(`#${control.id}-error`);
    if (message) control.setAttribute("aria-invalid", "true");
    else control.removeAttribute("aria-invalid");
    if (box) box.textContent = message;
  }

  /** Read every control; mark the bad ones. Returns the inputs, or null if any is bad or a rule breaks. */
  readControls() {
    const params = {};
    let valid = true;
    for (const name of this.fields) {
      const result = this.check(name, this.control(name).value);
      if ("value" in result) {
        params[name] = result.value;
        this.mark(name, "");
      } else {
        valid = false;
        this.mark(name, `Must be ${result.error.replace(/^must be /, "")}.`);
      }
    }
    if (!valid) return null;
    const broken = this.brokenRule(params);
    if (broken) {
      // Every field of the rule is marked; the message stands under the first.
      const [first, ...others] = broken.fields;
      this.mark(first, this.ruleMessage(broken, params));
      for (const name of others) this.mark(name, " ");
      return null;
    }
    return params;
  }

  changed(event) {
    if (event.target.closest(".rf-own")) return; // a paste box or a typed number: see wireOwn
    this.lastInput = event.timeStamp;
    const params = this.readControls();
    if (!params) {
      // The results on screen belong to other inputs than the box shows: grey them, drop any
      // answer on its way, and keep the address bar from taking a value the reader typed past.
      this.form.dataset.state = "invalid";
      this.wanted = null;
      clearTimeout(this.urlTimer);
      this.showStale(true);
      return;
    }
    this.showNote([]);
    this.request(params);
    // The address bar follows once the reader pauses: replaceState costs a millisecond or
    // two, and Chrome ignores it when called hundreds of times in a few seconds.
    clearTimeout(this.urlTimer);
    this.urlTimer = setTimeout(() => this.saveToURL(params), URL_DELAY_MS);
  }

  /** Set every control to `params` (the section's example) and recompute, as typed input would. */
  loadExample(params) {
    this.setControls(params);
    const checked = this.readControls();
    if (!checked) return; // the build checked the example; a control marks what it refused
    this.showNote([]);
    this.request(checked);
    clearTimeout(this.urlTimer);
    this.saveToURL(checked);
  }

  /** This calculator's inputs into the address bar (none while they are the defaults); others' keys stay. */
  saveToURL(params) {
    const url = new URL(location.href);
    for (const name of this.fields) {
      url.searchParams.delete(this.urlKey(name));
      url.searchParams.delete(name); // an unnamed key from an old link
    }
    if (this.queryOf(params) !== this.queryOf(this.defaults)) {
      for (const name of this.fields) url.searchParams.set(this.urlKey(name), String(params[name]));
    }
    if (url.href === location.href || !this.form.isConnected || location.pathname !== this.pagePath) return;
    history.replaceState(history.state, "", url);
  }

  /**
   * Ask Python for `params`; while an answer is on its way, only the latest inputs are kept.
   * `entry`: a reader's text not yet read ({field, kind, id, text, state}), which `params` name.
   */
  request(params, entry = null) {
    this.wanted = params;
    this.wantedEntry = entry;
    this.form.dataset.state = runtime.calcs.state === "ready" ? "computing" : "waiting";
    if (this.form.dataset.state === "waiting") this.showStale(true);
    if (!this.inFlight) this.dispatch();
  }

  async dispatch() {
    const params = this.wanted;
    const entry = this.wantedEntry;
    this.wanted = null;
    this.wantedEntry = null;
    this.inFlight = true;
    const sent = performance.now();
    const answer = await runtime.calculate(this.name, this.moduleURL, params, this.ownPayload(params, entry));
    const received = performance.now();
    this.inFlight = false;
    if (this.wanted) return this.dispatch(); // the reader moved on; this answer is already old
    if (this.form.dataset.state === "invalid") return; // a box now holds a bad value: show no answer
    if (answer.failed) return this.showRuntime();
    if (typeof answer.own === "string" && entry) {
      // The package refused the pasted text: one line under the box; the menu and results stay.
      this.ownError(entry.field, String(answer.error));
      const read = this.owns[entry.field].panel.querySelector(".rf-own__read");
      if (read) read.textContent = ""; // what an earlier paste read is not what this one says
      this.form.dataset.state = entry.state;
      return;
    }
    const fields = Array.isArray(answer.fields) ? answer.fields.filter((name) => this.fields.includes(name)) : [];
    if (entry && !this.readable(entry, answer, fields)) {
      // Never kept: a text whose answer was an error of its own (Python died reading it, say)
      // would fail again from the menu, and from this browser's storage on every later visit.
      this.ownError(entry.field, `Python could not read this: ${answer.error || "its answer did not name it"}`);
      this.form.dataset.state = entry.state;
      return;
    }
    if (entry) this.adopt(entry, answer, params);
    else if (typeof answer.own === "string") {
      // A kept entry the package no longer reads (it changed since): said where the menu is.
      const field = Object.keys(this.owns).find((name) => this.owns[name].kind === answer.own);
      if (field) this.mark(field, String(answer.error));
      this.form.dataset.state = "invalid";
      this.showStale(true);
      return;
    }
    if (answer.error && fields.length) {
      // Input the package refuses (a rule between fields only it knows): the same as a value
      // the page refused itself. The fields are marked and the old results greyed.
      fields.forEach((name, index) => this.mark(name, index ? " " : String(answer.error)));
      this.form.dataset.state = "invalid";
      this.showStale(true);
      return;
    }
    if (answer.error) {
      this.form.dataset.state = "failed";
      this.failureNoted = true;
      this.showNote([`Python could not compute this: ${answer.error}`]);
      this.showResults(false); // the numbers on screen belong to other inputs
      this.timed("rf-calc-failed", sent, received, answer);
      return;
    }
    if (this.failureNoted) this.showNote([]); // that failure was for other inputs
    this.failureNoted = false;
    this.render(answer, params, { announce: true });
    this.form.dataset.state = "ready";
    this.timed("rf-calc-rendered", sent, received, answer);
  }

  /**
   * Whether the package read `entry` and named it, with an answer the reader can use: numbers, or
   * a refusal of other inputs (`fields`) that the reader fixes there. Only such an entry is kept.
   */
  readable(entry, answer, fields) {
    const named = isObject(answer.own) ? answer.own[entry.kind] : null;
    return isObject(named) && named.id === entry.id && (!answer.error || fields.length > 0);
  }

  /** The package read `entry`: keep it, put it in the menu, choose it, and let the link name it. */
  adopt(entry, answer, params) {
    const named = answer.own?.[entry.kind];
    const name = typeof named?.name === "string" ? named.name : entry.id;
    const problem = remember(entry.kind, entry.id, name, entry.text);
    this.addOwnOption(entry.field, { id: entry.id, name });
    this.control(entry.field).value = entry.id;
    this.mark(entry.field, "");
    this.ownError(entry.field, problem);
    // What the package understood of the paste (layers, heads, experts…): as text, never as markup.
    const read = this.owns[entry.field].panel.querySelector(".rf-own__read");
    if (read) read.textContent = typeof named?.read === "string" ? named.read : "";
    clearTimeout(this.urlTimer);
    this.urlTimer = setTimeout(() => this.saveToURL(params), URL_DELAY_MS);
  }

  /** Tell the benchmark (scripts/bench_browser.py) how long an answer took, from the reader's input on. */
  timed(name, sent, received, answer) {
    this.form.dispatchEvent(
      new CustomEvent(name, {
        detail: {
          inputToNumbersMs: performance.now() - this.lastInput,
          inputToSendMs: sent - this.lastInput,
          roundTripMs: received - sent,
          pythonMs: answer.ms,
          renderMs: performance.now() - received,
          failed: name === "rf-calc-failed",
        },
      }),
    );
  }

  /** The "Starting Python" line while an answer waits for Python to start; hidden otherwise. */
  showLoading() {
    const waiting = this.form.dataset.state === "waiting" && runtime.calcs.state !== "ready" && runtime.calcs.state !== "failed";
    this.loading.hidden = !waiting;
    if (waiting) this.loading.textContent = `${startingText(runtime.calcs)} The greyed numbers are for the earlier inputs.`;
  }

  showStale(stale) {
    this.form.classList.toggle("rf-calc--stale", stale);
  }

  /** Show or hide every result (the verdict, the rows, the figures). */
  showResults(shown) {
    for (const element of this.form.querySelectorAll(".rf-calc__results, .rf-calc__chart")) element.hidden = !shown;
  }

  showRuntime() {
    const { state, failure } = runtime.calcs;
    if (state !== "failed" || this.form.dataset.state === "static") return;
    // Live numbers need Python; go back to the build-time answer and say why.
    this.wanted = null;
    this.setControls(this.defaults);
    this.render(this.initial, this.defaults, { announce: false });
    this.form.dataset.state = "failed";
    this.showNote([`${failure} Showing the defaults computed when the site was built.`]);
  }

  /** Show `view`, the answer for `params`: every text output, every drawing (outputs.mjs), the verdict. */
  render(view, params, { announce }) {
    for (const [name, element] of Object.entries(this.outputs)) {
      if (name in view) element.textContent = view[name];
    }
    this.form.dataset.fits = String(view.fits !== false);
    this.shown = view;
    for (const element of this.drawings) {
      const { rfDraw: kind, rfKey: key } = element.dataset;
      if (key in view) KINDS[kind](element, view[key]);
    }
    this.form.dataset.rfRendered = this.queryOf(params);
    this.showStale(false);
    this.showResults(true);
    if (announce && view.summary) {
      clearTimeout(this.announceTimer);
      this.announceTimer = setTimeout(() => (this.summary.textContent = view.summary), ANNOUNCE_DELAY_MS);
    }
  }
}

/** Set up every calculator under `container` that is not set up yet. */
export function mountCalculators(container, signal) {
  for (const form of container.querySelectorAll("[data-rf-calc]:not([data-rf-mounted])")) {
    form.dataset.rfMounted = "";
    runtime.configureFrom(form);
    new Calculator(form, signal);
    runtime.preloadCalculator(form.dataset.rfCalc, new URL(form.dataset.rfModule, location.href).href);
  }
}
