"""Django target: one single-file project served by WSGI (gunicorn) and ASGI (uvicorn), as
Django serves one. Its own: settings, model, views, URLconf, a middleware for the contract's
errors; labkit's: 404/405 in front, the worker's resources, the endpoints' work, /info."""

from __future__ import annotations

import django
from asgiref.sync import sync_to_async
from django.conf import settings

from lab.contract import load
from labkit import asgi, db, endpoints, errors, eventloop, params, upstream, wsgi
from labkit.dual import Dual

CONTRACT = load()
PARAMS = db.connect_params("django")  # DATABASE_URL as libpq parameters ({} when unset)
DATABASE = {"ENGINE": "django.db.backends.postgresql", "NAME": PARAMS.pop("dbname", None)}
DATABASE["OPTIONS"] = {**PARAMS, "pool": db.pool_options()}  # Django's pool, sized as labkit's
settings.configure(
    ALLOWED_HOSTS=["*"],
    ROOT_URLCONF=__name__,
    MIDDLEWARE=["django.middleware.common.CommonMiddleware", f"{__name__}.LabErrors"],
    APPEND_SLASH=False,  # the contract: no redirects
    DATABASES={"default": DATABASE} if PARAMS else {},
)
django.setup()

from django.core.asgi import get_asgi_application  # noqa: E402  (after the settings)
from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.db import DatabaseError, connection, models  # noqa: E402
from django.http import HttpRequest, JsonResponse  # noqa: E402
from django.urls import path  # noqa: E402
from django.utils.deprecation import MiddlewareMixin  # noqa: E402


def open_pool() -> db.SyncPool:  # Django opens it at the first query: labkit, as a worker starts
    driver = ("django.db.backends.postgresql + psycopg_pool", django.__version__)
    return db.open_sync("django", pool=lambda url: connection.pool, driver=driver)


# ASGI: ASGIHandler runs each `def` view in a thread made for its request (sync_threads None)
LAB = Dual("django", sync_threads=None, database=open_pool)
start, stop = LAB.start, LAB.stop  # WSGI: gunicorn's hooks (labkit.gunicorn_hooks)


class World(models.Model):
    randomnumber = models.IntegerField()

    class Meta:
        app_label, db_table, managed = "lab", "world", False


class LabErrors(MiddlewareMixin):
    def process_exception(self, request: HttpRequest, exc: Exception) -> JsonResponse | None:
        if isinstance(exc, DatabaseError):  # Django's, wrapping psycopg's and the pool's
            exc = db.DatabaseError(db.reason(exc))
        if isinstance(exc, errors.LabError):  # a bad parameter (400), the upstream (502, 504)
            return JsonResponse(exc.body(), status=exc.status)
        return None  # handler500


def handler500(request: HttpRequest) -> JsonResponse:
    return JsonResponse(errors.INTERNAL, status=500)


def args(request: HttpRequest, name: str) -> dict[str, int]:
    return params.parse(CONTRACT[name], ((k, v) for k, vs in request.GET.lists() for v in vs))


def sync(request: HttpRequest) -> JsonResponse:  # ASGI: in a thread of its own
    return JsonResponse(endpoints.sync(**args(request, "sync")))


async def on_loop(request: HttpRequest, name: str) -> JsonResponse:
    # labkit's coroutine for `name` on the worker's loop (ASGI: /blocking and /cpu hold it on
    # purpose), or on the loop asgiref makes for this request (WSGI)
    return JsonResponse(await eventloop.ENDPOINTS[name](LAB.worker, args(request, name), None))


async def executor(request: HttpRequest) -> JsonResponse:
    # thread_sensitive=False: the sleep touches no Django state, and True would run it in the
    # request's own thread (/sync again); only False takes an executor: the worker's, E threads
    pool = LAB.worker.executor
    work = sync_to_async(endpoints.in_executor, thread_sensitive=False, executor=pool)
    return JsonResponse(await work(**args(request, "executor")))


async def calls(request: HttpRequest, name: str) -> JsonResponse:  # /upstream, /upstream-seq
    work = endpoints.upstream if name == "upstream" else endpoints.upstream_seq
    rid = upstream.request_id(request.headers.get(upstream.REQUEST_ID))
    async with upstream.session_for(LAB.worker) as session:
        return JsonResponse(await work(session, **args(request, name), rid=rid))


def pg_sleep(request: HttpRequest, name: str) -> JsonResponse:  # /db, /db-blocking
    ms = args(request, name)["ms"]
    LAB.worker.db.ready()  # no DATABASE_URL, or no server there: 503 at once
    with connection.cursor() as cursor:  # a connection of the pool until the request ends
        cursor.execute(db.SLEEP_SQL_SYNC, [ms / 1000])
    return JsonResponse(endpoints.body(name, ms=ms))


def db_rows(request: HttpRequest) -> JsonResponse:
    p = args(request, "db-rows")
    LAB.worker.db.ready()
    ids = (db.world_id(p["seed"], k) for k in range(1, p["n"] + 1))
    checksum = sum(World.objects.get(id=i).randomnumber for i in ids)
    return JsonResponse(endpoints.body("db-rows", **p, checksum=checksum))


ON_LOOP = ("hello", "async", "blocking", "gather", "sequential", "cpu", "cpu-pool", "health")
urlpatterns = [path(name, on_loop, {"name": name}) for name in ON_LOOP] + [
    path("sync", sync),
    path("executor", executor),
    path("upstream", calls, {"name": "upstream"}),
    path("upstream-seq", calls, {"name": "upstream-seq"}),
    path("db", pg_sleep, {"name": "db"}),
    # the ORM refuses to run on an event loop (SynchronousOnlyOperation): /db-blocking is /db
    path("db-blocking", pg_sleep, {"name": "db-blocking"}),
    path("db-rows", db_rows),
    path("info", lambda request: JsonResponse(LAB.info())),
]
assert {f"/{p.pattern}" for p in urlpatterns} == errors.PATHS, "a route per endpoint"

wsgi_app = wsgi.GetOnly(get_wsgi_application())  # gunicorn: 404/405 before Django
asgi_app = asgi.Lifespan(asgi.GetOnly(get_asgi_application()), LAB.serving)  # uvicorn
