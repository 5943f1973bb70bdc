package workbook.storage;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.URI;
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

import io.delta.storage.CloseableIterator;
import io.delta.storage.HadoopFileSystemLogStore;
import org.apache.hadoop.conf.Configuration;
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

import static workbook.storage.LogFiles.LOG_DIR;
import static workbook.storage.LogFiles.STAGING_DIR;
import static workbook.storage.LogFiles.commitFileName;
import static workbook.storage.LogFiles.copyNew;
import static workbook.storage.LogFiles.existsQuietly;
import static workbook.storage.LogFiles.isCommitFile;
import static workbook.storage.LogFiles.tableKey;
import static workbook.storage.LogFiles.tableOf;
import static workbook.storage.LogFiles.withoutUserInfo;
import static workbook.storage.LogFiles.writeLines;

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
 *       if it has no item and no file, fail. Finishing is tried a few times with pauses; if
 *       {@code N-1.json} still cannot be written, the write fails with an
 *       {@link UnfinishedCommitException} that names the table, the version and the item, and says
 *       what to do. Nothing of this write was committed then, so the error is the truth.</li>
 *   <li>Stage the commit in {@code _delta_log/.tmp/N.json.<uuid>}.</li>
 *   <li>Claim version N with a conditional PutItem of the incomplete item, which only succeeds if no
 *       item for N exists. Losing that race fails the write with {@link FileAlreadyExistsException}.
 *       Winning it decides the commit: from here on, nothing may fail the write. A refusal is a
 *       lost race only if the item names another staged file: when the claim's answer is lost
 *       (the connection closes after DynamoDB wrote the item), the AWS SDK sends the PutItem again
 *       and DynamoDB refuses it, yet the item is this writer's own. Taken for a lost race, Delta
 *       would commit the same actions again at N+1
 *       ({@code findings/deltalake-lost-commit-response-commits-twice}); so the item is read, and
 *       if its {@code tempPath} is this commit's staged file, the claim stands. When another
 *       writer's item holds version N and {@code N.json} is not written yet, it is finished first
 *       (as in step 2), so that Delta, told the version is taken, finds it when it lists the log;
 *       if it cannot be finished, the write fails with an {@link UnfinishedCommitException}.</li>
 *   <li>Publish: copy the staged file to {@code N.json} and mark the item complete. The copy is
 *       tried again, with growing pauses, until {@code N.json} exists or the publish window
 *       ({@code publishTimeoutSeconds}) has passed: Delta reads the status of {@code N.json} as
 *       soon as this method returns, and a missing file would make it report the decided commit
 *       as failed. A failure to mark the item complete is only logged (the file is what readers
 *       need; whoever next lists the log marks it). If the window passes without {@code N.json},
 *       the write fails with an {@link UnfinishedCommitException} that says the version IS
 *       committed and must not be written again.</li>
 * </ol>
 * Before listing a {@code _delta_log}, the newest item of the table is looked up, and finished if it
 * is incomplete, so readers never miss a commit that can be published. If it cannot be (S3 refuses
 * the copy, or its staged file is gone), the listing logs why at WARN and lists what is there: a
 * reader sees the table as it was before that commit, and a writer fails as in steps 2 and 4.
 * Writes with overwrite=true (such as
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
 *       creates it (the workbook does, in {@code helpers.stores.storage.ensure_lock_table()}).</li>
 *   <li>{@code spark.io.delta.storage.S3DynamoDBLogStore.ddb.region}: its region (default
 *       {@code us-east-1}).</li>
 *   <li>{@code spark.io.delta.storage.S3DynamoDBLogStore.ddb.ttl}: seconds a complete item is kept
 *       (default 86400). Too short a value lets two writers claim the same version.</li>
 *   <li>{@code spark.workbook.storage.ddb.recognizeOwnClaim}: {@code true} (the default) reads a
 *       refused claim's item as above; {@code false} takes every refusal for a lost race, as a
 *       log store that does not look would (the workbook's tests show the difference).</li>
 *   <li>{@code spark.workbook.storage.ddb.publishTimeoutSeconds}: how long a writer whose claim
 *       won keeps trying to write {@code N.json} (default 120) before it fails with an error that
 *       says the version is committed.</li>
 *   <li>{@code spark.workbook.storage.ddb.endpoint}: the DynamoDB endpoint, e.g.
 *       {@code http://127.0.0.1:5050}; when absent the AWS SDK finds the normal one.</li>
 *   <li>Credentials: {@code fs.s3a.access.key} and {@code fs.s3a.secret.key} (and
 *       {@code fs.s3a.session.token} if set), which Spark's {@code spark.hadoop.fs.s3a.*} settings
 *       put there; without them, the AWS SDK's default credential chain.</li>
 * </ul>
 *
 * <h2>Where this class and Delta's differ on a commit that cannot be finished</h2>
 * Read from Delta 4.4.0's {@code BaseExternalLogStore} and {@code S3DynamoDBLogStore}, and from the
 * Delta Spark code that calls them; the workbook's tests reproduce both states with Spark.
 * <ul>
 *   <li><b>An incomplete item for version N whose staged file does not exist, and no
 *       {@code N.json}.</b> Delta's {@code fixDeltaLog} tries the copy 4 times back to back and
 *       rethrows the {@code FileNotFoundException} of the missing staged file from
 *       {@code listFrom}. Delta's listing ({@code SnapshotManagement.listFromFileSystemInternal})
 *       takes a {@code FileNotFoundException} for a missing log folder and goes on with no files;
 *       so a writer whose claim of N was refused ({@code FileAlreadyExistsException}) checks for
 *       conflicts, finds no version N, and tries N again, up to
 *       {@code spark.databricks.delta.maxCommitAttempts} (10,000,000) times: it hangs. A reader
 *       is told the table does not exist. The workbook's class before this change did the same
 *       (in its test, a read and {@code DESCRIBE HISTORY} answered "doesn't exist", and an append
 *       had not returned after 300 s). Here, {@code listFrom} never throws for a commit it cannot
 *       finish (it logs it at WARN), and a refused claim finishes the holder's commit before
 *       saying the version is taken, or fails the write with an {@link UnfinishedCommitException},
 *       which Delta does not retry. Nothing deletes the item: whether its writer is gone is for
 *       an operator to decide.</li>
 *   <li><b>A claim that won, whose copy to {@code N.json} fails.</b> Delta's {@code write} logs
 *       the copy's error ("ignoring recoverable error") and returns; Delta Spark then reads the
 *       status of {@code N.json} ({@code FileSystemBasedCommitCoordinatorClient.doCommit}), gets a
 *       {@code FileNotFoundException}, and the append fails, although the item decides version N
 *       for it and the next listing publishes it: a writer told "failed" for a commit that is in
 *       the log. (After the commit, {@code updateAfterCommit} lists the log only when other threads
 *       wait for the table's snapshot lock; an error of {@code listFrom}'s finishing fails the
 *       commit there too.) Here, the writer retries the copy with pauses for up to
 *       {@code publishTimeoutSeconds}, and returns only once {@code N.json} exists; past that it
 *       fails with an error that says the version is committed.</li>
 *   <li>Finishing someone else's commit is tried with pauses (0.2, 0.4, 0.8 s) rather than back to
 *       back, and every attempt that fails is logged at WARN.</li>
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
    static final String PUBLISH_TIMEOUT_KEY = "workbook.storage.ddb.publishTimeoutSeconds";

    static final String DEFAULT_TABLE_NAME = "delta_log";
    static final String DEFAULT_REGION = "us-east-1";
    static final long DEFAULT_TTL_SECONDS = 24L * 60 * 60;
    static final long DEFAULT_PUBLISH_TIMEOUT_SECONDS = 120;

    private static final String TABLE_PATH = "tablePath";
    private static final String FILE_NAME = "fileName";
    private static final String TEMP_PATH = "tempPath";
    private static final String COMPLETE = "complete";
    private static final String EXPIRE_TIME = "expireTime";

    private static final int FINISH_ATTEMPTS = 4;
    private static final long FIRST_PAUSE_MS = 200;
    private static final long LONGEST_PAUSE_MS = 5000;
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
    private final long publishTimeoutMillis;

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
        String publish = firstSet(hadoopConf, "spark." + PUBLISH_TIMEOUT_KEY, PUBLISH_TIMEOUT_KEY);
        long publishSeconds = publish == null ? DEFAULT_PUBLISH_TIMEOUT_SECONDS : Long.parseLong(publish.trim());
        if (publishSeconds < 0) {
            throw new IllegalArgumentException(
                "The DynamoDB log store's " + PUBLISH_TIMEOUT_KEY + " must not be negative, got " + publishSeconds);
        }
        publishTimeoutMillis = publishSeconds * 1000L;
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
                try {
                    finish(fs, table, newest.get());
                } catch (UnfinishedCommitException e) {
                    // Never fail (or hang) a listing for it: a reader sees the table without that
                    // commit, and a writer that needs the version fails in commit() with this error.
                    LOG.warn("Listing {} without a commit that cannot be finished: {}",
                        tableKey(table), e.getMessage());
                }
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
                        + "(helpers.stores.storage.delete_lock_entries) before creating a table there.",
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
            Optional<CommitItem> holder = item(tableKey, fileName);
            if (recognizeOwnClaim && holder.isPresent() && stagedName.equals(holder.get().tempPath)) {
                LOG.warn("Version {} of {}: the claim was refused, but the item is this writer's own "
                    + "(the SDK resent a claim whose answer was lost); the claim stands", version, tableKey);
            } else {
                LOG.info("Version {} of {} was claimed by another writer first", version, tableKey);
                if (holder.isPresent() && !fs.exists(target)) {
                    // Delta, told the version is taken, lists the log to find it: publish it first,
                    // or Delta would find no version N and try N again, without end.
                    String nothing = " This write committed nothing (version " + version
                        + " was claimed by another writer).";
                    if (holder.get().complete) {
                        throw new UnfinishedCommitException(String.format("Version %d of %s is marked "
                                + "complete by %s, but %s does not exist: it was deleted after it was "
                                + "published. Restore it from the bucket's versions, or, if the table is "
                                + "meant to end before it, delete that item.%s", version, tableKey,
                            describe(holder.get()), target, nothing), null);
                    }
                    try {
                        finish(fs, table, holder.get());
                    } catch (UnfinishedCommitException e) {
                        throw new UnfinishedCommitException(e.getMessage() + nothing, e);
                    }
                }
                throw new FileAlreadyExistsException(target.toString(), null,
                    "another writer claimed this version in DynamoDB table " + tableName);
            }
        } catch (SdkException e) {
            throw new IOException("Could not claim " + fileName + " of " + tableKey
                + " in DynamoDB table " + tableName + ": " + e.getMessage(), e);
        }

        // The claim decided the commit: from here on, this write may only succeed, or fail
        // saying that the version IS committed.
        publish(fs, table, new CommitItem(tableKey, fileName, stagedName, false));
    }

    /**
     * Write a won claim's {@code N.json}, trying again with growing pauses until it exists or the
     * publish window has passed; then mark the item complete (only logged if that fails).
     */
    private void publish(FileSystem fs, Path table, CommitItem claim) throws IOException {
        Path logDir = new Path(table, LOG_DIR);
        Path target = new Path(logDir, claim.fileName);
        Path staged = new Path(logDir, claim.tempPath);
        long deadline = System.nanoTime() + publishTimeoutMillis * 1_000_000L;
        long pause = FIRST_PAUSE_MS;
        for (int attempt = 1; ; attempt++) {
            try {
                copyNew(fs, staged, target);
                break;
            } catch (IOException | RuntimeException e) {
                if (existsQuietly(fs, target)) {  // another process published it meanwhile
                    break;
                }
                if (System.nanoTime() + pause * 1_000_000L > deadline) {
                    throw new UnfinishedCommitException(String.format(
                        "Version %d of %s IS COMMITTED: this writer's claim (%s) won, but %s could not "
                            + "be written from %s within %d s (%d attempts; last error: %s). Do not run this "
                            + "write again: its rows would be committed twice. The next read of the table "
                            + "that S3 lets write %s publishes it; check with DESCRIBE HISTORY.",
                        claim.version(), claim.tableKey, describe(claim), target, staged,
                        publishTimeoutMillis / 1000, attempt, e, target.getName()), e);
                }
                LOG.warn("Version {} of {} is decided (this writer's claim won) but writing {} failed "
                    + "(attempt {}: {}); trying again in {} ms", claim.version(), claim.tableKey,
                    target.getName(), attempt, e.toString(), pause);
                pauseFor(pause, claim);
                pause = Math.min(pause * 2, LONGEST_PAUSE_MS);
            }
        }
        try {
            markComplete(claim.tableKey, claim.fileName, claim.tempPath);
        } catch (RuntimeException e) {
            LOG.warn("Version {} of {} is published, but its item could not be marked complete ({}); "
                + "the next listing marks it", claim.version(), claim.tableKey, e.toString());
        }
    }

    /**
     * Publish an incomplete item's commit: copy its staged file to its commit file if that is
     * missing, then mark the item complete. Tried {@link #FINISH_ATTEMPTS} times with pauses.
     * Returns once the commit file exists (a failure to mark the item is then only logged);
     * otherwise throws an {@link UnfinishedCommitException} that names the table, the version and
     * the item, and says what to do. Never a {@code FileNotFoundException}: Delta's listing would
     * take that for a missing log folder.
     */
    private void finish(FileSystem fs, Path table, CommitItem item) throws IOException {
        Path logDir = new Path(table, LOG_DIR);
        Path target = new Path(logDir, item.fileName);
        Path staged = new Path(logDir, item.tempPath);
        PathGuard guard = PathGuard.acquire(target);
        try {
            boolean published = false;
            long pause = FIRST_PAUSE_MS;
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
                    LOG.warn("Attempt {} of {} to finish version {} of {} failed: {}",
                        attempt, FINISH_ATTEMPTS, item.version(), item.tableKey, e.toString());
                    if (attempt >= FINISH_ATTEMPTS) {
                        if (published || existsQuietly(fs, target)) {
                            LOG.warn("Version {} of {} is published, but its item could not be marked "
                                + "complete; the next listing marks it", item.version(), item.tableKey);
                            return;
                        }
                        throw new UnfinishedCommitException(unfinishable(fs, item, staged, target, e), e);
                    }
                    pauseFor(pause, item);
                    pause *= 2;
                }
            }
        } finally {
            guard.release();
        }
    }

    /** Why an incomplete item's commit cannot be published, and what to do about it. */
    private String unfinishable(FileSystem fs, CommitItem item, Path staged, Path target, Exception last) {
        String where = String.format("Version %d of %s is claimed by %s", item.version(), item.tableKey,
            describe(item));
        if (!existsQuietly(fs, staged)) {
            return String.format("%s, but its staged file %s does not exist and %s was never written, so "
                    + "nobody can finish that commit, and no writer can commit version %d or later. If no "
                    + "writer is committing to this table now, delete that item (key tablePath=%s, "
                    + "fileName=%s) from DynamoDB table %s, then run the write again.",
                where, staged, target.getName(), item.version(), item.tableKey, item.fileName, tableName);
        }
        return String.format("%s, but %s could not be written from its staged file %s after %d attempts "
                + "(last error: %s). Run the write again once S3 accepts writes to %s; any read of the "
                + "table also publishes it.",
            where, target.getName(), staged, FINISH_ATTEMPTS, last, target.getParent());
    }

    private String describe(CommitItem item) {
        return String.format("item {tablePath=%s, fileName=%s, tempPath=%s} in DynamoDB table %s",
            item.tableKey, item.fileName, item.tempPath, tableName);
    }

    private static void pauseFor(long millis, CommitItem item) throws InterruptedIOException {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("Interrupted while publishing version " + item.version()
                + " of " + item.tableKey + " (pending in its DynamoDB item; the next read publishes it)");
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

        CommitItem(String tableKey, String fileName, String tempPath, boolean complete) {
            this.tableKey = tableKey;
            this.fileName = fileName;
            this.tempPath = tempPath;
            this.complete = complete;
        }

        long version() {
            return Long.parseLong(fileName.substring(0, fileName.indexOf('.')));
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
                    + "create it first with helpers.stores.storage.ensure_lock_table() (hash key "
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
                    + "tablePath and range key fileName (helpers.stores.storage.ensure_lock_table()).",
                tableName, where, schema));
        }
        LOG.info("DynamoDB table {} at {} is {}; commit items expire {} s after completion",
            tableName, where, table.tableStatusAsString(), ttlSeconds);
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
}
