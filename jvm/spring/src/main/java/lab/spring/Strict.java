package lab.spring;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.stream.Collectors;
import lab.kit.App;
import lab.kit.Reply;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.filter.OncePerRequestFilter;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import org.springframework.web.util.UriUtils;
import reactor.core.publisher.Mono;

/**
 * The strict contract in front of Spring, as labkit's middleware is in front of Django: a path that
 * is not exactly a contract path (case, trailing slash, path parameters, encoding) answers 404, any
 * method but GET on one 405 with Allow: GET, both with the contract's JSON, before Spring's
 * dispatcher (which would answer HEAD and OPTIONS for a GET route itself, and its 404/405 with
 * Spring Boot's own JSON); and whatever fails behind it answers the contract's 500.
 */
final class Strict {
  private final App app;
  private final Set<String> paths;

  Strict(App app) {
    this.app = app;
    this.paths = app.handlers().stream().map(h -> h.endpoint.path()).collect(Collectors.toSet());
  }

  /** The refusal for this raw path and method, or null when the request is the application's. */
  Reply refusal(String rawPath, String method) {
    if (!paths.contains(rawPath)) {
      return app.notFound(UriUtils.decode(rawPath, StandardCharsets.UTF_8));
    }
    return method.equals("GET") ? null : app.methodNotAllowed(method);
  }

  Reply internalError(String where, Throwable err) {
    System.err.println(where + ": " + err);
    return app.internalError();
  }

  /** Spring MVC: a servlet filter ahead of the DispatcherServlet. */
  static final class Servlet extends OncePerRequestFilter {
    private final Strict strict;

    Servlet(Strict strict) {
      this.strict = strict;
    }

    /** /async's answer is written in an async dispatch: what fails there answers 500 here too. */
    @Override
    protected boolean shouldNotFilterAsyncDispatch() {
      return false;
    }

    @Override
    protected void doFilterInternal(
        HttpServletRequest request, HttpServletResponse response, FilterChain chain)
        throws IOException {
      Reply refusal = strict.refusal(request.getRequestURI(), request.getMethod());
      if (refusal != null) {
        send(response, refusal);
        return;
      }
      try {
        chain.doFilter(request, response);
      } catch (IOException | ServletException | RuntimeException err) {
        Reply internal = strict.internalError(request.getRequestURI(), err);
        if (!response.isCommitted()) {
          response.reset();
          send(response, internal);
        }
      }
    }

    private static void send(HttpServletResponse response, Reply reply) throws IOException {
      byte[] json = reply.json();
      response.setStatus(reply.status());
      if (reply.status() == 405) {
        response.setHeader(HttpHeaders.ALLOW, App.ALLOW);
      }
      response.setContentType(MediaType.APPLICATION_JSON_VALUE);
      response.setContentLength(json.length); // Tomcat sends no body to HEAD
      response.getOutputStream().write(json);
    }
  }

  /** Spring WebFlux: the first WebFilter, ahead of the DispatcherHandler. */
  static final class Reactive implements WebFilter {
    private final Strict strict;

    Reactive(Strict strict) {
      this.strict = strict;
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
      String path = exchange.getRequest().getPath().value();
      Reply refusal = strict.refusal(path, exchange.getRequest().getMethod().name());
      if (refusal != null) {
        return send(exchange.getResponse(), refusal);
      }
      return chain
          .filter(exchange)
          .onErrorResume(
              err ->
                  exchange.getResponse().isCommitted()
                      ? Mono.error(err)
                      : send(exchange.getResponse(), strict.internalError(path, err)));
    }

    private static Mono<Void> send(ServerHttpResponse response, Reply reply) {
      byte[] json = reply.json();
      response.setStatusCode(HttpStatusCode.valueOf(reply.status()));
      HttpHeaders headers = response.getHeaders();
      if (reply.status() == 405) {
        headers.set(HttpHeaders.ALLOW, App.ALLOW);
      }
      headers.setContentType(MediaType.APPLICATION_JSON);
      headers.setContentLength(json.length); // HEAD: WebFlux drops the body, keeps the length
      return response.writeWith(Mono.just(response.bufferFactory().wrap(json)));
    }
  }
}
