package lab.spring;

import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import lab.kit.App;
import lab.kit.Contract;
import lab.kit.Knobs;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.autoconfigure.http.client.reactive.ClientHttpConnectorAutoConfiguration;
import org.springframework.boot.autoconfigure.web.reactive.error.ErrorWebFluxAutoConfiguration;
import org.springframework.boot.autoconfigure.web.reactive.function.client.WebClientAutoConfiguration;
import org.springframework.boot.autoconfigure.web.servlet.error.ErrorMvcAutoConfiguration;
import org.springframework.context.support.GenericApplicationContext;
import reactor.netty.resources.LoopResources;

/**
 * Spring Boot on the kit, one profile per way Spring serves a request (the argument, also the
 * Spring profile whose application-PROFILE.properties picks the stack):
 *
 * <ul>
 *   <li>{@code mvc}: Spring MVC on Tomcat, a request on one of THREADS platform threads (200,
 *       Tomcat's default maximum);
 *   <li>{@code mvc-virtual}: the same with spring.threads.virtual.enabled (Tomcat runs each request
 *       on a virtual thread of its own);
 *   <li>{@code webflux}: Spring WebFlux on Reactor Netty, handlers on its THREADS event loops
 *       (Reactor Netty's default: max(CPUs, 4)).
 * </ul>
 *
 * The routes are in {@link MvcRoutes} and {@link FluxRoutes}, the strict contract in front of them
 * in {@link Strict}; endpoint logic, /info, the pools and the database are the kit's (../kit).
 * Environment: HOST, PORT, THREADS, LAB_TARGET, LAB_PROFILE, UPSTREAM_URL, EXECUTOR_THREADS,
 * POOL_PROCESSES, DATABASE_URL, DB_POOL.
 */
@SpringBootApplication(
    proxyBeanMethods = false, // no @Bean methods here
    // every error body is the contract's (Strict), never Spring Boot's error page or JSON; no
    // WebClient (the kit's HttpClient calls the upstream): its Reactor resources would hold the
    // stop until a blocked event loop's sleep ends (FluxRoutes)
    exclude = {
      ErrorMvcAutoConfiguration.class,
      ErrorWebFluxAutoConfiguration.class,
      ClientHttpConnectorAutoConfiguration.class,
      WebClientAutoConfiguration.class
    })
public final class Main {
  /** Tomcat's default maximum of request threads (server.tomcat.threads.max). */
  static final int TOMCAT_THREADS = 200;

  /** The profiles, each a Spring profile of the same name (application-PROFILE.properties). */
  static final List<String> PROFILES = List.of("mvc", "mvc-virtual", "webflux");

  public static void main(String[] args) {
    start(args, UnaryOperator.identity());
  }

  /**
   * Serves the profile args[0] until SIGTERM. change: what the suite's Liar (test code) plants in
   * what the kit is told; the target itself passes it through.
   */
  public static void start(String[] args, UnaryOperator<App.Config> change) {
    String profile = args.length == 1 ? args[0] : "";
    if (!PROFILES.contains(profile)) {
      System.err.println("spring: usage: spring.jar " + String.join("|", PROFILES));
      System.exit(2);
    }
    App app;
    String threads;
    try {
      threads = threads(profile);
      app = new App(Contract.load(), change.apply(config(profile, threads)));
    } catch (Knobs.KnobError bad) {
      System.err.println("spring: " + bad.getMessage());
      System.exit(1);
      return;
    }
    SpringApplication spring = new SpringApplication(Main.class);
    spring.setAdditionalProfiles(profile);
    spring.setDefaultProperties(Map.of("server.tomcat.threads.max", threads));
    spring.addInitializers(
        (GenericApplicationContext context) ->
            // closed (the pools, the database) after the web server has stopped
            context.registerBean(
                "lab", App.class, () -> app, b -> b.setDestroyMethodName("close")));
    spring.run();
  }

  /** What the kit says of each profile: its server, its request threads, its capacity rule. */
  static App.Config config(String profile, String threads) {
    String boot = SpringBootVersion.getVersion();
    return switch (profile) {
      case "mvc", "mvc-virtual" -> {
        Integer pool = profile.equals("mvc") ? Integer.valueOf(threads) : null;
        yield new App.Config(
            "spring-boot",
            boot,
            "tomcat",
            org.apache.catalina.util.ServerInfo.getServerInfo().replace("Apache Tomcat/", ""),
            profile,
            pool,
            App.threadPerRequest(pool));
      }
      default -> {
        int loops = Integer.parseInt(threads);
        yield new App.Config(
            "spring-boot",
            boot,
            "reactor-netty",
            reactor.netty.http.server.HttpServer.class.getPackage().getImplementationVersion(),
            profile,
            loops,
            FluxRoutes.capacity(loops));
      }
    };
  }

  /**
   * THREADS, by the lab's rule: Tomcat's request threads (mvc), Reactor Netty's event loops
   * (webflux, through its own system property, read once when its loops are made); mvc-virtual has
   * a thread per request whatever it says.
   */
  static String threads(String profile) {
    if (profile.equals("webflux")) {
      Integer set = Knobs.intEnv("THREADS", null);
      if (set != null) {
        System.setProperty("reactor.netty.ioWorkerCount", set.toString());
      }
      return Integer.toString(LoopResources.DEFAULT_IO_WORKER_COUNT);
    }
    return Knobs.intEnv("THREADS", TOMCAT_THREADS).toString();
  }
}
