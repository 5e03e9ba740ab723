package lab.kit;

import java.util.regex.Pattern;

/** The lab's one rule for knobs (CONTRACT.md, Knobs): an integer >= 1, or unset for the default. */
public final class Knobs {
  private static final Pattern POSITIVE = Pattern.compile("[1-9][0-9]{0,8}");

  private Knobs() {}

  /** A knob's bad value; main prints its message as the one line and exits 1. */
  public static final class KnobError extends IllegalArgumentException {
    public KnobError(String message) {
      super(message);
    }
  }

  /** The environment variable's value, trimmed; "" when unset. */
  public static String env(String name) {
    String raw = System.getenv(name);
    return raw == null ? "" : raw.strip();
  }

  /** The environment variable's value, or fallback when it is unset or empty. */
  public static String env(String name, String fallback) {
    String raw = env(name);
    return raw.isEmpty() ? fallback : raw;
  }

  /** A knob from the environment: an integer >= 1, or fallback (may be null) when unset. */
  public static Integer intEnv(String name, Integer fallback) {
    return intValue(name, env(name), fallback);
  }

  static Integer intValue(String name, String raw, Integer fallback) {
    if (raw.isEmpty()) {
      return fallback;
    }
    if (!POSITIVE.matcher(raw).matches()) {
      throw new KnobError(name + " must be an integer >= 1, got \"" + raw + "\"");
    }
    return Integer.parseInt(raw);
  }
}
