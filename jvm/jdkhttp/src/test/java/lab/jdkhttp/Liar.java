// The jdkhttp target with lies planted (LAB_LIES, comma-separated), for the suite's bites
// (tests/conformance/test_suite_bites.py): each lie must fail the conformance check made for it,
// and with no lie the same app passes those checks. Test code (compiled and formatted with the
// module), run by the suite on the target's jar as a single-file program:
//   java -cp .build/jdkhttp.jar jvm/jdkhttp/src/test/java/lab/jdkhttp/Liar.java platform|virtual
package lab.jdkhttp;

//   blocking-unbounded  /info claims /blocking unbounded (null) while its native sleep pins a
// carrier
//   sync-2x             /info claims twice the request threads for /sync (a pool of THREADS)
//   wait-for-requests   on SIGTERM, waits for every request in flight (a 10 s /sync) to end
import com.sun.net.httpserver.HttpServer;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import lab.kit.App;
import lab.kit.Knobs;

public class Liar {
  public static void main(String[] args) throws Exception {
    Set<String> lies = Set.of(Knobs.env("LAB_LIES").split(","));
    Integer threads = Main.threads(args);
    var honest = App.threadPerRequest(threads);
    App app =
        Main.app(
            args[0],
            threads,
            a -> {
              Map<String, Integer> c = new LinkedHashMap<>(honest.apply(a));
              if (lies.contains("blocking-unbounded")) {
                c.put("blocking", null);
              }
              if (lies.contains("sync-2x")) {
                c.put("sync", 2 * threads);
              }
              return c;
            });
    HttpServer server = Main.start(app, threads);
    if (lies.contains("wait-for-requests")) {
      Runtime.getRuntime()
          .addShutdownHook(
              new Thread(
                  () -> {
                    server.stop(0);
                    ExecutorService requests = (ExecutorService) server.getExecutor();
                    requests.shutdown();
                    try {
                      requests.awaitTermination(1, TimeUnit.MINUTES);
                    } catch (InterruptedException e) {
                      Thread.currentThread().interrupt();
                    }
                  }));
    } else {
      Main.stopOnSignal(server, app);
    }
  }
}
