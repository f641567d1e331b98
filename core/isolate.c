/* isolate.c — run a function in a forked child with a time limit (see
 * isolate.h). Used by `passlab-cli conformance` (one child per test, --jobs
 * at once) and by the pass fuzzer (one child per trial).
 *
 * The time limit is an alarm set in the child: SIGALRM's default action
 * ends it, and the parent tells a timeout from a crash by that signal.
 */
#define G_LOG_DOMAIN "passlab"
#include "isolate.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "passlab-types.h"

struct _PlIsolated {
  pid_t pid;
  int   fd;   /* read end of the child's pipe */
};

bool
pl_isolated_write (int fd, const void *data, size_t len)
{
  const char *p = data;
  while (len > 0)
    {
      ssize_t n = write (fd, p, len);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return false;
      p += n;
      len -= (size_t) n;
    }
  return true;
}

G_GNUC_NORETURN static void
child_main (PlIsolatedFunc func, gpointer data, unsigned timeout_s, int fd)
{
  /* A crash is expected here now and then: no core files. */
  struct rlimit no_core = { 0, 0 };
  setrlimit (RLIMIT_CORE, &no_core);
  signal (SIGALRM, SIG_DFL);
  alarm (timeout_s);
  bool ok = func (fd, data);
  alarm (0);
  _exit (ok ? 0 : 3);
}

PlIsolated *
pl_isolated_start (PlIsolatedFunc func, gpointer data, unsigned timeout_s, GError **error)
{
  g_return_val_if_fail (func != NULL, NULL);

  int fds[2];
  if (pipe (fds) != 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "pipe: %s", g_strerror (errno));
      return NULL;
    }
  /* What stdio holds would otherwise be written twice, once by the child. */
  fflush (stdout);
  fflush (stderr);
  pid_t pid = fork ();
  if (pid < 0)
    {
      close (fds[0]);
      close (fds[1]);
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "fork: %s", g_strerror (errno));
      return NULL;
    }
  if (pid == 0)
    {
      close (fds[0]);
      child_main (func, data, timeout_s, fds[1]);
    }
  close (fds[1]);
  PlIsolated *child = g_new (PlIsolated, 1);
  child->pid = pid;
  child->fd = fds[0];
  return child;
}

GBytes *
pl_isolated_finish (PlIsolated *child, PlIsolatedStatus *status)
{
  g_return_val_if_fail (child != NULL && status != NULL, NULL);

  /* Read to EOF before reaping, so the child never blocks on writing. */
  GByteArray *buf = g_byte_array_new ();
  guint8 chunk[4096];
  for (;;)
    {
      ssize_t n = read (child->fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      g_byte_array_append (buf, chunk, (guint) n);
    }
  close (child->fd);

  int wstatus = 0;
  while (waitpid (child->pid, &wstatus, 0) < 0 && errno == EINTR)
    ;
  g_free (child);

  if (WIFSIGNALED (wstatus) && WTERMSIG (wstatus) == SIGALRM)
    *status = (PlIsolatedStatus) { .end = PL_ISOLATED_TIMED_OUT };
  else if (WIFSIGNALED (wstatus))
    *status = (PlIsolatedStatus) { .end = PL_ISOLATED_SIGNALED, .signal = WTERMSIG (wstatus) };
  else
    *status = (PlIsolatedStatus) { .end = PL_ISOLATED_EXITED,
                                   .exit_code = WIFEXITED (wstatus) ? WEXITSTATUS (wstatus) : -1 };
  return g_byte_array_free_to_bytes (buf);
}

bool
pl_run_isolated (PlIsolatedFunc func, gpointer data, unsigned timeout_s, GBytes **result,
                 PlIsolatedStatus *status, GError **error)
{
  g_return_val_if_fail (result != NULL && status != NULL, false);

  PlIsolated *child = pl_isolated_start (func, data, timeout_s, error);
  if (child == NULL)
    return false;
  *result = pl_isolated_finish (child, status);
  return true;
}

char *
pl_isolated_status_describe (const PlIsolatedStatus *status, unsigned timeout_s)
{
  switch (status->end)
    {
    case PL_ISOLATED_TIMED_OUT:
      return g_strdup_printf ("timed out after %u s", timeout_s);
    case PL_ISOLATED_SIGNALED:
      return g_strdup_printf ("crashed: signal %d (%s)", status->signal, g_strsignal (status->signal));
    case PL_ISOLATED_EXITED:
    default:
      return g_strdup_printf ("exited with status %d", status->exit_code);
    }
}
