"""The target kit: what the lab's Python targets import at serve time, apart from the runner
(`lab/`). A target's folder then holds only what is its framework's own: routing, handler
signatures, lifespan, error handlers, and the size of the pool its `def` handlers run in.

- params     parse(endpoint, pairs): the contract's integer grammar, repeats, bounds, total-wait cap
- endpoints  the endpoints' work as plain functions returning the JSON body (def and async def)
- errors     LabError (status + body), INTERNAL, refusal(method, path): JSON 404 / 405
- asgi       GetOnly: refusal as ASGI middleware; Lifespan: the lifespan for an app without one
- wsgi       GetOnly: refusal as WSGI middleware
- eventloop  the event-loop worker: serving(), ENDPOINTS, info(), size_anyio_pool()
- threaded   the thread-per-request (WSGI) worker: start(), stop(), info(), serve_dev()
- dual       the worker of an app served both by WSGI and ASGI (Django): threaded's or eventloop's
- gunicorn_hooks  gunicorn's hooks for the WSGI targets (--config python:labkit.gunicorn_hooks)
- db         the database endpoints: each worker's pools (asyncpg, psycopg_pool), the queries,
             DatabaseError (503), /info's "database"
- info       /info's common part: server, version, graceful_timeout_s, workers, check_capacity()
- granian    granian's options as a worker sees them (its own CLI parser): /info under granian
- knobs, pool, upstream, work: WORKERS & co, the /cpu-pool pool, upstream clients, FNV-1a

The contract itself is read through lab.contract (lab/ needs it too). README.md, "Adding a
framework", walks through a new target; each module's docstring is its reference."""
