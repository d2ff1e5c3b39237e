// The memory a WebAssembly module starts with, read from its data segments: the bytes
// a Pyodide memory snapshot shares with pyodide.asm.wasm (static tables, frozen modules,
// interned strings), which the browser downloads anyway. snapshot_codec.mjs stores
// only what differs from this image; scripts/make_snapshot.mjs and boot.mjs build it
// from the same wasm file.
//
// Format: the WebAssembly binary format, section 11 (data). An active segment is
// (flags 0 | 2 with a memory index) then a constant offset expression (i32.const or
// i64.const, then end) then a byte vector; a passive one (flags 1) is not in the
// initial memory.

const DATA_SECTION = 11;
const OPCODE = { i32Const: 0x41, i64Const: 0x42, end: 0x0b };

class Reader {
  constructor(bytes) {
    this.bytes = bytes;
    this.at = 0;
  }

  byte() {
    if (this.at >= this.bytes.length) throw new Error("the wasm file ends early");
    return this.bytes[this.at++];
  }

  /** An unsigned LEB128 number (at most 2^53, so plain arithmetic stays exact). */
  unsigned() {
    let value = 0;
    let scale = 1;
    for (;;) {
      const byte = this.byte();
      value += (byte & 0x7f) * scale;
      if (!(byte & 0x80)) return value;
      scale *= 128;
      if (scale > 2 ** 49) throw new Error("the wasm file has a number too large to read");
    }
  }

  /** A signed LEB128 number, for i32.const / i64.const offsets. */
  signed() {
    let value = 0;
    let scale = 1;
    for (;;) {
      const byte = this.byte();
      value += (byte & 0x7f) * scale;
      scale *= 128;
      if (!(byte & 0x80)) return byte & 0x40 ? value - scale : value;
      if (scale > 2 ** 49) throw new Error("the wasm file has a number too large to read");
    }
  }
}

/**
 * The active data segments of `wasm` (a Uint8Array of a .wasm file), as
 * [{offset, bytes}] in file order; `bytes` are views into `wasm`. Throws a one-line
 * reason for a file that is not WebAssembly or places a segment by a global.
 */
export function dataSegments(wasm) {
  const header = [0x00, 0x61, 0x73, 0x6d];
  if (wasm.length < 8 || header.some((byte, i) => wasm[i] !== byte)) throw new Error("not a WebAssembly file");
  const reader = new Reader(wasm);
  reader.at = 8;
  const segments = [];
  while (reader.at < wasm.length) {
    const id = reader.byte();
    const size = reader.unsigned();
    const end = reader.at + size;
    if (end > wasm.length) throw new Error("the wasm file ends inside a section");
    if (id === DATA_SECTION) {
      for (let count = reader.unsigned(); count > 0; count -= 1) {
        const flags = reader.unsigned();
        if (flags === 1) {
          const length = reader.unsigned(); // read before `at` is: it moves `at`
          reader.at += length; // passive: copied in later by the program, if at all
          continue;
        }
        if (flags === 2) reader.unsigned(); // memory index
        else if (flags !== 0) throw new Error(`a data segment has unknown flags ${flags}`);
        const opcode = reader.byte();
        if (opcode !== OPCODE.i32Const && opcode !== OPCODE.i64Const) {
          throw new Error("a data segment's offset is not a constant");
        }
        const offset = reader.signed();
        if (reader.byte() !== OPCODE.end) throw new Error("a data segment's offset is not a constant");
        const length = reader.unsigned();
        if (reader.at + length > end) throw new Error("a data segment runs past its section");
        segments.push({ offset, bytes: wasm.subarray(reader.at, reader.at + length) });
        reader.at += length;
      }
    }
    reader.at = end;
  }
  return segments;
}

/**
 * `length` bytes of the module's initial memory placed at `at` in a new zero-filled
 * array of `total` bytes (a snapshot keeps a header before the memory).
 * Segments past `length` are cut, as memory would refuse them.
 */
export function initialMemory(segments, { total, at = 0, length = total - at }) {
  const image = new Uint8Array(total);
  for (const { offset, bytes } of segments) {
    if (offset < 0 || offset >= length) continue;
    image.set(bytes.subarray(0, Math.min(bytes.length, length - offset)), at + offset);
  }
  return image;
}

/** Every DIGEST_STRIDE-th byte of a segment goes into the digest (all of them cost 13 ms here). */
const DIGEST_STRIDE = 8;

/**
 * FNV-1a (32-bit) over every segment's offset, length and every DIGEST_STRIDE-th byte,
 * as 8 hex digits: tells a snapshot which wasm build its base image came from (another
 * build moves segments or changes their bytes), without hashing 10 MB of code. The
 * Pyodide version in the snapshot's header is checked first; this is the second line.
 */
export function segmentsDigest(segments) {
  let hash = 0x811c9dc5;
  for (const { offset, bytes } of segments) {
    // Offsets and lengths in a 32-bit memory fit in 32 bits: four bytes each, low first.
    for (const number of [offset, bytes.length]) {
      for (let shift = 0; shift < 32; shift += 8) hash = Math.imul(hash ^ ((number >>> shift) & 0xff), 0x01000193);
    }
    for (let i = 0; i < bytes.length; i += DIGEST_STRIDE) hash = Math.imul(hash ^ bytes[i], 0x01000193);
  }
  return (hash >>> 0).toString(16).padStart(8, "0");
}
