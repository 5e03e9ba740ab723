// The endpoint contract (contract/openapi.json) read at start-up, as labkit and
// go/internal/contract read it: endpoints in document order with their integer parameters,
// the one grammar, the bounds, repeated parameters and the total-wait cap.
// The file is $LAB_CONTRACT, else the first contract/openapi.json walking up from the
// current directory, else from this file's directory.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const REL = join("contract", "openapi.json");

export function findContract() {
  const env = process.env.LAB_CONTRACT?.trim();
  if (env) {
    if (!existsSync(env)) throw new Error(`contract: LAB_CONTRACT: ${env} not found`);
    return env;
  }
  for (let dir of [process.cwd(), dirname(fileURLToPath(import.meta.url))]) {
    for (;;) {
      const p = join(dir, REL);
      if (existsSync(p)) return p;
      const parent = dirname(dir);
      if (parent === dir) break;
      dir = parent;
    }
  }
  throw new Error(`contract: ${REL} not found (set LAB_CONTRACT)`);
}

export class BadParam {
  constructor(message, param) {
    this.error = message;
    this.param = param;
  }
}

export class Contract {
  constructor(doc, dir) {
    this.doc = doc;
    this.dir = dir;
    this.version = doc.info.version;
    this.ext = doc["x-lab"];
    this.grammar = new RegExp(this.ext["integer-grammar"].pattern);
    this.endpoints = [];
    const refs = doc.components?.parameters ?? {};
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        const lab = op["x-lab"] ?? {};
        const params = (op.parameters ?? []).map((p) => {
          if (p.$ref) p = refs[p.$ref.replace("#/components/parameters/", "")];
          const s = p.schema;
          return { name: p.name, default: s.default, minimum: s.minimum, maximum: s.maximum };
        });
        this.endpoints.push({
          name: op.operationId,
          path,
          method: method.toUpperCase(),
          kind: lab.kind ?? "meta",
          service: lab.service ?? "",
          maxServiceMs: lab.max_service_ms ?? 0,
          fields: lab.fields ?? {},
          params,
        });
      }
    }
  }

  endpoint(name) {
    return this.endpoints.find((e) => e.name === name);
  }

  benchEndpoints() {
    return this.endpoints.filter((e) => e.kind !== "meta");
  }

  // An x-lab.errors template with its {placeholders} filled in.
  error(kind, values = {}) {
    return this.ext.errors[kind].replace(/\{(\w+)\}/g, (_, k) => String(values[k]));
  }

  vectors(key) {
    return JSON.parse(readFileSync(join(this.dir, this.ext[key]), "utf8")).vectors;
  }

  // The endpoint's parameters from a raw query string, in contract order: for each, given
  // more than once, then the grammar, then the bounds; then the total-wait cap. Returns
  // [values, null] or [null, BadParam] (the 400 body).
  parse(endpoint, rawQuery) {
    const query = splitQuery(rawQuery);
    const values = {};
    for (const p of endpoint.params) {
      values[p.name] = p.default;
      const raw = query.get(p.name);
      if (raw === undefined) continue;
      if (raw.length > 1) return [null, new BadParam(this.error("repeated", p), p.name)];
      if (!this.grammar.test(raw[0])) return [null, new BadParam(this.error("grammar", p), p.name)];
      const n = Number(raw[0]);
      if (n < p.minimum || n > p.maximum) {
        return [null, new BadParam(this.error("bounds", p), p.name)];
      }
      values[p.name] = n;
    }
    if (endpoint.maxServiceMs && serviceMs(endpoint, values) > endpoint.maxServiceMs) {
      const message = this.error("max-service", { max_service_ms: endpoint.maxServiceMs });
      return [null, new BadParam(message, this.ext.errors["max-service-param"])];
    }
    return [values, null];
  }
}

// The service expression ("ms", "n*ms") evaluated with the values.
export function serviceMs(endpoint, values) {
  return endpoint.service
    .split("*")
    .map((t) => t.trim())
    .reduce((total, t) => total * (/^\d+$/.test(t) ? Number(t) : values[t]), 1);
}

// Every value of each name, as Go's contract.NewQuery splits it: '&' only (not ';'), '+'
// is a space, a value with a bad %-escape stays as written (the grammar then refuses it).
export function splitQuery(raw) {
  const q = new Map();
  for (const pair of (raw ?? "").split("&")) {
    if (!pair) continue;
    const at = pair.indexOf("=");
    const key = unescape(at < 0 ? pair : pair.slice(0, at));
    const value = at < 0 ? "" : unescape(pair.slice(at + 1));
    q.set(key, [...(q.get(key) ?? []), value]);
  }
  return q;
}

function unescape(s) {
  try {
    return decodeURIComponent(s.replaceAll("+", " "));
  } catch {
    return s;
  }
}

const REQUEST_ID = /^[A-Za-z0-9-]{1,64}$/;
export const REQUEST_ID_HEADER = "x-lab-request-id";

// The X-Lab-Request-Id header's value when it is a valid id, else "".
export function requestId(value) {
  return typeof value === "string" && REQUEST_ID.test(value) ? value : "";
}

export function loadContract(path = findContract()) {
  return new Contract(JSON.parse(readFileSync(path, "utf8")), dirname(resolve(path)));
}
