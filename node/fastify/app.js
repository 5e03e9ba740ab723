// Fastify 5 on node:http: a GET route per contract endpoint and a route for every other
// method (405; Fastify's automatic HEAD routes are off), the body ignored whatever its type,
// JSON answers, 404 and 500 as the contract's bodies. Endpoint logic, /info, the
// worker-thread pool and serving until SIGTERM (one process, or --workers N through
// node:cluster) are in ../kit; this file is how Fastify routes and answers.
// Environment: HOST, PORT, UPSTREAM_URL, LAB_TARGET, LAB_PROFILE, THREADS, DATABASE_URL,
// DB_POOL (see ../kit).
import { METHODS, createServer } from "node:http";
import { createRequire } from "node:module";
import Fastify from "fastify";
import { ALLOW } from "../kit/kit.js";
import { main } from "../kit/serve.js";

const { version } = createRequire(import.meta.url)("fastify/package.json");

async function router(app) {
  const notAllowed = async (req, reply) =>
    reply.code(405).header("Allow", ALLOW).send(app.methodNotAllowed(req.method));
  let server;
  const fastify = Fastify({
    serverFactory: (handler) => (server = createServer(handler)), // the kit serves it
    exposeHeadRoutes: false,
    logger: false,
    // A request Fastify refuses before routing (a bad %-escape in the path): JSON too.
    frameworkErrors: (err, req, reply) => reply.code(400).send({ error: err.message }),
  });
  // A body of any type is read and dropped (no route reads one; the answer is still 405).
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser("*", (req, payload, done) => {
    payload.resume();
    payload.on("end", () => done(null));
  });
  // Every method Node's parser knows but GET answers 405 (Fastify routes only the usual
  // ones until told of the others).
  const others = METHODS.filter((m) => m !== "GET");
  for (const m of others) if (!fastify.supportedMethods.includes(m)) fastify.addHttpMethod(m);
  for (const e of app.endpoints) {
    fastify.get(e.path, async (req, reply) => {
      const query = req.raw.url.split("?").slice(1).join("?");
      const [request, bad] = e.bind(query, req.headers["x-lab-request-id"]);
      if (bad) return reply.code(400).send(bad);
      const [status, body] = await e.serve(request);
      return reply.code(status).send(body);
    });
    // Answered in onRequest, before Fastify reads a body (QUERY without a Content-Type
    // would be its own 400 otherwise).
    fastify.route({ method: others, url: e.path, onRequest: notAllowed, handler: notAllowed });
  }
  fastify.setNotFoundHandler(async (req, reply) =>
    reply.code(404).send(app.notFound(req.raw.url.split("?")[0])),
  );
  fastify.setErrorHandler(async (err, req, reply) => {
    if (err.statusCode && err.statusCode < 500) {
      return reply.code(err.statusCode).send({ error: err.message });
    }
    console.error(`${req.method} ${req.url}:`, err);
    return reply.code(500).send(app.internalError());
  });
  await fastify.ready();
  return server;
}

await main({ framework: "fastify", version, server: router });
