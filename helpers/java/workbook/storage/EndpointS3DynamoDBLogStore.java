package workbook.storage;

import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import java.util.regex.Pattern;

import io.delta.storage.CloseableIterator;
import io.delta.storage.HadoopFileSystemLogStore;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.AwsSessionCredentials;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.http.apache.ApacheHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.DynamoDbClientBuilder;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.ConditionalCheckFailedException;
import software.amazon.awssdk.services.dynamodb.model.GetItemRequest;
import software.amazon.awssdk.services.dynamodb.model.KeySchemaElement;
import software.amazon.awssdk.services.dynamodb.model.KeyType;
import software.amazon.awssdk.services.dynamodb.model.PutItemRequest;
import software.amazon.awssdk.services.dynamodb.model.QueryRequest;
import software.amazon.awssdk.services.dynamodb.model.ResourceNotFoundException;
import software.amazon.awssdk.services.dynamodb.model.TableDescription;

/**
 * A Delta Lake log store for S3 that lets several writers (several Spark clusters, or Spark and
 * delta-rs) commit to the same table safely, by settling every commit in a DynamoDB table.
 *
 * <h2>Why this class exists</h2>
 * S3 has no "create this object only if it is absent" that Delta can rely on, so two writers could
 * both write version N of a table and one of them would silently lose its commit. Delta Spark ships
 * {@code io.delta.storage.S3DynamoDBLogStore} (Maven module
 * {@code io.delta:delta-storage-s3-dynamodb}) to solve this with a DynamoDB table. That class has no
 * setting for the DynamoDB endpoint, so it cannot talk to a local emulator, and its module cannot
 * be downloaded on the network the workbook is built on. So, against the local emulator, the
 * workbook uses this class instead; against real AWS it uses Delta's own class. Both classes (and
 * delta-rs with {@code AWS_S3_LOCKING_PROVIDER=dynamodb}) read and write the same items in the same
 * table, so they can take turns on one table.
 *
 * <h2>The protocol</h2>
 * One DynamoDB item per commit file, keyed by the table and the commit's file name:
 * <ul>
 *   <li>{@code tablePath} (S, hash key): the table's location with its URI scheme, no user info and
 *       no trailing slash, e.g. {@code s3a://delta-root/some/table};</li>
 *   <li>{@code fileName} (S, range key): the commit file, e.g. {@code 00000000000000000003.json};</li>
 *   <li>{@code tempPath} (S): where the commit's content was staged, relative to {@code _delta_log},
 *       e.g. {@code .tmp/00000000000000000003.json.<uuid>};</li>
 *   <li>{@code complete} (S): {@code "false"} while the staged file has not yet been copied to its
 *       final name, {@code "true"} afterwards;</li>
 *   <li>{@code expireTime} (N, epoch seconds): only on complete items; the table's TTL may delete
 *       the item after that moment.</li>
 * </ul>
 * To commit version N (a write with overwrite=false):
 * <ol>
 *   <li>If {@code N.json} already exists, the version is taken: fail with
 *       {@link FileAlreadyExistsException} (Delta then checks for conflicts and tries N+1).</li>
 *   <li>For N &gt; 0, version N-1 must be finished: if its item is still incomplete, finish it
 *       (copy its staged file to {@code N-1.json} if that is missing, then mark the item complete);
 *       if it has no item and no file, fail.</li>
 *   <li>Stage the commit in {@code _delta_log/.tmp/N.json.<uuid>}.</li>
 *   <li>Claim version N with a conditional PutItem of the incomplete item, which only succeeds if no
 *       item for N exists. Losing that race fails the write with {@link FileAlreadyExistsException}.
 *       Winning it decides the commit: from here on, nothing may fail the write. A refusal is a
 *       lost race only if the item names another staged file: when the claim's answer is lost
 *       (the connection closes after DynamoDB wrote the item), the AWS SDK sends the PutItem again
 *       and DynamoDB refuses it, yet the item is this writer's own. Taken for a lost race, Delta
 *       would commit the same actions again at N+1
 *       ({@code findings/deltalake-lost-commit-response-commits-twice}); so the item is read, and
 *       if its {@code tempPath} is this commit's staged file, the claim stands.</li>
 *   <li>Copy the staged file to {@code N.json} and mark the item complete. If either step fails the
 *       error is only logged; whoever next lists the log or commits N+1 finishes the job.</li>
 * </ol>
 * Before listing a {@code _delta_log}, the newest item of the table is looked up, and finished if it
 * is incomplete, so readers never miss a decided commit. Writes with overwrite=true (such as
 * {@code _last_checkpoint}) go straight to the file system. Writes with overwrite=false of anything
 * other than a {@code N.json} commit file are checked for existence and written directly, without an
 * item, so the table holds only commit items (delta-rs expects every item's name to be a version).
 *
 * <h2>Settings</h2>
 * Read from the Hadoop configuration this log store is created with. Delta copies the session's
 * Spark SQL settings into it under their full names; each {@code spark.io.delta...} key is also
 * accepted without its leading {@code spark.}. The first three are the keys of Delta's own class,
 * so switching between the two classes only changes {@code spark.delta.logStore.s3a.impl}.
 * <ul>
 *   <li>{@code spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName}: the DynamoDB table
 *       (default {@code delta_log}). It must exist with the key schema above; this class never
 *       creates it (the workbook does, in {@code helpers.storage.ensure_lock_table()}).</li>
 *   <li>{@code spark.io.delta.storage.S3DynamoDBLogStore.ddb.region}: its region (default
 *       {@code us-east-1}).</li>
 *   <li>{@code spark.io.delta.storage.S3DynamoDBLogStore.ddb.ttl}: seconds a complete item is kept
 *       (default 86400). Too short a value lets two writers claim the same version.</li>
 *   <li>{@code spark.workbook.storage.ddb.recognizeOwnClaim}: {@code true} (the default) reads a
 *       refused claim's item as above; {@code false} takes every refusal for a lost race, as a
 *       log store that does not look would (the workbook's tests show the difference).</li>
 *   <li>{@code spark.workbook.storage.ddb.endpoint}: the DynamoDB endpoint, e.g.
 *       {@code http://127.0.0.1:5050}; when absent the AWS SDK finds the normal one.</li>
 *   <li>Credentials: {@code fs.s3a.access.key} and {@code fs.s3a.secret.key} (and
 *       {@code fs.s3a.session.token} if set), which Spark's {@code spark.hadoop.fs.s3a.*} settings
 *       put there; without them, the AWS SDK's default credential chain.</li>
 * </ul>
 */
public class EndpointS3DynamoDBLogStore extends HadoopFileSystemLogStore {

    private static final Logger LOG = LoggerFactory.getLogger(EndpointS3DynamoDBLogStore.class);

    // Keys shared with Delta's own S3DynamoDBLogStore, so one setting switches between the classes.
    static final String DELTA_PREFIX = "io.delta.storage.S3DynamoDBLogStore.";
    static final String TABLE_NAME_KEY = "ddb.tableName";
    static final String REGION_KEY = "ddb.region";
    static final String TTL_KEY = "ddb.ttl";
    // Our own addition.
    static final String ENDPOINT_KEY = "workbook.storage.ddb.endpoint";
    static final String RECOGNIZE_OWN_CLAIM_KEY = "workbook.storage.ddb.recognizeOwnClaim";

    static final String DEFAULT_TABLE_NAME = "delta_log";
    static final String DEFAULT_REGION = "us-east-1";
    static final long DEFAULT_TTL_SECONDS = 24L * 60 * 60;

    private static final String TABLE_PATH = "tablePath";
    private static final String FILE_NAME = "fileName";
    private static final String TEMP_PATH = "tempPath";
    private static final String COMPLETE = "complete";
    private static final String EXPIRE_TIME = "expireTime";

    private static final String LOG_DIR = "_delta_log";
    private static final String STAGING_DIR = ".tmp";
    private static final Pattern COMMIT_FILE = Pattern.compile("\\d+\\.json");
    private static final int FINISH_ATTEMPTS = 4;
    private static final int READ_RETRIES = 3;

    /** One client per endpoint, region and identity, shared by every instance in the JVM. */
    private static final Map<String, DynamoDbClient> CLIENTS = new ConcurrentHashMap<>();
    /** Client keys + table names already checked to exist with the right key schema. */
    private static final Set<String> CHECKED_TABLES = ConcurrentHashMap.newKeySet();

    private final DynamoDbClient dynamo;
    private final String tableName;
    private final String endpoint;
    private final long ttlSeconds;
    private final boolean recognizeOwnClaim;

    public EndpointS3DynamoDBLogStore(Configuration hadoopConf) throws IOException {
        super(hadoopConf);
        tableName = setting(hadoopConf, TABLE_NAME_KEY, DEFAULT_TABLE_NAME);
        String region = setting(hadoopConf, REGION_KEY, DEFAULT_REGION);
        String ttl = setting(hadoopConf, TTL_KEY, null);
        ttlSeconds = ttl == null ? DEFAULT_TTL_SECONDS : Long.parseLong(ttl.trim());
        if (ttlSeconds < 0) {
            throw new IllegalArgumentException(
                "The DynamoDB log store's " + TTL_KEY + " must not be negative, got " + ttlSeconds);
        }
        String ownClaim = firstSet(hadoopConf, "spark." + RECOGNIZE_OWN_CLAIM_KEY, RECOGNIZE_OWN_CLAIM_KEY);
        recognizeOwnClaim = ownClaim == null || !ownClaim.trim().equalsIgnoreCase("false");
        String configuredEndpoint = firstSet(hadoopConf, "spark." + ENDPOINT_KEY, ENDPOINT_KEY);
        endpoint = configuredEndpoint == null || configuredEndpoint.isBlank()
            ? null : configuredEndpoint.trim();

        String accessKey = secret(hadoopConf, "fs.s3a.access.key");
        String secretKey = secret(hadoopConf, "fs.s3a.secret.key");
        String sessionToken = secret(hadoopConf, "fs.s3a.session.token");
        boolean staticKeys = accessKey != null && secretKey != null;

        String clientKey = String.join("|",
            String.valueOf(endpoint), region,
            staticKeys ? accessKey : "<default chain>",
            staticKeys ? Integer.toHexString((secretKey + "/" + sessionToken).hashCode()) : "");
        dynamo = CLIENTS.computeIfAbsent(clientKey, k -> {
            LOG.info("New DynamoDB client: region {}, endpoint {}, credentials {}", region,
                endpoint == null ? "(AWS default)" : endpoint,
                staticKeys ? "from fs.s3a.access.key" : "AWS default chain");
            AwsCredentialsProvider credentials;
            if (!staticKeys) {
                credentials = DefaultCredentialsProvider.builder().build();
            } else if (sessionToken != null) {
                credentials = StaticCredentialsProvider.create(
                    AwsSessionCredentials.create(accessKey, secretKey, sessionToken));
            } else {
                credentials = StaticCredentialsProvider.create(
                    AwsBasicCredentials.create(accessKey, secretKey));
            }
            DynamoDbClientBuilder builder = DynamoDbClient.builder()
                .httpClientBuilder(ApacheHttpClient.builder()
                    .connectionTimeout(Duration.ofSeconds(10))
                    .socketTimeout(Duration.ofSeconds(30)))
                .region(Region.of(region))
                .credentialsProvider(credentials);
            if (endpoint != null) {
                builder.endpointOverride(URI.create(endpoint));
            }
            return builder.build();
        });

        LOG.debug("DynamoDB log store: table {}, region {}, endpoint {}, ttl {} s",
            tableName, region, endpoint == null ? "(AWS default)" : endpoint, ttlSeconds);

        if (CHECKED_TABLES.add(clientKey + "|" + tableName)) {
            try {
                checkTable();
            } catch (IOException | RuntimeException e) {
                CHECKED_TABLES.remove(clientKey + "|" + tableName);
                throw e;
            }
        }
    }

    // ------------------------------------------------------------------------------------------
    // LogStore API
    // ------------------------------------------------------------------------------------------

    @Override
    public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration conf)
            throws IOException {
        FileSystem fs = path.getFileSystem(conf);
        Path target = withoutUserInfo(fs.makeQualified(path));
        PathGuard guard = PathGuard.acquire(target);
        try {
            if (Boolean.TRUE.equals(overwrite)) {
                writeLines(fs, target, actions, true);
                return;
            }
            if (fs.exists(target)) {
                throw new FileAlreadyExistsException(target.toString());
            }
            Path table = tableOf(target);
            if (table == null || !isCommitFile(target)) {
                // Not a commit: no item, just a create that refuses to replace a file.
                writeLines(fs, target, actions, false);
                return;
            }
            commit(fs, table, target, actions);
        } finally {
            guard.release();
        }
    }

    @Override
    public Iterator<FileStatus> listFrom(Path path, Configuration conf) throws IOException {
        FileSystem fs = path.getFileSystem(conf);
        Path table = tableOf(withoutUserInfo(fs.makeQualified(path)));
        if (table != null) {
            Optional<CommitItem> newest = newestItem(table);
            if (newest.isPresent() && !newest.get().complete) {
                finish(fs, table, newest.get());
            }
        }
        return super.listFrom(path, conf);
    }

    /**
     * Reads the whole file, and reads it again when S3A reports that the object changed while
     * being read. That happens when two processes finish the same pending commit at once: both
     * copy the same staged content, so reading again is safe. Log files are small.
     */
    @Override
    public CloseableIterator<String> read(Path path, Configuration conf) throws IOException {
        for (int attempt = 0; ; attempt++) {
            List<String> lines = new ArrayList<>();
            try (CloseableIterator<String> file = super.read(path, conf)) {
                file.forEachRemaining(lines::add);
            } catch (IOException | RuntimeException e) {
                if (attempt >= READ_RETRIES || !objectChanged(e)) {
                    throw e;
                }
                LOG.info("{} changed while being read ({}); reading it again", path, e.toString());
                continue;
            }
            Iterator<String> each = lines.iterator();
            return new CloseableIterator<String>() {
                @Override public boolean hasNext() { return each.hasNext(); }
                @Override public String next() { return each.next(); }
                @Override public void close() { }
            };
        }
    }

    private static boolean objectChanged(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if ("org.apache.hadoop.fs.s3a.RemoteFileChangedException".equals(t.getClass().getName())) {
                return true;
            }
        }
        return false;
    }

    @Override
    public Boolean isPartialWriteVisible(Path path, Configuration conf) {
        return false;
    }

    // ------------------------------------------------------------------------------------------
    // The commit protocol
    // ------------------------------------------------------------------------------------------

    private void commit(FileSystem fs, Path table, Path target, Iterator<String> actions)
            throws IOException {
        String fileName = target.getName();
        long version = Long.parseLong(fileName.substring(0, fileName.indexOf('.')));
        String tableKey = tableKey(table);
        Path logDir = new Path(table, LOG_DIR);

        if (version > 0) {
            String previousName = commitFileName(version - 1);
            Optional<CommitItem> previous = item(tableKey, previousName);
            if (previous.isPresent() && !previous.get().complete) {
                finish(fs, table, previous.get());
            } else if (!fs.exists(new Path(logDir, previousName))) {
                throw new FileSystemException(String.format(
                    "Cannot commit %s: the previous commit %s is neither in the log folder nor "
                        + "pending in DynamoDB table %s",
                    target, new Path(logDir, previousName), tableName));
            }
        } else {
            Optional<CommitItem> first = item(tableKey, fileName);
            if (first.isPresent() && first.get().complete) {
                throw new FileSystemException(String.format(
                    "DynamoDB table %s still holds items of an earlier table at %s (%s is marked "
                        + "complete but the file is missing). Delete that table's items "
                        + "(helpers.storage.delete_lock_entries) before creating a table there.",
                    tableName, tableKey, fileName));
            }
        }

        String stagedName = STAGING_DIR + "/" + fileName + "." + UUID.randomUUID();
        Path staged = new Path(logDir, stagedName);
        writeLines(fs, staged, actions, true);

        Map<String, AttributeValue> claim = itemAttributes(tableKey, fileName, stagedName, false);
        try {
            dynamo.putItem(PutItemRequest.builder()
                .tableName(tableName)
                .item(claim)
                .conditionExpression("attribute_not_exists(" + FILE_NAME + ")")
                .build());
        } catch (ConditionalCheckFailedException refused) {
            Optional<CommitItem> holder = recognizeOwnClaim ? item(tableKey, fileName) : Optional.empty();
            if (holder.isPresent() && stagedName.equals(holder.get().tempPath)) {
                LOG.warn("Version {} of {}: the claim was refused, but the item is this writer's own "
                    + "(the SDK resent a claim whose answer was lost); the claim stands", version, tableKey);
            } else {
                LOG.info("Version {} of {} was claimed by another writer first", version, tableKey);
                throw new FileAlreadyExistsException(target.toString(), null,
                    "another writer claimed this version in DynamoDB table " + tableName);
            }
        } catch (SdkException e) {
            throw new IOException("Could not claim " + fileName + " of " + tableKey
                + " in DynamoDB table " + tableName + ": " + e.getMessage(), e);
        }

        // The claim decided the commit. What follows only publishes it; if it fails, the next
        // listing or the next commit of this table finishes it from the item.
        try {
            copyNew(fs, staged, target);
            markComplete(tableKey, fileName, stagedName);
        } catch (Exception e) {
            LOG.warn("Commit {} of {} is decided but not yet published ({}); a later reader or "
                + "writer will finish it", fileName, tableKey, e.toString(), e);
        }
    }

    /** Copy an incomplete item's staged file to its commit file if missing, then mark it done. */
    private void finish(FileSystem fs, Path table, CommitItem item) throws IOException {
        Path logDir = new Path(table, LOG_DIR);
        Path target = new Path(logDir, item.fileName);
        Path staged = new Path(logDir, item.tempPath);
        PathGuard guard = PathGuard.acquire(target);
        try {
            boolean published = false;
            for (int attempt = 1; ; attempt++) {
                try {
                    if (!published && !fs.exists(target)) {
                        LOG.info("Finishing pending commit {} of {} from {}",
                            item.fileName, item.tableKey, staged);
                        copyNew(fs, staged, target);
                    }
                    published = true;
                    markComplete(item.tableKey, item.fileName, item.tempPath);
                    return;
                } catch (IOException | RuntimeException e) {
                    if (attempt >= FINISH_ATTEMPTS) {
                        throw e instanceof IOException ? (IOException) e : new IOException(
                            "Could not finish pending commit " + item.fileName + " of "
                                + item.tableKey + ": " + e.getMessage(), e);
                    }
                    LOG.info("Attempt {} to finish {} of {} failed: {}",
                        attempt, item.fileName, item.tableKey, e.toString());
                }
            }
        } finally {
            guard.release();
        }
    }

    private void markComplete(String tableKey, String fileName, String stagedName) {
        Map<String, AttributeValue> done = itemAttributes(tableKey, fileName, stagedName, true);
        done.put(EXPIRE_TIME, AttributeValue.builder()
            .n(Long.toString(System.currentTimeMillis() / 1000L + ttlSeconds)).build());
        dynamo.putItem(PutItemRequest.builder().tableName(tableName).item(done).build());
    }

    // ------------------------------------------------------------------------------------------
    // DynamoDB items
    // ------------------------------------------------------------------------------------------

    /** What one item says about one commit. */
    private static final class CommitItem {
        final String tableKey;
        final String fileName;
        final String tempPath;
        final boolean complete;

        CommitItem(Map<String, AttributeValue> attributes) {
            tableKey = attributes.get(TABLE_PATH).s();
            fileName = attributes.get(FILE_NAME).s();
            tempPath = attributes.get(TEMP_PATH).s();
            AttributeValue flag = attributes.get(COMPLETE);
            complete = flag != null && "true".equals(flag.s());
        }
    }

    private static Map<String, AttributeValue> itemAttributes(
            String tableKey, String fileName, String stagedName, boolean complete) {
        Map<String, AttributeValue> attributes = new HashMap<>();
        attributes.put(TABLE_PATH, AttributeValue.builder().s(tableKey).build());
        attributes.put(FILE_NAME, AttributeValue.builder().s(fileName).build());
        attributes.put(TEMP_PATH, AttributeValue.builder().s(stagedName).build());
        attributes.put(COMPLETE, AttributeValue.builder().s(Boolean.toString(complete)).build());
        return attributes;
    }

    private Optional<CommitItem> item(String tableKey, String fileName) throws IOException {
        Map<String, AttributeValue> key = new HashMap<>();
        key.put(TABLE_PATH, AttributeValue.builder().s(tableKey).build());
        key.put(FILE_NAME, AttributeValue.builder().s(fileName).build());
        try {
            Map<String, AttributeValue> found = dynamo.getItem(GetItemRequest.builder()
                .tableName(tableName).key(key).consistentRead(true).build()).item();
            return found == null || found.isEmpty()
                ? Optional.empty() : Optional.of(new CommitItem(found));
        } catch (SdkException e) {
            throw new IOException("Could not read item " + fileName + " of " + tableKey
                + " from DynamoDB table " + tableName + ": " + e.getMessage(), e);
        }
    }

    private Optional<CommitItem> newestItem(Path table) throws IOException {
        String tableKey = tableKey(table);
        try {
            List<Map<String, AttributeValue>> items = dynamo.query(QueryRequest.builder()
                .tableName(tableName)
                .keyConditionExpression(TABLE_PATH + " = :table")
                .expressionAttributeValues(
                    Map.of(":table", AttributeValue.builder().s(tableKey).build()))
                .scanIndexForward(false)
                .limit(1)
                .consistentRead(true)
                .build()).items();
            return items.isEmpty() ? Optional.empty() : Optional.of(new CommitItem(items.get(0)));
        } catch (SdkException e) {
            throw new IOException("Could not query the newest item of " + tableKey
                + " in DynamoDB table " + tableName + ": " + e.getMessage(), e);
        }
    }

    private void checkTable() throws IOException {
        String where = endpoint == null ? "the AWS default endpoint" : endpoint;
        TableDescription table;
        try {
            table = dynamo.describeTable(b -> b.tableName(tableName)).table();
        } catch (ResourceNotFoundException e) {
            throw new IOException(String.format(
                "DynamoDB table '%s' does not exist at %s. This log store does not create it: "
                    + "create it first with helpers.storage.ensure_lock_table() (hash key "
                    + "tablePath, range key fileName, both strings).", tableName, where), e);
        } catch (SdkException e) {
            throw new IOException(String.format(
                "Cannot reach DynamoDB table '%s' at %s: %s", tableName, where, e.getMessage()), e);
        }
        Map<String, KeyType> schema = new HashMap<>();
        for (KeySchemaElement element : table.keySchema()) {
            schema.put(element.attributeName(), element.keyType());
        }
        if (schema.size() != 2 || schema.get(TABLE_PATH) != KeyType.HASH
                || schema.get(FILE_NAME) != KeyType.RANGE) {
            throw new IOException(String.format(
                "DynamoDB table '%s' at %s has key schema %s; a Delta log table needs hash key "
                    + "tablePath and range key fileName (helpers.storage.ensure_lock_table()).",
                tableName, where, schema));
        }
        LOG.info("DynamoDB table {} at {} is {}; commit items expire {} s after completion",
            tableName, where, table.tableStatusAsString(), ttlSeconds);
    }

    // ------------------------------------------------------------------------------------------
    // Files and paths
    // ------------------------------------------------------------------------------------------

    /** Write one line per action, each ended by a newline; a failed write leaves no file. */
    private static void writeLines(FileSystem fs, Path path, Iterator<String> lines,
            boolean overwrite) throws IOException {
        FSDataOutputStream out = fs.create(path, overwrite);
        try {
            while (lines.hasNext()) {
                out.write((lines.next() + "\n").getBytes(StandardCharsets.UTF_8));
            }
        } catch (IOException | RuntimeException e) {
            discard(out, path);
            throw e;
        }
        out.close();
    }

    /** Copy src to a new file dst; an existing dst is left alone and counts as done. */
    private static void copyNew(FileSystem fs, Path src, Path dst) throws IOException {
        try (InputStream in = fs.open(src)) {
            FSDataOutputStream out;
            try {
                out = fs.create(dst, false);
            } catch (org.apache.hadoop.fs.FileAlreadyExistsException e) {
                LOG.info("{} already exists; another process published it", dst);
                return;
            }
            try {
                in.transferTo(out);
            } catch (IOException | RuntimeException e) {
                discard(out, dst);
                throw e;
            }
            out.close();
        }
    }

    /**
     * Drop an output stream without publishing it. On S3 the object only appears on close, so a
     * stream that failed half way must be aborted, not closed, or a truncated file would appear.
     */
    private static void discard(OutputStream out, Path path) {
        if (out instanceof FSDataOutputStream) {
            try {
                ((FSDataOutputStream) out).abort();
                return;
            } catch (UnsupportedOperationException e) {
                // This file system cannot abort; leave the stream unclosed.
            } catch (RuntimeException e) {
                LOG.debug("Aborting the write of {} failed", path, e);
                return;
            }
        }
        LOG.debug("Left the failed write of {} unclosed", path);
    }

    private static boolean isCommitFile(Path path) {
        return COMMIT_FILE.matcher(path.getName()).matches()
            && path.getParent() != null && LOG_DIR.equals(path.getParent().getName());
    }

    private static String commitFileName(long version) {
        return String.format("%020d.json", version);
    }

    /** The table a path in its {@code _delta_log} belongs to, or null outside any log folder. */
    static Path tableOf(Path path) {
        for (Path p = path; p != null; p = p.getParent()) {
            if (LOG_DIR.equals(p.getName())) {
                return p.getParent();
            }
        }
        return null;
    }

    /** The table's {@code tablePath} key: scheme, authority and path, never a trailing slash. */
    static String tableKey(Path table) {
        String text = table.toString();
        while (text.endsWith("/") && !text.endsWith("//")) {
            text = text.substring(0, text.length() - 1);
        }
        return text;
    }

    static Path withoutUserInfo(Path path) {
        URI uri = path.toUri();
        if (uri.getUserInfo() == null) {
            return path;
        }
        try {
            return new Path(new URI(uri.getScheme(), null, uri.getHost(), uri.getPort(),
                uri.getPath(), uri.getQuery(), uri.getFragment()));
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("Cannot drop the user info of " + path, e);
        }
    }

    // ------------------------------------------------------------------------------------------
    // Settings
    // ------------------------------------------------------------------------------------------

    /** A Delta log store setting, under its {@code spark.}-prefixed name or without the prefix. */
    static String setting(Configuration conf, String name, String fallback) {
        String withSpark = conf.get("spark." + DELTA_PREFIX + name);
        String bare = conf.get(DELTA_PREFIX + name);
        if (withSpark != null && bare != null && !withSpark.equals(bare)) {
            throw new IllegalArgumentException(String.format(
                "Both spark.%1$s%2$s=%3$s and %1$s%2$s=%4$s are set; set only one.",
                DELTA_PREFIX, name, withSpark, bare));
        }
        return withSpark != null ? withSpark : bare != null ? bare : fallback;
    }

    private static String firstSet(Configuration conf, String... keys) {
        for (String key : keys) {
            String value = conf.get(key);
            if (value != null) {
                return value;
            }
        }
        return null;
    }

    /** A credential, also from Hadoop credential providers; null when absent or empty. */
    private static String secret(Configuration conf, String key) {
        try {
            char[] value = conf.getPassword(key);
            if (value == null || value.length == 0) {
                return null;
            }
            String text = new String(value).trim();
            return text.isEmpty() ? null : text;
        } catch (IOException e) {
            LOG.warn("Could not read {} from the Hadoop configuration: {}", key, e.toString());
            return null;
        }
    }

    // ------------------------------------------------------------------------------------------
    // Helpers
    // ------------------------------------------------------------------------------------------

    /**
     * A lock per path, for the threads of this JVM: one thread at a time writes or finishes a
     * given commit file. Other JVMs are kept apart by the conditional PutItem, not by this.
     */
    static final class PathGuard {
        private static final Map<Path, PathGuard> HELD = new ConcurrentHashMap<>();

        private final ReentrantLock lock = new ReentrantLock();
        private int users;
        private Path path;

        static PathGuard acquire(Path path) throws InterruptedIOException {
            PathGuard guard = HELD.compute(path, (p, existing) -> {
                PathGuard g = existing == null ? new PathGuard() : existing;
                g.users++;
                g.path = p;
                return g;
            });
            try {
                guard.lock.lockInterruptibly();
            } catch (InterruptedException e) {
                guard.leave();
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("Interrupted while waiting to write " + path);
            }
            return guard;
        }

        void release() {
            lock.unlock();
            leave();
        }

        private void leave() {
            HELD.compute(path, (p, g) -> --g.users == 0 ? null : g);
        }
    }
}
