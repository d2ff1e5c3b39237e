// A calculator's `timeline` output kind (outputs.mjs), drawn as inline SVG: one row per item,
// each row a list of spans [kind, start, end] on a shared time axis (a Gantt chart). A view answers
//   {rows: [{label, title?, spans: [[kind, start, end], ...]}], kinds: [[kind, text], ...], unit}
// and the form declares Output.timeline(name, caption) (roofline.forms). The kinds are
// coloured in their listed order (runtime.css, rf-timeline__span--0 … --5), so a timeline of
// anything draws without code of its own. It computes nothing, and keeps no state between draws.

const MARGIN = { left: 40, right: 12, top: 8, bottom: 30 };
const ROW = 18;
const BAR = 12;

const SVG = "http://www.w3.org/2000/svg";

/** An SVG element `name` with `attributes` (set as attributes, so never read as markup) and children. */
function svg(name, attributes = {}, ...children) {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, String(value));
  element.append(...children);
  return element;
}

/** A finite number from a view's answer, or 0. */
const number = (value) => (Number.isFinite(value) ? value : 0);

/** The answer made safe to draw: rows of finite spans, texts as strings (a view's answer is data). */
function checked(timeline) {
  const given = timeline && typeof timeline === "object" ? timeline : {};
  const rows = (Array.isArray(given.rows) ? given.rows : []).map((row) => ({
    label: String(row?.label ?? ""),
    title: String(row?.title ?? row?.label ?? ""),
    spans: (Array.isArray(row?.spans) ? row.spans : [])
      .filter((span) => Array.isArray(span))
      .map(([kind, from, to]) => [String(kind), number(from), number(to)]),
  }));
  const kinds = (Array.isArray(given.kinds) ? given.kinds : [])
    .filter((kind) => Array.isArray(kind))
    .map(([kind, text]) => [String(kind), String(text ?? kind)]);
  return { rows, kinds, unit: String(given.unit ?? "") };
}

/** About five round ticks from 0 to `end`: steps of 1, 2 or 5 times a power of ten. */
export function ticks(end) {
  if (!(end > 0)) return [0];
  const rough = end / 5;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough);
  const count = Math.floor(end / step + 1e-9);
  return Array.from({ length: count + 1 }, (_, i) => Number((i * step).toPrecision(12)));
}

/** Replace `container`'s content with the timeline of `timeline`. */
export function drawTimeline(container, timeline) {
  const { rows, kinds, unit } = checked(timeline);
  const width = Math.round(Math.min(720, Math.max(300, container.clientWidth || 640)));
  const height = MARGIN.top + rows.length * ROW + MARGIN.bottom;
  const plotWidth = width - MARGIN.left - MARGIN.right;
  const spans = rows.flatMap((row) => row.spans);
  const start = Math.min(0, ...spans.map((s) => s[1]));
  const end = Math.max(start + 1e-9, ...spans.map((s) => s[2]));
  const x = (t) => MARGIN.left + ((t - start) / (end - start)) * plotWidth;
  const order = new Map(kinds.map(([kind], i) => [kind, i]));
  const names = new Map(kinds);
  const parts = [];
  for (const tick of ticks(end - start)) {
    const at = x(start + tick).toFixed(1);
    parts.push(
      svg("line", { class: "rf-chart__grid", x1: at, x2: at, y1: MARGIN.top, y2: height - MARGIN.bottom }),
      svg("text", { x: at, y: height - MARGIN.bottom + 14, "text-anchor": "middle" }, String(tick)),
    );
  }
  parts.push(
    svg("text", { class: "rf-chart__label", x: MARGIN.left + plotWidth / 2, y: height - 3, "text-anchor": "middle" }, `time (${unit})`),
  );
  rows.forEach((row, index) => {
    const top = MARGIN.top + index * ROW;
    const group = svg("g", { "data-rf-row": index }, svg("title", {}, row.title));
    group.append(svg("text", { x: MARGIN.left - 6, y: top + BAR, "text-anchor": "end" }, row.label));
    for (const [kind, from, to] of row.spans) {
      const left = x(from);
      // A span shorter than a pixel still shows as one, so a single iteration is visible.
      const wide = Math.max(1, x(to) - left);
      const title = `${names.get(kind) ?? kind}: ${from.toFixed(3)}–${to.toFixed(3)} ${unit}`;
      group.append(
        svg(
          "rect",
          {
            class: `rf-timeline__span rf-timeline__span--${order.get(kind) ?? 0}`,
            "data-kind": kind,
            x: left.toFixed(2),
            y: top + (ROW - BAR) / 2,
            width: wide.toFixed(2),
            height: BAR,
          },
          svg("title", {}, title),
        ),
      );
    }
    parts.push(group);
  });
  const legend = document.createElement("p");
  legend.className = "rf-timeline__legend";
  kinds.forEach(([, text], i) => {
    const key = document.createElement("span");
    key.className = "rf-timeline__key";
    const swatch = document.createElement("span");
    swatch.className = `rf-timeline__swatch rf-timeline__span--${i}`;
    key.append(swatch, text);
    legend.append(key);
  });
  const shown = kinds.filter(([kind]) => spans.some((s) => s[0] === kind)).map(([, text]) => text.toLowerCase());
  const label = `Timeline of ${rows.length} rows over ${end.toFixed(2)} ${unit}: ${shown.join(", ")}.`;
  const chart = svg("svg", { class: "rf-chart rf-timeline", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label }, ...parts);
  container.replaceChildren(legend, chart);
}
