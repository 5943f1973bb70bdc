package workbook.storage;

import java.io.InterruptedIOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;

import org.apache.hadoop.fs.Path;

/**
 * A lock per path, for the threads of this JVM: one thread at a time writes or finishes a
 * given commit file. Other JVMs are kept apart by the conditional PutItem, not by this.
 */
final class PathGuard {
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
