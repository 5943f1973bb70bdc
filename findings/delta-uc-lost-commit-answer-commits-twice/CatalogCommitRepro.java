import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.delta.storage.LocalLogStore;
import io.delta.storage.LogStore;
import io.delta.storage.commit.CommitFailedException;
import io.delta.storage.commit.TableDescriptor;
import io.delta.storage.commit.TableIdentifier;
import io.delta.storage.commit.UpdatedActions;
import io.delta.storage.commit.actions.AbstractCommitInfo;
import io.delta.storage.commit.actions.AbstractMetadata;
import io.delta.storage.commit.actions.AbstractProtocol;
import io.delta.storage.commit.uccommitcoordinator.UCCommitCoordinatorClient;
import io.delta.storage.commit.uccommitcoordinator.UCDeltaTokenBasedRestClient;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
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
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;

/**
 * Delta 4.4.0's UCCommitCoordinatorClient (with its Delta REST API client, UCDeltaTokenBasedRestClient)
 * committing to a catalog-managed table of a Unity Catalog server, through a proxy of this program
 * that acts on the catalog's add-commit requests only. Two scenarios:
 *
 * <ul>
 *   <li>{@code lost-answer}: the catalog ratifies version 1 and the proxy closes the client's
 *       connection without an answer. The client resends the same add-commit, the catalog answers
 *       409, and the client throws a retryable conflict for the commit the catalog holds with the
 *       client's own staged file. (Delta Spark then rebases and commits the same actions again as
 *       version 2.) {@code lost-answer-502}: the same, the proxy answering 502 instead.</li>
 *   <li>{@code commit-limit}: the catalog holds ten ratified, unpublished commits of a writer that
 *       stopped before publishing them (the catalog's limit). The client's commit of version 11 gets
 *       429; it never publishes the backlog (its full backfill is not reached), re-sends the same
 *       request, and still reports version 0 published after the backlog has been published by
 *       hand.</li>
 * </ul>
 *
 * <p>Usage: {@code java -cp <jars> CatalogCommitRepro.java <uc-server binary>
 * [lost-answer|lost-answer-502|commit-limit]}.
 * Starts the server and the proxy on 127.0.0.1 (free ports) with the catalog in memory and tables in a
 * temporary folder. Exit 1: the bug is present; 0: it is not; 2: the program could not run.
 */
public final class CatalogCommitRepro {

    static final String API = "/api/2.1/unity-catalog";
    static final String DELTA = API + "/delta/v1";
    static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    /** One add-commit request, as the proxy saw it. */
    static final class AddCommit {
        final int number;
        final long version;
        final long reportedPublished;
        final long sentAtMs;
        int serverStatus;
        int clientStatus;
        String answer = "";

        AddCommit(int number, long version, long reportedPublished, long sentAtMs) {
            this.number = number;
            this.version = version;
            this.reportedPublished = reportedPublished;
            this.sentAtMs = sentAtMs;
        }

        @Override
        public String toString() {
            String shown = answer.length() > 160 ? answer.substring(0, 160) + "..." : answer;
            String client = clientStatus == 0 ? "none (connection closed)" : String.valueOf(clientStatus);
            return String.format("  add-commit #%d: version %d, latest-published-version %d -> server %d, client %s%s",
                    number, version, reportedPublished, serverStatus, client, shown.isBlank() ? "" : " " + shown.trim());
        }
    }

    /** Forwards every request to the server; loses the answer of the n-th add-commit: closes the
     *  connection without an answer, or answers 502 ({@code loseWith502}). */
    static final class Proxy implements AutoCloseable {
        final HttpServer server;
        final String upstream;
        final long started = System.currentTimeMillis();
        final List<AddCommit> addCommits = Collections.synchronizedList(new ArrayList<>());
        volatile int loseAnswerOf = -1;
        volatile boolean loseWith502 = false;
        volatile CountDownLatch watched = new CountDownLatch(0);
        volatile int watchedStatus = -1;

        Proxy(String upstream) throws IOException {
            this.upstream = upstream;
            server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
            server.createContext("/", this::handle);
            server.setExecutor(Executors.newCachedThreadPool(r -> {
                Thread t = new Thread(r, "proxy");
                t.setDaemon(true);
                return t;
            }));
            server.start();
        }

        String uri() {
            return "http://127.0.0.1:" + server.getAddress().getPort();
        }

        void handle(HttpExchange exchange) throws IOException {
            byte[] body = exchange.getRequestBody().readAllBytes();
            String method = exchange.getRequestMethod();
            HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(upstream + exchange.getRequestURI()))
                    .timeout(Duration.ofSeconds(60))
                    .method(method, body.length == 0 ? HttpRequest.BodyPublishers.noBody()
                            : HttpRequest.BodyPublishers.ofByteArray(body));
            for (String header : new String[] {"Content-Type", "Accept", "Authorization"}) {
                String value = exchange.getRequestHeaders().getFirst(header);
                if (value != null) {
                    request.header(header, value);
                }
            }
            String text = new String(body, StandardCharsets.UTF_8);
            AddCommit record = null;
            if (method.equals("POST") && exchange.getRequestURI().getPath().startsWith(DELTA) && text.contains("\"add-commit\"")) {
                record = new AddCommit(addCommits.size() + 1, number(text, "\"version\"\\s*:\\s*(\\d+)"),
                        number(text, "\"latest-published-version\"\\s*:\\s*(\\d+)"), System.currentTimeMillis() - started);
                addCommits.add(record);
            }
            HttpResponse<byte[]> answer;
            try {
                answer = HTTP.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
            } catch (InterruptedException e) {
                throw new IOException(e);
            }
            byte[] out = answer.body();
            int status = answer.statusCode();
            if (record != null) {
                record.serverStatus = status;
                record.answer = status == 200 ? "" : new String(out, StandardCharsets.UTF_8);
                if (record.number == loseAnswerOf && !loseWith502) {  // the catalog decided; no answer
                    record.clientStatus = 0;
                    throw new IOException("the answer is dropped: the server closes the connection");
                }
                if (record.number == loseAnswerOf) {  // the catalog decided; its answer is lost
                    status = 502;
                    out = "{\"error\":\"bad gateway: the answer was lost\"}".getBytes(StandardCharsets.UTF_8);
                }
                record.clientStatus = status;
                if (record.serverStatus == watchedStatus) {
                    watched.countDown();
                }
            }
            answer.headers().firstValue("Content-Type").ifPresent(v -> exchange.getResponseHeaders().set("Content-Type", v));
            exchange.sendResponseHeaders(status, out.length == 0 ? -1 : out.length);
            try (OutputStream stream = exchange.getResponseBody()) {
                stream.write(out);
            }
        }

        static long number(String text, String regex) {
            Matcher m = Pattern.compile(regex).matcher(text);
            return m.find() ? Long.parseLong(m.group(1)) : -1;
        }

        @Override
        public void close() {
            server.stop(0);
        }
    }

    // ------------------------------------------------------------------------------------------
    // The catalog's REST API, called directly (table set-up and inspection only)
    // ------------------------------------------------------------------------------------------

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

    /** The catalog's view: latest version and the ratified commits it lists (version:file-name). */
    static String catalogView(String base, String name) throws Exception {
        String table = call(base, "GET", DELTA + "/catalogs/main/schemas/default/tables/" + name, null);
        Matcher latest = Pattern.compile("\"latest-table-version\"\\s*:\\s*(\\d+)").matcher(table);
        List<String> commits = new ArrayList<>();
        Matcher commit = Pattern.compile("\\{[^{}]*\"file-name\"\\s*:\\s*\"([^\"]+)\"[^{}]*\\}").matcher(table);
        while (commit.find()) {
            commits.add(commit.group(1));
        }
        Collections.sort(commits);
        return "latest-table-version " + (latest.find() ? latest.group(1) : "?") + ", ratified and not yet published: " + commits;
    }

    static Set<String> listing(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return Collections.emptySet();
        }
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".json"))
                    .collect(Collectors.toCollection(TreeSet::new));
        }
    }

    // ------------------------------------------------------------------------------------------
    // What Delta passes to the coordinator for an append (no metadata or protocol change)
    // ------------------------------------------------------------------------------------------

    static UpdatedActions appendActions(long timestamp) {
        AbstractCommitInfo commitInfo = () -> timestamp;
        AbstractMetadata metadata = new AbstractMetadata() {
            public String getId() { return "unused"; }
            public String getName() { return null; }
            public String getDescription() { return null; }
            public String getProvider() { return "parquet"; }
            public Map<String, String> getFormatOptions() { return Collections.emptyMap(); }
            public String getSchemaString() { return SCHEMA_STRING; }
            public List<String> getPartitionColumns() { return Collections.emptyList(); }
            public Map<String, String> getConfiguration() { return Collections.emptyMap(); }
            public Long getCreatedTime() { return timestamp; }
        };
        AbstractProtocol protocol = new AbstractProtocol() {
            public int getMinReaderVersion() { return 3; }
            public int getMinWriterVersion() { return 7; }
            public Set<String> getReaderFeatures() { return Set.of("catalogManaged", "v2Checkpoint", "vacuumProtocolCheck"); }
            public Set<String> getWriterFeatures() { return Set.of("catalogManaged", "v2Checkpoint", "vacuumProtocolCheck", "inCommitTimestamp"); }
        };
        return new UpdatedActions(commitInfo, metadata, protocol, metadata, protocol);  // same objects: unchanged
    }

    static List<String> appendLines(long version, long timestamp, String txnId) {
        return Arrays.asList(
                "{\"commitInfo\":{\"inCommitTimestamp\":" + timestamp + ",\"timestamp\":" + timestamp
                        + ",\"operation\":\"WRITE\",\"operationParameters\":{\"mode\":\"Append\"},\"isBlindAppend\":true,\"txnId\":\"" + txnId + "\"}}",
                "{\"add\":{\"path\":\"part-" + version + "-" + txnId + ".parquet\",\"partitionValues\":{},\"size\":100,\"modificationTime\":"
                        + timestamp + ",\"dataChange\":true}}");
    }

    // ------------------------------------------------------------------------------------------

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: java -cp <jars> CatalogCommitRepro.java <uc-server binary> "
                    + "[lost-answer|lost-answer-502|commit-limit]");
            System.exit(2);
        }
        String scenario = args.length > 1 ? args[1] : "lost-answer";
        if (!Set.of("lost-answer", "lost-answer-502", "commit-limit").contains(scenario)) {
            System.err.println("unknown scenario " + scenario + ": lost-answer, lost-answer-502 or commit-limit");
            System.exit(2);
        }
        Path root = Files.createTempDirectory("catalog-commit-repro");
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
            System.out.println("Delta storage " + io.delta.storage.commit.uccommitcoordinator.UCCommitCoordinatorClient.class
                    .getProtectionDomain().getCodeSource().getLocation().getPath().replaceAll(".*/", "")
                    + ", server: " + version + ", Java " + System.getProperty("java.version"));
            try (Proxy proxy = new Proxy(base)) {
                Map<String, String> settings = new HashMap<>();
                settings.put("uri", proxy.uri());
                settings.put("token", "anonymous");
                UCDeltaTokenBasedRestClient rest = new UCDeltaTokenBasedRestClient(settings, Configuration::new);
                UCCommitCoordinatorClient coordinator = new UCCommitCoordinatorClient(new HashMap<>(), rest);
                exit = scenario.equals("commit-limit") ? commitLimit(base, proxy, coordinator)
                        : lostAnswer(base, proxy, coordinator, scenario.equals("lost-answer-502"));
            }
        } finally {
            server.destroy();
            server.waitFor(10, TimeUnit.SECONDS);
        }
        System.exit(exit);
    }

    static TableDescriptor descriptor(String name, String tableId, String location) {
        Map<String, String> tableConf = new HashMap<>();
        tableConf.put("io.unitycatalog.tableId", tableId);
        return new TableDescriptor(new org.apache.hadoop.fs.Path(location + "/_delta_log"),
                Optional.of(new TableIdentifier("main", "default", name)), tableConf);
    }

    static int lostAnswer(String base, Proxy proxy, UCCommitCoordinatorClient coordinator, boolean with502)
            throws Exception {
        String[] table = createTable(base, "lost_answer");
        Path log = Path.of(URI.create(table[1])).resolve("_delta_log");
        Configuration hadoop = new Configuration();
        LogStore store = new LocalLogStore(hadoop);
        long now = System.currentTimeMillis();
        proxy.loseAnswerOf = 1;
        proxy.loseWith502 = with502;
        System.out.println("commit version 1 (an append); the answer to the first add-commit is lost ("
                + (with502 ? "502" : "connection closed") + ")");
        String outcome;
        boolean conflict = false;
        try {
            coordinator.commit(store, hadoop, descriptor("lost_answer", table[0], table[1]), 1,
                    appendLines(1, now, UUID.randomUUID().toString()).iterator(), appendActions(now));
            outcome = "success";
        } catch (CommitFailedException e) {
            conflict = e.getConflict();
            outcome = "CommitFailedException(retryable=" + e.getRetryable() + ", conflict=" + e.getConflict() + "): "
                    + e.getMessage().replaceAll("\\s+", " ");
        }
        System.out.println("the coordinator client says: " + outcome);
        proxy.addCommits.forEach(System.out::println);
        Set<String> staged = listing(log.resolve("_staged_commits"));
        System.out.println("staged by the client: " + staged);
        System.out.println("published: " + listing(log));
        String view = catalogView(base, "lost_answer");
        System.out.println("the catalog: " + view);
        boolean own = staged.size() == 1 && view.contains(staged.iterator().next()) && view.contains("latest-table-version 1");
        if (conflict && own) {
            System.out.println("BUG PRESENT: the catalog ratified version 1 with the client's own staged commit, and the client "
                    + "reports a retryable conflict for it (its caller rebases and commits the same actions again)");
            return 1;
        }
        if (outcome.equals("success") && own) {
            System.out.println("not present: the client recognised its own commit after the lost answer");
            return 0;
        }
        System.out.println("unexpected outcome");
        return 2;
    }

    static final int BACKLOG = 10;

    static int commitLimit(String base, Proxy proxy, UCCommitCoordinatorClient coordinator) throws Exception {
        String[] table = createTable(base, "commit_limit");
        Path log = Path.of(URI.create(table[1])).resolve("_delta_log");
        Path stagedDir = Files.createDirectories(log.resolve("_staged_commits"));
        // A writer that stopped before publishing: versions 1..10 staged and ratified, none published
        for (long v = 1; v <= BACKLOG; v++) {
            long ts = System.currentTimeMillis() + v;
            String name = String.format("%020d.%s.json", v, UUID.randomUUID());
            String body = String.join("\n", appendLines(v, ts, UUID.randomUUID().toString())) + "\n";
            Files.writeString(stagedDir.resolve(name), body);
            call(base, "POST", DELTA + "/catalogs/main/schemas/default/tables/commit_limit",
                    "{\"requirements\":[{\"type\":\"assert-table-uuid\",\"uuid\":\"" + table[0] + "\"}],\"updates\":[{\"action\":\"add-commit\","
                            + "\"commit\":{\"version\":" + v + ",\"timestamp\":" + ts + ",\"file-name\":\"" + name + "\",\"file-size\":"
                            + body.getBytes(StandardCharsets.UTF_8).length + ",\"file-modification-timestamp\":" + ts + "}}]}");
        }
        System.out.println("another writer left versions 1.." + BACKLOG + " ratified and not published: " + catalogView(base, "commit_limit"));
        System.out.println("published: " + listing(log));
        Configuration hadoop = new Configuration();
        LogStore store = new LocalLogStore(hadoop);
        long now = System.currentTimeMillis() + 100;
        proxy.watchedStatus = 429;
        proxy.watched = new CountDownLatch(3);
        String[] outcome = {"still running"};
        Thread committer = new Thread(() -> {
            try {
                coordinator.commit(store, hadoop, descriptor("commit_limit", table[0], table[1]), BACKLOG + 1,
                        appendLines(BACKLOG + 1, now, UUID.randomUUID().toString()).iterator(), appendActions(now));
                outcome[0] = "success";
            } catch (Exception e) {
                outcome[0] = e.toString();
            }
        }, "committer");
        committer.setDaemon(true);
        System.out.println("commit version " + (BACKLOG + 1) + " (an append)");
        committer.start();
        if (!proxy.watched.await(60, TimeUnit.SECONDS)) {
            System.out.println("fewer than three 429 answers in 60 s; the client says: " + outcome[0]);
            proxy.addCommits.forEach(System.out::println);
            boolean backfilled = listing(log).contains(String.format("%020d.json", BACKLOG));
            System.out.println("published: " + listing(log));
            return backfilled && outcome[0].equals("success") ? 0 : 2;
        }
        Set<String> publishedAfterThree = listing(log);
        System.out.println("after three 429 answers, published: " + publishedAfterThree);
        // Publish the backlog by hand, as any writer may: the client's next attempts still report version 0
        for (String name : listing(stagedDir)) {
            long v = Long.parseLong(name.substring(0, 20));
            if (v <= BACKLOG) {
                Files.copy(stagedDir.resolve(name), log.resolve(String.format("%020d.json", v)), StandardCopyOption.REPLACE_EXISTING);
            }
        }
        System.out.println("versions 1.." + BACKLOG + " published by hand: " + listing(log).size() + " files in the log");
        proxy.watched = new CountDownLatch(2);
        boolean moreRefusals = proxy.watched.await(60, TimeUnit.SECONDS);
        proxy.addCommits.forEach(System.out::println);
        System.out.println("the coordinator client says: " + outcome[0]);
        boolean noBackfill = publishedAfterThree.equals(Set.of(String.format("%020d.json", 0)));
        if (noBackfill && moreRefusals) {
            System.out.println("BUG PRESENT: 429 (the catalog's limit of unpublished commits) is retried as a transient error: "
                    + "the client published none of the ratified commits, and its retries keep reporting latest-published-version 0 "
                    + "after they were published, so the catalog keeps refusing");
            return 1;
        }
        System.out.println("not present or unexpected: published after three 429s " + publishedAfterThree);
        return noBackfill ? 2 : 0;
    }
}
