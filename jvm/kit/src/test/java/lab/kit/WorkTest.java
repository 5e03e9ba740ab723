package lab.kit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

/** The work against the contract's shared test vectors, and the two sleeps' lengths. */
class WorkTest {
  static final Contract CONTRACT = Contract.load();

  @Test
  void fnv1aGivesEveryCpuVector() {
    JsonNode vectors = CONTRACT.vectors("cpu-test-vectors");
    assertTrue(vectors.size() > 0);
    for (JsonNode v : vectors) {
      assertEquals(v.get("result").asLong(), Work.fnv1a(v.get("n").asLong()), "n=" + v.get("n"));
    }
  }

  @Test
  void rowPickerGivesEveryDbVectorsIds() {
    JsonNode vectors = CONTRACT.vectors("db-test-vectors");
    assertTrue(vectors.size() > 0);
    for (JsonNode v : vectors) {
      JsonNode ids = v.get("ids");
      for (int k = 1; k <= ids.size(); k++) {
        long seed = v.get("seed").asLong();
        assertEquals(ids.get(k - 1).asLong(), Work.worldId(seed, k), "seed=" + seed + " k=" + k);
      }
    }
  }

  @Test
  void nativeSleepWaitsItsTime() {
    long start = System.nanoTime();
    Work.nativeSleep(50);
    double ms = (System.nanoTime() - start) / 1e6;
    assertTrue(ms >= 50 && ms < 500, ms + " ms");
  }
}
