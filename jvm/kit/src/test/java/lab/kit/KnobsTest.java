package lab.kit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The lab's one knob rule: an integer >= 1, or unset for the default; else one clear error. */
class KnobsTest {
  @Test
  void unsetOrEmptyGivesTheDefault() {
    assertEquals(8, Knobs.intValue("THREADS", "", 8));
    assertNull(Knobs.intValue("DB_POOL", "", null));
  }

  @Test
  void anIntegerOfOneOrMoreIsRead() {
    assertEquals(1, Knobs.intValue("THREADS", "1", 8));
    assertEquals(200, Knobs.intValue("THREADS", "200", 8));
  }

  @Test
  void anythingElseIsRefusedNamingTheKnob() {
    for (String raw : List.of("0", "-1", "+2", "1.5", "abc", "007", "2 3", "9999999999")) {
      Knobs.KnobError e =
          assertThrows(Knobs.KnobError.class, () -> Knobs.intValue("THREADS", raw, 8), raw);
      assertEquals("THREADS must be an integer >= 1, got \"" + raw + "\"", e.getMessage());
    }
  }
}
