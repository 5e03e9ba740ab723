// The Express target (node/express) with lies planted (LAB_LIES, comma-separated), for the
// suite's bites: each lie must fail the conformance check made for it, and with no lie the
// same app passes those checks. Run as the Express target is: `node app.js [--workers N]`.
//   blocking-async   /async blocks the event loop while /info claims it unbounded
//   executor-4x      /info claims 4 x the worker threads the /executor pool has
//   workers-2x       /info claims 2 x the processes that serve (a cluster that lies)
import { blockingSleep } from "../../../../node/kit/work.js";
import { main } from "../../../../node/kit/serve.js";
import { router } from "../../../../node/express/app.js";

const LIES = new Set((process.env.LAB_LIES ?? "").split(",").filter(Boolean));

function plant(app) {
  if (LIES.has("blocking-async")) {
    const e = app.endpoints.find((x) => x.name === "async");
    e.serve = (req) => {
      blockingSleep(req.values.ms);
      return [200, app.sleepBody(e, req)];
    };
  }
  if (LIES.has("executor-4x")) app.threads *= 4; // the pool was made with THREADS threads
  if (LIES.has("workers-2x")) app.workers *= 2;
  return router(app);
}

await main({ framework: "express", version: "liar", server: plant });
