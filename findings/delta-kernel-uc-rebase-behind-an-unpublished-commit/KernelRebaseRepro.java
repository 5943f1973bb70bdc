import io.delta.kernel.Operation;
import io.delta.kernel.Snapshot;
import io.delta.kernel.Transaction;
import io.delta.kernel.TransactionCommitResult;
import io.delta.kernel.defaults.engine.DefaultEngine;
import io.delta.kernel.engine.Engine;
import io.delta.kernel.exceptions.ConcurrentWriteException;
import io.delta.kernel.unitycatalog.UCCatalogManagedClient;
import io.delta.kernel.unitycatalog.UCTableIdentifier;
import io.delta.kernel.utils.CloseableIterable;
import io.delta.storage.commit.uccommitcoordinator.UCDeltaTokenBasedRestClient;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;

/**
 * Delta Kernel 4.4.0's Unity Catalog committer, behind two commits of another writer that the catalog
 * ratified after Kernel read the table: the first published to {@code _delta_log/}, the second not
 * yet. Kernel's first attempt (version 1) is refused (409); its conflict check lists published
 * commits from the version it read, finds version 1, and rebases to 2. The second attempt is refused
 * too; the conflict check lists from the version it read again, finds version 1 again, and Kernel
 * stops on its own precondition: "New commit version 2 should be greater than the previous commit
 * attempt version 2."
 *
 * <p>Usage: {@code java -cp <jars> KernelRebaseRepro.java <uc-server binary>}. Starts the server on
 * 127.0.0.1 (a free port), its catalog in memory and tables in a temporary folder. Exit 1: the bug is
 * present; 0: Kernel committed or asked its caller to read the table again (ConcurrentWriteException);
 * 2: the program could not run.
 */
public final class KernelRebaseRepro {

    static final String API = "/api/2.1/unity-catalog";
    static final String DELTA = API + "/delta/v1";
    static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    static String call(String base, String method, String path, String json) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json")
                .method(method, json == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(json));
        HttpResponse<String> answer = HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
        if (answer.statusCode() / 100 != 2) {
            throw new IOException(method + " " + path + ": HTTP " + answer.statusCode() + ": " + answer.body());
        }
        return answer.body();
    }

    static String field(String json, String name) {
        Matcher m = Pattern.compile("\"" + Pattern.quote(name) + "\"\\s*:\\s*\"([^\"]*)\"").matcher(json);
        if (!m.find()) {
            throw new IllegalStateException("no " + name + " in " + json);
        }
        return m.group(1);
    }

    static final String SCHEMA_STRING =
            "{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}";

    /** A catalog-managed table: staged, version 0 written, registered. Returns {table id, location}. */
    static String[] createTable(String base, String name) throws Exception {
        try {
            call(base, "POST", API + "/catalogs", "{\"name\":\"main\"}");
            call(base, "POST", API + "/schemas", "{\"name\":\"default\",\"catalog_name\":\"main\"}");
        } catch (IOException alreadyThere) {
            // made by an earlier table
        }
        String staged = call(base, "POST", DELTA + "/catalogs/main/schemas/default/staging-tables", "{\"name\":\"" + name + "\"}");
        String tableId = field(staged, "table-id");
        String location = field(staged, "location");
        long now = System.currentTimeMillis();
        String configuration = "{\"delta.checkpoint.writeStatsAsJson\":\"true\",\"delta.checkpoint.writeStatsAsStruct\":\"true\","
                + "\"delta.checkpointPolicy\":\"v2\",\"delta.enableInCommitTimestamps\":\"true\","
                + "\"io.unitycatalog.tableId\":\"" + tableId + "\"}";
        String readerFeatures = "[\"catalogManaged\",\"v2Checkpoint\",\"vacuumProtocolCheck\"]";
        String writerFeatures = "[\"catalogManaged\",\"v2Checkpoint\",\"vacuumProtocolCheck\",\"inCommitTimestamp\"]";
        String versionZero = String.join("\n",
                "{\"commitInfo\":{\"inCommitTimestamp\":" + now + ",\"timestamp\":" + now + ",\"operation\":\"CREATE TABLE\",\"operationParameters\":{},\"isBlindAppend\":true}}",
                "{\"protocol\":{\"minReaderVersion\":3,\"minWriterVersion\":7,\"readerFeatures\":" + readerFeatures + ",\"writerFeatures\":" + writerFeatures + "}}",
                "{\"metaData\":{\"id\":\"" + tableId + "\",\"format\":{\"provider\":\"parquet\",\"options\":{}},\"schemaString\":" + quote(SCHEMA_STRING)
                        + ",\"partitionColumns\":[],\"configuration\":" + configuration + ",\"createdTime\":" + now + "}}") + "\n";
        Path log = Path.of(URI.create(location)).resolve("_delta_log");
        Files.createDirectories(log.resolve("_staged_commits"));  // as Delta makes it with version 0
        Files.writeString(log.resolve(String.format("%020d.json", 0)), versionZero);
        String register = "{\"name\":\"" + name + "\",\"location\":\"" + location + "\",\"table-type\":\"MANAGED\",\"columns\":" + SCHEMA_STRING
                + ",\"partition-columns\":[],\"protocol\":{\"min-reader-version\":3,\"min-writer-version\":7,\"reader-features\":" + readerFeatures
                + ",\"writer-features\":" + writerFeatures + "},\"properties\":" + configuration + ",\"last-commit-timestamp-ms\":" + now + "}";
        call(base, "POST", DELTA + "/catalogs/main/schemas/default/tables", register);
        return new String[] {tableId, location};
    }

    static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }


    /** Another writer's commit of no rows: staged, ratified by the catalog, published or not. */
    static void rival(String base, String name, String tableId, String location, long version, long timestamp,
            boolean publish) throws Exception {
        Path log = Path.of(URI.create(location)).resolve("_delta_log");
        String file = String.format("%020d.%s.json", version, UUID.randomUUID());
        String body = "{\"commitInfo\":{\"inCommitTimestamp\":" + timestamp + ",\"timestamp\":" + timestamp
                + ",\"operation\":\"WRITE\",\"operationParameters\":{},\"isBlindAppend\":true,\"txnId\":\""
                + UUID.randomUUID() + "\"}}\n";
        Files.writeString(log.resolve("_staged_commits").resolve(file), body);
        call(base, "POST", DELTA + "/catalogs/main/schemas/default/tables/" + name,
                "{\"requirements\":[{\"type\":\"assert-table-uuid\",\"uuid\":\"" + tableId + "\"}],\"updates\":[{\"action\":\"add-commit\","
                        + "\"commit\":{\"version\":" + version + ",\"timestamp\":" + timestamp + ",\"file-name\":\"" + file + "\",\"file-size\":"
                        + body.getBytes(StandardCharsets.UTF_8).length + ",\"file-modification-timestamp\":" + timestamp + "}}]}");
        if (publish) {
            Files.copy(log.resolve("_staged_commits").resolve(file), log.resolve(String.format("%020d.json", version)),
                    StandardCopyOption.REPLACE_EXISTING);
        }
        System.out.println("another writer's version " + version + ": ratified, " + (publish ? "published" : "not published"));
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: java -cp <jars> KernelRebaseRepro.java <uc-server binary>");
            System.exit(2);
        }
        Path root = Files.createTempDirectory("kernel-rebase-repro");
        Path tables = Files.createDirectories(root.resolve("tables"));
        int port;
        try (ServerSocket socket = new ServerSocket(0, 0, java.net.InetAddress.getByName("127.0.0.1"))) {
            port = socket.getLocalPort();
        }
        Files.writeString(root.resolve("uc.yaml"), "{\"host\": \"127.0.0.1\", \"backend\": {\"engine\": \"sqlite\", \"path\": \":memory:\"},"
                + " \"local_storage\": {\"allowed-roots\": [\"" + tables + "\"]}, \"managed_storage_root\": \"" + tables.toUri() + "\","
                + " \"ui\": {\"serve\": false}}\n");
        Process server = new ProcessBuilder(args[0], "serve", "-c", root.resolve("uc.yaml").toString(), "--host", "127.0.0.1",
                "--port", String.valueOf(port), "--no-ui")
                .redirectErrorStream(true).redirectOutput(root.resolve("uc-server.log").toFile()).start();
        String base = "http://127.0.0.1:" + port;
        int exit = 2;
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (true) {
                try {
                    call(base, "GET", "/health", null);
                    break;
                } catch (IOException notYet) {
                    if (!server.isAlive() || System.nanoTime() > deadline) {
                        System.out.println("the server did not start: " + Files.readString(root.resolve("uc-server.log")));
                        System.exit(2);
                    }
                    Thread.sleep(200);
                }
            }
            String version = new String(new ProcessBuilder(args[0], "--version").start().getInputStream().readAllBytes()).trim();
            System.out.println("Delta Kernel " + Snapshot.class.getProtectionDomain().getCodeSource().getLocation().getPath()
                    .replaceAll(".*/", "") + ", server: " + version + ", Java " + System.getProperty("java.version"));
            exit = run(base);
        } finally {
            server.destroy();
            server.waitFor(10, TimeUnit.SECONDS);
        }
        System.exit(exit);
    }

    static int run(String base) throws Exception {
        String name = "rivals";
        String[] table = createTable(base, name);
        Engine engine = DefaultEngine.create(new Configuration());
        Map<String, String> settings = new HashMap<>();
        settings.put("uri", base);
        settings.put("token", "anonymous");
        UCCatalogManagedClient catalog = new UCCatalogManagedClient(new UCDeltaTokenBasedRestClient(settings, Configuration::new));
        UCTableIdentifier id = new UCTableIdentifier("main", "default", name);
        Snapshot snapshot = catalog.loadSnapshot(engine, table[0], table[1], id, Optional.empty(), Optional.empty());
        System.out.println("Kernel read version " + snapshot.getVersion());
        Transaction txn = snapshot.buildUpdateTableTransaction("kernel-rebase-repro", Operation.WRITE).build(engine);
        long now = System.currentTimeMillis() + 1000;
        rival(base, name, table[0], table[1], 1, now, true);
        rival(base, name, table[0], table[1], 2, now + 1, false);
        String outcome;
        int exit;
        try {
            TransactionCommitResult result = txn.commit(engine, CloseableIterable.emptyIterable());
            outcome = "committed version " + result.getVersion();
            exit = 0;
        } catch (ConcurrentWriteException e) {
            outcome = "ConcurrentWriteException (the caller reads the table again): " + e.getMessage();
            exit = 0;
        } catch (IllegalArgumentException e) {
            outcome = e.getClass().getName() + ": " + e.getMessage();
            exit = e.getMessage() != null && e.getMessage().contains("should be greater than the previous commit attempt version") ? 1 : 2;
        }
        System.out.println("Kernel's commit: " + outcome);
        Path log = Path.of(URI.create(table[1])).resolve("_delta_log");
        try (Stream<Path> files = Files.list(log)) {
            System.out.println("published: " + files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".json"))
                    .collect(Collectors.toCollection(TreeSet::new)));
        }
        Matcher latest = Pattern.compile("\"latest-table-version\"\\s*:\\s*(\\d+)")
                .matcher(call(base, "GET", DELTA + "/catalogs/main/schemas/default/tables/" + name, null));
        System.out.println("the catalog's latest-table-version: " + (latest.find() ? latest.group(1) : "?"));
        if (exit == 1) {
            System.out.println("BUG PRESENT: behind a published and an unpublished commit of another writer, Kernel's second "
                    + "conflict check lists from the version it read, finds the same winner, and stops on its own precondition");
        }
        return exit;
    }
}
