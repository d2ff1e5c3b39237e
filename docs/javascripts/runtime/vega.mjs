// A calculator's `vega` output: the Vega-Lite spec its view answers (plain dicts, data
// inline), drawn with the vega-embed the site serves, at the element's width and in the
// page's colours. The libraries and the drawing are charts.js's (window.rooflineCharts),
// so Vega loads once per page however many charts and calculators it has.
//
// Like the page's figures, a chart is drawn only once it comes within a quarter screen of
// the viewport: drawing is a long task (vega-embed compiles, parses and renders the spec: tens
// of milliseconds), and a reader who never scrolls there should not pay for it while the page
// loads. Once drawn, a new answer redraws it when the answers pause for REDRAW_DELAY_MS: the
// numbers follow every keystroke at once, and a held-down arrow key does not queue a chart
// per step. Each element keeps its own view and last spec (no module-wide size or state),
// and is redrawn when the reader switches light and dark; vega-embed follows its width.

const REDRAW_DELAY_MS = 120;
const latest = new WeakMap(); // element -> the last spec asked for
const timers = new WeakMap(); // element -> its pending redraw
const views = new WeakMap(); // element -> its vega View, freed before the next draw
const tickets = new WeakMap(); // element -> number of the newest draw; older draws give way
const waiting = new Set(); // elements with a spec that have not come near the viewport yet
let watcher = null;
let themed = null;

function near() {
  watcher ??= new IntersectionObserver(
    (entries) => {
      for (const entry of entries) {
        if (!entry.isIntersecting) continue;
        watcher.unobserve(entry.target);
        waiting.delete(entry.target);
        render(entry.target);
      }
    },
    { rootMargin: "25% 0px" },
  );
  return watcher;
}

function followTheme() {
  // One observer for the visit: the body survives instant navigation. Redraw what is drawn.
  themed ??= new MutationObserver(() => {
    for (const element of document.querySelectorAll('[data-rf-draw="vega"][data-state="drawn"]')) render(element);
  });
  themed.observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
}

async function render(element) {
  const charts = window.rooflineCharts;
  const spec = latest.get(element);
  if (!charts || !spec || !element.isConnected) return;
  const ticket = (tickets.get(element) ?? 0) + 1;
  tickets.set(element, ticket);
  try {
    await charts.load();
    if (tickets.get(element) !== ticket) return; // a newer answer is on its way
    const fitted = { ...spec, width: "container", autosize: { type: "fit-x", contains: "padding" } };
    const drawn = await charts.embed(element, fitted);
    if (tickets.get(element) !== ticket) {
      drawn.view.finalize(); // a newer draw has replaced this one on the page
      return;
    }
    views.get(element)?.finalize();
    views.set(element, drawn.view);
    element.dataset.state = "drawn";
    element.dataset.scheme = drawn.scheme; // a redraw for a new scheme is done when this says so
    // Vega's own SVG gets the spec's description as its accessible name.
    element.querySelector("svg")?.setAttribute("aria-label", spec.description ?? "");
    if (drawn.scheme !== charts.scheme()) render(element); // switched while it was drawn
  } catch (error) {
    element.dataset.state = "failed";
    console.warn("calculator chart not drawn:", error);
  }
}

/** Draw `spec` into `element` now if it is near the viewport (or was drawn before), else once it is. */
export function drawVega(element, spec) {
  // A spec is an object; anything else in the answer draws nothing (and is never markup).
  if (typeof spec !== "object" || spec === null || Array.isArray(spec)) return;
  latest.set(element, spec);
  followTheme();
  if (element.dataset.state === "drawn") {
    clearTimeout(timers.get(element));
    timers.set(element, setTimeout(() => render(element), REDRAW_DELAY_MS));
  } else if (!waiting.has(element)) {
    waiting.add(element);
    near().observe(element);
  }
}
