// One task of the worker-thread pool (piscina): /executor's blocking sleep or /cpu-pool's
// FNV-1a, each holding its thread for the whole task.
import { blockingSleep, fnv1a } from "./work.js";

export default function task({ op, n, ms }) {
  if (op === "sleep") return blockingSleep(ms);
  return fnv1a(n);
}
