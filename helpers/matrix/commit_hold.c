/*
 * A one-shot hold on a delta-rs commit on local disk, for the conflict matrix
 * (helpers/matrix/commit_hold.py builds this file and loads it with LD_PRELOAD).
 *
 * delta-rs commits version N of a table on local disk by writing "_delta_log/N.json#1" and then
 * hard-linking it to "_delta_log/N.json" with linkat(2): the link fails if N.json exists, which is
 * how two writers never both take version N. Every deltalake release the workbook pins does this
 * (seen with strace: openat(... N.json#1, O_CREAT|O_EXCL) then linkat(... N.json#1, ... N.json)).
 *
 * This library defines linkat. Unless a hold is armed, it calls the C library's linkat and nothing
 * else. While a hold is armed for one table's log folder, the first linkat whose target is a commit
 * file of that folder (20 digits, ".json") waits until the hold is released: the writer has written
 * its data files and its commit's content, and stops at the very call that decides its version.
 * The other writer then commits, the hold is released, the held link fails (the file exists), and
 * delta-rs's own conflict checker decides. The order is the hold's, never a clock's; a hold never
 * released makes the held call fail (EIO) after MAX_HOLD_S, a bound against a hang only.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#define MAX_HOLD_S 300
#define LOG_DIR_MAX 4096

enum { IDLE, ARMED, HELD, DONE };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int state = IDLE;
static int released = 0;
static char log_dir[LOG_DIR_MAX];  /* "/abs/table/_delta_log/" */
static char held_file[64];

typedef int (*linkat_fn)(int, const char *, int, const char *, int);

static int is_commit_file(const char *name) {
    int digits = 0;
    while (name[digits] >= '0' && name[digits] <= '9') {
        digits++;
    }
    return digits == 20 && strcmp(name + digits, ".json") == 0;
}

static void deadline(struct timespec *when, long milliseconds) {
    clock_gettime(CLOCK_REALTIME, when);
    when->tv_sec += milliseconds / 1000;
    when->tv_nsec += (milliseconds % 1000) * 1000000L;
    if (when->tv_nsec >= 1000000000L) {
        when->tv_sec += 1;
        when->tv_nsec -= 1000000000L;
    }
}

/* Hold the next commit link into this log folder (an absolute path ending in "/_delta_log/"). */
int workbook_hold_arm(const char *folder) {
    if (strlen(folder) >= LOG_DIR_MAX) {
        return -1;
    }
    pthread_mutex_lock(&lock);
    strcpy(log_dir, folder);
    held_file[0] = '\0';
    released = 0;
    state = ARMED;
    pthread_mutex_unlock(&lock);
    return 0;
}

/* Wait until a commit is held (1), the hold was abandoned (2), or the timeout passed (0). */
int workbook_hold_await(long timeout_ms) {
    struct timespec when;
    int result;
    deadline(&when, timeout_ms);
    pthread_mutex_lock(&lock);
    while (state == ARMED) {
        if (pthread_cond_timedwait(&changed, &lock, &when) == ETIMEDOUT) {
            break;
        }
    }
    result = state == HELD ? 1 : (state == DONE ? 2 : 0);
    pthread_mutex_unlock(&lock);
    return result;
}

/* The name of the held commit file ("00000000000000000004.json"), or "" if none was held. */
const char *workbook_hold_file(void) {
    return held_file;
}

/* Let the held link go on; disarm. */
void workbook_hold_release(void) {
    pthread_mutex_lock(&lock);
    released = 1;
    state = DONE;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
}

/* The held writer ended (committed, failed, or never reached a commit): wake workbook_hold_await. */
void workbook_hold_abandon(void) {
    pthread_mutex_lock(&lock);
    if (state == ARMED) {
        state = DONE;
    }
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
}

int linkat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, int flags) {
    static linkat_fn real = NULL;
    if (real == NULL) {
        real = (linkat_fn)dlsym(RTLD_NEXT, "linkat");
        if (real == NULL) {
            errno = ENOSYS;
            return -1;
        }
    }
    if (newpath != NULL) {
        pthread_mutex_lock(&lock);
        size_t prefix = strlen(log_dir);
        if (state == ARMED && prefix > 0 && strncmp(newpath, log_dir, prefix) == 0
                && is_commit_file(newpath + prefix)) {
            struct timespec when;
            int timed_out = 0;
            strncpy(held_file, newpath + prefix, sizeof held_file - 1);
            state = HELD;
            pthread_cond_broadcast(&changed);
            deadline(&when, MAX_HOLD_S * 1000L);
            while (!released && !timed_out) {
                timed_out = pthread_cond_timedwait(&changed, &lock, &when) == ETIMEDOUT;
            }
            pthread_mutex_unlock(&lock);
            if (!released) {
                errno = EIO;
                return -1;
            }
        } else {
            pthread_mutex_unlock(&lock);
        }
    }
    return real(olddirfd, oldpath, newdirfd, newpath, flags);
}
