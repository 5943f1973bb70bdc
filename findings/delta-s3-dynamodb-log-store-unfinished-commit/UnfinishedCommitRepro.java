package io.delta.storage;

import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * Delta Spark 4.4.0 committing through BaseExternalLogStore (MemoryLogStore, Delta's own test store,
 * in place of DynamoDB), local file system. Two states of an incomplete entry:
 *   state 1: the entry's staged file T(1) is gone and 1.json was never written;
 *   state 2: the writer's own claim of version 1 won and its copy T(1) -> 1.json threw once.
 * Exit 1 when either bug shows, 0 when neither does.
 */
public class UnfinishedCommitRepro {

    /** MemoryLogStore whose next copy of T(N) to N.json throws once, when armed (as FailingS3DynamoDBLogStore injects errors). */
    public static class FailOnceCopyMemoryLogStore extends MemoryLogStore {
        public static volatile boolean failNextCopy = false;

        public FailOnceCopyMemoryLogStore(Configuration hadoopConf) {
            super(hadoopConf);
        }

        @Override
        protected void writeCopyTempFile(FileSystem fs, Path src, Path dst) throws IOException {
            if (failNextCopy) {
                failNextCopy = false;
                throw new IOException("injected failure: write_copy_temp_file");
            }
            super.writeCopyTempFile(fs, src, dst);
        }
    }

    /** The scratch folder, shown as <tmp> in messages. */
    static String root;

    static final ExecutorService POOL = Executors.newCachedThreadPool(r -> {
        Thread thread = new Thread(r);
        thread.setDaemon(true);
        return thread;
    });

    /** "ok in S s: value" or "raised in S s: class: message", the call given up after 300 s. */
    static String outcome(Callable<Object> call) {
        long start = System.nanoTime();
        Future<Object> future = POOL.submit(call);
        try {
            Object value = future.get(300, TimeUnit.SECONDS);
            return String.format("ok in %.1f s: %s", (System.nanoTime() - start) / 1e9, value);
        } catch (TimeoutException e) {
            return "still running after 300 s";
        } catch (Exception e) {
            Throwable t = e.getCause() == null ? e : e.getCause();
            String message = String.valueOf(t.getMessage()).split("\n")[0].replace(root, "<tmp>");
            return String.format("raised in %.1f s: %s: %s", (System.nanoTime() - start) / 1e9, t.getClass().getName(),
                message.substring(0, Math.min(240, message.length())));
        }
    }

    static List<Long> versions(SparkSession spark, String path) {
        List<Long> out = new ArrayList<>();
        for (Row row : spark.sql("DESCRIBE HISTORY delta.`" + path + "`").select("version").collectAsList()) {
            out.add(row.getLong(0));
        }
        out.sort(null);
        return out;
    }

    public static void main(String[] args) throws Exception {
        SparkSession spark = SparkSession.builder().master("local[1]").appName("unfinished-commit")
            .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
            .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
            .config("spark.delta.logStore.class", FailOnceCopyMemoryLogStore.class.getName())
            .config("spark.databricks.delta.maxCommitAttempts", "50")  // the default, 10000000, makes state 1's append run for hours
            .config("spark.ui.enabled", "false")
            .getOrCreate();
        spark.sparkContext().setLogLevel("WARN");
        root = "file:" + Files.createTempDirectory("unfinished-commit");
        Configuration conf = spark.sessionState().newHadoopConf();
        System.out.println("Delta Spark " + io.delta.tables.DeltaTable.class.getPackage().getImplementationVersion()
            + ", Spark " + spark.version() + ", Java " + System.getProperty("java.version"));

        // State 1: an incomplete entry for version 1 whose staged file is gone, and no 1.json
        String one = root + "/state-1";
        spark.range(1).write().format("delta").save(one);  // version 0
        ExternalCommitEntry zero = MemoryLogStore.get(new Path(one + "/_delta_log/00000000000000000000.json"));
        ExternalCommitEntry gone = new ExternalCommitEntry(zero.tablePath, "00000000000000000001.json",
            ".tmp/00000000000000000001.json.deleted-staged-file", false, null);
        MemoryLogStore.hashMap.put(MemoryLogStore.createKey(zero.tablePath.toString(), gone.fileName), gone);
        System.out.println("state 1: entry 00000000000000000001.json incomplete, its staged file " + gone.tempPath + " absent, no 1.json");
        String listed = outcome(() -> {
            Iterator<FileStatus> files = new MemoryLogStore(conf).listFrom(new Path(one + "/_delta_log/00000000000000000000.json"), conf);
            int n = 0;
            for (; files.hasNext(); files.next()) n++;
            return n + " files";
        });
        String read = outcome(() -> spark.read().format("delta").load(one).count());
        String history = outcome(() -> versions(spark, one));
        String append = outcome(() -> {
            spark.range(1, 3).write().format("delta").mode("append").save(one);
            return "committed";
        });
        System.out.println("  logStore.listFrom(0.json): " + listed);
        System.out.println("  read count():              " + read);
        System.out.println("  DESCRIBE HISTORY:          " + history);
        System.out.println("  append (maxCommitAttempts=50): " + append);
        boolean stateOne = read.contains("DELTA_TABLE_NOT_FOUND") || append.contains("DELTA_MAX_COMMIT_RETRIES_EXCEEDED");

        // State 2: the writer's own claim of version 1 won, and its copy T(1) -> 1.json threw once
        String two = root + "/state-2";
        spark.range(1).write().format("delta").save(two);  // version 0: 1 row
        FailOnceCopyMemoryLogStore.failNextCopy = true;
        String appendTwo = outcome(() -> {
            spark.range(1, 3).write().format("delta").mode("append").save(two);  // 2 rows
            return "committed";
        });
        String countTwo = outcome(() -> spark.read().format("delta").load(two).count());
        String historyTwo = outcome(() -> versions(spark, two));
        System.out.println("state 2: the append's copy of its staged file to 1.json throws once");
        System.out.println("  append:                    " + appendTwo);
        System.out.println("  then read count():         " + countTwo);
        System.out.println("  then DESCRIBE HISTORY:     " + historyTwo);
        boolean stateTwo = appendTwo.startsWith("raised") && countTwo.endsWith(": 3");

        if (stateOne) {
            System.out.println("BUG PRESENT (state 1): a table whose latest entry cannot be finished is reported missing, and a writer retries its claim until maxCommitAttempts");
        }
        if (stateTwo) {
            System.out.println("BUG PRESENT (state 2): the append was reported failed, and it is in the table");
        }
        if (!stateOne && !stateTwo) {
            System.out.println("OK: neither state is mishandled");
        }
        spark.stop();
        System.exit(stateOne || stateTwo ? 1 : 0);
    }
}
