// The kit against the contract's shared test vectors and its grammar (node --test).
import assert from "node:assert/strict";
import { test } from "node:test";
import { loadContract, splitQuery } from "./contract.js";
import { App, worldId } from "./kit.js";
import { fnv1a } from "./work.js";

const contract = loadContract();

test("FNV-1a gives every cpu vector", () => {
  const vectors = contract.vectors("cpu-test-vectors");
  assert.ok(vectors.length > 0);
  for (const { n, result } of vectors) assert.equal(fnv1a(n), result, `n=${n}`);
});

test("the row picker gives every db vector's ids", () => {
  const vectors = contract.vectors("db-test-vectors");
  assert.ok(vectors.length > 0);
  for (const { seed, ids } of vectors) {
    assert.deepEqual(
      ids.map((_, i) => worldId(seed, i + 1)),
      ids,
      `seed=${seed}`,
    );
  }
});

const GRAMMAR = " must be an integer without sign or leading zeros";
const CASES = [
  // [endpoint, query, values or [param, message]]
  ["gather", "", { ms: 100, n: 10 }],
  ["gather", "ms=0&n=1&other=x&other=y", { ms: 0, n: 1 }],
  ["sync", "ms=10000", { ms: 10000 }],
  ["sync", "ms=", ["ms", "ms" + GRAMMAR]],
  ["sync", "ms", ["ms", "ms" + GRAMMAR]],
  ["sync", "ms=+5", ["ms", "ms" + GRAMMAR]],
  ["sync", "ms=%2B5", ["ms", "ms" + GRAMMAR]],
  ["sync", "ms=007", ["ms", "ms" + GRAMMAR]],
  ["sync", "ms=%D9%A3", ["ms", "ms" + GRAMMAR]],
  ["sync", "ms=%zz", ["ms", "ms" + GRAMMAR]],
  ["sync", "ms=1;n=2", ["ms", "ms" + GRAMMAR]],
  ["sync", "ms=1234567890", ["ms", "ms" + GRAMMAR]],
  ["sync", "ms=10001", ["ms", "ms must be between 0 and 10000"]],
  ["gather", "n=0", ["n", "n must be between 1 and 100"]],
  ["sync", "ms=1&ms=1", ["ms", "ms must be given once"]],
  ["sync", "m%73=1&ms=2", ["ms", "ms must be given once"]],
  ["gather", "n=abc&ms=abc", ["ms", "ms" + GRAMMAR]],
  ["gather", "ms=1&n=1&n=1", ["n", "n must be given once"]],
  ["sequential", "ms=100&n=100", { ms: 100, n: 100 }],
  ["sequential", "ms=10000&n=2", ["n", "n * ms must be at most 10000"]],
  ["sequential", "ms=2000", ["n", "n * ms must be at most 10000"]],
  ["sequential", "ms=10000&n=0", ["n", "n must be between 1 and 100"]],
  ["upstream", "ms=10000&n=100", { ms: 10000, n: 100 }],
];

test("the contract's grammar, bounds, repeats and cap, in contract order", () => {
  for (const [name, query, want] of CASES) {
    const [values, bad] = contract.parse(contract.endpoint(name), query);
    if (Array.isArray(want)) {
      assert.equal(values, null, `${name}?${query}`);
      assert.deepEqual({ ...bad }, { error: want[1], param: want[0] }, `${name}?${query}`);
    } else {
      assert.equal(bad, null, `${name}?${query}`);
      assert.deepEqual(values, want, `${name}?${query}`);
    }
  }
});

test("a query splits on & only, keeping a bad escape as written", () => {
  const q = splitQuery("a=1&a=2&b=%41+c&&c&d=%zz&e=1;f=2");
  assert.deepEqual(Object.fromEntries(q), {
    a: ["1", "2"],
    b: ["A c"],
    c: [""],
    d: ["%zz"],
    e: ["1;f=2"],
  });
});

test("the error bodies are the contract's templates, not copies of them", () => {
  const templates = Object.entries(contract.ext.errors).map(([k, v]) => [k, `changed: ${v}`]);
  const changed = Object.assign(Object.create(contract), {
    ext: { ...contract.ext, errors: Object.fromEntries(templates) },
  });
  const app = { contract: changed };
  const bodies = {
    notFound: [App.prototype.notFound.call(app, "/x"), { error: "changed: not found", path: "/x" }],
    methodNotAllowed: [
      App.prototype.methodNotAllowed.call(app, "PUT"),
      { error: "changed: method not allowed", method: "PUT" },
    ],
    internalError: [App.prototype.internalError.call(app), { error: "changed: internal error" }],
    dbError: [App.prototype.dbError.call(app, "down"), [503, { error: "changed: database: down" }]],
  };
  for (const [name, [got, want]] of Object.entries(bodies)) assert.deepEqual(got, want, name);
});
