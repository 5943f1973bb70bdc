package workbook.kernel;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.delta.kernel.Operation;
import io.delta.kernel.Snapshot;
import io.delta.kernel.Transaction;
import io.delta.kernel.TransactionCommitResult;
import io.delta.kernel.data.ColumnVector;
import io.delta.kernel.data.FilteredColumnarBatch;
import io.delta.kernel.data.Row;
import io.delta.kernel.defaults.engine.DefaultEngine;
import io.delta.kernel.defaults.engine.hadoopio.HadoopFileIO;
import io.delta.kernel.defaults.internal.data.DefaultColumnarBatch;
import io.delta.kernel.engine.Engine;
import io.delta.kernel.engine.MetricsReporter;
import io.delta.kernel.exceptions.ConcurrentWriteException;
import io.delta.kernel.expressions.Literal;
import io.delta.kernel.metrics.MetricsReport;
import io.delta.kernel.types.DataType;
import io.delta.kernel.types.StructField;
import io.delta.kernel.types.StructType;
import io.delta.kernel.unitycatalog.UCCatalogManagedClient;
import io.delta.kernel.unitycatalog.UCTableIdentifier;
import io.delta.kernel.unitycatalog.metrics.UcCommitTelemetry;
import io.delta.kernel.utils.CloseableIterable;
import io.delta.kernel.utils.CloseableIterator;
import io.delta.kernel.utils.DataFileStatus;
import io.delta.storage.commit.uccommitcoordinator.UCDeltaTokenBasedRestClient;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.hadoop.conf.Configuration;

/**
 * One Java Delta Kernel 4.4.0 writer appending batches to a catalog-managed table through a Unity
 * Catalog server, with Kernel's own Unity Catalog committer ({@code delta-kernel-unitycatalog}).
 *
 * <pre>
 * java -cp JARS workbook.kernel.KernelAppender URI TABLE_ID CATALOG SCHEMA TABLE LOCATION WRITER BATCH[,BATCH...] [wait-for-a-rival]
 * </pre>
 *
 * <p>It loads the table's snapshot from the catalog ({@code UCCatalogManagedClient.loadSnapshot}:
 * the catalog's ratified commits, published or not), prints {@code {"event": "ready", ...}} and
 * waits for a line on its standard input (the race's barrier). Then, for each batch, it writes one
 * Parquet file of rows {@code (id, writer, batch)} and commits it in a Kernel transaction whose
 * committer is Kernel's {@code UCCatalogManagedCommitter}: the commit is staged under
 * {@code _delta_log/_staged_commits/}, and the catalog is asked to ratify it ({@code add-commit},
 * through Delta's own {@code UCDeltaTokenBasedRestClient}, the client Delta Spark uses). After
 * each commit it publishes ({@code Snapshot.publish}: Kernel does not publish by itself). One JSON
 * line per append on standard output; {@code {"event": "error", ...}} and exit code 1 on failure.
 *
 * <p>Nothing in a commit's path is the workbook's: staging, the catalog's ratification, conflict
 * checks and publishing are Kernel's code. The loop here is what Kernel leaves to its caller: when
 * the catalog gave the version to another writer whose commit is not yet published, Kernel's
 * conflict check cannot read it and throws {@code ConcurrentWriteException}; the caller loads the
 * snapshot from the catalog again and commits again (the Parquet file is written once). It does
 * the same when Kernel 4.4.0 stops with {@code IllegalArgumentException: New commit version N should
 * be greater than the previous commit attempt version N} (refused twice, the second winner not yet
 * published: see the catch below).
 *
 * <p>Every retry is counted and reported, with who made it. Kernel 4.4.0 retries by itself inside
 * {@code Transaction.commit} ({@code TransactionImpl.commitWithRetry}, up to 200 retries): when the
 * committer's {@code CommitFailedException} is retryable and a conflict (the catalog's 409), it runs
 * its conflict check against the published winners and asks for the version after the last one
 * (case 5 of its loop); when the check finds no published winner it throws
 * {@code ConcurrentWriteException} instead ({@code ConflictChecker.resolveConflicts}, delta#7402),
 * and the retry is this appender's. Kernel's Unity Catalog committer reports each attempt to the
 * engine's metrics reporters ({@code UcCommitTelemetry.Report}: the version asked for, and the
 * exception when it failed); {@link Attempts} collects them. A failed attempt followed by another in
 * the same transaction is Kernel's retry; one after which the transaction threw is the appender's.
 * Each append's line lists its retries: {@code by} ({@code kernel} or {@code appender}), the version
 * {@code tried}, the committer's {@code refusal}, what the transaction {@code raised} to the
 * appender (null for Kernel's own), and the version the next attempt asked for ({@code next}).
 *
 * <p>With {@code wait-for-a-rival}, the first commit waits, with its snapshot read before the
 * barrier and its Parquet file written, until the catalog has ratified another writer's commit:
 * it then asks for a version already given, on every run (a change of timing only, as a slow
 * writer's; what the catalog and Kernel do with it is theirs).
 */
public final class KernelAppender {

    static final int ROWS_PER_BATCH = 10;
    static final int MAX_REBUILDS = 100;
    static final String ENGINE_INFO = "workbook-kernel-appender";
    static final String STUCK_REBASE = "should be greater than the previous commit attempt version";
    static final long RIVAL_WAIT_MS = 600_000;  // a bound against a hang: then it commits anyway

    private static final ObjectMapper JSON = new ObjectMapper();

    private KernelAppender() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 8 && !(args.length == 9 && args[8].equals("wait-for-a-rival"))) {
            System.err.println("usage: KernelAppender URI TABLE_ID CATALOG SCHEMA TABLE LOCATION WRITER BATCH[,BATCH...] [wait-for-a-rival]");
            System.exit(2);
        }
        String uri = args[0];
        String tableId = args[1];
        UCTableIdentifier name = new UCTableIdentifier(args[2], args[3], args[4]);
        String location = args[5];
        String writer = args[6];
        List<Integer> batches = new ArrayList<>();
        for (String batch : args[7].split(",")) {
            batches.add(Integer.parseInt(batch.trim()));
        }
        boolean waitForRival = args.length == 9;
        try {
            run(uri, tableId, name, location, writer, batches, waitForRival);
        } catch (Throwable error) {
            Map<String, Object> event = new LinkedHashMap<>();
            event.put("event", "error");
            event.put("class", error.getClass().getName());
            event.put("message", String.valueOf(error.getMessage()));
            Throwable cause = error.getCause();
            event.put("cause", cause == null ? null : cause.getClass().getName() + ": " + cause.getMessage());
            emit(event);
            error.printStackTrace();
            System.exit(1);
        }
        System.exit(0);
    }

    /**
     * The engine's metrics reporter that keeps Kernel's report of each commit attempt: its Unity
     * Catalog committer reports one {@code UcCommitTelemetry.Report} per {@code commit} call, the
     * version it asked for and the exception when the attempt failed.
     */
    static final class Attempts implements MetricsReporter {
        private final List<UcCommitTelemetry.Report> reports = new ArrayList<>();

        @Override
        public synchronized void report(MetricsReport report) {
            if (report instanceof UcCommitTelemetry.Report) {
                reports.add((UcCommitTelemetry.Report) report);
            }
        }

        /** The attempts reported since the last call, in order. */
        synchronized List<UcCommitTelemetry.Report> drain() {
            List<UcCommitTelemetry.Report> drained = new ArrayList<>(reports);
            reports.clear();
            return drained;
        }
    }

    /** Kernel's default engine, with {@code attempts} among its metrics reporters. */
    static Engine engine(Attempts attempts) {
        return new DefaultEngine(new HadoopFileIO(new Configuration())) {
            @Override
            public List<MetricsReporter> getMetricsReporters() {
                List<MetricsReporter> reporters = new ArrayList<>(super.getMetricsReporters());
                reporters.add(attempts);
                return reporters;
            }
        };
    }

    /** An exception as one line: its class and message. */
    static String named(Throwable error) {
        return error.getClass().getName() + ": " + error.getMessage();
    }

    /**
     * The retries of one batch, from its transactions' attempts in order (each transaction's list
     * of reports, and what it raised to the appender: null for the one that committed).
     */
    static List<Map<String, Object>> retries(List<List<UcCommitTelemetry.Report>> transactions,
            List<Throwable> raised) {
        List<Map<String, Object>> found = new ArrayList<>();
        for (int t = 0; t < transactions.size(); t++) {
            List<UcCommitTelemetry.Report> attempts = transactions.get(t);
            for (int a = 0; a < attempts.size(); a++) {
                UcCommitTelemetry.Report attempt = attempts.get(a);
                if (!attempt.exception.isPresent()) {
                    continue;
                }
                boolean kernels = a + 1 < attempts.size();
                UcCommitTelemetry.Report next = kernels ? attempts.get(a + 1)
                        : t + 1 < transactions.size() && !transactions.get(t + 1).isEmpty()
                                ? transactions.get(t + 1).get(0) : null;
                Map<String, Object> retry = new LinkedHashMap<>();
                retry.put("by", kernels ? "kernel" : "appender");
                retry.put("tried", attempt.commitVersion);
                retry.put("refusal", named(attempt.exception.get()));
                retry.put("raised", kernels || raised.get(t) == null ? null : named(raised.get(t)));
                retry.put("next", next == null ? null : next.commitVersion);
                found.add(retry);
            }
        }
        return found;
    }

    static void run(String uri, String tableId, UCTableIdentifier name, String location, String writer,
            List<Integer> batches, boolean waitForRival) throws Exception {
        Attempts attempts = new Attempts();
        Engine engine = engine(attempts);
        Map<String, String> settings = new HashMap<>();
        settings.put("uri", uri);
        settings.put("token", "anonymous");  // a server in anonymous mode ignores it; the client requires one
        UCDeltaTokenBasedRestClient rest = new UCDeltaTokenBasedRestClient(settings, Configuration::new);
        UCCatalogManagedClient catalog = new UCCatalogManagedClient(rest);

        Snapshot snapshot = load(engine, catalog, tableId, location, name);
        Map<String, Object> ready = new LinkedHashMap<>();
        ready.put("event", "ready");
        ready.put("version", snapshot.getVersion());
        emit(ready);
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        if (stdin.readLine() == null) {
            throw new IllegalStateException("standard input closed before the barrier opened");
        }

        for (int batch : batches) {
            long started = System.currentTimeMillis();
            List<DataFileStatus> files = null;
            int rebuilds = 0;
            Long waitedForRival = null;
            List<List<UcCommitTelemetry.Report>> transactions = new ArrayList<>();
            List<Throwable> raised = new ArrayList<>();
            long firstReadVersion = snapshot.getVersion();
            TransactionCommitResult committed;
            long readVersion;
            while (true) {
                Transaction txn = snapshot.buildUpdateTableTransaction(ENGINE_INFO, Operation.WRITE).build(engine);
                Row state = txn.getTransactionState(engine);
                Map<String, Literal> partition = Collections.emptyMap();
                io.delta.kernel.DataWriteContext context = Transaction.getWriteContext(engine, state, partition);
                if (files == null) {  // the batch's Parquet file, written once
                    files = write(engine, state, context, snapshot.getSchema(), writer, batch);
                }
                CloseableIterator<Row> actions =
                        Transaction.generateAppendActions(engine, state, iterator(files), context);
                readVersion = snapshot.getVersion();
                if (waitForRival) {
                    waitedForRival = waitForRival(rest, tableId, location, name, readVersion);
                    waitForRival = false;
                }
                attempts.drain();
                try {
                    committed = txn.commit(engine, CloseableIterable.inMemoryIterable(actions));
                    transactions.add(attempts.drain());
                    raised.add(null);
                    break;
                } catch (ConcurrentWriteException lost) {
                    // the version went to a commit the catalog ratified and nobody has published yet:
                    // read the table from the catalog again, commit again
                    transactions.add(attempts.drain());
                    raised.add(lost);
                    if (++rebuilds > MAX_REBUILDS) {
                        throw lost;
                    }
                    snapshot = load(engine, catalog, tableId, location, name);
                } catch (IllegalArgumentException lost) {
                    transactions.add(attempts.drain());
                    raised.add(lost);
                    // Kernel 4.4.0, refused twice: the first winner published, the second not yet.
                    // Its conflict check lists published commits from the version it read, not from the
                    // one it last asked for, finds no newer winner and stops on its own precondition.
                    // Every attempt was refused by the catalog (409), so nothing of this one landed:
                    // recorded, then read again and committed again, as above.
                    if (!String.valueOf(lost.getMessage()).contains(STUCK_REBASE) || ++rebuilds > MAX_REBUILDS) {
                        throw lost;
                    }
                    snapshot = load(engine, catalog, tableId, location, name);
                }
            }
            long version = committed.getVersion();
            // Kernel does not publish by itself: copy every ratified commit up to ours to _delta_log/<v>.json
            Optional<Snapshot> after = committed.getPostCommitSnapshot();
            Snapshot published = after.isPresent()
                    ? after.get().publish(engine)
                    : load(engine, catalog, tableId, location, name).publish(engine);
            snapshot = published;
            Map<String, Object> event = new LinkedHashMap<>();
            event.put("event", "append");
            event.put("batch", batch);
            event.put("version", version);
            event.put("read_version", firstReadVersion);  // what its first attempt read
            event.put("last_read_version", readVersion);  // what the attempt that committed read
            event.put("rebuilds", rebuilds);
            event.put("attempts", committed.getTransactionReport().getTransactionMetrics().getNumCommitAttempts());
            event.put("rival_version", waitedForRival);
            event.put("retries", retries(transactions, raised));
            event.put("post_commit_snapshot", after.isPresent());
            event.put("t_start", started / 1000.0);
            event.put("t_end", System.currentTimeMillis() / 1000.0);
            emit(event);
        }
        Map<String, Object> done = new LinkedHashMap<>();
        done.put("event", "done");
        emit(done);
    }

    /** Wait until the catalog's latest version is past {@code readVersion}; return it. */
    static long waitForRival(UCDeltaTokenBasedRestClient rest, String tableId, String location,
            UCTableIdentifier name, long readVersion) throws Exception {
        io.delta.storage.commit.TableIdentifier id = new io.delta.storage.commit.TableIdentifier(
                new String[] {name.getCatalogName(), name.getSchemaName()}, name.getTableName());
        java.net.URI tableUri = new org.apache.hadoop.fs.Path(location).toUri();
        long deadline = System.currentTimeMillis() + RIVAL_WAIT_MS;
        while (true) {
            long latest = rest.getCommits(tableId, tableUri, id, Optional.empty(), Optional.empty())
                    .getLatestTableVersion();
            if (latest > readVersion || System.currentTimeMillis() > deadline) {
                return latest;
            }
            Thread.sleep(20);
        }
    }

    static Snapshot load(Engine engine, UCCatalogManagedClient catalog, String tableId, String location,
            UCTableIdentifier name) {
        return catalog.loadSnapshot(engine, tableId, location, name, Optional.empty(), Optional.empty());
    }

    /** One Parquet file of the batch's rows (ids batch*100+1 .. +10, the writer's name, the batch). */
    static List<DataFileStatus> write(Engine engine, Row state, io.delta.kernel.DataWriteContext context,
            StructType schema, String writer, int batch) throws Exception {
        ColumnVector[] vectors = new ColumnVector[schema.length()];
        for (int i = 0; i < schema.length(); i++) {
            StructField field = schema.at(i);
            vectors[i] = column(field.getName(), field.getDataType(), writer, batch);
        }
        FilteredColumnarBatch data =
                new FilteredColumnarBatch(new DefaultColumnarBatch(ROWS_PER_BATCH, schema, vectors), Optional.empty());
        CloseableIterator<FilteredColumnarBatch> physical = Transaction.transformLogicalData(
                engine, state, iterator(Collections.singletonList(data)), Collections.emptyMap());
        List<DataFileStatus> files = new ArrayList<>();
        try (CloseableIterator<DataFileStatus> written = engine.getParquetHandler()
                .writeParquetFiles(context.getTargetDirectory(), physical, context.getStatisticsColumns())) {
            while (written.hasNext()) {
                files.add(written.next());
            }
        }
        return files;
    }

    /** A column of the batch: {@code id BIGINT}, {@code writer STRING} or {@code batch INT}, no nulls. */
    static ColumnVector column(String column, DataType type, String writer, int batch) {
        return new ColumnVector() {
            @Override
            public DataType getDataType() {
                return type;
            }

            @Override
            public int getSize() {
                return ROWS_PER_BATCH;
            }

            @Override
            public void close() {}

            @Override
            public boolean isNullAt(int rowId) {
                return false;
            }

            @Override
            public long getLong(int rowId) {
                check("id");
                return batch * 100L + rowId + 1;
            }

            @Override
            public int getInt(int rowId) {
                check("batch");
                return batch;
            }

            @Override
            public String getString(int rowId) {
                check("writer");
                return writer;
            }

            private void check(String expected) {
                if (!column.equals(expected)) {
                    throw new IllegalStateException("column " + column + " of type " + type + " is not the "
                            + expected + " column of (id BIGINT, writer STRING, batch INT)");
                }
            }
        };
    }

    static <T> CloseableIterator<T> iterator(List<T> items) {
        java.util.Iterator<T> inner = items.iterator();
        return new CloseableIterator<T>() {
            @Override
            public boolean hasNext() {
                return inner.hasNext();
            }

            @Override
            public T next() {
                return inner.next();
            }

            @Override
            public void close() {}
        };
    }

    static synchronized void emit(Map<String, Object> event) throws Exception {
        System.out.println(JSON.writeValueAsString(event));
        System.out.flush();
    }
}
