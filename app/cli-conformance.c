/* cli-conformance.c — `passlab-cli conformance`: runs ONNX backend test
 * folders with the reference interpreter, or (--backend cpu|cuda, after
 * --passes) compiled to a backend's kernels, and reports PASS / FAIL / SKIP.
 * On a backend, a test whose every node ran the reference implementation
 * (an op without a generated kernel) is not a test of the backend: it is
 * counted apart ("all fallback").
 *
 * Each test runs in a forked child with a time limit (core/isolate.h), so
 * a crash or a hang in one op becomes a FAIL line ("crashed: signal 11",
 * "timed out") and the run goes on. Children run --jobs at a time; results
 * are printed in test order. A child sends its result back over a pipe as
 * a fixed header and a message of at most MAX_MESSAGE bytes, which fits the
 * pipe's buffer, so a child never blocks on writing while the parent waits
 * on another.
 */
#define G_LOG_DOMAIN "passlab"

#include "cli.h"

#include <stdio.h>
#include <string.h>

#include "cli-exec.h"
#include "conformance.h"
#include "isolate.h"
#include "pass-manager.h"

#define MAX_MESSAGE 4000
#define DEFAULT_TIMEOUT_S 20

typedef struct {
  char                *name;    /* the folder's base name: "test_abs" */
  char                *dir;
  PlIsolated          *child;   /* while it runs */
  PlConformanceResult  result;
} Test;

/* What a child writes: this header, then message_len bytes. */
typedef struct {
  int    status;
  int    message_len;
  double worst;
  double seconds;
  int    kernels, fallbacks;
} ResultHeader;

/* How the children run a test: the interpreter (backend reference), or the
 * graph after passes, compiled for backend. */
typedef struct {
  PlBackend   backend;
  const char *passes;
  char       *cache_dir;
  bool        int_constants;   /* integer inputs become constants of the test's data */
} Runner;

static Runner runner = { PL_BACKEND_REFERENCE, NULL, NULL, false };

/* A copy of g whose integer inputs (pads, starts, axes, shapes, indices:
 * what ONNX's tests pass as inputs where exported models hold constants)
 * are constants holding the test's data, named as before; *kept: the
 * inputs that stay, in order (borrowed from inputs; g_free the array). */
static PlGraph *
bind_int_inputs (const PlGraph *g, PlTensor **inputs, PlTensor ***kept)
{
  PlGraph *b = pl_graph_copy (g);
  *kept = g_new0 (PlTensor *, g->inputs->len + 1);
  int n_kept = 0;
  g_autoptr (GPtrArray) bound = g_ptr_array_new (), constants = g_ptr_array_new ();
  for (guint i = 0; i < b->inputs->len; i++)
    {
      PlValue *in = g_ptr_array_index (b->inputs, i);
      if (!pl_dtype_is_int (in->dtype) || pl_value_is_output (in) || inputs[i]->dtype != in->dtype)
        {
          (*kept)[n_kept++] = inputs[i];
          continue;
        }
      g_autofree char *name = pl_graph_unique_name (b, in->name);
      PlValue *c = pl_graph_add_constant (b, name, inputs[i], NULL);
      pl_value_replace_uses (in, c);
      g_ptr_array_add (bound, in);
      g_ptr_array_add (constants, c);
    }
  for (guint i = 0; i < bound->len; i++)
    {
      PlValue *in = g_ptr_array_index (bound, i);
      g_autofree char *name = g_strdup (in->name);
      pl_graph_remove_value (b, in);
      pl_value_rename (g_ptr_array_index (constants, i), name, NULL);
    }
  return b;
}

static PlTensor **
run_on_backend (const PlGraph *g, PlTensor **inputs, gpointer data, PlConformanceResult *result, GError **error)
{
  const Runner *r = data;
  g_autoptr (PlGraph) bound = NULL;
  g_autofree PlTensor **kept = NULL;
  if (r->int_constants)
    {
      bound = bind_int_inputs (g, inputs, &kept);
      g = bound;
      inputs = kept;
    }
  g_autoptr (PlGraph) opt = pl_cli_apply_passes (g, r->passes, NULL, error);
  if (!opt)
    return NULL;
  g_autoptr (PlRunReport) report = NULL;   /* (one thread: --jobs tests run at once) */
  PlTensor **out = pl_cli_run_once (opt, r->backend, r->cache_dir, inputs, &report, error);
  if (report)
    {
      result->kernels = report->n_kernels;
      result->fallbacks = 0;
      for (int i = 0; i < report->n_kernels; i++)
        result->fallbacks += report->kernels[i].fallback;
    }
  return out;
}

static void
test_free (gpointer data)
{
  Test *t = data;
  g_free (t->name);
  g_free (t->dir);
  pl_conformance_result_clear (&t->result);
  g_free (t);
}

static bool
is_test_dir (const char *dir)
{
  g_autofree char *model = g_build_filename (dir, "model.onnx", NULL);
  return g_file_test (model, G_FILE_TEST_IS_REGULAR);
}

static Test *
test_new (const char *dir)
{
  Test *t = g_new0 (Test, 1);
  t->dir = g_strdup (dir);
  t->name = g_path_get_basename (dir);
  return t;
}

static int
compare_tests (gconstpointer a, gconstpointer b)
{
  const Test *x = *(Test *const *) a, *y = *(Test *const *) b;
  return strcmp (x->name, y->name);
}

/* Adds dir (a test folder) or its test subfolders, sorted, to tests. */
static bool
collect_tests (const char *dir, GPtrArray *tests, GError **error)
{
  if (!g_file_test (dir, G_FILE_TEST_IS_DIR))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "%s: not a directory", dir);
      return false;
    }
  if (is_test_dir (dir))
    {
      g_ptr_array_add (tests, test_new (dir));
      return true;
    }
  g_autoptr (GDir) d = g_dir_open (dir, 0, error);
  if (d == NULL)
    return false;
  g_autoptr (GPtrArray) found = g_ptr_array_new ();
  const char *entry;
  while ((entry = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *sub = g_build_filename (dir, entry, NULL);
      if (is_test_dir (sub))
        g_ptr_array_add (found, test_new (sub));
    }
  if (found->len == 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO,
                   "%s: no tests (neither a test folder with model.onnx nor a folder of them)", dir);
      return false;
    }
  g_ptr_array_sort (found, compare_tests);
  for (guint i = 0; i < found->len; i++)
    g_ptr_array_add (tests, g_ptr_array_index (found, i));
  return true;
}

/* --- running one test in a child --------------------------------------------- */

/* The child: runs the test and writes a ResultHeader and the message. */
static bool
run_child (int fd, gpointer data)
{
  const Test *t = data;
  PlConformanceResult r = { 0 };
  if (runner.backend == PL_BACKEND_REFERENCE && !runner.passes)
    pl_conformance_run_dir (t->dir, &r);
  else
    pl_conformance_run_dir_with (t->dir, run_on_backend, &runner, &r);
  size_t len = r.message != NULL ? MIN (strlen (r.message), MAX_MESSAGE) : 0;
  ResultHeader h = { (int) r.status, (int) len, r.worst, r.seconds, r.kernels, r.fallbacks };
  return pl_isolated_write (fd, &h, sizeof h) && pl_isolated_write (fd, r.message, len);
}

static bool
start_test (Test *t, unsigned timeout_s, GError **error)
{
  t->child = pl_isolated_start (run_child, t, timeout_s, error);
  return t->child != NULL;
}

static void
set_result (Test *t, PlConformanceStatus status, char *message)
{
  pl_conformance_result_clear (&t->result);
  t->result.status = status;
  t->result.message = message;
}

/* Waits for the child's result; a death by signal or a timeout is a FAIL. */
static void
finish_test (Test *t, unsigned timeout_s)
{
  PlIsolatedStatus status;
  g_autoptr (GBytes) bytes = pl_isolated_finish (g_steal_pointer (&t->child), &status);
  gsize size;
  const guint8 *data = g_bytes_get_data (bytes, &size);

  ResultHeader h;
  if (status.end != PL_ISOLATED_EXITED)
    set_result (t, PL_CONFORMANCE_FAIL, pl_isolated_status_describe (&status, timeout_s));
  else if (size < sizeof h)
    set_result (t, PL_CONFORMANCE_FAIL, g_strdup_printf ("test process exited with status %d and no result",
                                                         status.exit_code));
  else
    {
      memcpy (&h, data, sizeof h);
      size_t len = MIN ((size_t) MAX (h.message_len, 0), size - sizeof h);
      char *message = len > 0 ? g_strndup ((const char *) data + sizeof h, len) : NULL;
      set_result (t, (PlConformanceStatus) h.status, message);
      t->result.worst = h.worst;
      t->result.seconds = h.seconds;
      t->result.kernels = h.kernels;
      t->result.fallbacks = h.fallbacks;
    }
}

/* One line per test; the message flattened to one line. */
static void
drop_log (const char *domain, GLogLevelFlags level, const char *message, gpointer data)
{
}

static void
print_result (const Test *t, bool quiet)
{
  const char *word = t->result.status == PL_CONFORMANCE_PASS ? "PASS"
                   : t->result.status == PL_CONFORMANCE_SKIP ? "SKIP" : "FAIL";
  if (quiet && t->result.status != PL_CONFORMANCE_FAIL)
    return;
  if (t->result.message == NULL || t->result.message[0] == '\0')
    {
      if (t->result.kernels > 0 && t->result.fallbacks == t->result.kernels)
        printf ("%s %s (all fallback)\n", word, t->name);
      else if (t->result.fallbacks > 0)
        printf ("%s %s (%d of %d kernels fallback)\n", word, t->name, t->result.fallbacks, t->result.kernels);
      else
        printf ("%s %s\n", word, t->name);
      return;
    }
  g_autofree char *msg = g_strdup (t->result.message);
  g_strdelimit (msg, "\r\n\t", ' ');
  printf ("%s %s: %s\n", word, t->name, msg);
}

/* Runs tests, up to jobs at a time, reporting in order. */
static bool
run_tests (GPtrArray *tests, unsigned jobs, unsigned timeout_s, bool quiet, GError **error)
{
  guint next_start = 0;
  for (guint next_report = 0; next_report < tests->len; next_report++)
    {
      while (next_start < tests->len && next_start < next_report + jobs)
        if (!start_test (g_ptr_array_index (tests, next_start++), timeout_s, error))
          {
            /* Reap what runs before giving up. */
            for (guint i = next_report; i + 1 < next_start; i++)
              finish_test (g_ptr_array_index (tests, i), timeout_s);
            return false;
          }
      Test *t = g_ptr_array_index (tests, next_report);
      finish_test (t, timeout_s);
      print_result (t, quiet);
      fflush (stdout);
    }
  return true;
}

/* --- expectations ---------------------------------------------------------------- */

/* Test names from an --expect file: one a line, '#' starts a comment. */
static GPtrArray *
read_expect (const char *path, GError **error)
{
  g_autofree char *text = NULL;
  if (!g_file_get_contents (path, &text, NULL, error))
    return NULL;
  GPtrArray *names = g_ptr_array_new_with_free_func (g_free);
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  for (int i = 0; lines[i] != NULL; i++)
    {
      char *hash = strchr (lines[i], '#');
      if (hash != NULL)
        *hash = '\0';
      g_strstrip (lines[i]);
      if (lines[i][0] != '\0')
        g_ptr_array_add (names, g_strdup (lines[i]));
    }
  return names;
}

/* Whether t passed running generated or library kernels only. */
static bool
passed_generated (const Test *t)
{
  return t->result.status == PL_CONFORMANCE_PASS && t->result.kernels > 0 && t->result.fallbacks == 0;
}

/* Prints every expected test that did not pass (generated: or ran a
 * reference fallback); true if all passed. */
static bool
check_expect (GPtrArray *expected, GPtrArray *tests, bool generated)
{
  g_autoptr (GHashTable) by_name = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint i = 0; i < tests->len; i++)
    {
      Test *t = g_ptr_array_index (tests, i);
      g_hash_table_insert (by_name, t->name, t);
    }
  guint missing = 0;
  for (guint i = 0; i < expected->len; i++)
    {
      const char *name = g_ptr_array_index (expected, i);
      const Test *t = g_hash_table_lookup (by_name, name);
      if (t != NULL && (generated ? passed_generated (t) : t->result.status == PL_CONFORMANCE_PASS))
        continue;
      missing++;
      const char *what = generated ? "pass on generated or library kernels" : "pass";
      if (t == NULL)
        fprintf (stderr, "passlab-cli: expected to %s: %s (not run)\n", what, name);
      else
        fprintf (stderr, "passlab-cli: expected to %s: %s (%s)\n", what, name,
                 t->result.status == PL_CONFORMANCE_SKIP ? "SKIP"
                 : t->result.status != PL_CONFORMANCE_PASS ? "FAIL"
                 : "a kernel ran the reference fallback");
    }
  if (missing > 0)
    fprintf (stderr, "passlab-cli: %u of %u expected tests did not %s\n", missing, expected->len,
             generated ? "pass on generated or library kernels" : "pass");
  return missing == 0;
}

static bool
write_expect (const char *path, GPtrArray *tests, bool generated, GError **error)
{
  GString *out = g_string_new (generated ? "# Tests that pass on generated or library kernels only (written by "
                                           "passlab-cli conformance --write-expect-generated)\n"
                                         : "# Tests that pass (written by passlab-cli conformance --write-expect)\n");
  for (guint i = 0; i < tests->len; i++)
    {
      const Test *t = g_ptr_array_index (tests, i);
      if (generated ? passed_generated (t) : t->result.status == PL_CONFORMANCE_PASS)
        g_string_append_printf (out, "%s\n", t->name);
    }
  bool ok = g_file_set_contents (path, out->str, (gssize) out->len, error);
  g_string_free (out, TRUE);
  return ok;
}

int
pl_cli_conformance (int argc, char **argv)
{
  g_autofree char *expect_path = NULL;
  g_autofree char *write_path = NULL;
  g_autofree char *expect_generated_path = NULL, *write_generated_path = NULL;
  gboolean quiet = FALSE, int_constants = FALSE;
  int timeout_s = DEFAULT_TIMEOUT_S;
  int jobs = (int) g_get_num_processors ();
  g_autofree char *backend_name = NULL, *passes = NULL, *cache_dir = NULL;
  const GOptionEntry entries[] = {
    { "backend", 'b', 0, G_OPTION_ARG_STRING, &backend_name,
      "reference (default), cpu or cuda: compile each test's graph for this backend", "B" },
    { "passes", 'p', 0, G_OPTION_ARG_STRING, &passes, "Apply this pass pipeline to each graph first", "A,B,C" },
    { "cache-dir", 0, 0, G_OPTION_ARG_FILENAME, &cache_dir,
      "cpu: where compiled kernels are cached (default $XDG_CACHE_HOME/passlab/kernels)", "DIR" },
    { "expect", 'e', 0, G_OPTION_ARG_FILENAME, &expect_path,
      "Fail (exit 1) unless every test listed in LIST (one a line, # comments) passes", "LIST" },
    { "write-expect", 'w', 0, G_OPTION_ARG_FILENAME, &write_path,
      "Write the names of the tests that passed to FILE", "FILE" },
    { "expect-generated", 0, 0, G_OPTION_ARG_FILENAME, &expect_generated_path,
      "Fail (exit 1) unless every test listed in LIST passes with no kernel running the reference fallback", "LIST" },
    { "write-expect-generated", 0, 0, G_OPTION_ARG_FILENAME, &write_generated_path,
      "Write the names of the tests that passed with no kernel running the reference fallback to FILE", "FILE" },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet,
      "Print only failures and the summary", NULL },
    { "timeout", 't', 0, G_OPTION_ARG_INT, &timeout_s,
      "Seconds a test may run before it counts as failed (default 20)", "S" },
    { "int-inputs-as-constants", 0, 0, G_OPTION_ARG_NONE, &int_constants,
      "Make each test's integer inputs (pads, starts, axes, shapes, indices) constants holding its data "
      "before the passes, as exported models hold them, so a backend may generate the ops they parameterize",
      NULL },
    { "jobs", 'j', 0, G_OPTION_ARG_INT, &jobs,
      "Tests run at the same time (default: the number of processors)", "N" },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = pl_cli_context ("DIR...",
    "Runs ONNX backend tests with the reference interpreter, or with\n"
    "--backend compiled to that backend's kernels (after --passes). Each DIR is a\n"
    "test folder (model.onnx, test_data_set_N/) or a folder of them, e.g.\n"
    "/usr/share/libonnx-testdata/data/node. Prints PASS, FAIL or SKIP per test\n"
    "and a summary; each test runs in its own process, so a crash or a hang\n"
    "is reported as a failure. Exits 0 unless --expect names a test that did\n"
    "not pass, or --expect-generated one that did not pass on kernels alone.", entries);
  if (!pl_cli_parse (ctx, &argc, &argv))
    return 1;
  if (argc < 2)
    return pl_cli_fail ("missing DIR (see '%s --help')", argv[0]);
  if (timeout_s < 1)
    return pl_cli_fail ("--timeout must be >= 1");
  if (jobs < 1)
    return pl_cli_fail ("--jobs must be >= 1");
  if (backend_name && !pl_backend_from_name (backend_name, &runner.backend))
    return pl_cli_fail ("--backend: '%s' is none of reference, cpu, cuda", backend_name);
  g_autofree char *why = NULL;
  if (!pl_backend_available (runner.backend, &why))
    return pl_cli_fail ("the %s backend is not available: %s", pl_backend_name (runner.backend), why);
  runner.passes = passes && *passes ? passes : NULL;
  if (runner.passes)
    {
      g_autoptr (GError) bad = NULL;
      g_autoptr (PlPipeline) pipeline = pl_pipeline_parse (runner.passes, &bad);
      if (!pipeline)
        return pl_cli_fail ("--passes: %s", bad->message);
    }
  runner.cache_dir = cache_dir;
  runner.int_constants = int_constants;
  if (int_constants && runner.backend == PL_BACKEND_REFERENCE && !runner.passes)
    return pl_cli_fail ("--int-inputs-as-constants needs --backend or --passes");

  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) expected = NULL;
  if (expect_path != NULL && (expected = read_expect (expect_path, &error)) == NULL)
    return pl_cli_fail_error (error);
  g_autoptr (GPtrArray) expected_generated = NULL;
  if (expect_generated_path != NULL)
    {
      if (runner.backend == PL_BACKEND_REFERENCE)
        return pl_cli_fail ("--expect-generated needs --backend cpu or cuda");
      if ((expected_generated = read_expect (expect_generated_path, &error)) == NULL)
        return pl_cli_fail_error (error);
    }

  g_autoptr (GPtrArray) tests = g_ptr_array_new_with_free_func (test_free);
  for (int i = 1; i < argc; i++)
    if (!collect_tests (argv[i], tests, &error))
      return pl_cli_fail_error (error);

  /* Import notes (old opsets, unknown ops) are noise across a whole suite. */
  if (quiet)
    g_log_set_handler ("passlab", G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO | G_LOG_LEVEL_DEBUG, drop_log, NULL);

  gint64 start = g_get_monotonic_time ();
  if (!run_tests (tests, (unsigned) jobs, (unsigned) timeout_s, quiet, &error))
    return pl_cli_fail_error (error);
  double seconds = (g_get_monotonic_time () - start) / 1e6;

  guint counts[3] = { 0 }, all_fallback = 0;
  for (guint i = 0; i < tests->len; i++)
    {
      const Test *t = g_ptr_array_index (tests, i);
      counts[t->result.status == PL_CONFORMANCE_PASS ? 0
             : t->result.status == PL_CONFORMANCE_SKIP ? 2 : 1]++;
      all_fallback += t->result.status == PL_CONFORMANCE_PASS && t->result.kernels > 0 &&
                      t->result.fallbacks == t->result.kernels;
    }
  printf ("ran %u tests in %.1f s on %s%s%s%s\n", tests->len, seconds, pl_backend_name (runner.backend),
          runner.passes ? " after " : "", runner.passes ? runner.passes : "",
          runner.int_constants ? ", integer inputs as constants" : "");
  if (runner.backend != PL_BACKEND_REFERENCE)
    printf ("%u of the passed tests ran generated or library kernels; %u ran only the reference implementation "
            "(ops the backend does not generate)\n", counts[0] - all_fallback, all_fallback);
  printf ("%u passed, %u failed, %u skipped\n", counts[0], counts[1], counts[2]);
  fflush (stdout);

  if (write_path != NULL && !write_expect (write_path, tests, false, &error))
    return pl_cli_fail_error (error);
  if (write_generated_path != NULL && !write_expect (write_generated_path, tests, true, &error))
    return pl_cli_fail_error (error);
  bool ok = expected == NULL || check_expect (expected, tests, false);
  if (expected_generated != NULL && !check_expect (expected_generated, tests, true))
    ok = false;
  return ok ? 0 : 1;
}
