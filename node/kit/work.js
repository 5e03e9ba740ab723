// The contract's work, shared by the loop and the worker threads: 32-bit FNV-1a over the low
// byte of the loop index (contract/cpu-vectors.json), and a real blocking sleep.

export function fnv1a(n) {
  let x = 2166136261 | 0;
  let i = 0;
  // blocks of 256: i & 0xff is j. x stays a signed 32-bit integer (Math.imul's result, the
  // same bits mod 2^32) and becomes unsigned once, at the end.
  for (; i + 256 <= n; i += 256) for (let j = 0; j < 256; j++) x = Math.imul(x ^ j, 16777619);
  for (let j = 0; i < n; i++, j++) x = Math.imul(x ^ j, 16777619);
  return x >>> 0;
}

const cell = new Int32Array(new SharedArrayBuffer(4));

// Blocks the calling thread for ms (Atomics.wait on a cell nobody notifies): on the main
// thread that is the whole event loop, in a worker thread that one thread.
export function blockingSleep(ms) {
  if (ms > 0) Atomics.wait(cell, 0, 0, ms);
}
