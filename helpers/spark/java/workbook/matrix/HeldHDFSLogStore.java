package workbook.matrix;

import java.io.IOException;
import java.util.Iterator;

import io.delta.storage.HDFSLogStore;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

/**
 * Delta's log store for local and HDFS paths, whose commit writes wait at {@link CommitHold} while
 * it is armed (the conflict matrix sets it with {@code spark.delta.logStore.file.impl}).
 * Everything else is {@link HDFSLogStore}'s own.
 */
public class HeldHDFSLogStore extends HDFSLogStore {

    public HeldHDFSLogStore(Configuration hadoopConf) {
        super(hadoopConf);
    }

    @Override
    public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration hadoopConf)
            throws IOException {
        CommitHold.pass(path);
        super.write(path, actions, overwrite, hadoopConf);
    }
}
