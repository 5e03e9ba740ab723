// V8's garbage collector, timed: /info's `collector`, as labkit.collector times Python's. A
// collection's pause holds the event loop (its parallel part shares out to V8's helper
// threads, which a server pinned to one CPU runs on that same CPU), so every request in flight
// waits for it (CONTRACT.md, "V8's collector"). The performance timeline's
// "gc" entries time each pause on the main thread; the runner reads the totals around the
// calibration and around the load.
import { PerformanceObserver, constants } from "node:perf_hooks";

// /info's collections, per generation as Python's are: the young generation's collections
// (scavenges, minor mark-sweeps) and the old one's (mark-sweep-compact). Incremental marking
// steps and weak callbacks hold the loop too: their time counts, they are not collections.
const GENERATIONS = [constants.NODE_PERFORMANCE_GC_MINOR, constants.NODE_PERFORMANCE_GC_MAJOR];

export class Collector {
  constructor() {
    this.collections = GENERATIONS.map(() => 0);
    this.ms = 0; // the pauses' time on the main thread so far
    // the sum of each pause's ms squared: the runner reads a random moment's wait for a
    // pause in progress from it (lab.run.collector.pause_wait_ms)
    this.squares = 0;
    this.observer = null;
  }

  // Count one timeline entry: its kind (detail.kind, constants.NODE_PERFORMANCE_GC_*) and
  // duration (ms).
  add(kind, durationMs) {
    const generation = GENERATIONS.indexOf(kind);
    if (generation >= 0) this.collections[generation] += 1;
    this.ms += durationMs;
    this.squares += durationMs * durationMs;
  }

  // Observe this process's collections from now on (once).
  install() {
    if (this.observer) return this;
    this.observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) this.add(e.detail?.kind, e.duration);
    });
    this.observer.observe({ entryTypes: ["gc"] });
    return this;
  }

  // /info's collector: collections per generation, their seconds and the sum of their
  // seconds squared so far.
  totals() {
    return {
      collections: [...this.collections],
      seconds: Math.round(this.ms * 1000) / 1e6,
      seconds_squared: Math.round(this.squares * 1000) / 1e9,
    };
  }
}
