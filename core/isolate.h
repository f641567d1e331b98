/* isolate.h — run a function in a forked child with a time limit, so that
 * a crash or a hang in it cannot take the caller down.
 *
 * The child inherits everything through fork (graphs, registries), runs
 * func with the write end of a pipe, and exits; the parent reads the pipe
 * to its end, reaps the child and says how it ended. What func writes is
 * the caller's own format; pl_isolated_write writes it whole.
 *
 * Several children may run at once (pl_isolated_start, then
 * pl_isolated_finish on each, in any order): the parent reads one child's
 * pipe at a time, so a child must write no more than the pipe's buffer
 * holds (64 KiB on Linux) or it waits until the parent reaches it.
 * pl_run_isolated is start and finish in one call.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <glib.h>

G_BEGIN_DECLS

/* Runs in the child; writes its result to fd. Returning false (a write
 * failed) makes the child exit with status 3, true with status 0. */
typedef bool (*PlIsolatedFunc) (int fd, gpointer data);

typedef enum {
  PL_ISOLATED_EXITED,     /* exit_code is set: 0 when func returned true */
  PL_ISOLATED_SIGNALED,   /* signal is set: the child crashed */
  PL_ISOLATED_TIMED_OUT,  /* the child ran past its time limit */
} PlIsolatedEnd;

typedef struct {
  PlIsolatedEnd end;
  int           exit_code;   /* PL_ISOLATED_EXITED only */
  int           signal;      /* PL_ISOLATED_SIGNALED only */
} PlIsolatedStatus;

/* A running child; pl_isolated_finish frees it. */
typedef struct _PlIsolated PlIsolated;

/* Forks a child that runs func (data) with an alarm of timeout_s seconds
 * (0: none) and no core files. NULL with error (PL_ERROR_IO) if pipe or
 * fork fails. */
PlIsolated *pl_isolated_start  (PlIsolatedFunc func, gpointer data, unsigned timeout_s, GError **error);

/* Reads all the child wrote, waits for it to end, fills status and frees
 * child. Returns what the child wrote (possibly empty, never NULL). */
GBytes     *pl_isolated_finish (PlIsolated *child, PlIsolatedStatus *status);

/* pl_isolated_start and pl_isolated_finish in one call. */
bool        pl_run_isolated    (PlIsolatedFunc func, gpointer data, unsigned timeout_s, GBytes **result,
                                PlIsolatedStatus *status, GError **error);

/* How the child ended, in words: "timed out after 20 s", "crashed: signal
 * 11 (Segmentation fault)", "exited with status 3". Free with g_free. */
char       *pl_isolated_status_describe (const PlIsolatedStatus *status, unsigned timeout_s);

/* Writes all of data to fd, retrying on EINTR; false if a write fails. */
bool        pl_isolated_write  (int fd, const void *data, size_t len);

G_END_DECLS
