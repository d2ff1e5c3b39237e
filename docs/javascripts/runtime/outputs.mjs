// The calculator's output kinds, as the page draws them: one entry per kind that draws
// something (scripts/sitegen/widgets.py, KINDS, writes each kind's markup; the two lists
// name the same kinds). The build marks each drawing with data-rf-draw="KIND" and
// data-rf-key="KEY"; the calculator calls KINDS[KIND](element, answer[KEY]) on every
// answer. A row's text (data-rf-out) needs no entry: every row shows it.
//
// A new kind is one entry here and one in widgets.py. Like every drawing here, an entry
// computes nothing: it shows what the view answered.
import { drawTimeline } from "./timeline.mjs";
import { drawVega } from "./vega.mjs";

/** A share of one (0 to 1) as a width in percent, clamped as the build clamps it. */
function percent(value) {
  return `${Math.max(0, Math.min(Number(value) || 0, 1)) * 100}%`;
}

export const KINDS = {
  /** A bar filled to the answer's share. */
  bar(element, share) {
    element.firstElementChild.style.width = percent(share);
  },
  /** Parts of one whole side by side: [{label, share}, …]. */
  stack(element, value) {
    const parts = Array.isArray(value) ? value : [];
    while (element.children.length > parts.length) element.lastElementChild.remove();
    while (element.children.length < parts.length) {
      const span = document.createElement("span");
      span.className = "rf-calc__part";
      span.dataset.rfPart = String(element.children.length);
      element.append(span);
    }
    parts.forEach((part, index) => {
      element.children[index].title = String(part.label);
      element.children[index].style.width = percent(part.share);
    });
  },
  /** A Gantt chart of rows of spans (timeline.mjs). */
  timeline: drawTimeline,
  /** A Vega-Lite spec (vega.mjs). */
  vega: drawVega,
};

/** Kinds drawn to the element's width: drawn again when it changes. */
export const SIZED = new Set(["timeline"]); // vega-embed follows its container itself
