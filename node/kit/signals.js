// A blocked event loop cannot run a signal handler: a SIGTERM that arrives while /sync or
// /blocking holds the loop would wait for the handler to end (10 s for /sync?ms=10000), past
// the 5 s every lab server has to exit. So while the loop is blocked the process has no
// SIGTERM/SIGINT listener: Node then restores the default action, and such a signal ends the
// process at once (the request in flight is cut, as the graceful timeout would cut it).
const SIGNALS = ["SIGTERM", "SIGINT"];

export function holdSignals(block) {
  const saved = SIGNALS.map((s) => [s, process.rawListeners(s)]);
  for (const [s] of saved) process.removeAllListeners(s);
  try {
    return block();
  } finally {
    for (const [s, listeners] of saved) for (const l of listeners) process.on(s, l);
  }
}
