package lab.kit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The error bodies come from the contract's templates; the capacity rule of both thread kinds. */
class AppTest {
  static App app(Contract c, Integer threads) {
    return new App(
        c,
        new App.Config("test", "1", "test", "1", "test", threads, App.threadPerRequest(threads)));
  }

  @Test
  void errorBodiesAreTheContractsTemplatesNotCopiesOfThem(@TempDir Path dir) throws IOException {
    ObjectMapper json = new ObjectMapper();
    Path real = Contract.find();
    ObjectNode doc = (ObjectNode) json.readTree(real.toFile());
    ObjectNode errors = (ObjectNode) doc.get("x-lab").get("errors");
    for (String k : fieldNames(errors)) {
      if (!k.equals("max-service-param")) {
        errors.put(k, "changed: " + errors.get(k).asText());
      }
    }
    Path changed = dir.resolve("openapi.json");
    Files.writeString(changed, json.writeValueAsString(doc));
    try (App a = app(Contract.load(changed), 4)) {
      assertEquals(Map.of("error", "changed: not found", "path", "/x"), a.notFound("/x").body());
      assertEquals(404, a.notFound("/x").status());
      assertEquals(
          Map.of("error", "changed: method not allowed", "method", "PUT"),
          a.methodNotAllowed("PUT").body());
      assertEquals(Map.of("error", "changed: internal error"), a.internalError().body());
      assertEquals(Map.of("error", "changed: database: down now"), a.dbError("down\n now").body());
      assertEquals(503, a.dbError("x").status());
      App.Bound b = a.handler("sync").bind("ms=x", null);
      assertEquals("changed: ms must be an integer without sign or leading zeros", b.bad().error());
    }
  }

  private static java.util.List<String> fieldNames(ObjectNode node) {
    java.util.List<String> names = new java.util.ArrayList<>();
    node.fieldNames().forEachRemaining(names::add);
    return names;
  }

  @Test
  void capacityOfAPlatformPoolAndOfVirtualThreads() {
    Contract c = Contract.load();
    try (App platform = app(c, 200);
        App virtual = app(c, null)) {
      Map<String, Integer> p = platform.capacity();
      assertEquals(200, p.get("sync"));
      assertEquals(200, p.get("blocking"));
      assertNull(p.get("async"));
      assertEquals(Math.min(200, platform.executorThreads), p.get("executor"));
      assertEquals(Math.min(200, platform.poolThreads), p.get("cpu-pool"));
      assertEquals(10, p.get("db"));
      Map<String, Integer> v = virtual.capacity();
      for (String unbounded : new String[] {"hello", "sync", "async", "gather", "upstream"}) {
        assertNull(v.get(unbounded), unbounded);
      }
      assertEquals(App.carriers(), v.get("blocking"));
      assertEquals(App.carriers(), v.get("cpu"));
      assertEquals(8, v.get("executor"));
      assertEquals(10, v.get("db-rows"));
    }
  }

  @Test
  void requestsAreServedWithTheContractsBodies() {
    try (App a = app(Contract.load(), null)) {
      App.Handler gather = a.handler("gather");
      Reply r = gather.call(gather.bind("ms=5&n=3", "id-1").request());
      assertEquals(200, r.status());
      assertEquals(Map.of("endpoint", "gather", "pid", a.pid, "ms", 5L, "n", 3L), r.body());
      Reply cpu =
          a.handler("cpu-pool").callAsync(a.handler("cpu-pool").bind("", null).request()).join();
      assertEquals(3533651717L, cpu.body().get("result"));
      Reply db = a.handler("db").call(a.handler("db").bind("ms=1", null).request());
      assertEquals(503, db.status());
    }
  }
}
