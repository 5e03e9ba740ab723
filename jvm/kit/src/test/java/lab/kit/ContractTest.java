package lab.kit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The contract's grammar, bounds, repeats and cap, as node/kit/kit.test.js checks them. */
class ContractTest {
  static final Contract CONTRACT = Contract.load();
  static final String GRAMMAR = " must be an integer without sign or leading zeros";

  record Case(String endpoint, String query, Map<String, Long> values, String param, String error) {
    static Case ok(String endpoint, String query, Map<String, Long> values) {
      return new Case(endpoint, query, values, null, null);
    }

    static Case bad(String endpoint, String query, String param, String error) {
      return new Case(endpoint, query, null, param, error);
    }
  }

  static final List<Case> CASES =
      List.of(
          Case.ok("gather", "", Map.of("ms", 100L, "n", 10L)),
          Case.ok("gather", "ms=0&n=1&other=x&other=y", Map.of("ms", 0L, "n", 1L)),
          Case.ok("sync", "ms=10000", Map.of("ms", 10000L)),
          Case.bad("sync", "ms=", "ms", "ms" + GRAMMAR),
          Case.bad("sync", "ms", "ms", "ms" + GRAMMAR),
          Case.bad("sync", "ms=+5", "ms", "ms" + GRAMMAR),
          Case.bad("sync", "ms=%2B5", "ms", "ms" + GRAMMAR),
          Case.bad("sync", "ms=007", "ms", "ms" + GRAMMAR),
          Case.bad("sync", "ms=%D9%A3", "ms", "ms" + GRAMMAR),
          Case.bad("sync", "ms=%zz", "ms", "ms" + GRAMMAR),
          Case.bad("sync", "ms=1;n=2", "ms", "ms" + GRAMMAR),
          Case.bad("sync", "ms=1234567890", "ms", "ms" + GRAMMAR),
          Case.bad("sync", "ms=5%0A", "ms", "ms" + GRAMMAR),
          Case.bad("sync", "ms=10001", "ms", "ms must be between 0 and 10000"),
          Case.bad("gather", "n=0", "n", "n must be between 1 and 100"),
          Case.bad("sync", "ms=1&ms=1", "ms", "ms must be given once"),
          Case.bad("sync", "m%73=1&ms=2", "ms", "ms must be given once"),
          Case.bad("gather", "n=abc&ms=abc", "ms", "ms" + GRAMMAR),
          Case.bad("gather", "ms=1&n=1&n=1", "n", "n must be given once"),
          Case.ok("sequential", "ms=100&n=100", Map.of("ms", 100L, "n", 100L)),
          Case.bad("sequential", "ms=10000&n=2", "n", "n * ms must be at most 10000"),
          Case.bad("sequential", "ms=2000", "n", "n * ms must be at most 10000"),
          Case.bad("sequential", "ms=10000&n=0", "n", "n must be between 1 and 100"),
          Case.ok("upstream", "ms=10000&n=100", Map.of("ms", 10000L, "n", 100L)));

  @Test
  void grammarBoundsRepeatsAndCapInContractOrder() {
    for (Case c : CASES) {
      Contract.Parsed got = CONTRACT.parse(CONTRACT.endpoint(c.endpoint()), c.query());
      String where = c.endpoint() + "?" + c.query();
      if (c.values() != null) {
        assertNull(got.bad(), where);
        assertEquals(c.values(), got.values(), where);
      } else {
        assertNull(got.values(), where);
        assertEquals(new Contract.BadParam(c.error(), c.param()), got.bad(), where);
        assertEquals(Map.of("error", c.error(), "param", c.param()), got.bad().body(), where);
      }
    }
  }

  @Test
  void valuesKeepContractOrder() {
    Contract.Parsed got = CONTRACT.parse(CONTRACT.endpoint("gather"), "n=2&ms=1");
    assertEquals(List.of("ms", "n"), List.copyOf(got.values().keySet()));
  }

  @Test
  void queryIsSplitOnAmpersandOnlyKeepingABadEscape() {
    Map<String, List<String>> want = new LinkedHashMap<>();
    want.put("a", List.of("1", "2"));
    want.put("b", List.of("A c"));
    want.put("c", List.of(""));
    want.put("d", List.of("%zz"));
    want.put("e", List.of("1;f=2"));
    assertEquals(want, Contract.splitQuery("a=1&a=2&b=%41+c&&c&d=%zz&e=1;f=2"));
  }

  @Test
  void endpointsAreTheDocumentsInOrder() {
    List<String> names = CONTRACT.endpoints().stream().map(Contract.Endpoint::name).toList();
    assertEquals("hello", names.getFirst());
    assertTrue(names.containsAll(List.of("sync", "db-rows", "info")), names.toString());
    assertTrue(CONTRACT.benchEndpoints().stream().noneMatch(e -> e.kind().equals("meta")));
    assertEquals(10000, CONTRACT.endpoint("sequential").maxServiceMs());
    assertEquals(Map.of("message", "hello, world"), CONTRACT.endpoint("hello").fields());
  }

  @Test
  void requestIdIsCheckedByTheContractsPattern() {
    assertEquals("abc-1", Contract.requestId("abc-1"));
    assertEquals("", Contract.requestId("a b"));
    assertEquals("", Contract.requestId("x".repeat(65)));
    assertEquals("", Contract.requestId(null));
  }
}
