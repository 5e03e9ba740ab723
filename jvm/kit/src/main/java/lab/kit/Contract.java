package lab.kit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The endpoint contract (contract/openapi.json) read at start-up, as labkit, go/internal/contract
 * and node/kit/contract.js read it: endpoints in document order with their integer parameters, the
 * one grammar, the bounds, repeated parameters, the total-wait cap and the error templates. The
 * file is $LAB_CONTRACT, else the first contract/openapi.json walking up from the working
 * directory.
 */
public final class Contract {
  static final Path REL = Path.of("contract", "openapi.json");
  public static final String REQUEST_ID_HEADER = "X-Lab-Request-Id";
  private static final Pattern REQUEST_ID = Pattern.compile("[A-Za-z0-9-]{1,64}");
  private static final Pattern PLACEHOLDER = Pattern.compile("\\{(\\w+)}");

  /** One integer query parameter with its default and bounds. */
  public record Param(String name, long defaultValue, long minimum, long maximum) {}

  /** One contract endpoint (x-lab: kind, service, max_service_ms, fields). */
  public record Endpoint(
      String name,
      String path,
      String method,
      String kind,
      String service,
      long maxServiceMs,
      Map<String, Object> fields,
      List<Param> params) {

    public boolean bench() {
      return !kind.equals("meta");
    }
  }

  /** A refused parameter: the 400 body {"error": ..., "param": ...}. */
  public record BadParam(String error, String param) {
    public Map<String, Object> body() {
      Map<String, Object> body = new LinkedHashMap<>();
      body.put("error", error);
      body.put("param", param);
      return body;
    }
  }

  /** A parse's outcome: the values in contract order (defaults filled in), or why not. */
  public record Parsed(Map<String, Long> values, BadParam bad) {}

  public final Path path;
  public final String version;
  public final JsonNode ext; // the document's x-lab
  private final Pattern grammar;
  private final List<Endpoint> endpoints = new ArrayList<>();

  private Contract(Path path, JsonNode doc) {
    this.path = path;
    this.version = doc.path("info").path("version").asText();
    this.ext = doc.get("x-lab");
    this.grammar = Pattern.compile(ext.path("integer-grammar").path("pattern").asText());
    for (String kind : List.of("repeated", "grammar", "bounds", "max-service", "not-found")) {
      if (!ext.path("errors").has(kind)) {
        throw new IllegalStateException("contract: x-lab.errors has no " + kind + " template");
      }
    }
    JsonNode refs = doc.path("components").path("parameters");
    for (Iterator<Map.Entry<String, JsonNode>> paths = doc.get("paths").fields();
        paths.hasNext(); ) {
      Map.Entry<String, JsonNode> item = paths.next();
      for (Iterator<Map.Entry<String, JsonNode>> ops = item.getValue().fields(); ops.hasNext(); ) {
        Map.Entry<String, JsonNode> op = ops.next();
        JsonNode lab = op.getValue().path("x-lab");
        List<Param> params = new ArrayList<>();
        for (JsonNode p : op.getValue().path("parameters")) {
          if (p.has("$ref")) {
            p = refs.get(p.get("$ref").asText().replace("#/components/parameters/", ""));
          }
          JsonNode s = p.get("schema");
          params.add(
              new Param(
                  p.get("name").asText(),
                  s.get("default").asLong(),
                  s.get("minimum").asLong(),
                  s.get("maximum").asLong()));
        }
        Map<String, Object> fields = new LinkedHashMap<>();
        lab.path("fields").fields().forEachRemaining(f -> fields.put(f.getKey(), plain(f)));
        endpoints.add(
            new Endpoint(
                op.getValue().get("operationId").asText(),
                item.getKey(),
                op.getKey().toUpperCase(Locale.ROOT),
                lab.path("kind").asText("meta"),
                lab.path("service").asText(""),
                lab.path("max_service_ms").asLong(0),
                Map.copyOf(fields),
                List.copyOf(params)));
      }
    }
  }

  private static Object plain(Map.Entry<String, JsonNode> f) {
    JsonNode v = f.getValue();
    return v.isNumber() ? v.numberValue() : v.isBoolean() ? v.asBoolean() : v.asText();
  }

  /** The contract file: $LAB_CONTRACT, else contract/openapi.json walking up from here. */
  public static Path find() {
    String env = System.getenv("LAB_CONTRACT");
    if (env != null && !env.isBlank()) {
      Path p = Path.of(env.trim());
      if (!Files.exists(p)) {
        throw new IllegalStateException("contract: LAB_CONTRACT: " + p + " not found");
      }
      return p;
    }
    for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
      if (Files.exists(dir.resolve(REL))) {
        return dir.resolve(REL);
      }
    }
    throw new IllegalStateException("contract: " + REL + " not found (set LAB_CONTRACT)");
  }

  public static Contract load() {
    return load(find());
  }

  public static Contract load(Path path) {
    try {
      return new Contract(path, new ObjectMapper().readTree(path.toFile()));
    } catch (IOException e) {
      throw new UncheckedIOException("contract: " + path + ": " + e.getMessage(), e);
    }
  }

  public List<Endpoint> endpoints() {
    return List.copyOf(endpoints);
  }

  public List<Endpoint> benchEndpoints() {
    return endpoints.stream().filter(Endpoint::bench).toList();
  }

  public Endpoint endpoint(String name) {
    return endpoints.stream().filter(e -> e.name.equals(name)).findFirst().orElse(null);
  }

  /** An x-lab.errors template with its {placeholders} filled in from values. */
  public String error(String kind, Map<String, ?> values) {
    String template = ext.path("errors").path(kind).asText(null);
    if (template == null) {
      throw new IllegalArgumentException("contract: x-lab.errors has no " + kind + " template");
    }
    Matcher m = PLACEHOLDER.matcher(template);
    StringBuilder out = new StringBuilder();
    while (m.find()) {
      m.appendReplacement(out, Matcher.quoteReplacement(String.valueOf(values.get(m.group(1)))));
    }
    return m.appendTail(out).toString();
  }

  public String error(String kind) {
    return error(kind, Map.of());
  }

  /** The shared test vectors named by an x-lab key (cpu-test-vectors, db-test-vectors). */
  public JsonNode vectors(String key) {
    Path file = path.toAbsolutePath().getParent().resolve(ext.get(key).asText());
    try {
      return new ObjectMapper().readTree(file.toFile()).get("vectors");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * The endpoint's parameters from a raw query string, in contract order: for each, given more than
   * once, then the grammar, then the bounds; then the total-wait cap. The first failure answers.
   */
  public Parsed parse(Endpoint e, String rawQuery) {
    Map<String, List<String>> query = splitQuery(rawQuery);
    Map<String, Long> values = new LinkedHashMap<>();
    for (Param p : e.params()) {
      values.put(p.name(), p.defaultValue());
      List<String> raw = query.get(p.name());
      if (raw == null) {
        continue;
      }
      Map<String, Object> names = paramValues(p);
      if (raw.size() > 1) {
        return new Parsed(null, new BadParam(error("repeated", names), p.name()));
      }
      if (!grammar.matcher(raw.get(0)).matches()) {
        return new Parsed(null, new BadParam(error("grammar", names), p.name()));
      }
      long n = Long.parseLong(raw.get(0));
      if (n < p.minimum() || n > p.maximum()) {
        return new Parsed(null, new BadParam(error("bounds", names), p.name()));
      }
      values.put(p.name(), n);
    }
    if (e.maxServiceMs() > 0 && serviceMs(e, values) > e.maxServiceMs()) {
      String message = error("max-service", Map.of("max_service_ms", e.maxServiceMs()));
      return new Parsed(
          null, new BadParam(message, ext.path("errors").path("max-service-param").asText()));
    }
    return new Parsed(Collections.unmodifiableMap(values), null);
  }

  private static Map<String, Object> paramValues(Param p) {
    return Map.of("name", p.name(), "minimum", p.minimum(), "maximum", p.maximum());
  }

  /** The service expression ("ms", "n*ms") evaluated with the values. */
  public static long serviceMs(Endpoint e, Map<String, Long> values) {
    long total = 1;
    for (String term : e.service().split("\\*")) {
      term = term.strip();
      total *= term.chars().allMatch(Character::isDigit) ? Long.parseLong(term) : values.get(term);
    }
    return total;
  }

  /**
   * Every value of each name, as Go's contract.NewQuery splits it: '&' only (not ';'), '+' is a
   * space, a value with a bad %-escape stays as written (the grammar then refuses it).
   */
  public static Map<String, List<String>> splitQuery(String raw) {
    Map<String, List<String>> q = new LinkedHashMap<>();
    if (raw == null) {
      return q;
    }
    for (String pair : raw.split("&", -1)) {
      if (pair.isEmpty()) {
        continue;
      }
      int at = pair.indexOf('=');
      String key = unescape(at < 0 ? pair : pair.substring(0, at));
      String value = at < 0 ? "" : unescape(pair.substring(at + 1));
      q.computeIfAbsent(key, k -> new ArrayList<>()).add(value);
    }
    return q;
  }

  private static String unescape(String s) {
    try {
      return URLDecoder.decode(s, StandardCharsets.UTF_8);
    } catch (IllegalArgumentException bad) {
      return s;
    }
  }

  /** The X-Lab-Request-Id header's value when it is a valid id, else "". */
  public static String requestId(String value) {
    return value != null && REQUEST_ID.matcher(value).matches() ? value : "";
  }
}
