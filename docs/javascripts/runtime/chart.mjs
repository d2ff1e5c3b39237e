// The calculator's small chart, drawn as inline SVG: per-user and total decode tokens/s
// against the number of users sharing each step, both axes logarithmic. It plots the
// points the package computed; it computes none. Colours come from Material's CSS
// variables (see runtime.css), so the chart follows the light or dark scheme.

const MARGIN = { left: 52, right: 14, top: 14, bottom: 38 };
const X_TICKS = [1, 4, 16, 64, 256, 1024, 4096];

// The SVG is drawn at the width it is shown at, so its 12 px text stays 12 px on a phone.
let WIDTH = 640;
let HEIGHT = 260;
let plotWidth = 0;
let plotHeight = 0;

function size(container) {
  WIDTH = Math.round(Math.min(720, Math.max(300, container.clientWidth || 640)));
  HEIGHT = WIDTH < 480 ? 220 : 260;
  plotWidth = WIDTH - MARGIN.left - MARGIN.right;
  plotHeight = HEIGHT - MARGIN.top - MARGIN.bottom;
}

/** A power of ten as an axis label: 100, 1k, 10k, 1M; smaller than 1 as a decimal. */
function powerOfTen(value) {
  if (value >= 1e6) return `${value / 1e6}M`;
  if (value >= 1e3) return `${value / 1e3}k`;
  return String(value);
}

function scales(points) {
  const xMin = Math.log2(X_TICKS[0]);
  const xMax = Math.log2(X_TICKS[X_TICKS.length - 1]);
  const fitting = points.filter((p) => p.fits);
  const shown = fitting.length ? fitting : points;
  const values = shown.flatMap((p) => [p.per_user, p.total]).filter((v) => v > 0);
  const yMin = Math.floor(Math.log10(Math.min(...values)));
  const yMax = Math.max(yMin + 1, Math.ceil(Math.log10(Math.max(...values))));
  return {
    x: (users) => MARGIN.left + ((Math.log2(users) - xMin) / (xMax - xMin)) * plotWidth,
    y: (value) => MARGIN.top + (1 - (Math.log10(value) - yMin) / (yMax - yMin)) * plotHeight,
    yTicks: Array.from({ length: yMax - yMin + 1 }, (_, i) => 10 ** (yMin + i)),
    yFloor: 10 ** yMin,
  };
}

function path(points, key, x, y, floor) {
  return points
    .map((p, i) => `${i ? "L" : "M"}${x(p.users).toFixed(1)},${y(Math.max(p[key], floor)).toFixed(1)}`)
    .join("");
}

/** Replace `container`'s content with the chart of `chart` ({points, users, crossover, max_users}). */
export function drawChart(container, chart) {
  const { points, users, crossover, max_users: maxUsers } = chart;
  size(container);
  const { x, y, yTicks, yFloor } = scales(points);
  const fitting = points.filter((p) => p.fits);
  const parts = [];
  for (const tick of yTicks) {
    parts.push(
      `<line class="rf-chart__grid" x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${y(tick)}" y2="${y(tick)}"/>`,
      `<text class="rf-chart__tick" x="${MARGIN.left - 6}" y="${y(tick) + 4}" text-anchor="end">${powerOfTen(tick)}</text>`,
    );
  }
  for (const tick of X_TICKS) {
    parts.push(
      `<text class="rf-chart__tick" x="${x(tick)}" y="${HEIGHT - MARGIN.bottom + 16}" text-anchor="middle">${tick}</text>`,
    );
  }
  parts.push(
    `<text class="rf-chart__label" x="${MARGIN.left + plotWidth / 2}" y="${HEIGHT - 4}" text-anchor="middle">users sharing each decode step</text>`,
    `<text class="rf-chart__label" transform="translate(12 ${MARGIN.top + plotHeight / 2}) rotate(-90)" text-anchor="middle">tokens/s</text>`,
  );
  if (maxUsers !== null && maxUsers !== undefined && maxUsers < X_TICKS[X_TICKS.length - 1]) {
    const left = x(Math.max(maxUsers, 1));
    parts.push(
      `<rect class="rf-chart__full" x="${left}" y="${MARGIN.top}" width="${WIDTH - MARGIN.right - left}" height="${plotHeight}"/>`,
      `<text class="rf-chart__note" x="${WIDTH - MARGIN.right - 6}" y="${MARGIN.top + 14}" text-anchor="end">memory full</text>`,
    );
  }
  if (crossover !== null && crossover !== undefined && crossover <= X_TICKS[X_TICKS.length - 1]) {
    parts.push(
      `<line class="rf-chart__crossover" x1="${x(crossover)}" x2="${x(crossover)}" y1="${MARGIN.top}" y2="${MARGIN.top + plotHeight}"/>`,
      `<text class="rf-chart__note" x="${x(crossover) - 4}" y="${MARGIN.top + plotHeight - 6}" text-anchor="end">compute-bound →</text>`,
    );
  }
  if (fitting.length) {
    parts.push(
      `<path class="rf-chart__total" d="${path(fitting, "total", x, y, yFloor)}"/>`,
      `<path class="rf-chart__per-user" d="${path(fitting, "per_user", x, y, yFloor)}"/>`,
    );
  }
  if (!fitting.length) {
    parts.push(
      `<text class="rf-chart__note" x="${MARGIN.left + plotWidth / 2}" y="${MARGIN.top + plotHeight / 2}" text-anchor="middle">does not fit at any number of users</text>`,
    );
  }
  const current = points.find((p) => p.users === users);
  if (current && current.fits) {
    parts.push(
      `<circle class="rf-chart__dot rf-chart__dot--total" cx="${x(users)}" cy="${y(current.total)}" r="4.5"/>`,
      `<circle class="rf-chart__dot rf-chart__dot--per-user" cx="${x(users)}" cy="${y(current.per_user)}" r="4.5"/>`,
    );
  }
  parts.push(
    `<g class="rf-chart__legend" transform="translate(${MARGIN.left + 10} ${MARGIN.top + 6})">`,
    `<line class="rf-chart__total" x1="0" x2="18" y1="6" y2="6"/><text x="24" y="10">all users</text>`,
    `<line class="rf-chart__per-user" x1="0" x2="18" y1="24" y2="24"/><text x="24" y="28">each user</text>`,
    `</g>`,
  );
  const description = fitting.length
    ? `Each user's tokens/s falls and the total rises as more users share a step; the dots mark ${users.toLocaleString("en-US")} users.`
    : "Nothing fits in memory, so there is nothing to plot.";
  container.innerHTML =
    `<svg class="rf-chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="Decode tokens/s against users. ${description}">` +
    parts.join("") +
    "</svg>";
}
