package lab.kit;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * The contract's work: 32-bit FNV-1a over the low byte of the loop index (cpu-vectors.json), the
 * row picker (db-vectors.json), and the two sleeps a Java developer can write.
 */
public final class Work {
  private Work() {}

  public static final long WORLD_ROWS = 10_000;

  /** FNV-1a: x = ((x ^ (i & 0xff)) * 16777619) mod 2^32, from x = 2166136261; unsigned. */
  public static long fnv1a(long n) {
    int x = (int) 2166136261L;
    for (long i = 0; i < n; i++) {
      x = (x ^ (int) (i & 0xff)) * 16777619;
    }
    return Integer.toUnsignedLong(x);
  }

  /** SplitMix64, the contract's row picker: arithmetic mod 2^64 (Java's long wraps so). */
  public static long splitMix64(long seed, long k) {
    long z = seed + k * 0x9e3779b97f4a7c15L;
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
    return z ^ (z >>> 31);
  }

  /** The k-th row (k = 1..n) /db-rows reads for seed: 1 + SplitMix64(seed, k) mod 10000. */
  public static long worldId(long seed, long k) {
    return 1 + Long.remainderUnsigned(splitMix64(seed, k), WORLD_ROWS);
  }

  /**
   * Thread.sleep: on a platform thread it holds the thread; a virtual thread unmounts and frees its
   * carrier. Interrupted (the server stopping): returns early.
   */
  public static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException stop) {
      Thread.currentThread().interrupt();
    }
  }

  // libc's poll(NULL, 0, timeout): a sleep inside a native call, through the FFM API.
  private static final MethodHandle POLL =
      Linker.nativeLinker()
          .downcallHandle(
              Linker.nativeLinker().defaultLookup().find("poll").orElseThrow(),
              FunctionDescriptor.of(
                  ValueLayout.JAVA_INT,
                  ValueLayout.ADDRESS,
                  ValueLayout.JAVA_LONG,
                  ValueLayout.JAVA_INT));

  /**
   * A blocking sleep inside a native call (libc poll through the FFM API): the anti-pattern that
   * still holds a thread on JDK 25. A virtual thread cannot unmount from a native frame, so it pins
   * its carrier for the whole wait (JEP 491 freed synchronized, not native frames); a platform
   * thread is held as by Thread.sleep. A signal that interrupts the call (EINTR) resumes the wait
   * for what is left of it.
   */
  public static void nativeSleep(long ms) {
    long deadline = System.nanoTime() + ms * 1_000_000;
    for (long left = ms; left > 0; left = (deadline - System.nanoTime() + 999_999) / 1_000_000) {
      try {
        int unused = (int) POLL.invokeExact(MemorySegment.NULL, 0L, (int) left);
      } catch (Throwable e) {
        throw new IllegalStateException("native sleep: " + e, e);
      }
    }
  }
}
