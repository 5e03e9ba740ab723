package lab.kit;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.Executors;
import org.junit.jupiter.api.Test;

/**
 * What /info's virtual-thread capacities rest on, on the JDK that runs the tests: a sleep inside
 * synchronized no longer pins a virtual thread (JEP 491, JDK 24), a sleep inside a native call
 * does, so 4 x carriers such sleeps take 4 rounds while the others take one. As a program it prints
 * CONTRACT.md's measurement (K virtual threads of MS each, each way):
 *
 * <pre>
 *   jvm/mvn -q test-compile
 *   .tools/jdk/bin/java --enable-native-access=ALL-UNNAMED -Djdk.virtualThreadScheduler.parallelism=1 \
 *     -cp jvm/kit/target/classes:jvm/kit/target/test-classes lab.kit.PinningTest 50 100
 * </pre>
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

  static void lockedSleep(long ms) {
    Object lock = new Object();
    synchronized (lock) {
      Work.sleep(ms);
    }
  }

  public static void main(String[] args) {
    int k = Integer.parseInt(args[0]);
    long ms = Long.parseLong(args[1]);
    Work.nativeSleep(1);
    System.out.printf(
        "JDK %s, %d carriers, %d virtual threads of %d ms: Thread.sleep %.2f s, synchronized +"
            + " Thread.sleep %.2f s, native poll %.2f s%n",
        Runtime.version(),
        App.carriers(),
        k,
        ms,
        seconds(k, () -> Work.sleep(ms)),
        seconds(k, () -> lockedSleep(ms)),
        seconds(k, () -> Work.nativeSleep(ms)));
  }

  @Test
  void nativeSleepPinsItsCarrierAndSynchronizedDoesNot() {
    int k = 4 * App.carriers();
    Work.nativeSleep(1); // the downcall's first link is not part of the measure
    double locked = seconds(k, () -> lockedSleep(MS));
    double pinned = seconds(k, () -> Work.nativeSleep(MS));
    assertTrue(locked < 1.9 * MS / 1000, "synchronized + Thread.sleep: " + locked + " s");
    assertTrue(pinned >= 3.9 * MS / 1000, "native sleep: " + pinned + " s");
  }
}
