package lab.jdkhttp;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Function;
import lab.kit.App;
import lab.kit.Contract;
import lab.kit.Knobs;
import lab.kit.Reply;

/**
 * The JDK's own HTTP server (com.sun.net.httpserver), no framework, on the kit. Its profiles differ
 * only in the executor that runs the handlers: `platform`, a fixed pool of THREADS platform threads
 * (default 200, Tomcat's default maximum), or `virtual`, a virtual thread per request. Routing is
 * exact and case-sensitive: one context at "/" (the server's contexts match by prefix) and a map of
 * the contract's paths; GET only. Endpoint logic, /info, the pools and the database are in ../kit.
 * Environment: HOST, PORT, THREADS, LAB_TARGET, LAB_PROFILE, UPSTREAM_URL, EXECUTOR_THREADS,
 * POOL_PROCESSES, DATABASE_URL, DB_POOL.
 */
public final class Main {
  /** Tomcat's default maximum of request threads (server.tomcat.threads.max). */
  static final int DEFAULT_THREADS = 200;

  /**
   * Connections the kernel may queue before they are accepted: as Go's listener, the kernel's own
   * cap (net.core.somaxconn) rather than the JDK's 50, which a load of 500 connections opened at
   * once overflows.
   */
  static final int BACKLOG = 4096;

  private final App app;
  private final Map<String, App.Handler> routes = new HashMap<>();

  Main(App app) {
    this.app = app;
    for (App.Handler h : app.handlers()) {
      routes.put(h.endpoint.path(), h);
    }
  }

  void handle(HttpExchange x) {
    try {
      route(x);
    } catch (Throwable err) {
      System.err.println(x.getRequestMethod() + " " + x.getRequestURI() + ": " + err);
      send(x, app.internalError());
    }
  }

  private void route(HttpExchange x) {
    App.Handler h = routes.get(x.getRequestURI().getRawPath());
    if (h == null) {
      send(x, app.notFound(x.getRequestURI().getPath()));
      return;
    }
    if (!x.getRequestMethod().equals("GET")) {
      x.getResponseHeaders().set("Allow", App.ALLOW);
      send(x, app.methodNotAllowed(x.getRequestMethod()));
      return;
    }
    App.Bound b =
        h.bind(
            x.getRequestURI().getRawQuery(),
            x.getRequestHeaders().getFirst(Contract.REQUEST_ID_HEADER));
    if (b.bad() != null) {
      send(x, app.badParam(b.bad()));
    } else if (h.endpoint.name().equals("async")) {
      // The server's non-blocking wait: the handler returns at once and the kit's timer thread
      // answers the exchange when the wait ends (an exchange outlives its handler until it is
      // closed), so no request thread is held.
      h.callAsync(b.request())
          .whenComplete((reply, err) -> send(x, err == null ? reply : app.internalError()));
    } else {
      send(x, h.call(b.request()));
    }
  }

  private static void send(HttpExchange x, Reply reply) {
    try (x) {
      byte[] body = reply.json();
      x.getResponseHeaders().set("Content-Type", "application/json");
      if (x.getRequestMethod().equals("HEAD")) {
        x.sendResponseHeaders(reply.status(), -1); // headers only
        return;
      }
      x.sendResponseHeaders(reply.status(), body.length);
      try (OutputStream out = x.getResponseBody()) {
        out.write(body);
      }
    } catch (IOException gone) {
      // the client went away; nothing to answer
    }
  }

  /** The request executor of a profile: a fixed pool of platform threads, or virtual threads. */
  static ExecutorService executor(Integer threads) {
    return threads == null
        ? Executors.newVirtualThreadPerTaskExecutor()
        : Executors.newFixedThreadPool(threads);
  }

  /**
   * The request threads of a mode: THREADS for `platform`, null (one per request) for `virtual`.
   */
  public static Integer threads(String[] args) {
    String mode = args.length == 1 ? args[0] : "";
    return switch (mode) {
      case "platform" -> Knobs.intEnv("THREADS", DEFAULT_THREADS);
      case "virtual" -> null;
      default ->
          throw new Knobs.KnobError("usage: jdkhttp.jar platform|virtual (the request threads)");
    };
  }

  /** The kit's app for a mode (its /info's profile by default) and a capacity rule. */
  public static App app(String mode, Integer threads, Function<App, Map<String, Integer>> rule) {
    String version = Runtime.version().toString();
    return new App(
        Contract.load(),
        new App.Config("jdkhttp", version, "com.sun.net.httpserver", version, mode, threads, rule));
  }

  /** The server on $HOST:$PORT with the mode's request executor, started. */
  public static HttpServer start(App app, Integer threads) throws IOException {
    String host = Knobs.env("HOST", "127.0.0.1");
    int port = Integer.parseInt(Knobs.env("PORT", "8000"));
    HttpServer server = HttpServer.create(new InetSocketAddress(host, port), BACKLOG);
    server.setExecutor(executor(threads));
    server.createContext("/", new Main(app)::handle);
    server.start();
    System.err.printf(
        "jdkhttp %s: listening on http://%s:%d (pid %d, profile %s, request threads %s, "
            + "carriers %d, executor %d, cpu-pool %d, db pool %d%s)%n",
        app.config.frameworkVersion(),
        host,
        port,
        app.pid,
        app.profile,
        threads == null ? "virtual" : threads,
        App.carriers(),
        app.executorThreads,
        app.poolThreads,
        app.db.size,
        app.db.why.isEmpty() ? "" : "; database: " + app.db.why);
    return server;
  }

  /**
   * On SIGTERM or Ctrl-C: stop accepting, let requests in flight run for the graceful timeout, then
   * close what is left; the JVM then halts, whatever its threads (a pinned native sleep included)
   * are doing.
   */
  public static void stopOnSignal(HttpServer server, App app) {
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  server.stop(App.GRACEFUL_S);
                  app.close();
                }));
  }

  public static void main(String[] args) {
    try {
      Integer threads = threads(args);
      App app = app(args[0], threads, App.threadPerRequest(threads));
      stopOnSignal(start(app, threads), app);
    } catch (Exception err) {
      System.err.println("jdkhttp: " + (err.getMessage() == null ? err : err.getMessage()));
      System.exit(1);
    }
  }
}
