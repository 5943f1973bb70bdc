package workbook.matrix;

import java.io.IOException;

import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

/**
 * Hadoop's local file system, whose opening or creation of a data file waits at
 * {@link CommitHold#passData} while its table is armed at its data files (the conflict matrix sets it
 * with {@code spark.hadoop.fs.file.impl}): the held operation has read its snapshot from the log and
 * has neither read nor written a data file. Every other call, and every call while nothing is armed,
 * is {@link LocalFileSystem}'s own.
 */
public class HeldLocalFileSystem extends LocalFileSystem {

    @Override
    public FSDataInputStream open(Path f, int bufferSize) throws IOException {
        CommitHold.passData(makeQualified(f));
        return super.open(f, bufferSize);
    }

    @Override
    public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite, int bufferSize,
            short replication, long blockSize, Progressable progress) throws IOException {
        CommitHold.passData(makeQualified(f));
        return super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress);
    }

    @Override
    public FSDataOutputStream createNonRecursive(Path f, FsPermission permission, boolean overwrite,
            int bufferSize, short replication, long blockSize, Progressable progress) throws IOException {
        CommitHold.passData(makeQualified(f));
        return super.createNonRecursive(f, permission, overwrite, bufferSize, replication, blockSize, progress);
    }
}
