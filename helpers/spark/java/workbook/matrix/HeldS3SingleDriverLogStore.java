package workbook.matrix;

import java.io.IOException;
import java.util.Iterator;

import io.delta.storage.S3SingleDriverLogStore;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

/**
 * Delta's default S3 log store, whose commit writes wait at {@link CommitHold} while it is armed
 * (the conflict matrix sets it with {@code spark.delta.logStore.s3a.impl}). The wait comes before
 * {@code super.write}, so before S3SingleDriverLogStore takes its per-path lock for the
 * "exists? then PUT" of the commit file: the other writer of the same driver is not queued behind
 * the held one. Everything else is {@link S3SingleDriverLogStore}'s own.
 */
public class HeldS3SingleDriverLogStore extends S3SingleDriverLogStore {

    public HeldS3SingleDriverLogStore(Configuration hadoopConf) {
        super(hadoopConf);
    }

    @Override
    public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration hadoopConf)
            throws IOException {
        CommitHold.pass(path);
        super.write(path, actions, overwrite, hadoopConf);
    }
}
