package lab.spring;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import lab.kit.App;
import lab.kit.Contract;
import lab.kit.Reply;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.web.embedded.netty.NettyReactiveWebServerFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import org.springframework.web.server.WebFilter;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * Spring WebFlux (profile webflux) on Reactor Netty: a route per contract endpoint (WebFlux.fn)
 * whose handler runs on the connection's event loop. /async is Mono.delay; the kit's non-blocking
 * forms (gather, sequential, executor, cpu-pool, upstream, upstream-seq) are Monos of its futures;
 * /db and /db-rows are JDBC on Reactor's bounded elastic scheduler (Mono.fromCallable +
 * subscribeOn: Reactor's own answer to a blocking driver); /sync, /blocking, /cpu and /db-blocking
 * run inline and hold the event loop: every other connection of that loop waits.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
class FluxRoutes {
  /** The kit's non-blocking forms, awaited as Monos. */
  private static final Set<String> FUTURES =
      Set.of("gather", "sequential", "executor", "cpu-pool", "upstream", "upstream-seq");

  /** JDBC off the event loop, on Reactor's bounded elastic scheduler. */
  private static final Set<String> OFF_LOOP = Set.of("db", "db-rows");

  /** How long stopping the server may wait after the graceful period (netty() says why). */
  static final Duration STOP_WAIT = Duration.ofMillis(500);

  /**
   * Reactor Netty, as spring-boot-starter-webflux alone would run: with Tomcat on the classpath too
   * (the mvc profiles), Spring Boot's reactive auto-configuration would serve WebFlux on Tomcat. No
   * ReactorResourceFactory: its stop waits for every event loop to end, which a loop blocked in
   * /sync does only when its sleep does (10 s and more after SIGTERM); the loops are Reactor
   * Netty's global ones, daemon threads that end with the JVM. Stopping the server waits at most
   * STOP_WAIT after the graceful period (a server channel on a blocked loop cannot close).
   */
  @Bean
  NettyReactiveWebServerFactory netty() {
    NettyReactiveWebServerFactory factory = new NettyReactiveWebServerFactory();
    factory.setLifecycleTimeout(STOP_WAIT);
    return factory;
  }

  @Bean
  RouterFunction<ServerResponse> routes(App app) {
    RouterFunctions.Builder routes = RouterFunctions.route();
    for (App.Handler h : app.handlers()) {
      routes.GET(h.endpoint.path(), request -> serve(app, h, request));
    }
    return routes.build();
  }

  private static Mono<ServerResponse> serve(App app, App.Handler h, ServerRequest request) {
    String query = request.uri().getRawQuery(); // raw: the kit's strict parser
    App.Bound bound = h.bind(query, request.headers().firstHeader(Contract.REQUEST_ID_HEADER));
    if (bound.bad() != null) {
      return respond(app.badParam(bound.bad()));
    }
    App.Request r = bound.request();
    String name = h.endpoint.name();
    if (name.equals("async")) {
      Map<String, Object> body = new LinkedHashMap<>();
      body.put("endpoint", name);
      body.put("pid", app.pid);
      body.putAll(r.values());
      return Mono.delay(Duration.ofMillis(r.values().get("ms")))
          .flatMap(tick -> respond(new Reply(200, body)));
    }
    if (name.equals("info")) {
      return respond(new Reply(200, info(app)));
    }
    if (FUTURES.contains(name)) {
      return Mono.fromFuture(() -> h.callAsync(r)).flatMap(FluxRoutes::respond);
    }
    if (OFF_LOOP.contains(name)) {
      return Mono.fromCallable(() -> h.call(r))
          .subscribeOn(Schedulers.boundedElastic())
          .flatMap(FluxRoutes::respond);
    }
    return respond(h.call(r)); // on the event loop: /db-blocking, /sync, /blocking, /cpu, ...
  }

  private static Mono<ServerResponse> respond(Reply reply) {
    return ServerResponse.status(reply.status())
        .contentType(MediaType.APPLICATION_JSON)
        .bodyValue(reply.body());
  }

  /** The kit's /info, with what WebFlux changes: /db-blocking's JDBC holds an event loop. */
  static Map<String, Object> info(App app) {
    Map<String, Object> info = app.info();
    @SuppressWarnings("unchecked")
    Map<String, Object> database = (Map<String, Object>) info.get("database");
    database.put("blocking", "event loop");
    info.put("bounded_elastic_threads", Schedulers.DEFAULT_BOUNDED_ELASTIC_SIZE);
    return info;
  }

  @Bean
  @Order(Ordered.HIGHEST_PRECEDENCE)
  WebFilter strict(App app) {
    return new Strict.Reactive(new Strict(app));
  }

  /**
   * WebFlux's capacities, with L event loops: a request that blocks holds its connection's loop (a
   * connection stays on one loop, new connections take the loops in turn), so /sync, /blocking,
   * /cpu and /db-blocking serve L at once (min(L, D) for the database); the pools bound /executor
   * (E) and /cpu-pool (P); /db and /db-rows hold a bounded elastic thread (10 per CPU, Reactor's
   * default) and a pooled connection; the rest wait on timers or the HTTP client: unbounded.
   */
  static Function<App, Map<String, Integer>> capacity(int loops) {
    return app -> {
      Map<String, Integer> c = new LinkedHashMap<>();
      for (String name : List.of("hello", "async", "gather", "sequential", "upstream")) {
        c.put(name, null);
      }
      c.put("upstream-seq", null);
      for (String name : List.of("sync", "blocking", "cpu")) {
        c.put(name, loops);
      }
      c.put("executor", app.executorThreads);
      c.put("cpu-pool", app.poolThreads);
      int offLoop = Math.min(Schedulers.DEFAULT_BOUNDED_ELASTIC_SIZE, app.db.size);
      c.put("db", offLoop);
      c.put("db-rows", offLoop);
      c.put("db-blocking", Math.min(loops, app.db.size));
      return c;
    };
  }
}
