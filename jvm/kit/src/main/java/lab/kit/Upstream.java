package lab.kit;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * The upstream's /delay?ms= client: the JDK's own java.net.http.HttpClient, one per process,
 * HTTP/1.1 with keep-alive and no cap on connections per host (jdk.httpclient.connectionPoolSize 0,
 * its default), so a request's n calls run at once on n connections. A well-kept client in the JDK
 * itself: no dependency, and what a Java developer reaches for first.
 */
final class Upstream {
  static final Duration TIMEOUT = Duration.ofSeconds(15); // per call, as every kit's

  private final HttpClient client =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(TIMEOUT).build();
  private final String baseUrl;

  Upstream(String baseUrl) {
    this.baseUrl = baseUrl.replaceAll("/+$", "");
  }

  private HttpRequest delay(long ms, String requestId) {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create(baseUrl + "/delay?ms=" + ms)).timeout(TIMEOUT).GET();
    if (!requestId.isEmpty()) {
      b.header(Contract.REQUEST_ID_HEADER, requestId);
    }
    return b.build();
  }

  /** One call, its status (the body is drained so the connection is reused). */
  CompletableFuture<Integer> callAsync(long ms, String requestId) {
    return client
        .sendAsync(delay(ms, requestId), HttpResponse.BodyHandlers.discarding())
        .thenApply(HttpResponse::statusCode);
  }

  /** n calls at once; the statuses in call order. */
  CompletableFuture<List<Integer>> fanOut(long ms, long n, String requestId) {
    List<CompletableFuture<Integer>> calls = new ArrayList<>();
    for (long i = 0; i < n; i++) {
      calls.add(callAsync(ms, requestId));
    }
    return CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new))
        .thenApply(done -> calls.stream().map(CompletableFuture::join).toList());
  }

  /** n calls one after another (the calling thread waits on each); stops at a non-200. */
  List<Integer> sequence(long ms, long n, String requestId)
      throws IOException, InterruptedException {
    List<Integer> statuses = new ArrayList<>();
    for (long i = 0; i < n; i++) {
      statuses.add(
          client.send(delay(ms, requestId), HttpResponse.BodyHandlers.discarding()).statusCode());
      if (statuses.getLast() != 200) {
        break;
      }
    }
    return statuses;
  }

  /** The same sequence without holding a thread: each call starts when the last one ends. */
  CompletableFuture<List<Integer>> sequenceAsync(long ms, long n, String requestId) {
    CompletableFuture<List<Integer>> chain = CompletableFuture.completedFuture(new ArrayList<>());
    for (long i = 0; i < n; i++) {
      chain =
          chain.thenCompose(
              statuses ->
                  !statuses.isEmpty() && statuses.getLast() != 200
                      ? CompletableFuture.completedFuture(statuses)
                      : callAsync(ms, requestId)
                          .thenApply(
                              s -> {
                                statuses.add(s);
                                return statuses;
                              }));
    }
    return chain;
  }

  /** The contract's answer to a failed call: 504 on a timeout, else 502, with the reason. */
  static Reply failure(Throwable err) {
    while ((err instanceof CompletionException || err instanceof ExecutionException)
        && err.getCause() != null) {
      err = err.getCause();
    }
    String why =
        err.getClass().getSimpleName() + (err.getMessage() == null ? "" : ": " + err.getMessage());
    if (err instanceof HttpTimeoutException) {
      return Reply.error(504, "upstream timed out: " + why);
    }
    return Reply.error(502, "upstream failed: " + why);
  }
}
