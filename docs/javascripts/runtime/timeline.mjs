// A calculator's `timeline` output kind (outputs.mjs), drawn as inline SVG: one row per item,
// each row a list of spans [kind, start, end] on a shared time axis (a Gantt chart). A view answers
//   {rows: [{label, title?, spans: [[kind, start, end], ...]}], kinds: [[kind, text], ...], unit}
// and the form declares Output.timeline(name, caption) (roofline.forms). The kinds are
// coloured in their listed order (runtime.css, rf-timeline__span--0 … --5), so a timeline of
// anything draws without code of its own. It computes nothing, and keeps no state between draws.

const MARGIN = { left: 40, right: 12, top: 8, bottom: 30 };
const ROW = 18;
const BAR = 12;

function escapeText(text) {
  return String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
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
  const { rows, kinds, unit } = timeline;
  const width = Math.round(Math.min(720, Math.max(300, container.clientWidth || 640)));
  const height = MARGIN.top + rows.length * ROW + MARGIN.bottom;
  const plotWidth = width - MARGIN.left - MARGIN.right;
  const spans = rows.flatMap((row) => row.spans);
  const start = Math.min(0, ...spans.map((s) => s[1]));
  const end = Math.max(start + 1e-9, ...spans.map((s) => s[2]));
  const x = (t) => MARGIN.left + ((t - start) / (end - start)) * plotWidth;
  const order = Object.fromEntries(kinds.map(([kind], i) => [kind, i]));
  const names = Object.fromEntries(kinds);
  const parts = [];
  for (const tick of ticks(end - start)) {
    const at = x(start + tick).toFixed(1);
    parts.push(
      `<line class="rf-chart__grid" x1="${at}" x2="${at}" y1="${MARGIN.top}" y2="${height - MARGIN.bottom}"/>`,
      `<text x="${at}" y="${height - MARGIN.bottom + 14}" text-anchor="middle">${tick}</text>`,
    );
  }
  parts.push(
    `<text class="rf-chart__label" x="${MARGIN.left + plotWidth / 2}" y="${height - 3}" text-anchor="middle">time (${escapeText(unit)})</text>`,
  );
  rows.forEach((row, index) => {
    const top = MARGIN.top + index * ROW;
    parts.push(`<g data-rf-row="${index}"><title>${escapeText(row.title ?? row.label)}</title>`);
    parts.push(`<text x="${MARGIN.left - 6}" y="${top + BAR}" text-anchor="end">${escapeText(row.label)}</text>`);
    for (const [kind, from, to] of row.spans) {
      const left = x(from);
      // A span shorter than a pixel still shows as one, so a single iteration is visible.
      const wide = Math.max(1, x(to) - left);
      parts.push(
        `<rect class="rf-timeline__span rf-timeline__span--${order[kind] ?? 0}" data-kind="${escapeText(kind)}"` +
          ` x="${left.toFixed(2)}" y="${top + (ROW - BAR) / 2}" width="${wide.toFixed(2)}" height="${BAR}">` +
          `<title>${escapeText(names[kind] ?? kind)}: ${from.toFixed(3)}–${to.toFixed(3)} ${escapeText(unit)}</title></rect>`,
      );
    }
    parts.push("</g>");
  });
  const legend = kinds
    .map(
      ([, text], i) =>
        `<span class="rf-timeline__key"><span class="rf-timeline__swatch rf-timeline__span--${i}"></span>${escapeText(text)}</span>`,
    )
    .join("");
  const shown = kinds.filter(([kind]) => spans.some((s) => s[0] === kind)).map(([, text]) => text.toLowerCase());
  container.innerHTML =
    `<p class="rf-timeline__legend">${legend}</p>` +
    `<svg class="rf-chart rf-timeline" viewBox="0 0 ${width} ${height}" role="img"` +
    ` aria-label="Timeline of ${rows.length} rows over ${end.toFixed(2)} ${escapeText(unit)}: ${escapeText(shown.join(", "))}.">` +
    parts.join("") +
    "</svg>";
}
