// The Spring target with lies planted (LAB_LIES, comma-separated), for the suite's bites
// (tests/conformance/test_suite_bites.py): each lie must fail the conformance check made for it,
// and with no lie the same app passes those checks. Test code (compiled and formatted with the
// module), run by the suite as a single-file program on the target's jar (its libraries on the
// jar's class path):
//   java -cp .build/spring.jar jvm/spring/src/test/java/lab/spring/Liar.java mvc|webflux|...
//   blocking-unbounded  /info claims /blocking unbounded (null): on WebFlux it holds an event loop
package lab.spring;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import lab.kit.App;
import lab.kit.Knobs;

public class Liar {
  public static void main(String[] args) {
    Set<String> lies = Set.of(Knobs.env("LAB_LIES").split(","));
    Main.start(
        args,
        honest ->
            new App.Config(
                honest.framework(),
                honest.frameworkVersion(),
                honest.server(),
                honest.serverVersion(),
                honest.defaultProfile(),
                honest.threads(),
                app -> {
                  Map<String, Integer> c = new LinkedHashMap<>(honest.capacity().apply(app));
                  if (lies.contains("blocking-unbounded")) {
                    c.put("blocking", null);
                  }
                  return c;
                }));
  }
}
