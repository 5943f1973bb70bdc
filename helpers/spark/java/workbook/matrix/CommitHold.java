package workbook.matrix;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import org.apache.hadoop.fs.Path;

/**
 * A one-shot hold on the next commit file of one table, for the conflict matrix
 * ({@code helpers/matrix/spark.py}): it makes Delta Spark commit from a stale snapshot on purpose.
 *
 * <p>Delta Spark reads the latest snapshot when an operation starts, so "B from an older snapshot"
 * cannot be made by opening B's snapshot early, as with delta-rs. Instead B starts first: it reads
 * version N, writes its data files, and calls its log store to write {@code N+1.json}. The held
 * log stores of this package ({@link HeldHDFSLogStore}, {@link HeldS3SingleDriverLogStore}) call
 * {@link #pass} first, which, while the hold is armed for that table, stops the writing thread there
 * and counts down {@link #awaitHeld}'s latch. Operation A then runs to its own commit of
 * {@code N+1.json} (the hold is spent, A passes), and {@link #release} lets B's write go on: the file
 * exists, Delta Spark's conflict checker reads A's commit and either refuses B or commits it at N+2.
 *
 * <p>The hold sits before the log store's own write, outside any lock the log store takes
 * (S3SingleDriverLogStore's per-path lock is taken inside {@code super.write}), so A is never queued
 * behind the held B. Delta's commit lock (the DeltaLog's snapshot lock, taken around the commit when
 * the log store says partial writes are visible, as HDFSLogStore does) would queue A behind B: the
 * matrix's session turns it off ({@code spark.databricks.delta.commitLock.enabled=false}).
 *
 * <p>Armed {@link #armAtData at its data files} instead, the hold stops B at the first data file it
 * opens or creates under the table ({@link HeldLocalFileSystem} calls {@link #passData}): B has read
 * version N from the log, and reads and writes no data file until A has committed, so B's data files
 * come after A's commit (what a delta-rs writer from a stale handle does), and a VACUUM as A cannot
 * see them.
 *
 * <p>Nothing here decides an outcome or sleeps: the order is the latches'. The only clock is a
 * safety limit ({@link #MAX_HOLD_MS}) after which a held write fails instead of waiting forever.
 * Holds of different tables are independent: the matrix races pairs of several engines at once,
 * in threads of one driver.
 */
public final class CommitHold {

    /** A held write that is never released fails after this long, with an IOException. */
    public static final long MAX_HOLD_MS = 300_000L;

    private static final Pattern COMMIT_FILE = Pattern.compile("^\\d{20}\\.json$");
    private static final Map<String, CommitHold> ARMED = new ConcurrentHashMap<>();

    private final CountDownLatch held = new CountDownLatch(1);
    private final CountDownLatch released = new CountDownLatch(1);
    private volatile String heldFile;
    private volatile boolean spent;
    private final boolean atData;

    private CommitHold(boolean atData) {
        this.atData = atData;
    }

    /** The table folder a location names, without scheme and trailing slash: {@code bucket/key} or {@code /abs/path}. */
    static String key(String location) {
        java.net.URI uri = new Path(location).toUri();
        String path = uri.getPath() == null ? "" : uri.getPath().replaceAll("/+$", "");
        return (uri.getAuthority() == null ? "" : uri.getAuthority()) + path;
    }

    /** Hold the next commit file written under {@code table} (a path or URI of the table's folder). */
    public static void arm(String table) {
        ARMED.put(key(table), new CommitHold(false));
    }

    /** Hold the first data file opened or created under {@code table} (any folder below it but {@code _delta_log}). */
    public static void armAtData(String table) {
        ARMED.put(key(table), new CommitHold(true));
    }

    private static CommitHold of(String table) {
        CommitHold hold = ARMED.get(key(table));
        if (hold == null) {
            throw new IllegalStateException("no hold is armed for " + table);
        }
        return hold;
    }

    /**
     * Wait until the table's next commit is held, or {@link #abandon} was called (the operation
     * ended without reaching a commit); true unless {@code timeoutMs} passed first.
     */
    public static boolean awaitHeld(String table, long timeoutMs) throws InterruptedException {
        return of(table).held.await(timeoutMs, TimeUnit.MILLISECONDS);
    }

    /** The name of the held commit file ({@code 00000000000000000004.json}), or null if none was held. */
    public static String heldFile(String table) {
        return of(table).heldFile;
    }

    /** Let the held write go on, and disarm. */
    public static void release(String table) {
        CommitHold hold = ARMED.remove(key(table));
        if (hold != null) {
            hold.spent = true;
            hold.released.countDown();
            hold.held.countDown();
        }
    }

    /** The held operation ended (committed, failed, or never committed): wake {@link #awaitHeld}; it holds nothing more. */
    public static void abandon(String table) {
        CommitHold hold = ARMED.get(key(table));
        if (hold != null) {
            hold.spent = true;
            hold.held.countDown();
        }
    }

    /** Called by the held log stores before every write: blocks the first commit file of an armed table. */
    public static void pass(Path path) throws IOException {
        Path parent = path.getParent();
        if (!COMMIT_FILE.matcher(path.getName()).matches() || parent == null
                || !"_delta_log".equals(parent.getName()) || parent.getParent() == null) {
            return;
        }
        CommitHold hold = ARMED.get(key(parent.getParent().toString()));
        if (hold == null || hold.atData) {
            return;
        }
        holdAt(hold, path);
    }

    /** Called by {@link HeldLocalFileSystem} before it opens or creates a file: blocks the first data file of a table armed at its data. */
    public static void passData(Path path) throws IOException {
        if (ARMED.isEmpty()) {
            return;
        }
        for (Path folder = path.getParent(); folder != null; folder = folder.getParent()) {
            if ("_delta_log".equals(folder.getName())) {
                return;
            }
            CommitHold hold = ARMED.get(key(folder.toString()));
            if (hold != null) {
                if (hold.atData) {
                    holdAt(hold, path);
                }
                return;
            }
        }
    }

    private static void holdAt(CommitHold hold, Path path) throws IOException {
        synchronized (hold) {
            if (hold.spent) {
                return;  // one-shot: A's commit, and B's retry at the next version, pass
            }
            hold.spent = true;
            hold.heldFile = path.getName();
        }
        hold.held.countDown();
        try {
            if (!hold.released.await(MAX_HOLD_MS, TimeUnit.MILLISECONDS)) {
                throw new IOException("the conflict matrix held " + path + " and never released it");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while held at " + path);
        }
    }
}
