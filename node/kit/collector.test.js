import assert from "node:assert/strict";
import { constants } from "node:perf_hooks";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Collector } from "./collector.js";

test("entries count per generation; every pause's time adds up", () => {
  const c = new Collector();
  c.add(constants.NODE_PERFORMANCE_GC_MINOR, 1.5);
  c.add(constants.NODE_PERFORMANCE_GC_MINOR, 2.0);
  c.add(constants.NODE_PERFORMANCE_GC_MAJOR, 10.25);
  c.add(constants.NODE_PERFORMANCE_GC_INCREMENTAL, 0.25); // time held, no collection
  // 1.5² + 2² + 10.25² + 0.25² = 111.375 ms²
  assert.deepEqual(c.totals(), {
    collections: [2, 1],
    seconds: 0.014,
    seconds_squared: 0.000111375,
  });
});

test("the process's real collections are observed", async () => {
  const c = new Collector().install();
  let kept = [];
  for (let round = 0; round < 50 && c.totals().collections[0] === 0; round++) {
    for (let i = 0; i < 20000; i++) kept.push({ i, s: `x${i}` }); // fills the young generation
    kept = kept.slice(-1000);
    await sleep(1); // the observer's entries are delivered between turns of the loop
  }
  const { collections, seconds } = c.totals();
  assert.ok(collections[0] > 0, `no young collection seen: ${collections}`);
  assert.ok(seconds > 0 && seconds < process.cpuUsage().user / 1e6 + 1, `${seconds} s`);
});
