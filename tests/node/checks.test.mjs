// The page's input checks (docs/javascripts/runtime/checks.mjs) on cases whose answers
// Python's roofline.forms gave: every raw input accepted or refused as in Python, with the
// same value and the same words; every rule broken or kept as in Python.
// Run by tests/test_forms.py, which writes the cases to the file ROOFLINE_CHECK_CASES names.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { brokenRule, checkChoice, checkNumber, ruleMessage } from "../../docs/javascripts/runtime/checks.mjs";

const { fields, rules, messages } = JSON.parse(readFileSync(process.env.ROOFLINE_CHECK_CASES, "utf8"));

test("every raw input is accepted or refused as Python does", () => {
  for (const { field, raw, expected } of fields) {
    const answer = field.values ? checkChoice(field, raw) : checkNumber(field, raw);
    assert.deepEqual(answer, expected, `${JSON.stringify(field)} ${JSON.stringify(raw)}`);
  }
});

test("every rule is broken or kept as Python says", () => {
  for (const { rules: declared, params, broken } of rules) {
    const found = brokenRule(declared, params);
    assert.equal(found === null ? null : declared.indexOf(found), broken, JSON.stringify(params));
  }
});

test("a rule's message names the chosen options as Python words it", () => {
  for (const { rule, texts, expected } of messages) assert.equal(ruleMessage(rule, texts), expected);
});
