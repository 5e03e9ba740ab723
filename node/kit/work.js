// The contract's work, shared by the loop and the worker threads: 32-bit FNV-1a over the low
// byte of the loop index (contract/cpu-vectors.json), and a real blocking sleep.

export function fnv1a(n) {
  let x = 2166136261;
  for (let i = 0; i < n; i++) x = Math.imul(x ^ (i & 0xff), 16777619) >>> 0;
  return x;
}

const cell = new Int32Array(new SharedArrayBuffer(4));

// Blocks the calling thread for ms (Atomics.wait on a cell nobody notifies): on the main
// thread that is the whole event loop, in a worker thread that one thread.
export function blockingSleep(ms) {
  if (ms > 0) Atomics.wait(cell, 0, 0, ms);
}
