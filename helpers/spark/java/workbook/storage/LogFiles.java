package workbook.storage;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.regex.Pattern;

import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The files and paths of a Delta log, for {@link EndpointS3DynamoDBLogStore}. */
final class LogFiles {

    private static final Logger LOG = LoggerFactory.getLogger(EndpointS3DynamoDBLogStore.class);

    static final String LOG_DIR = "_delta_log";
    static final String STAGING_DIR = ".tmp";
    private static final Pattern COMMIT_FILE = Pattern.compile("\\d+\\.json");

    private LogFiles() {
    }

    /** Write one line per action, each ended by a newline; a failed write leaves no file. */
    static void writeLines(FileSystem fs, Path path, Iterator<String> lines,
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
    static void copyNew(FileSystem fs, Path src, Path dst) throws IOException {
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
    static void discard(OutputStream out, Path path) {
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

    static boolean isCommitFile(Path path) {
        return COMMIT_FILE.matcher(path.getName()).matches()
            && path.getParent() != null && LOG_DIR.equals(path.getParent().getName());
    }

    static String commitFileName(long version) {
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

    static boolean existsQuietly(FileSystem fs, Path path) {
        try {
            return fs.exists(path);
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }
}
