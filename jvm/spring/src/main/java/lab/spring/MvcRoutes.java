package lab.spring;

import lab.kit.App;
import lab.kit.Contract;
import lab.kit.Reply;
import org.apache.catalina.core.StandardContext;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.web.embedded.tomcat.TomcatServletWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.http.MediaType;
import org.springframework.web.servlet.function.RouterFunction;
import org.springframework.web.servlet.function.RouterFunctions;
import org.springframework.web.servlet.function.ServerRequest;
import org.springframework.web.servlet.function.ServerResponse;

/**
 * Spring MVC (profiles mvc, mvc-virtual): a route per contract endpoint (WebMvc.fn), each a plain
 * handler that runs the kit's endpoint on the request's thread (a Tomcat pool thread, or a virtual
 * thread of its own) and holds it to the end, but /async: it returns a CompletableFuture that the
 * kit's timer completes, so the request goes async (Servlet 3) and the thread is back in the pool
 * while it waits.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
class MvcRoutes {
  @Bean
  RouterFunction<ServerResponse> routes(App app) {
    RouterFunctions.Builder routes = RouterFunctions.route();
    for (App.Handler h : app.handlers()) {
      routes.GET(h.endpoint.path(), request -> serve(app, h, request));
    }
    return routes.build();
  }

  private static ServerResponse serve(App app, App.Handler h, ServerRequest request) {
    String query = request.servletRequest().getQueryString(); // raw: the kit's strict parser
    App.Bound bound = h.bind(query, request.headers().firstHeader(Contract.REQUEST_ID_HEADER));
    if (bound.bad() != null) {
      return respond(app.badParam(bound.bad()));
    }
    if (h.endpoint.name().equals("async")) {
      return ServerResponse.async(h.callAsync(bound.request()).thenApply(MvcRoutes::respond));
    }
    return respond(h.call(bound.request()));
  }

  static ServerResponse respond(Reply reply) {
    return ServerResponse.status(reply.status())
        .contentType(MediaType.APPLICATION_JSON)
        .body(reply.body());
  }

  @Bean
  FilterRegistrationBean<Strict.Servlet> strict(App app) {
    FilterRegistrationBean<Strict.Servlet> filter =
        new FilterRegistrationBean<>(new Strict.Servlet(new Strict(app)));
    filter.setOrder(Ordered.HIGHEST_PRECEDENCE);
    return filter;
  }

  /**
   * Tomcat answers TRACE itself (405, its own Allow) unless allowed: the filter answers it. When it
   * stops, Tomcat waits up to a context's unload delay (2 s) for requests still in the servlet
   * after Spring's graceful period (3 s); a platform thread's sleep is interrupted by the pool's
   * shutdown, a virtual thread's is not, and 3 + 2 s is the whole 5 s allowed: no second wait.
   */
  @Bean
  WebServerFactoryCustomizer<TomcatServletWebServerFactory> tomcat() {
    return factory -> {
      factory.addConnectorCustomizers(connector -> connector.setAllowTrace(true));
      factory.addContextCustomizers(context -> ((StandardContext) context).setUnloadDelay(0));
    };
  }
}
