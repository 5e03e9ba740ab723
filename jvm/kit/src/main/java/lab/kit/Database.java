package lab.kit;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.PrintWriter;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The database endpoints' pool: pgjdbc through HikariCP, Spring Boot's own default pool, so every
 * JVM target waits on the same pool kind. HikariCP's default size (10, minimum = maximum: it opens
 * them at start) unless DB_POOL sets it; every connection named application_name = 'lab {target}
 * {pid}'. Without DATABASE_URL the endpoints answer 503.
 */
public final class Database implements AutoCloseable {
  /** How long one wait inside Hikari lasts before the kit looks at the database's state again. */
  private static final long WAIT_STEP_MS = 1000;

  public final int size;
  public final String source; // "default" or the knob's name
  public final String why; // why there is no pool ("" when there is one)
  private final HikariDataSource pool;
  private final Reachability reach;
  private final long timeoutMs;

  /** A database failure, its reason on one line: the contract's 503. */
  public static final class Unavailable extends Exception {
    public Unavailable(String reason) {
      super(String.join(" ", reason.strip().split("\\s+")));
    }
  }

  Database(Contract contract, String target, long pid) {
    var spec = contract.ext.get("database");
    String poolEnv = spec.get("pool-env").asText();
    Integer knob = Knobs.intEnv(poolEnv, null);
    this.size = knob != null ? knob : new HikariConfig().getMaximumPoolSize();
    this.source = knob != null ? poolEnv : "default";
    this.timeoutMs = spec.get("timeout-s").asLong() * 1000;
    String urlEnv = spec.get("url-env").asText();
    String url = Knobs.env(urlEnv);
    if (url.isEmpty()) {
      this.why = urlEnv + " is not set";
      this.pool = null;
      this.reach = null;
      return;
    }
    PGSimpleDataSource pg = pgDataSource(url);
    pg.setApplicationName(
        spec.get("application-name")
            .asText()
            .replace("{target}", target)
            .replace("{pid}", Long.toString(pid)));
    HikariConfig config = new HikariConfig();
    this.reach = new Reachability(pg);
    config.setDataSource(reach);
    config.setPoolName("lab-db");
    config.setMaximumPoolSize(size);
    if (knob != null) {
      config.setMinimumIdle(knob);
    }
    // Start without the database (it may come later); the endpoints answer 503 meanwhile.
    config.setInitializationFailTimeout(-1);
    config.setConnectionTimeout(WAIT_STEP_MS);
    this.pool = new HikariDataSource(config);
    this.why = "";
  }

  /** A libpq URL (postgresql://user:pass@host:port/db?k=v) as pgjdbc's data source. */
  static PGSimpleDataSource pgDataSource(String url) {
    URI uri = URI.create(url);
    if (!"postgresql".equals(uri.getScheme()) && !"postgres".equals(uri.getScheme())) {
      throw new IllegalArgumentException("DATABASE_URL must be a postgresql:// URL, got " + url);
    }
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setServerNames(new String[] {uri.getHost() == null ? "localhost" : uri.getHost()});
    ds.setPortNumbers(new int[] {uri.getPort() < 0 ? 5432 : uri.getPort()});
    String db = uri.getPath() == null ? "" : uri.getPath().replaceFirst("^/", "");
    if (!db.isEmpty()) {
      ds.setDatabaseName(db);
    }
    if (uri.getRawUserInfo() != null) {
      String[] user = uri.getRawUserInfo().split(":", 2);
      ds.setUser(URLDecoder.decode(user[0], StandardCharsets.UTF_8));
      if (user.length > 1) {
        ds.setPassword(URLDecoder.decode(user[1], StandardCharsets.UTF_8));
      }
    }
    return ds;
  }

  /** What a query does with its pooled connection. */
  public interface Work<T> {
    T run(Connection c) throws SQLException;
  }

  /**
   * f with one pooled connection. Waits up to the contract's timeout (x-lab.database.timeout-s) for
   * a connection, but answers at once when the pool has none and its last attempt to open one
   * failed (the database is down or refuses): Hikari alone would wait the whole timeout.
   */
  public <T> T with(Work<T> f) throws Unavailable {
    if (pool == null) {
      throw new Unavailable(why);
    }
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    for (; ; ) {
      SQLException down = reach.down();
      if (down != null && pool.getHikariPoolMXBean().getTotalConnections() == 0) {
        throw new Unavailable(down.getMessage());
      }
      Connection c;
      try {
        c = pool.getConnection();
      } catch (SQLException waited) {
        if (System.nanoTime() < deadline) {
          continue;
        }
        throw new Unavailable("no pooled connection within " + timeoutMs / 1000 + " s");
      }
      try (c) {
        return f.run(c);
      } catch (SQLException e) {
        throw new Unavailable(e.getMessage());
      }
    }
  }

  public int queryTimeoutS() {
    return (int) (timeoutMs / 1000);
  }

  @Override
  public void close() {
    if (pool != null) {
      pool.close();
    }
  }

  /** pgjdbc's data source, remembering whether the last attempt to connect failed. */
  private static final class Reachability implements DataSource {
    private final PGSimpleDataSource pg;
    private volatile SQLException lastFailure;

    Reachability(PGSimpleDataSource pg) {
      this.pg = pg;
    }

    SQLException down() {
      return lastFailure;
    }

    private Connection track(ConnectionOpener open) throws SQLException {
      try {
        Connection c = open.open();
        lastFailure = null;
        return c;
      } catch (SQLException e) {
        lastFailure = e;
        throw e;
      }
    }

    private interface ConnectionOpener {
      Connection open() throws SQLException;
    }

    @Override
    public Connection getConnection() throws SQLException {
      return track(pg::getConnection);
    }

    @Override
    public Connection getConnection(String user, String password) throws SQLException {
      return track(() -> pg.getConnection(user, password));
    }

    @Override
    public PrintWriter getLogWriter() throws SQLException {
      return pg.getLogWriter();
    }

    @Override
    public void setLogWriter(PrintWriter out) throws SQLException {
      pg.setLogWriter(out);
    }

    @Override
    public void setLoginTimeout(int seconds) throws SQLException {
      pg.setLoginTimeout(seconds);
    }

    @Override
    public int getLoginTimeout() throws SQLException {
      return pg.getLoginTimeout();
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
      return pg.getParentLogger();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
      return pg.unwrap(iface);
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) throws SQLException {
      return pg.isWrapperFor(iface);
    }
  }
}
