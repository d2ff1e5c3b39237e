// The store of the reader's own entries (docs/javascripts/runtime/own.mjs) against a storage that
// fills up, as a browser's localStorage does (about 5 MB a site): a full store is said to be full,
// not missing, and the oldest kept entries make room for a new one (issue 42, NP4).
// Run by tests/test_node_pyodide.py.
import assert from "node:assert/strict";
import { test } from "node:test";

const QUOTA = 1000; // characters, keys and values together, as browsers count them

class FullableStorage {
  constructor() {
    this.items = new Map();
    this.off = false;
  }

  used() {
    let total = 0;
    for (const [key, value] of this.items) total += key.length + value.length;
    return total;
  }

  getItem(key) {
    if (this.off) throw new DOMException("The operation is insecure.", "SecurityError");
    return this.items.has(key) ? this.items.get(key) : null;
  }

  setItem(key, value) {
    if (this.off) throw new DOMException("The operation is insecure.", "SecurityError");
    const before = this.items.get(key);
    if (this.used() - (before === undefined ? 0 : key.length + before.length) + key.length + value.length > QUOTA) {
      throw new DOMException("The quota has been exceeded.", "QuotaExceededError");
    }
    this.items.set(key, value);
  }
}

const storage = new FullableStorage();
globalThis.localStorage = storage;
const { remember, stored } = await import("../../docs/javascripts/runtime/own.mjs");

const ids = (kind) => stored(kind).map((entry) => entry.id);
const text = (size) => "x".repeat(size);

test("the oldest entries, of either kind, make room for a new one", async () => {
  storage.items.clear();
  assert.equal(remember("model", "own-00000001", "first", text(200)), "");
  await new Promise((resolve) => setTimeout(resolve, 2)); // a later `saved` time for each entry
  assert.equal(remember("gpu", "own-00000002", "second", text(200)), "");
  await new Promise((resolve) => setTimeout(resolve, 2));
  assert.equal(remember("model", "own-00000003", "third", text(200)), "");
  await new Promise((resolve) => setTimeout(resolve, 2));
  // 450 more characters do not fit beside the three, nor beside the two newest: the two oldest go.
  assert.equal(remember("model", "own-00000004", "fourth", text(450)), "");
  assert.deepEqual(ids("model"), ["own-00000004", "own-00000003"]);
  assert.deepEqual(ids("gpu"), []);
});

test("a store full of what is not ours says it is full, and keeps what it had", () => {
  storage.items.clear();
  assert.equal(remember("model", "own-00000005", "small", text(10)), "");
  storage.items.set("another", text(800));
  const problem = remember("model", "own-00000006", "large", text(400));
  assert.match(problem, /storage for this site is full/);
  assert.doesNotMatch(problem, /keeps no storage/);
  assert.equal(storage.items.get("another").length, 800);
});

test("a browser that keeps no storage says so", () => {
  storage.items.clear();
  storage.off = true;
  try {
    assert.match(remember("gpu", "own-00000007", "any", text(10)), /keeps no storage for this site/);
  } finally {
    storage.off = false;
  }
});
