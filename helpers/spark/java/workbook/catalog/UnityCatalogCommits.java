package workbook.catalog;

import io.delta.storage.commit.CommitCoordinatorClient;
import io.delta.storage.commit.uccommitcoordinator.UCClient;
import io.delta.storage.commit.uccommitcoordinator.UCCommitCoordinatorClient;
import java.lang.reflect.Method;
import java.util.HashMap;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogTableType$;
import org.apache.spark.sql.catalyst.catalog.SessionCatalog;
import org.apache.spark.sql.delta.coordinatedcommits.CatalogOwnedCommitCoordinatorBuilder;
import org.apache.spark.sql.delta.coordinatedcommits.CatalogOwnedCommitCoordinatorProvider;
import org.apache.spark.sql.delta.coordinatedcommits.UCTokenBasedRestClientFactory;
import scala.Function1;
import scala.Option;
import scala.runtime.BoxedUnit;

/**
 * Lets Delta Spark commit catalog-managed tables of the session catalog ({@code spark_catalog})
 * through a Unity Catalog server's Delta REST API, without Unity Catalog's Spark connector.
 *
 * <p>Delta Spark 4.4 finds a catalog-managed table's commit coordinator by asking
 * {@code CatalogOwnedCommitCoordinatorProvider} for a builder registered under the table's
 * catalog name; only when none is registered and the catalog is the connector's
 * {@code io.unitycatalog.spark.UCSingleCatalog} does it build one from that catalog's settings.
 * This class is the registered builder for a session catalog that is Delta's own
 * {@code DeltaCatalog}: it builds Delta's own {@code UCCommitCoordinatorClient} over Delta's own
 * REST client ({@code UCTokenBasedRestClientFactory}, the Delta v1 API), at the URI in
 * {@value #URI_KEY}. Nothing in a commit's path is ours: staging, the catalog's ratification and
 * publishing are Delta's code and the server's.
 *
 * <p>Used as a session extension, so a plain configuration turns it on:
 * {@code spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension,workbook.catalog.UnityCatalogCommits}
 * and {@code spark.workbook.unityCatalog.uri=http://127.0.0.1:PORT}.
 */
public final class UnityCatalogCommits
        implements Function1<SparkSessionExtensions, BoxedUnit>, CatalogOwnedCommitCoordinatorBuilder {

    public static final String URI_KEY = "spark.workbook.unityCatalog.uri";
    public static final String TOKEN_KEY = "spark.workbook.unityCatalog.token";
    public static final String CATALOG = "spark_catalog";

    private CommitCoordinatorClient client;
    private String clientUri;

    /** The session extension's entry point: registers the builder once per JVM. */
    @Override
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        register();
        return BoxedUnit.UNIT;
    }

    /** Register a builder for {@value #CATALOG} unless one is registered already (JVM-wide). */
    public static synchronized void register() {
        if (CatalogOwnedCommitCoordinatorProvider.getBuilder(CATALOG).isEmpty()) {
            CatalogOwnedCommitCoordinatorProvider.registerBuilder(CATALOG, new UnityCatalogCommits());
        }
    }

    @Override
    public String getName() {
        return "unity-catalog";
    }

    @Override
    public CommitCoordinatorClient build(SparkSession spark, scala.collection.immutable.Map<String, String> conf) {
        return buildForCatalog(spark, CATALOG);
    }

    @Override
    public synchronized CommitCoordinatorClient buildForCatalog(SparkSession spark, String catalogName) {
        if (!spark.conf().contains(URI_KEY)) {
            throw new IllegalStateException("Set " + URI_KEY + " to the Unity Catalog server's root URI "
                    + "(e.g. http://127.0.0.1:8181) to commit to catalog-managed tables of " + CATALOG + ".");
        }
        String uri = spark.conf().get(URI_KEY);
        if (client == null || !uri.equals(clientUri)) {  // one client per server, made again if the setting changes
            Map<String, String> settings = new HashMap<>();
            settings.put("uri", uri);
            // Delta's REST client requires a token; a server in anonymous mode ignores its value
            settings.put("token", spark.conf().get(TOKEN_KEY, "anonymous"));
            UCClient rest = UCTokenBasedRestClientFactory.createUCClient(settings);
            client = new UCCommitCoordinatorClient(new HashMap<>(), rest);
            clientUri = uri;
        }
        return client;
    }

    /**
     * Name an existing catalog-managed table in this driver's session catalog, which is in memory and
     * private to the driver. {@code CREATE TABLE ... USING delta LOCATION} cannot do it: Delta reads
     * the table at that path first, and refuses path-based access to a catalog-managed table. So the
     * name is made as a Parquet table of {@code columns} at {@code location} (Spark reads nothing
     * there), then its provider is set to {@code delta}: what the driver that created the table holds.
     * Unity Catalog's Spark connector reads names from the catalog instead; the commits go through the
     * catalog either way. The name is an EXTERNAL table; {@link #nameTable(SparkSession, String,
     * String, String, String, boolean)} can make it MANAGED.
     */
    public static void nameTable(SparkSession spark, String database, String table, String columns, String location)
            throws Exception {
        nameTable(spark, database, table, columns, location, false);
    }

    /**
     * As {@link #nameTable(SparkSession, String, String, String, String)}, but with {@code managed}
     * the name is a MANAGED table, as the connector's catalog names a catalog-managed table (Delta
     * 4.4.0's VACUUM asserts it). Spark's in-memory catalog deletes a MANAGED table's folder when its
     * name is dropped: {@link #forgetTable} makes the name EXTERNAL first.
     */
    public static void nameTable(
            SparkSession spark, String database, String table, String columns, String location, boolean managed)
            throws Exception {
        SessionCatalog catalog = spark.sessionState().catalog();
        TableIdentifier id = TableIdentifier.apply(table, Option.apply(database));
        if (catalog.tableExists(id)) {
            return;
        }
        spark.sql("CREATE TABLE " + database + "." + table + " (" + columns + ") USING parquet LOCATION '"
                + location.replace("'", "\\'") + "'");
        CatalogTable named = copied(catalog.getTableMetadata(id), PROVIDER_FIELD, Option.apply("delta"));
        if (managed) {
            named = copied(named, TABLE_TYPE_FIELD, CatalogTableType$.MODULE$.MANAGED());
        }
        catalog.dropTable(id, false, false);  // an external table: its files stay
        catalog.createTable(named, false, false);
    }

    /** Drop the name {@code database.table} from this driver's session catalog; the table's files stay. */
    public static void forgetTable(SparkSession spark, String database, String table) throws Exception {
        SessionCatalog catalog = spark.sessionState().catalog();
        TableIdentifier id = TableIdentifier.apply(table, Option.apply(database));
        if (catalog.tableExists(id)) {
            CatalogTable named = catalog.getTableMetadata(id);
            if (named.tableType().equals(CatalogTableType$.MODULE$.MANAGED())) {  // else the drop deletes its files
                catalog.alterTable(copied(named, TABLE_TYPE_FIELD, CatalogTableType$.MODULE$.EXTERNAL()));
            }
        }
        catalog.dropTable(id, true, false);
    }

    /** {@code table} with its case class field number {@code field} (from 0) set to {@code value}. */
    private static CatalogTable copied(CatalogTable table, int field, Object value) throws Exception {
        Method copy = null;
        for (Method method : CatalogTable.class.getMethods()) {
            if (method.getName().equals("copy")) {
                copy = method;
            }
        }
        Object[] fields = new Object[copy.getParameterCount()];
        for (int i = 0; i < fields.length; i++) {  // every field as it is (a case class's copy defaults) ...
            fields[i] = CatalogTable.class.getMethod("copy$default$" + (i + 1)).invoke(table);
        }
        if (!CatalogTable.class.getMethod(FIELD_NAMES[field]).invoke(table).equals(fields[field])) {
            throw new IllegalStateException("CatalogTable's field " + (field + 1) + " is not its " + FIELD_NAMES[field]
                    + " in this Spark");
        }
        fields[field] = value;  // ... but this one
        return (CatalogTable) copy.invoke(table, fields);
    }

    private static final String[] FIELD_NAMES = {"identifier", "tableType", "storage", "schema", "provider"};
    private static final int TABLE_TYPE_FIELD = 1;
    private static final int PROVIDER_FIELD = 4;
}
