package lab.kit;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.Executors;
import org.junit.jupiter.api.Test;

/**
 * What /info's virtual-thread capacities rest on, on the JDK that runs the tests: a sleep inside
 * synchronized no longer pins a virtual thread (JEP 491, JDK 24), a sleep inside a native call
 * does, so 4 x carriers such sleeps take 4 rounds while the others take one.
 */
class PinningTest {
  static final int MS = 100;

  static double seconds(int k, Runnable body) {
    long start = System.nanoTime();
    try (var threads = Executors.newVirtualThreadPerTaskExecutor()) {
      for (int i = 0; i < k; i++) {
        threads.submit(body);
      }
    }
    return (System.nanoTime() - start) / 1e9;
  }

  @Test
  void nativeSleepPinsItsCarrierAndSynchronizedDoesNot() {
    int k = 4 * App.carriers();
    Work.nativeSleep(1); // the downcall's first link is not part of the measure
    double locked =
        seconds(
            k,
            () -> {
              Object lock = new Object();
              synchronized (lock) {
                Work.sleep(MS);
              }
            });
    double pinned = seconds(k, () -> Work.nativeSleep(MS));
    assertTrue(locked < 1.9 * MS / 1000, "synchronized + Thread.sleep: " + locked + " s");
    assertTrue(pinned >= 3.9 * MS / 1000, "native sleep: " + pinned + " s");
  }
}
