package lab.kit;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * The JVM kit: everything a JVM target shares that is not its server (the contract's endpoint
 * logic, the /executor and /cpu-pool pools, the upstream client, the database pool, /info and the
 * error bodies), as node/kit and go/internal/kit are for theirs. A target wraps it in its server's
 * idiom:
 *
 * <pre>
 *   App app = new App(Contract.load(), config);       // knobs read; a bad one: Knobs.KnobError
 *   for (App.Handler h : app.handlers()) ...           // every contract endpoint, contract order
 *   App.Bound b = h.bind(rawQuery, requestIdHeader);   // b.bad(): the 400 body
 *   Reply r = h.call(b.request());                     // the endpoint's work on this thread
 *   CompletableFuture&lt;Reply&gt; f = h.callAsync(req);     // its non-blocking form, where it has one
 *   app.notFound(path), app.methodNotAllowed(method), App.ALLOW, app.internalError()
 * </pre>
 *
 * Every endpoint's blocking form is what a Java developer writes in a plain handler: /sync
 * Thread.sleep, /blocking a sleep inside a native call (it holds even a virtual thread's carrier),
 * /executor a bounded executor's future waited on, /gather and /upstream their waits at once then
 * joined, /sequential and /upstream-seq one after another, /cpu inline, /cpu-pool a pool of CPU
 * count threads, the database through HikariCP. The non-blocking forms (async, gather, sequential,
 * executor, cpu-pool, upstream, upstream-seq) hold no thread while they wait.
 */
public final class App implements AutoCloseable {
  public static final String ALLOW = "GET"; // the Allow header of a 405: GET only
  public static final int GRACEFUL_S = 3; // /info's graceful_timeout_s

  /** Spring Boot's applicationTaskExecutor: 8 core threads (spring.task.execution.pool). */
  public static final int DEFAULT_EXECUTOR_THREADS = 8;

  /**
   * What a target tells the kit: framework and server (for /info), the threads that run its
   * handlers (a pool's size, or null for a thread made per request) and its capacity rule.
   */
  public record Config(
      String framework,
      String frameworkVersion,
      String server,
      String serverVersion,
      String defaultProfile,
      Integer threads,
      Function<App, Map<String, Integer>> capacity) {}

  /** A request the kit serves: the parsed values (contract order) and X-Lab-Request-Id. */
  public record Request(Map<String, Long> values, String requestId) {
    long get(String name) {
      return values.get(name);
    }
  }

  /** A bind's outcome: the request, or the 400 body's BadParam. */
  public record Bound(Request request, Contract.BadParam bad) {}

  public final Contract contract;
  public final Config config;
  public final long pid = ProcessHandle.current().pid();
  public final String target;
  public final String profile;
  public final String upstreamUrl;
  public final int executorThreads;
  public final int poolThreads;
  public final Database db;
  private final ExecutorService executor;
  private final ExecutorService cpuPool;
  private final ScheduledExecutorService timer;
  private final Upstream upstream;
  private final List<Handler> handlers = new ArrayList<>();

  /** Reads the knobs (a bad one throws Knobs.KnobError) and starts the pools. */
  public App(Contract contract, Config config) {
    this.contract = contract;
    this.config = config;
    this.target = Knobs.env("LAB_TARGET", config.framework());
    this.profile = Knobs.env("LAB_PROFILE", config.defaultProfile());
    this.upstreamUrl = Knobs.env("UPSTREAM_URL", "http://127.0.0.1:8001").replaceAll("/+$", "");
    this.executorThreads = Knobs.intEnv("EXECUTOR_THREADS", DEFAULT_EXECUTOR_THREADS);
    this.poolThreads = Knobs.intEnv("POOL_PROCESSES", cpus());
    this.db = new Database(contract, target, pid);
    this.executor = Executors.newFixedThreadPool(executorThreads, daemons("lab-executor"));
    this.cpuPool = Executors.newFixedThreadPool(poolThreads, daemons("lab-cpu-pool"));
    this.timer = Executors.newSingleThreadScheduledExecutor(daemons("lab-timer"));
    this.upstream = new Upstream(upstreamUrl);
    for (Contract.Endpoint e : contract.endpoints()) {
      if (!e.method().equals("GET")) {
        throw new IllegalStateException("contract endpoint " + e.name() + " is " + e.method());
      }
      handlers.add(new Handler(e));
    }
    Set<String> missing = new TreeSet<>();
    handlers.forEach(h -> missing.addAll(h.missing()));
    if (!missing.isEmpty()) {
      throw new IllegalStateException("contract endpoints not implemented in Java: " + missing);
    }
  }

  private static ThreadFactory daemons(String name) {
    AtomicInteger count = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, name + "-" + count.incrementAndGet());
      t.setDaemon(true); // the process exits with its server, whatever they are doing
      return t;
    };
  }

  public static int cpus() {
    return Runtime.getRuntime().availableProcessors();
  }

  /**
   * The virtual-thread scheduler's carriers: its parallelism (the JDK's default: the CPUs it may
   * use). A virtual thread pinned to its carrier (a native call) holds one of them.
   */
  public static int carriers() {
    String set = System.getProperty("jdk.virtualThreadScheduler.parallelism");
    return set == null ? cpus() : Integer.parseInt(set.strip());
  }

  public List<Handler> handlers() {
    return List.copyOf(handlers);
  }

  public Handler handler(String name) {
    return handlers.stream().filter(h -> h.endpoint.name().equals(name)).findFirst().orElseThrow();
  }

  @Override
  public void close() {
    executor.shutdownNow();
    cpuPool.shutdownNow();
    timer.shutdownNow();
    db.close();
  }

  // --- capacity -------------------------------------------------------------------------------

  /**
   * The capacity rule of a server that runs each request's handler on a thread of its own: a pool
   * of `threads` platform threads (a request holds one from start to end), or, threads null, a
   * virtual thread per request (a wait unmounts it: only the CPU work and the native sleep hold a
   * carrier, and the pools and the database bound what uses them). /async's non-blocking form holds
   * no thread.
   */
  public static Function<App, Map<String, Integer>> threadPerRequest(Integer threads) {
    return app -> {
      int e = app.executorThreads;
      int p = app.poolThreads;
      int d = app.db.size;
      Integer carriers = carriers();
      Map<String, Integer> c = new LinkedHashMap<>();
      for (String name : List.of("hello", "sync", "gather", "sequential", "upstream")) {
        c.put(name, threads);
      }
      c.put("upstream-seq", threads);
      c.put("async", null);
      c.put("blocking", threads == null ? carriers : threads);
      c.put("cpu", threads == null ? carriers : threads);
      c.put("executor", threads == null ? e : Math.min(threads, e));
      c.put("cpu-pool", threads == null ? p : Math.min(threads, p));
      for (String name : List.of("db", "db-blocking", "db-rows")) {
        c.put(name, threads == null ? d : Math.min(threads, d));
      }
      return c;
    };
  }

  /** The capacity map /info states, checked against the contract's benchmark endpoints. */
  public Map<String, Integer> capacity() {
    Map<String, Integer> c = config.capacity().apply(this);
    Set<String> want = new HashSet<>();
    contract.benchEndpoints().forEach(e -> want.add(e.name()));
    if (!want.equals(c.keySet())) {
      throw new IllegalStateException("capacity keys " + c.keySet() + " differ from " + want);
    }
    return c;
  }

  // --- /info ----------------------------------------------------------------------------------

  public Map<String, Object> info() {
    Map<String, Object> info = new LinkedHashMap<>();
    info.put("endpoint", "info");
    info.put("pid", pid);
    info.put("target", target);
    info.put("profile", profile);
    info.put("framework", config.framework());
    info.put("framework_version", config.frameworkVersion());
    info.put("server", config.server());
    info.put("server_version", config.serverVersion());
    info.put("language", "java");
    info.put("language_version", Runtime.version().toString());
    info.put("workers", 1); // one JVM process
    info.put("threads", config.threads());
    info.put("carriers", carriers());
    info.put("executor_threads", executorThreads);
    info.put("pool_processes", poolThreads);
    info.put("cpus", cpus());
    info.put("jit", true); // HotSpot compiles hot code while it serves: the runner warms it up
    info.put("compiler_threads", compilerThreads());
    info.put("capacity", capacity());
    Map<String, Object> database = new LinkedHashMap<>();
    database.put("driver", "pgjdbc (HikariCP)");
    database.put("driver_version", org.postgresql.util.DriverInfo.DRIVER_VERSION);
    database.put("pool", db.size);
    database.put("pool_source", db.source);
    database.put("blocking_driver", "pgjdbc (HikariCP)");
    database.put("blocking_pool", db.size);
    database.put("blocking", "same as /db");
    info.put("database", database);
    info.put("jvm", jvm());
    info.put("graceful_timeout_s", GRACEFUL_S);
    return info;
  }

  /**
   * HotSpot's compiler threads as the OS names them ("C1 CompilerThre", "C2 CompilerThre": /proc
   * keeps 15 characters), from this process's tasks; they are not Java-visible threads.
   */
  static List<String> compilerThreads() {
    Set<String> names = new TreeSet<>();
    try (var tasks = java.nio.file.Files.list(java.nio.file.Path.of("/proc/self/task"))) {
      tasks.forEach(
          t -> {
            try {
              String name = java.nio.file.Files.readString(t.resolve("comm")).strip();
              if (name.matches("C[12] Compiler.*")) {
                names.add(name);
              }
            } catch (java.io.IOException gone) {
              // the thread ended meanwhile
            }
          });
    } catch (java.io.IOException noProc) {
      return List.of();
    }
    return List.copyOf(names);
  }

  /** The JVM's own knobs, as it runs: its flags are the manifest's, its GC its ergonomics'. */
  static Map<String, Object> jvm() {
    Map<String, Object> jvm = new LinkedHashMap<>();
    jvm.put("vm", System.getProperty("java.vm.name") + " " + System.getProperty("java.vm.version"));
    jvm.put("vendor", System.getProperty("java.vm.vendor"));
    jvm.put(
        "gc",
        ManagementFactory.getGarbageCollectorMXBeans().stream()
            .map(GarbageCollectorMXBean::getName)
            .toList());
    jvm.put("max_heap_mb", Runtime.getRuntime().maxMemory() / (1024 * 1024));
    jvm.put("flags", ManagementFactory.getRuntimeMXBean().getInputArguments());
    return jvm;
  }

  // --- error bodies (the contract's x-lab.errors templates) -----------------------------------

  public Reply notFound(String path) {
    Reply r = Reply.error(404, contract.error("not-found"));
    r.body().put("path", path);
    return r;
  }

  public Reply methodNotAllowed(String method) {
    Reply r = Reply.error(405, contract.error("method-not-allowed"));
    r.body().put("method", method);
    return r;
  }

  public Reply internalError() {
    return Reply.error(500, contract.error("internal"));
  }

  public Reply badParam(Contract.BadParam bad) {
    return new Reply(400, bad.body());
  }

  /** The contract's 503 with the failure's words on one line. */
  public Reply dbError(String reason) {
    return Reply.error(
        503,
        contract.error(
            "database", Map.of("reason", new Database.Unavailable(reason).getMessage())));
  }

  // --- the endpoints --------------------------------------------------------------------------

  private Map<String, Object> body(Contract.Endpoint e) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("endpoint", e.name());
    body.put("pid", pid);
    return body;
  }

  private Reply sleepReply(Contract.Endpoint e, Request r) {
    Map<String, Object> body = body(e);
    body.putAll(r.values());
    return Reply.ok(body);
  }

  private CompletableFuture<Void> delay(long ms) {
    CompletableFuture<Void> done = new CompletableFuture<>();
    timer.schedule(() -> done.complete(null), ms, TimeUnit.MILLISECONDS);
    return done;
  }

  private static <T> T await(CompletableFuture<T> f) throws InterruptedException {
    try {
      return f.get();
    } catch (ExecutionException e) {
      throw new IllegalStateException(e.getCause());
    }
  }

  /** One contract endpoint with its logic: what every target's route for it calls. */
  public final class Handler {
    public final Contract.Endpoint endpoint;

    Handler(Contract.Endpoint endpoint) {
      this.endpoint = endpoint;
    }

    Set<String> missing() {
      return NAMES.contains(endpoint.name()) ? Set.of() : Set.of(endpoint.name());
    }

    /** The query (strict grammar, bounds, cap) and the request id; bad: the 400 body. */
    public Bound bind(String rawQuery, String requestIdHeader) {
      Contract.Parsed p = contract.parse(endpoint, rawQuery);
      if (p.bad() != null) {
        return new Bound(null, p.bad());
      }
      return new Bound(new Request(p.values(), Contract.requestId(requestIdHeader)), null);
    }

    /** Whether the endpoint has a non-blocking form (callAsync). */
    public boolean hasAsync() {
      return ASYNC.contains(endpoint.name());
    }

    /**
     * The endpoint's work on the calling thread, as a plain handler does it; the thread waits for
     * every wait. Interrupted (the server stopping): the contract's 500.
     */
    public Reply call(Request r) {
      try {
        return serve(r);
      } catch (InterruptedException stop) {
        Thread.currentThread().interrupt();
        return internalError();
      }
    }

    private Reply serve(Request r) throws InterruptedException {
      Contract.Endpoint e = endpoint;
      switch (e.name()) {
        case "hello" -> {
          Map<String, Object> body = body(e);
          body.putAll(e.fields());
          return Reply.ok(body);
        }
        case "health" -> {
          Map<String, Object> body = body(e);
          body.put("status", "ok");
          return Reply.ok(body);
        }
        case "info" -> {
          return Reply.ok(info());
        }
        case "sync" -> {
          Work.sleep(r.get("ms")); // a platform thread is held; a virtual one unmounts
          return sleepReply(e, r);
        }
        case "blocking" -> {
          Work.nativeSleep(r.get("ms")); // holds the thread, and a virtual thread's carrier
          return sleepReply(e, r);
        }
        case "sequential" -> {
          for (long i = 0; i < r.get("n"); i++) {
            Work.sleep(r.get("ms"));
          }
          return sleepReply(e, r);
        }
        case "cpu" -> {
          return cpuReply(e, r.get("n"), Work.fnv1a(r.get("n")));
        }
        case "upstream-seq" -> {
          try {
            return upstreamReply(e, r, upstream.sequence(r.get("ms"), r.get("n"), r.requestId()));
          } catch (java.io.IOException err) {
            return Upstream.failure(err);
          }
        }
        case "db", "db-blocking" -> {
          return dbSleep(e, r.get("ms"));
        }
        case "db-rows" -> {
          return dbRows(e, r.get("n"), r.get("seed"));
        }
        default -> {
          // async, gather, executor, cpu-pool, upstream: their non-blocking form, waited for
          return await(callAsync(r));
        }
      }
    }

    /**
     * The endpoint's non-blocking form: the future completes when the work is done, and no thread
     * is held meanwhile (timers, the pools' own threads, HttpClient's selector). Only where
     * hasAsync().
     */
    public CompletableFuture<Reply> callAsync(Request r) {
      Contract.Endpoint e = endpoint;
      long ms = r.values().getOrDefault("ms", 0L);
      long n = r.values().getOrDefault("n", 0L);
      return switch (e.name()) {
        case "async" -> delay(ms).thenApply(x -> sleepReply(e, r));
        case "gather" -> {
          List<CompletableFuture<Void>> waits = new ArrayList<>();
          for (long i = 0; i < n; i++) {
            waits.add(delay(ms));
          }
          yield CompletableFuture.allOf(waits.toArray(CompletableFuture[]::new))
              .thenApply(x -> sleepReply(e, r));
        }
        case "sequential" -> {
          CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
          for (long i = 0; i < n; i++) {
            chain = chain.thenCompose(x -> delay(ms));
          }
          yield chain.thenApply(x -> sleepReply(e, r));
        }
        case "executor" ->
            CompletableFuture.runAsync(() -> Work.sleep(ms), executor)
                .thenApply(x -> sleepReply(e, r));
        case "cpu-pool" ->
            CompletableFuture.supplyAsync(() -> Work.fnv1a(n), cpuPool)
                .thenApply(result -> cpuReply(e, n, result));
        case "upstream" ->
            upstream
                .fanOut(ms, n, r.requestId())
                .handle((s, err) -> err != null ? Upstream.failure(err) : upstreamReply(e, r, s));
        case "upstream-seq" ->
            upstream
                .sequenceAsync(ms, n, r.requestId())
                .handle((s, err) -> err != null ? Upstream.failure(err) : upstreamReply(e, r, s));
        default -> throw new UnsupportedOperationException(e.name() + " has no non-blocking form");
      };
    }
  }

  private static final Set<String> ASYNC =
      Set.of("async", "gather", "sequential", "executor", "cpu-pool", "upstream", "upstream-seq");
  private static final Set<String> NAMES =
      Set.of(
          "hello",
          "health",
          "info",
          "sync",
          "async",
          "blocking",
          "executor",
          "gather",
          "sequential",
          "cpu",
          "cpu-pool",
          "upstream",
          "upstream-seq",
          "db",
          "db-blocking",
          "db-rows");

  private Reply cpuReply(Contract.Endpoint e, long n, long result) {
    Map<String, Object> body = body(e);
    body.put("n", n);
    body.put("result", result);
    return Reply.ok(body);
  }

  private Reply upstreamReply(Contract.Endpoint e, Request r, List<Integer> statuses) {
    for (int s : statuses) {
      if (s != 200) {
        Reply bad = Reply.error(502, "upstream answered " + s);
        bad.body().put("statuses", statuses);
        return bad;
      }
    }
    Map<String, Object> body = body(e);
    body.put("ms", r.get("ms"));
    body.put("n", r.get("n"));
    body.put("statuses", statuses);
    return Reply.ok(body);
  }

  private Reply dbSleep(Contract.Endpoint e, long ms) {
    try {
      db.with(
          c -> {
            try (PreparedStatement s = c.prepareStatement("SELECT pg_sleep(?)")) {
              s.setQueryTimeout(db.queryTimeoutS());
              s.setDouble(1, ms / 1000.0);
              s.execute();
            }
            return null;
          });
    } catch (Database.Unavailable down) {
      return dbError(down.getMessage());
    }
    Map<String, Object> body = body(e);
    body.put("ms", ms);
    return Reply.ok(body);
  }

  private static final String WORLD_SQL = "SELECT id, randomnumber FROM world WHERE id = ?";

  private Reply dbRows(Contract.Endpoint e, long n, long seed) {
    long checksum;
    try {
      checksum =
          db.with(
              c -> {
                long sum = 0;
                try (PreparedStatement s = c.prepareStatement(WORLD_SQL)) {
                  s.setQueryTimeout(db.queryTimeoutS());
                  for (long k = 1; k <= n; k++) {
                    long id = Work.worldId(seed, k);
                    s.setInt(1, (int) id);
                    try (ResultSet rows = s.executeQuery()) {
                      if (!rows.next() || rows.getLong(1) != id) {
                        throw new java.sql.SQLException("asked for world row " + id + ", got none");
                      }
                      sum += rows.getLong(2);
                    }
                  }
                }
                return sum;
              });
    } catch (Database.Unavailable down) {
      return dbError(down.getMessage());
    }
    Map<String, Object> body = body(e);
    body.put("n", n);
    body.put("seed", seed);
    body.put("checksum", checksum);
    return Reply.ok(body);
  }
}
