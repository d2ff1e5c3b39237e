// A calculator's timeline output (docs/javascripts/runtime/timeline.mjs): one bar per span, at
// its place on the time axis, coloured by its kind's position in the list, text escaped.
// Run by tests/test_continuous_batching.py; standalone: node --test tests/node/timeline.test.mjs
import assert from "node:assert/strict";
import { test } from "node:test";
import { drawTimeline, ticks } from "../../docs/javascripts/runtime/timeline.mjs";
import { fakeContainer, installFakeDocument } from "./fake_dom.mjs";

installFakeDocument();

const TIMELINE = {
  rows: [
    { label: "#1", title: "Request <1>", spans: [["prefill", 0, 1], ["decode", 1, 4]] },
    { label: "#2", spans: [["wait", 0.5, 2], ["decode", 2, 8]] },
  ],
  kinds: [["wait", "Queued"], ["prefill", "Prefill"], ["decode", "Decode"]],
  unit: "s",
};

function drawn(timeline, width = 640) {
  const container = fakeContainer(width);
  drawTimeline(container, timeline);
  return container.innerHTML;
}

function bars(html) {
  return [...html.matchAll(/<rect class="rf-timeline__span rf-timeline__span--(\d)" data-kind="(\w+)" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"/g)].map(
    (match) => ({ colour: Number(match[1]), kind: match[2], x: Number(match[3]), width: Number(match[4]) }),
  );
}

test("one bar per span, coloured by the kind's place in the list", () => {
  const found = bars(drawn(TIMELINE));
  assert.deepEqual(
    found.map((bar) => [bar.kind, bar.colour]),
    [["prefill", 1], ["decode", 2], ["wait", 0], ["decode", 2]],
  );
});

test("bars sit on a shared axis: widths are proportional to the spans' lengths", () => {
  const [prefill, decode, wait, last] = bars(drawn(TIMELINE));
  const perSecond = prefill.width; // the first span lasts one second
  assert.ok(Math.abs(decode.width - 3 * perSecond) < 0.05);
  assert.ok(Math.abs(wait.width - 1.5 * perSecond) < 0.05);
  assert.ok(Math.abs(last.x + last.width - (prefill.x + 8 * perSecond)) < 0.05); // ends at 8 s
  assert.ok(Math.abs(decode.x - (prefill.x + perSecond)) < 0.05);
});

test("labels and titles are escaped, and a row's title names it", () => {
  const html = drawn(TIMELINE);
  assert.ok(html.includes("<title>Request &lt;1&gt;</title>"));
  assert.ok(!html.includes("<1>"));
  assert.ok(html.includes('aria-label="Timeline of 2 rows over 8.00 s: queued, prefill, decode."'));
});

test("ticks are round steps of 1, 2 or 5 times a power of ten", () => {
  assert.deepEqual(ticks(8), [0, 2, 4, 6, 8]);
  assert.deepEqual(ticks(0.37), [0, 0.1, 0.2, 0.3]);
  assert.deepEqual(ticks(0), [0]);
});

test("an answer that is not a timeline's shape draws nothing it was not meant to", () => {
  // Markup in every text field, numbers that are strings or objects, a kinds list of junk:
  // each text becomes a text node, each number a finite one, and nothing is parsed as markup.
  const hostile = '"><img src=x onerror="window.__xss=1">';
  const html = drawn({
    rows: [{ label: hostile, title: hostile, spans: [[hostile, "0", { valueOf: () => 1 }], "junk"] }],
    kinds: [[hostile, hostile], 5],
    unit: hostile,
  });
  // Outside attribute values (where a browser's serialisation leaves "<" as it is), no <img.
  assert.ok(!html.replace(/="[^"]*"/g, "").includes("<img"), html);
  assert.ok(html.includes("&lt;img src=x onerror="));
  assert.ok(!/NaN|Infinity/.test(html));
  assert.equal(drawn(null).includes("Timeline of 0 rows"), true);
});
