// The snapshot container (docs/javascripts/runtime/snapshot_codec.mjs) gives back exactly
// the bytes it was made from, with or without a base image to rebuild them over, and
// refuses a file that is cut short, not a snapshot, or given a base of the wrong size.
// Run by tests/test_node_pyodide.py; standalone: node --test tests/node/snapshot_codec.test.mjs
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  decodeSnapshot,
  encodeSnapshot,
  readContainer,
  recordsDigest,
  sealedSnapshot,
} from "../../docs/javascripts/runtime/snapshot_codec.mjs";

/** Memory-like bytes: noise, long zero runs, short zero runs, and blocks repeated far apart. */
function memoryLike() {
  const raw = new Uint8Array(400_000);
  let seed = 12345;
  const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 24;
  for (let i = 0; i < 100_000; i += 1) raw[i] = next();
  // 100_000 .. 200_000 stays zero; a few short zero runs inside noise:
  for (let i = 200_000; i < 300_000; i += 1) raw[i] = i % 97 < 5 ? 0 : next();
  raw.copyWithin(300_000, 1_000, 41_000); // a far repeat (a copy, not a literal)
  raw.copyWithin(350_000, 200_100, 200_180); // a short one, just over a copy's minimum
  raw[raw.length - 1] = 7; // ends on a literal
  return raw;
}

test("a round trip gives back every byte", () => {
  const raw = memoryLike();
  const container = encodeSnapshot(raw, { pyodide: "test" });
  assert.deepEqual(decodeSnapshot(container), raw);
  assert.deepEqual(readContainer(container).header, { pyodide: "test", rawBytes: raw.length });
});

test("zero runs and far repeats are not stored byte for byte", () => {
  const raw = memoryLike();
  // Noise that must be stored: 100_000 + ~95_000 bytes; the zeros and the 40 kB repeat must not be.
  assert.ok(encodeSnapshot(raw, {}).length < 215_000);
});

test("all zeros, and nothing at all, survive", () => {
  for (const raw of [new Uint8Array(100_000), new Uint8Array(0), Uint8Array.of(1, 0, 0, 2)]) {
    assert.deepEqual(decodeSnapshot(encodeSnapshot(raw, {})), raw);
  }
});

test("a container cut short, or another file, is refused", () => {
  const container = encodeSnapshot(memoryLike(), {});
  assert.throws(() => decodeSnapshot(container.subarray(0, container.length - 10)), /incomplete/);
  assert.throws(() => decodeSnapshot(new TextEncoder().encode("<!doctype html>\n<p>Not found\n")), /not one this page/);
});

/**
 * A base image like a wasm module's initial memory under a snapshot: `raw`, but for a
 * changed 64-byte field every 1,000 bytes and a first stretch the base does not have.
 */
function baseFor(raw) {
  const base = raw.slice();
  for (let i = 0; i < base.length; i += 1000) for (let j = i; j < Math.min(i + 64, base.length); j += 1) base[j] ^= 0x5a;
  base.fill(0, 0, 50_000);
  return base;
}

test("rebuilt over a base image, every byte comes back", () => {
  const raw = memoryLike();
  const base = baseFor(raw);
  const container = encodeSnapshot(raw, { pyodide: "test" }, base);
  assert.deepEqual(decodeSnapshot(container, base.slice()), raw);
});

test("what the base already holds is not stored", () => {
  const raw = memoryLike();
  // The same bytes as the base but for 6% of them and the first 50 kB: far less to store
  // than the noise costs without a base.
  const withBase = encodeSnapshot(raw, {}, baseFor(raw)).length;
  assert.ok(withBase < 0.75 * encodeSnapshot(raw, {}).length, `${withBase} bytes`);
  const identical = encodeSnapshot(raw, {}, raw.slice()).length;
  assert.ok(identical < 200, `${identical} bytes for a snapshot equal to its base`);
});

test("a base of the wrong length is refused on both sides", () => {
  const raw = memoryLike();
  assert.throws(() => encodeSnapshot(raw, {}, raw.subarray(1)), /as long as the snapshot/);
  const container = encodeSnapshot(raw, {}, baseFor(raw));
  assert.throws(() => decodeSnapshot(container, new Uint8Array(10)), /wrong length/);
});

test("a sealed container's digest covers every record and the header fields that place them", async () => {
  const raw = memoryLike();
  const base = baseFor(raw);
  const sealed = await sealedSnapshot(raw, { pyodide: "test", base: { digest: "0123abcd", at: 8 } }, base);
  const { header, recordsAt } = readContainer(sealed);
  assert.match(header.sha256, /^[0-9a-f]{64}$/);
  assert.deepEqual(decodeSnapshot(sealed, base.slice()), raw);
  const records = sealed.subarray(recordsAt);
  assert.equal(await recordsDigest(header, records), header.sha256);
  // One byte anywhere in the records, or where the base image goes, or the raw size: another digest.
  for (const at of [0, 17, records.length >> 1, records.length - 1]) {
    const changed = records.slice();
    changed[at] ^= 1;
    assert.notEqual(await recordsDigest(header, changed), header.sha256, `record byte ${at}`);
  }
  for (const moved of [{ ...header, base: { ...header.base, at: 16 } }, { ...header, rawBytes: raw.length + 8 }]) {
    assert.notEqual(await recordsDigest(moved, records), header.sha256);
  }
});

test("an unsealed container carries no digest", () => {
  assert.equal(readContainer(encodeSnapshot(memoryLike(), {})).header.sha256, undefined);
});
