// One k6 script for every target: the targets differ only in BASE_URL.
//
//   k6 run -e BASE_URL=http://127.0.0.1:8000 -e ENDPOINT=sync -e MS=50 k6/lab.js
//
// Everything comes from __ENV (see k6/README.md). The endpoint's name, path, parameters,
// defaults and bounds come from the contract, read at init with open() so that `k6 archive`
// and `k6 cloud run` bundle it. No remote imports: nothing is fetched at run time.
// Load is written as totals (VUS, RATE) and nothing depends on __VU or __ITER, so the script
// stays valid when split by execution segments (k6-operator parallelism).

import http from 'k6/http';
import { Counter } from 'k6/metrics';

const CONTRACT = JSON.parse(open('../contract/openapi.json'));
const ENV = __ENV;

function fail(message) {
  throw new Error(`k6/lab.js: ${message}`);
}

// k6 archive / inspect / cloud do not see the shell's environment (only -e KEY=VALUE, or
// --include-system-env-vars); k6 run sees both.
const HOW = 'pass it with -e (k6 archive/inspect/cloud ignore shell variables)';

// Environment values: unset and empty mean "use the default".
function given(name) {
  const v = ENV[name] === undefined ? '' : String(ENV[name]).trim();
  return v === '' ? undefined : v;
}

function integer(name, fallback, min, max) {
  const raw = given(name);
  if (raw === undefined) return fallback;
  const bounds = `must be an integer between ${min} and ${max}`;
  if (!/^[+-]?\d+$/.test(raw)) fail(`${name}=${raw} is not an integer: ${name} ${bounds}`);
  const value = Number(raw);
  if (value < min || value > max) fail(`${name}=${raw} is out of bounds: ${name} ${bounds}`);
  return value;
}

function duration(name, fallback) {
  const raw = given(name) || fallback;
  if (!/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(raw)) {
    fail(`${name}=${raw} is not a duration such as 500ms, 10s, 1m30s`);
  }
  return raw;
}

// The contract: every GET operation, its path and its parameters (resolving $ref).
function resolve(node) {
  if (!node.$ref) return node;
  return node.$ref
    .replace(/^#\//, '')
    .split('/')
    .reduce((at, part) => at[part], CONTRACT);
}

const ENDPOINTS = {};
for (const [path, item] of Object.entries(CONTRACT.paths)) {
  const op = item.get;
  ENDPOINTS[op.operationId] = {
    path,
    params: (op.parameters || []).map((raw) => {
      const p = resolve(raw);
      return { name: p.name, min: p.schema.minimum, max: p.schema.maximum, def: p.schema.default };
    }),
  };
}
// Environment names of all query parameters any endpoint takes (ms -> MS, n -> N).
const PARAM_ENV = [
  ...new Set(Object.values(ENDPOINTS).flatMap((e) => e.params.map((p) => p.name.toUpperCase()))),
].sort();

const BASE_URL = (
  given('BASE_URL') || fail(`BASE_URL is required, e.g. http://127.0.0.1:8000; ${HOW}`)
).replace(/\/+$/, '');
if (!/^https?:\/\/[^/]+$/.test(BASE_URL)) {
  fail(`BASE_URL=${BASE_URL} must be scheme://host[:port], e.g. http://127.0.0.1:8000`);
}

const ENDPOINT = given('ENDPOINT');
const CHOICES = Object.keys(ENDPOINTS).join(', ');
if (ENDPOINT === undefined) fail(`ENDPOINT is required; choose from: ${CHOICES}; ${HOW}`);
if (!Object.hasOwn(ENDPOINTS, ENDPOINT)) {
  fail(`unknown ENDPOINT ${ENDPOINT}; choose from: ${CHOICES}`);
}
const OP = ENDPOINTS[ENDPOINT];

const PARAMS = {};
for (const p of OP.params) {
  PARAMS[p.name] = integer(p.name.toUpperCase(), p.def, p.min, p.max);
}
for (const name of PARAM_ENV) {
  if (given(name) !== undefined && !OP.params.some((p) => p.name.toUpperCase() === name)) {
    const takes = OP.params.map((p) => p.name.toUpperCase()).join(', ') || 'no parameters';
    fail(`ENDPOINT ${ENDPOINT} does not take ${name} (it takes ${takes})`);
  }
}

const VUS = integer('VUS', 10, 1, 100000);
const RATE = integer('RATE', undefined, 1, 10000000); // iterations/s; set: open model
// Set: a fixed number of requests per VU (k6's per-vu-iterations executor), DURATION its
// cap. ITERATIONS=1 with VUS=16 is a burst of 16 released at once; VUS=1 a sequential client.
const ITERATIONS = integer('ITERATIONS', undefined, 1, 10000000);
if (ITERATIONS !== undefined && RATE !== undefined) fail('ITERATIONS and RATE exclude each other');
const CANARY_RATE = integer('CANARY_RATE', 5, 0, 100000); // /hello per s; 0: no canary
const DURATION = duration('DURATION', '10s');
const TIMEOUT = duration('TIMEOUT', '120s');
// How long requests still running when DURATION ends may finish. A saturated server keeps
// completing at its full rate meanwhile, so a short grace leaves rps unbiased; k6's default
// (30 s) would let a deep queue drain for half a minute.
const GRACEFUL_STOP = duration('GRACEFUL_STOP', '3s');
const SUMMARY = given('SUMMARY');

const QUERY = Object.entries(PARAMS)
  .map(([k, v]) => `${encodeURIComponent(k)}=${v}`)
  .join('&');
const MAIN_URL = `${BASE_URL}${OP.path}${QUERY ? `?${QUERY}` : ''}`;
const CANARY_URL = `${BASE_URL}${ENDPOINTS.hello ? ENDPOINTS.hello.path : '/hello'}`;

const ITERATION_SCENARIO = {
  executor: 'per-vu-iterations',
  vus: VUS,
  iterations: ITERATIONS,
  maxDuration: DURATION,
  gracefulStop: GRACEFUL_STOP,
  exec: 'main',
};

const scenarios = {
  main: ITERATIONS
    ? ITERATION_SCENARIO
    : RATE
      ? {
          executor: 'constant-arrival-rate',
          rate: RATE,
          timeUnit: '1s',
          duration: DURATION,
          preAllocatedVUs: VUS,
          maxVUs: VUS,
          gracefulStop: GRACEFUL_STOP,
          exec: 'main',
        }
      : {
          executor: 'constant-vus',
          vus: VUS,
          duration: DURATION,
          gracefulStop: GRACEFUL_STOP,
          exec: 'main',
        },
};
if (CANARY_RATE > 0) {
  scenarios.canary = {
    executor: 'constant-arrival-rate',
    rate: CANARY_RATE,
    timeUnit: '1s',
    duration: DURATION,
    preAllocatedVUs: 2,
    maxVUs: 50,
    gracefulStop: GRACEFUL_STOP,
    exec: 'canary',
  };
}

// Always-true thresholds: they never fail a run, they make k6 keep these sub-metrics so that
// the summary has per-scenario values.
const thresholds = {
  'http_req_duration{scenario:main}': ['max>=0'],
  // latency of the successful requests alone: a fast 502 must not look like a fast answer
  'http_req_duration{scenario:main,expected_response:true}': ['max>=0'],
  'http_reqs{scenario:main}': ['count>=0'],
  'http_req_failed{scenario:main}': ['rate>=0'],
  'dropped_iterations{scenario:main}': ['count>=0'],
  'iterations{scenario:main}': ['count>=0'],
};
if (CANARY_RATE > 0) {
  Object.assign(thresholds, {
    'http_req_duration{scenario:canary}': ['max>=0'],
    'http_reqs{scenario:canary}': ['count>=0'],
    'http_req_failed{scenario:canary}': ['rate>=0'],
    'dropped_iterations{scenario:canary}': ['count>=0'],
  });
}

export const options = {
  scenarios,
  thresholds,
  discardResponseBodies: true,
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(50)', 'p(90)', 'p(95)', 'p(99)', 'count'],
  tags: { endpoint: ENDPOINT }, // on every metric sample of the run, canary included
};

const MAIN_PARAMS = { timeout: TIMEOUT, tags: { probe: 'main', endpoint: ENDPOINT } };
const CANARY_PARAMS = { timeout: TIMEOUT, tags: { probe: 'canary', endpoint: ENDPOINT } };

// Why main requests failed, one counter per reason (k6's summary has no per-tag breakdown
// unless the tag's values are known up front): failed_<status> for the registered statuses
// 400..431, 451, 500..511, failed_other for any other, failed_timeout (k6 error 1050) and
// failed_network (no answer: refused, reset, EOF). Counters without samples stay out of the
// summary. (Every VU makes them at init: a short list keeps 200 VUs starting fast.)
const FAILED = { timeout: new Counter('failed_timeout'), network: new Counter('failed_network') };
FAILED.other = new Counter('failed_other');
for (const [from, to] of [
  [400, 431],
  [451, 451],
  [500, 511],
]) {
  for (let status = from; status <= to; status += 1)
    FAILED[status] = new Counter(`failed_${status}`);
}

function failureReason(res) {
  if (res.status >= 200 && res.status < 400) return undefined; // k6's expected statuses
  if (res.status === 0) return res.error_code === 1050 ? 'timeout' : 'network';
  return FAILED[res.status] ? res.status : 'other';
}

// Each VU's cycles, one answer to its next: a closed loop's throughput is its VUs over their
// mean cycle (the sum of each VU's own rate), whatever their phases, where k6's rate (count
// over run time) also counts the start, before the first answer, and the last round's
// stragglers: up to a cycle over a cell's length. A VU adds its cycles up until they reach
// 100 ms, so that a fast cell writes a sample per 100 ms per VU, not one per request; what is
// left at the end (under 100 ms of cycles) is dropped. lab_cycling_vus counts the VUs that
// wrote cycles, so that the rate needs no VU count (an instance running a segment has a share
// of VUS), and a VU that never got two answers does not count as one cycling.
const CYCLE_MS = new Counter('lab_cycle_ms');
const CYCLES = new Counter('lab_cycles');
const CYCLING_VUS = new Counter('lab_cycling_vus');
const CYCLE_FLUSH_MS = 100;
let lastAnswer;
let heldMs = 0;
let held = 0;
let cycling = false;

function cycleEnds() {
  const now = Date.now();
  if (lastAnswer !== undefined) {
    heldMs += now - lastAnswer;
    held += 1;
    if (heldMs >= CYCLE_FLUSH_MS) {
      if (!cycling) CYCLING_VUS.add(1);
      cycling = true;
      CYCLE_MS.add(heldMs);
      CYCLES.add(held);
      heldMs = 0;
      held = 0;
    }
  }
  lastAnswer = now;
}

export function main() {
  const reason = failureReason(http.get(MAIN_URL, MAIN_PARAMS));
  if (reason !== undefined) FAILED[reason].add(1);
  cycleEnds();
}

export function canary() {
  http.get(CANARY_URL, CANARY_PARAMS);
}

// ---- end-of-test summary --------------------------------------------------------------------

function metric(data, name) {
  const m = data.metrics[name];
  return m ? m.values : undefined;
}

function ms(v) {
  if (v === undefined || v === null) return '-';
  return v >= 1000 ? `${(v / 1000).toFixed(2)}s` : `${v.toFixed(1)}ms`;
}

function pct(v) {
  return v === undefined || v === null ? '-' : `${(v * 100).toFixed(2)}%`;
}

function num(v, digits) {
  return v === undefined || v === null ? '-' : v.toFixed(digits);
}

// The closed loop's rate from its cycles (lab/run/loadgen.py's closed_loop_rps, which the row
// uses); undefined where k6's own rate stands: too few cycles, or a queue (its median answer
// at least twice its fastest) of fewer than 10 cycles a VU.
function closedLoopRate(data, lab) {
  const count = (name) => (metric(data, name) || {}).count || 0;
  const vus = count('lab_cycling_vus');
  const cycles = count('lab_cycles');
  const cycleMs = count('lab_cycle_ms');
  if (lab.rate || lab.iterations || vus < 1 || cycles < 2 * vus || cycleMs <= 0) return undefined;
  const took = metric(data, 'http_req_duration{scenario:main}') || {};
  if (cycles < 10 * vus && took.min > 0 && took.med >= 2 * took.min) return undefined;
  return (vus * cycles * 1000) / cycleMs;
}

function text(data, lab) {
  const reqs = metric(data, 'http_reqs{scenario:main}') || {};
  const closed = closedLoopRate(data, lab);
  const dur = metric(data, 'http_req_duration{scenario:main}') || {};
  const failed = metric(data, 'http_req_failed{scenario:main}') || {};
  const dropped = metric(data, 'dropped_iterations{scenario:main}') || {};
  let model = lab.rate ? `open ${lab.rate}/s, ${lab.vus} VUs max` : `closed ${lab.vus} VUs`;
  if (lab.iterations) model = `${lab.vus} VUs x ${lab.iterations} requests`;
  const query = Object.entries(lab.params)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  const what = `${lab.endpoint}${query ? ` (${query})` : ''}`;
  const lines = [
    `lab ${what} on ${lab.base_url}: ${model}, ${lab.duration}`,
    `  main    ${num(closed === undefined ? reqs.rate : closed, 1)} req/s` +
      (closed === undefined
        ? ''
        : ` (VUs over their cycles; k6's count/time ${num(reqs.rate, 1)})`) +
      ` (${num(reqs.count, 0)} requests)` +
      `  p50 ${ms(dur['p(50)'])}  p95 ${ms(dur['p(95)'])}  p99 ${ms(dur['p(99)'])}` +
      `  failed ${pct(failed.rate)}  dropped ${num(dropped.count || 0, 0)}`,
  ];
  if (lab.canary_rate > 0) {
    const c = metric(data, 'http_req_duration{scenario:canary}') || {};
    const cf = metric(data, 'http_req_failed{scenario:canary}') || {};
    const cd = metric(data, 'dropped_iterations{scenario:canary}') || {};
    lines.push(
      `  canary  /hello ${lab.canary_rate}/s  p50 ${ms(c['p(50)'])}  p99 ${ms(c['p(99)'])}` +
        `  failed ${pct(cf.rate)}  dropped ${num(cd.count || 0, 0)}`,
    );
  }
  if (SUMMARY) lines.push(`  summary written to ${SUMMARY}`);
  return `${lines.join('\n')}\n`;
}

export function handleSummary(data) {
  const lab = {
    endpoint: ENDPOINT,
    path: OP.path,
    params: PARAMS,
    vus: VUS,
    rate: RATE === undefined ? null : RATE,
    ...(ITERATIONS === undefined ? {} : { iterations: ITERATIONS }), // only when set
    duration: DURATION,
    canary_rate: CANARY_RATE,
    timeout: TIMEOUT,
    graceful_stop: GRACEFUL_STOP,
    base_url: BASE_URL,
  };
  const out = { stdout: text(data, lab) };
  if (SUMMARY) out[SUMMARY] = JSON.stringify({ ...data, lab }, null, 1);
  return out;
}
