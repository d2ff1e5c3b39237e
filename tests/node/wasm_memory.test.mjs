// The initial memory read from a wasm file's data segments (docs/javascripts/runtime/wasm_memory.mjs)
// is what the engine itself puts in memory, and its digest tells builds apart.
// Run by tests/test_node_pyodide.py; standalone: node --test tests/node/wasm_memory.test.mjs
import assert from "node:assert/strict";
import { test } from "node:test";
import { dataSegments, initialMemory, segmentsDigest } from "../../docs/javascripts/runtime/wasm_memory.mjs";

const MAGIC_AND_VERSION = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];

function section(id, body) {
  if (body.length > 127) throw new Error("keep test sections under 128 bytes (one-byte sizes)");
  return [id, body.length, ...body];
}

/**
 * A valid module with one page of memory and three data segments: active at 16, passive,
 * and active at 200 through the memory-index form (flags 2), with a custom section first.
 */
function tinyModule({ firstByte = 1, secondOffset = 200 } = {}) {
  const custom = section(0, [4, ..."note".split("").map((c) => c.charCodeAt(0)), 42, 42]);
  const memory = section(5, [1, 0x00, 1]); // one memory, no maximum, one page
  const offset = [secondOffset & 0x7f | 0x80, secondOffset >> 7]; // signed LEB128 of 128..8191
  const data = section(11, [
    3,
    ...[0x00, 0x41, 16, 0x0b, 3, firstByte, 2, 3],
    ...[0x01, 2, 9, 9],
    ...[0x02, 0x00, 0x41, ...offset, 0x0b, 2, 7, 8],
  ]);
  return Uint8Array.from([...MAGIC_AND_VERSION, ...custom, ...memory, ...data]);
}

test("the image is the memory the engine starts the module with", async () => {
  const bytes = tinyModule();
  const segments = dataSegments(bytes);
  assert.deepEqual(
    segments.map(({ offset, bytes: data }) => [offset, [...data]]),
    [
      [16, [1, 2, 3]],
      [200, [7, 8]],
    ],
  );
  const { instance } = await WebAssembly.instantiate(withExportedMemory(bytes), {});
  const memory = new Uint8Array(instance.exports.memory.buffer);
  assert.deepEqual(initialMemory(segments, { total: memory.length }), memory);
});

/** `tinyModule()` with an export section (memory 0 as "memory") inserted before the data section. */
function withExportedMemory(bytes) {
  const exportSection = section(7, [1, 6, ..."memory".split("").map((c) => c.charCodeAt(0)), 0x02, 0]);
  const dataAt = bytes.lastIndexOf(11, bytes.length - 20); // the data section's id byte
  return Uint8Array.from([...bytes.subarray(0, dataAt), ...exportSection, ...bytes.subarray(dataAt)]);
}

test("the image can sit after a header, and is cut at the memory's end", () => {
  const segments = dataSegments(tinyModule());
  const image = initialMemory(segments, { total: 4 + 201, at: 4 });
  assert.deepEqual([...image.subarray(4 + 16, 4 + 19)], [1, 2, 3]);
  assert.equal(image[4 + 200], 7); // the segment's second byte is past the end
  assert.equal(image.length, 205);
});

test("the digest changes with a segment's bytes or place, and not otherwise", () => {
  const digest = (options) => segmentsDigest(dataSegments(tinyModule(options)));
  assert.match(digest(), /^[0-9a-f]{8}$/);
  assert.equal(digest(), digest());
  assert.notEqual(digest({ firstByte: 5 }), digest());
  assert.notEqual(digest({ secondOffset: 300 }), digest());
});

test("a file that is not wasm, or is cut short, is refused in one line", () => {
  assert.throws(() => dataSegments(new TextEncoder().encode("<!doctype html>")), /not a WebAssembly file/);
  const bytes = tinyModule();
  assert.throws(() => dataSegments(bytes.subarray(0, bytes.length - 3)), /ends inside a section|ends early/);
});
