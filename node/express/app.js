// Express 5 on node:http: a route per contract endpoint (GET; HEAD and every other method
// answer 405), case-sensitive and strict routing (/HELLO and /sync/ are unknown paths), JSON
// answers, 404 and 500 as the contract's bodies. Endpoint logic, /info, the worker-thread
// pool and serving until SIGTERM (one process, or --workers N through node:cluster) are in
// ../kit; this file is how Express routes and answers.
// Environment: HOST, PORT, UPSTREAM_URL, LAB_TARGET, LAB_PROFILE, THREADS, DATABASE_URL,
// DB_POOL (see ../kit).
import { createServer } from "node:http";
import { createRequire } from "node:module";
import express from "express";
import { ALLOW } from "../kit/kit.js";
import { main } from "../kit/serve.js";

const { version } = createRequire(import.meta.url)("express/package.json");

export function router(app) {
  const notAllowed = (req, res) =>
    res.set("Allow", ALLOW).status(405).json(app.methodNotAllowed(req.method));
  const server = express();
  server.set("case sensitive routing", true);
  server.set("strict routing", true);
  server.set("etag", false);
  server.set("x-powered-by", false);
  for (const e of app.endpoints) {
    server.head(e.path, notAllowed); // else Express answers HEAD with the GET route
    server.get(e.path, async (req, res) => {
      const query = req.originalUrl.split("?").slice(1).join("?");
      const [request, bad] = e.bind(query, req.get("x-lab-request-id"));
      if (bad) return res.status(400).json(bad);
      const [status, body] = await e.serve(request);
      res.status(status).json(body);
    });
    server.all(e.path, notAllowed);
  }
  server.use((req, res) => res.status(404).json(app.notFound(req.path)));
  server.use((err, req, res, _next) => {
    console.error(`${req.method} ${req.originalUrl}:`, err);
    res.status(500).json(app.internalError());
  });
  return createServer(server);
}

// Run as a program (`node app.js`); imported, it only lends its router (the suite's bites).
if (import.meta.main) await main({ framework: "express", version, server: router });
