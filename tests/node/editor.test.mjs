// The Run cell's highlighter (docs/javascripts/runtime/editor.mjs) takes time linear in its input,
// whatever the input holds, and shows every character it was given (issue 25, H5). The inputs are
// neighbours of the attack report's digit run: other long runs that a backtracking pattern could
// try every split of, long strings, deep brackets, and text past the highlighting limit.
// Run by tests/test_node_pyodide.py; standalone: node --test tests/node/editor.test.mjs
import assert from "node:assert/strict";
import { test } from "node:test";
import { HIGHLIGHT_LIMIT, highlight } from "../../docs/javascripts/runtime/editor.mjs";

/** The text a highlighted copy shows: every token's text, in order. */
function shownText(tokens) {
  return tokens.map(([, text]) => text).join("");
}

// Each just under the limit, so the pattern itself, not the cap, has to be linear. Before the fix
// the first took about 12 s here; a linear scan takes milliseconds. A second a case leaves room
// for a loaded machine and still fails a quadratic one by an order of magnitude.
const N = HIGHLIGHT_LIMIT - 100;
const CASES = {
  "digits then a letter": "x = " + "7".repeat(N) + "q",
  "digits with underscores then a letter": "x = " + "9_".repeat(N / 2) + "z",
  "a fraction's digits then a letter": "x = 3." + "1".repeat(N) + "k",
  "an exponent's digits then a letter": "x = 2e" + "5".repeat(N) + "w",
  "hex digits then a letter past f": "x = 0x" + "a".repeat(N) + "g",
  "a leading-dot fraction then a letter": "x = ." + "4".repeat(N) + "t",
  "dots and digits alternating": "x = " + "1.".repeat(N / 2) + "y",
  "an unterminated string of escapes": 'x = "' + "\\\\".repeat(N / 2),
  "an unterminated triple-quoted string of quotes": "x = '''" + "''a".repeat(N / 3),
  "a string prefix run": "rb".repeat(N / 2) + '"',
  "deep brackets": "x = " + "(".repeat(N / 2) + ")".repeat(N / 2),
  "a decorator of dots": "@" + "a.".repeat(N / 2),
  "a long comment": "#" + "# ".repeat(N / 2),
};

for (const [what, source] of Object.entries(CASES)) {
  test(`linear on ${what}`, () => {
    const started = performance.now();
    const html = highlight(source);
    const took = performance.now() - started;
    assert.ok(took < 1000, `${what}: ${Math.round(took)} ms for ${source.length.toLocaleString("en-US")} characters`);
    assert.equal(shownText(html), source);
  });
}

test("past the limit the text is plain, and all of it is shown", () => {
  const source = "print(1)\n" + "8".repeat(3 * HIGHLIGHT_LIMIT) + "u <b>&</b>";
  const started = performance.now();
  const html = highlight(source);
  assert.ok(performance.now() - started < 1000);
  assert.equal(shownText(html), source);
  assert.deepEqual(html.slice(0, 2), [["builtin", "print"], ["", "("]]);
  // Markup in the source stays text: the page makes text nodes of it, never HTML.
  assert.ok(html[html.length - 1][1].endsWith("u <b>&</b>") && html[html.length - 1][0] === "");
});

test("numbers are still numbers", () => {
  for (const number of ["42", "1_000", "3.14", "2e10", "6.02e+23", "0xff", "0b1010", "1j"]) {
    assert.deepEqual(highlight(number), [["number", number]], number);
  }
  assert.deepEqual(highlight("x1"), [["", "x1"]]);
});
