// A Node target's main: the contract, the knobs, the App, then serving on $HOST:$PORT until
// SIGTERM or Ctrl-C. `--workers N` (the cluster profile) runs N worker processes through
// node:cluster, each with its own App, under a primary that only supervises them.
//
//   main({ framework: "express", version, server: (app) => http.Server })
import cluster from "node:cluster";
import { parseArgs } from "node:util";
import { loadContract } from "./contract.js";
import { App, GRACEFUL_S } from "./kit.js";

export async function main({ framework, version, server: makeServer }) {
  try {
    const { values } = parseArgs({ options: { workers: { type: "string" } } });
    const workers = values.workers === undefined ? undefined : Number(values.workers);
    if (workers !== undefined && !(Number.isInteger(workers) && workers >= 1)) {
      throw new Error(`--workers must be an integer >= 1, got ${values.workers}`);
    }
    if (workers !== undefined && cluster.isPrimary) return supervise(framework, workers);
    await serve(framework, version, makeServer, workers ?? 1);
  } catch (err) {
    process.stderr.write(`${framework}: ${err?.stack ?? err}\n`);
    process.exit(1);
  }
}

async function serve(framework, version, makeServer, workers) {
  const app = new App(loadContract(), { framework, frameworkVersion: version, workers });
  const server = await makeServer(app);
  server.keepAliveTimeout = 65000; // k6 and the runner keep their connections
  const host = process.env.HOST?.trim() || "127.0.0.1";
  const port = Number(process.env.PORT?.trim() || 8000);
  await new Promise((ok, fail) => {
    server.once("error", fail);
    server.listen(port, host, ok);
  });
  process.stderr.write(
    `${framework} ${version}: listening on http://${host}:${port} (pid ${app.pid}, node ` +
      `${process.versions.node}, worker threads ${app.threads}, db pool ${app.db.size}` +
      `${app.db.why ? `; database: ${app.db.why}` : ""})\n`,
  );
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    // Requests in flight get GRACEFUL_S, then their connections are closed.
    server.close();
    server.closeIdleConnections();
    const cut = setTimeout(() => server.closeAllConnections(), GRACEFUL_S * 1000);
    await new Promise((ok) => server.once("close", ok));
    clearTimeout(cut);
    await Promise.race([app.close(), new Promise((ok) => setTimeout(ok, 500))]);
    process.exit(0);
  };
  for (const s of ["SIGTERM", "SIGINT"]) {
    process.once(s, () => {
      // A second signal ends the process at once.
      process.once(s, () => process.exit(1));
      stop();
    });
  }
  // (A cluster worker whose primary is gone exits at once: node:cluster does that.)
}

// The cluster's primary: forks the workers (they share the port: the primary accepts and
// hands connections round-robin), relays SIGTERM/SIGINT to them, and kills what is left
// after their graceful timeout. It never restarts a worker.
function supervise(framework, workers) {
  for (let i = 0; i < workers; i++) cluster.fork();
  let stopping = false;
  cluster.on("exit", (worker, code, signal) => {
    if (!stopping) {
      process.stderr.write(
        `${framework}: worker ${worker.process.pid} ended (${signal ?? code})\n`,
      );
    }
    if (Object.keys(cluster.workers).length === 0) process.exit(stopping ? 0 : 1);
  });
  const stop = () => {
    if (stopping) return;
    stopping = true;
    for (const w of Object.values(cluster.workers)) w.process.kill("SIGTERM");
    setTimeout(
      () => {
        for (const w of Object.values(cluster.workers)) w.process.kill("SIGKILL");
        process.exit(0);
      },
      (GRACEFUL_S + 1) * 1000,
    ).unref();
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
