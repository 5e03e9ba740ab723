// The Node kit: everything a Node target shares that is not its router (the contract's
// endpoint logic, the worker-thread pool, the upstream client, the database pool, /info and
// the error bodies). A target wraps it in its framework's idiom (see serve.js for main):
//
//   for (const e of app.endpoints) ...        // every contract endpoint, in contract order
//   const [req, bad] = e.bind(rawQuery, id)   // the query (strict grammar; bad: the 400 body)
//   const [status, body] = await e.serve(req)
//   app.notFound(path), app.methodNotAllowed(method), ALLOW, app.internalError()
//
// Concurrency model (CONTRACT.md): one event loop per process. /async, /gather, /sequential
// wait on timers; /sync and /blocking block the loop (Node has no synchronous handler that
// does not); /cpu runs on the loop; /executor and /cpu-pool run in a pool of worker threads
// (piscina) of THREADS threads; /upstream runs its calls concurrently with node:http;
// the database endpoints wait on node-postgres's Pool.
import http from "node:http";
import { availableParallelism } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { Piscina } from "piscina";
import { Collector } from "./collector.js";
import { requestId } from "./contract.js";
import { blockingSleep, fnv1a } from "./work.js";
import { holdSignals } from "./signals.js";

const require_ = (await import("node:module")).createRequire(import.meta.url);
export const versions = {
  pg: require_("pg/package.json").version,
};

export const GRACEFUL_S = 3; // /info's graceful_timeout_s: requests in flight after SIGTERM
const UPSTREAM_TIMEOUT_MS = 15000;
const WORLD_ROWS = 10000n;

// A knob from the environment: an integer >= 1, or the default when unset.
export function intEnv(name, fallback) {
  const raw = (process.env[name] ?? "").trim();
  if (!raw) return fallback;
  if (!/^[1-9][0-9]*$/.test(raw)) throw new Error(`${name} must be an integer >= 1, got "${raw}"`);
  return Number(raw);
}

export const ALLOW = "GET"; // the Allow header of a 405: the contract serves GET only

export class App {
  // contract: loadContract(); config: {framework, frameworkVersion, workers}.
  constructor(contract, { framework, frameworkVersion, workers = 1 }) {
    this.contract = contract;
    this.framework = framework;
    this.frameworkVersion = frameworkVersion;
    this.workers = workers;
    this.pid = process.pid;
    this.target = process.env.LAB_TARGET?.trim() || framework;
    this.profile = process.env.LAB_PROFILE?.trim() || "node";
    this.upstreamUrl = (process.env.UPSTREAM_URL?.trim() || "http://127.0.0.1:8001").replace(
      /\/+$/,
      "",
    );
    // The upstream client: kept-alive connections, as many as calls in flight (maxSockets'
    // default: no cap) and all of them kept between calls (maxFreeSockets' default, 256,
    // would close most of a 1,000-call wave's and open them again for the next).
    this.upstreamAgent = new http.Agent({ keepAlive: true, maxFreeSockets: Infinity });
    // THREADS: the worker-thread pool (/executor, /cpu-pool); default one per CPU. Its
    // threads all start now (min = max) and stay.
    this.threads = intEnv("THREADS", availableParallelism());
    this.pool = new Piscina({
      filename: new URL("./pool-worker.js", import.meta.url).href,
      minThreads: this.threads,
      maxThreads: this.threads,
      idleTimeout: Infinity,
    });
    this.db = openDatabase(contract, this.target, this.pid);
    this.collector = new Collector().install(); // this process's, as labkit's
    this.endpoints = this.contract.endpoints.map((e) => this.#endpoint(e));
  }

  #endpoint(e) {
    const logic = this.#logic[e.name];
    if (!logic) throw new Error(`contract endpoint ${e.name} is not implemented in Node`);
    if (e.method !== "GET") throw new Error(`contract endpoint ${e.name} is ${e.method}`);
    const contract = this.contract;
    return {
      ...e,
      bind(rawQuery, id) {
        const [values, bad] = contract.parse(e, rawQuery);
        return bad ? [null, bad] : [{ values, requestId: requestId(id) }, null];
      },
      serve: (req) => logic.call(this, e, req),
    };
  }

  async close() {
    this.upstreamAgent.destroy();
    await Promise.allSettled([this.pool.destroy(), this.db.pool?.end()]);
  }

  sleepBody(e, { values }) {
    return { endpoint: e.name, pid: this.pid, ...values };
  }

  #logic = {
    hello(e) {
      return [200, { endpoint: e.name, ...e.fields, pid: this.pid }];
    },
    health(e) {
      return [200, { endpoint: e.name, status: "ok", pid: this.pid }];
    },
    info() {
      return [200, this.info()];
    },
    // sync and blocking: a plain blocking sleep in the handler; it holds the event loop, so
    // the process serves nothing else meanwhile (capacity: one per worker).
    sync(e, r) {
      holdSignals(() => blockingSleep(r.values.ms));
      return [200, this.sleepBody(e, r)];
    },
    blocking(e, r) {
      holdSignals(() => blockingSleep(r.values.ms));
      return [200, this.sleepBody(e, r)];
    },
    async async(e, r) {
      await sleep(r.values.ms);
      return [200, this.sleepBody(e, r)];
    },
    // executor: the blocking sleep in a worker thread of the pool; the loop goes on.
    async executor(e, r) {
      await this.pool.run({ op: "sleep", ms: r.values.ms });
      return [200, this.sleepBody(e, r)];
    },
    async gather(e, r) {
      await Promise.all(Array.from({ length: r.values.n }, () => sleep(r.values.ms)));
      return [200, this.sleepBody(e, r)];
    },
    async sequential(e, r) {
      for (let i = 0; i < r.values.n; i++) await sleep(r.values.ms);
      return [200, this.sleepBody(e, r)];
    },
    cpu(e, { values: { n } }) {
      return [200, { endpoint: e.name, pid: this.pid, n, result: fnv1a(n) }];
    },
    async "cpu-pool"(e, { values: { n } }) {
      const result = await this.pool.run({ op: "cpu", n });
      return [200, { endpoint: e.name, pid: this.pid, n, result }];
    },
    upstream(e, r) {
      return this.upstream(e, r, true);
    },
    "upstream-seq"(e, r) {
      return this.upstream(e, r, false);
    },
    db(e, r) {
      return this.dbSleep(e, r);
    },
    "db-blocking"(e, r) {
      return this.dbSleep(e, r);
    },
    async "db-rows"(e, { values: { n, seed } }) {
      let checksum = 0;
      const failed = await this.withClient(async (client) => {
        for (let k = 1; k <= n; k++) {
          const id = worldId(seed, k);
          const { rows } = await client.query({ name: "world", text: WORLD_SQL, values: [id] });
          if (rows.length !== 1 || rows[0].id !== id) {
            throw new Error(`asked for world row ${id}, got ${JSON.stringify(rows)}`);
          }
          checksum += rows[0].randomnumber;
        }
      });
      if (failed) return failed;
      return [200, { endpoint: e.name, pid: this.pid, n, seed, checksum }];
    },
  };

  // The upstream's /delay?ms= n times, at once (Promise.all; the first failure aborts the
  // rest) or one after another; with node:http on a keep-alive Agent without a cap on
  // sockets per origin. Not fetch: Node's fetch (undici) holds calls back once thousands a
  // second are in flight, with the loop idle (CONTRACT.md, 'Upstream calls').
  async upstream(e, r, concurrent) {
    const { ms, n } = r.values;
    const abort = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abort.abort();
    }, UPSTREAM_TIMEOUT_MS);
    const options = {
      agent: this.upstreamAgent,
      headers: r.requestId ? { "x-lab-request-id": r.requestId } : {},
      signal: abort.signal,
    };
    const call = () =>
      new Promise((ok, fail) => {
        const req = http.get(`${this.upstreamUrl}/delay?ms=${ms}`, options, (res) => {
          res.on("error", fail);
          res.on("end", () => ok(res.statusCode));
          // a close after the end is a no-op: the promise has settled
          res.on("close", () => fail(new Error("the upstream's answer was cut short")));
          res.resume(); // drained: the connection is reused
        });
        req.on("error", fail);
      });
    const statuses = [];
    try {
      if (concurrent) {
        statuses.push(
          ...(await Promise.all(
            Array.from({ length: n }, () =>
              call().catch((err) => {
                abort.abort();
                throw err;
              }),
            ),
          )),
        );
      } else {
        for (let i = 0; i < n; i++) {
          statuses.push(await call());
          if (statuses.at(-1) !== 200) break;
        }
      }
    } catch (err) {
      if (timedOut) return [504, { error: `upstream timed out after ${UPSTREAM_TIMEOUT_MS} ms` }];
      const why = err?.message || String(err); // node:http names the code (ECONNREFUSED)
      return [502, { error: `upstream failed: ${why}` }];
    } finally {
      clearTimeout(timer);
    }
    const bad = statuses.find((s) => s !== 200);
    if (bad !== undefined) return [502, { error: `upstream answered ${bad}`, statuses }];
    return [200, { endpoint: e.name, pid: this.pid, ms, n, statuses }];
  }

  async dbSleep(e, { values: { ms } }) {
    const failed = await this.withClient((client) =>
      client.query("SELECT pg_sleep($1)", [ms / 1000]),
    );
    return failed ?? [200, { endpoint: e.name, pid: this.pid, ms }];
  }

  // f with one pooled client; a failure is the contract's 503 (returned), else undefined.
  // A client that failed is destroyed, not returned to the pool.
  async withClient(f) {
    const { pool, why } = this.db;
    if (!pool) return this.dbError(why);
    let client;
    try {
      client = await pool.connect();
    } catch (err) {
      return this.dbError(err.message);
    }
    try {
      await f(client);
      client.release();
    } catch (err) {
      client.release(err);
      return this.dbError(err.message);
    }
    return undefined;
  }

  // The contract's error bodies that are not about a parameter (x-lab.errors templates).
  notFound(path) {
    return { error: this.contract.error("not-found"), path };
  }

  methodNotAllowed(method) {
    return { error: this.contract.error("method-not-allowed"), method };
  }

  internalError() {
    return { error: this.contract.error("internal") };
  }

  // The contract's 503 body (x-lab.errors.database) with the failure's words on one line.
  dbError(reason) {
    const words = String(reason).split(/\s+/).join(" ").trim();
    return [503, { error: this.contract.error("database", { reason: words }) }];
  }

  info() {
    const w = this.workers;
    const capacity = {
      hello: null,
      sync: w, // a blocking sleep holds the worker's event loop
      async: null, // a timer holds nothing
      blocking: w,
      executor: w * this.threads, // a blocking sleep holds one worker thread
      gather: null,
      sequential: null,
      cpu: w, // inline CPU work holds the event loop
      "cpu-pool": w * this.threads,
      upstream: null, // the Agent: no cap on connections per origin
      "upstream-seq": null,
      db: w * this.db.size, // a request holds one of the pool's connections
      "db-blocking": w * this.db.size, // no synchronous driver: the same as /db
      "db-rows": w * this.db.size,
    };
    const want = this.contract.benchEndpoints().map((e) => e.name);
    if (want.sort().join() !== Object.keys(capacity).sort().join()) {
      throw new Error(`capacity keys differ from the contract's: ${want}`);
    }
    return {
      endpoint: "info",
      pid: this.pid,
      target: this.target,
      profile: this.profile,
      framework: this.framework,
      framework_version: this.frameworkVersion,
      server: "node:http",
      server_version: process.versions.node,
      language: "node",
      language_version: process.versions.node,
      workers: w,
      threads: 1, // handlers run on the process's one event-loop thread
      executor_threads: this.threads,
      pool_processes: this.threads, // worker threads of the /cpu-pool pool
      worker_cpus: 1, // a process's own work runs on its one event loop (the pool's aside)
      cpus: availableParallelism(),
      jit: true, // V8 compiles hot code while it serves: the runner warms it up until steady
      collector: this.collector.totals(), // V8's pauses: the runner reads them around a cell
      capacity,
      database: {
        driver: "pg (node-postgres Pool)",
        driver_version: versions.pg,
        pool: this.db.size,
        pool_source: this.db.source,
        blocking_driver: "pg (node-postgres Pool)",
        blocking_pool: this.db.size,
        blocking: "same as /db",
      },
      graceful_timeout_s: GRACEFUL_S,
    };
  }
}

const WORLD_SQL = "SELECT id, randomnumber FROM world WHERE id = $1";

// node-postgres's Pool at its own default size (10) unless DB_POOL sets it (max and min
// alike); connections open on first use. Without DATABASE_URL the endpoints answer 503.
function openDatabase(contract, target, pid) {
  const spec = contract.ext.database;
  const timeoutMs = spec["timeout-s"] * 1000;
  const knob = intEnv(spec["pool-env"], undefined);
  const url = process.env[spec["url-env"]]?.trim();
  const size = knob ?? new pg.Pool().options.max;
  const db = { size, source: knob ? spec["pool-env"] : "default" };
  if (!url) return { ...db, why: `${spec["url-env"]} is not set` };
  const pool = new pg.Pool({
    connectionString: url,
    max: size,
    min: knob ?? 0,
    application_name: spec["application-name"].replace("{target}", target).replace("{pid}", pid),
    // A pooled connection within the contract's timeout (pg-pool uses it for a new
    // connection too; a refused one fails at once), and each query's answer.
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
  });
  pool.on("error", () => {}); // an idle connection cut by the server: the pool drops it
  return { ...db, pool };
}

// splitMix64, the contract's row picker (db-vectors.json): arithmetic mod 2^64.
function splitMix64(seed, k) {
  const M = (1n << 64n) - 1n;
  let z = (BigInt(seed) + BigInt(k) * 0x9e3779b97f4a7c15n) & M;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & M;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & M;
  return z ^ (z >> 31n);
}

export function worldId(seed, k) {
  return Number(1n + (splitMix64(seed, k) % WORLD_ROWS));
}
