package lab.kit;

import java.util.LinkedHashMap;
import java.util.Map;

/** An endpoint's answer: the status and the JSON body (a map, in the order it was built). */
public record Reply(int status, Map<String, Object> body) {
  static Reply ok(Map<String, Object> body) {
    return new Reply(200, body);
  }

  static Reply error(int status, String error) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("error", error);
    return new Reply(status, body);
  }

  /** The body as JSON bytes. */
  public byte[] json() {
    return Json.bytes(body);
  }
}
