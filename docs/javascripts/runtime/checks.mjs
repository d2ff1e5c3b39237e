// A calculator's input checks, as the page makes them: the same tests as roofline.forms
// makes in Python (Field.check, Rule.check), on the declaration the build writes into the
// markup: a <select>'s options; a number's min, max and step attributes; the words for what
// a value must be (data-rf-describe); the cross-field rules (data-rf-rules). Numbers are
// compared as exact integers of as many decimals as the declaration has, so 0.85 is a
// multiple of 0.05 here as in Python's Decimal, and 0.83 is not. Pure functions: under Node,
// tests/node/checks.test.mjs feeds them cases whose answers Python gave.

/** The cross-field rules a form may declare, as roofline.forms.RULES compares them. */
export const RULES = { at_most: (first, second) => first <= second, below: (first, second) => first < second };

/** Digits after the point in a number as written ("0.05" -> 2, "1e-3" -> 3). */
function decimals(text) {
  const [mantissa, exponent = "0"] = String(text).toLowerCase().split("e");
  const fraction = (mantissa.split(".")[1] ?? "").length;
  return Math.max(0, fraction - Number(exponent));
}

/**
 * `text` (digits, an optional point and sign) times 10**places, exactly, as an integer; NaN if it
 * has more digits after the point than that (so 0.83 is not a multiple of 0.05 at two places).
 */
function scaled(text, places) {
  const match = /^(-?)(\d*)(?:\.(\d*))?$/.exec(text);
  if (!match || (match[2] === "" && !match[3])) return NaN;
  const fraction = (match[3] ?? "").replace(/0+$/, "");
  if (fraction.length > places) return NaN;
  const value = Number(`${match[2] || "0"}${fraction.padEnd(places, "0")}`);
  return match[1] ? -value : value;
}

/**
 * A number with digit groups, as the package's rule for a typed number has them (roofline/parsing.py):
 * "_" or "," one at a time and only between two digits, so "4,096" is 4096 and ",,1,," is no number.
 */
const GROUPED = /^-?[0-9]+(?:[_,][0-9]+)*(?:\.[0-9]*)?$/;

/**
 * `raw` (what the reader typed, or a link's value) checked against a number field declared
 * `{min, max, step, describe}` as the markup holds them (strings): {value} or {error}.
 * Commas and underscores between digits are allowed ("4,096"), one at a time (GROUPED).
 */
export function checkNumber({ min, max, step, describe }, raw) {
  const written = String(raw).trim();
  const grouped = !/[_,]/.test(written) || GROUPED.test(written);
  const text = grouped ? written.replaceAll(",", "").replaceAll("_", "") : "";
  const places = Math.max(decimals(step), decimals(min), decimals(max));
  const value = scaled(text, places);
  const low = scaled(String(min), places);
  const high = scaled(String(max), places);
  const size = scaled(String(step), places);
  if (!Number.isSafeInteger(value) || value < low || value > high || (value - low) % size !== 0) {
    return { error: `must be ${describe}` };
  }
  return { value: value / 10 ** places };
}

/** `raw` checked against a choice field's values: {value} or {error}. */
export function checkChoice({ values, describe }, raw) {
  return values.includes(raw) ? { value: raw } : { error: `must be ${describe}` };
}

/**
 * Whether `params` keep `rule`: a comparison of its first and second field, or, for an
 * `allowed` rule, its fields' values found in turn down its tree of allowed combinations
 * (roofline.forms.Rule.declaration), the last among a list.
 */
export function ruleHolds(rule, params) {
  // A comparison for one choice of another field (Rule's `when`) holds for every other choice.
  if (rule.when && String(params[rule.when.field]) !== rule.when.value) return true;
  if (rule.kind !== "allowed") return RULES[rule.kind](params[rule.first], params[rule.second]);
  let node = rule.allowed;
  for (const [index, name] of rule.fields.entries()) {
    const value = String(params[name]);
    if (index === rule.fields.length - 1) return Array.isArray(node) && node.includes(value);
    if (node === null || typeof node !== "object" || Array.isArray(node) || !Object.hasOwn(node, value)) return false;
    node = node[value];
  }
  return false;
}

/** The first of `rules` ([{kind, first, second, fields, message, allowed?}]) that `params` break, or null. */
export function brokenRule(rules, params) {
  return rules.find((rule) => !ruleHolds(rule, params)) ?? null;
}

/** A rule's message with each {field} replaced by `texts[field]` (the chosen option's text), as Rule.message_for. */
export function ruleMessage(rule, texts) {
  return rule.message.replace(/\{([a-z][a-z0-9_]*)\}/g, (whole, name) => (Object.hasOwn(texts, name) ? texts[name] : whole));
}
