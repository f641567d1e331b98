/* cli-fuzz.c — `passlab-cli fuzz`: random graphs through a pass pipeline
 * with the numerical check after every step (passes/fuzz.h), and with
 * --backend the pipeline's result compiled and run on a backend against
 * the reference interpreter. Prints a line per failing seed, writes the
 * smallest failing graph of each to --out, and exits 1 if any seed failed. */
#define G_LOG_DOMAIN "passlab"

#include "cli.h"

#include <stdio.h>

#include "cli-exec.h"
#include "fuzz.h"
#include "interp.h"

typedef struct {
  PlBackend backend;
  char     *cache_dir;
} FuzzBackend;

/* The backend stage: the final graph compiled and run on the seed's inputs
 * against the interpreter on the generated graph (rtol 10 x tolerance, atol
 * tolerance: generated code rounds in f32 where the interpreter may not). */
static char *
backend_check (const PlGraph *generated, const PlGraph *final, guint32 seed, double tolerance, gpointer data)
{
  const FuzzBackend *b = data;
  g_autoptr (GError) error = NULL;
  PlTensor **in = pl_random_inputs (generated, seed, 1, &error);
  if (!in)
    return g_strdup_printf ("no inputs: %s", error->message);
  int n_in = (int) generated->inputs->len, n_out = (int) generated->outputs->len;
  char *differs = NULL;
  PlTensor **want = pl_interp_run (generated, in, NULL, &error);
  PlTensor **got = want ? pl_cli_run_once (final, b->backend, b->cache_dir, in, NULL, &error) : NULL;
  if (!got)
    differs = g_strdup_printf ("%s%s", !want ? "the reference failed: " : "", error->message);
  for (int k = 0; got && !differs && k < n_out; k++)
    {
      double worst = 0;
      if (!pl_tensor_allclose (got[k], want[k], 10 * tolerance, tolerance, &worst))
        {
          g_autofree char *a = pl_tensor_summary (got[k], 4), *w = pl_tensor_summary (want[k], 4);
          differs = g_strdup_printf ("output '%s' differs from the reference (%.3g times the tolerance): got %s, "
                                     "want %s", ((PlValue *) generated->outputs->pdata[k])->name, worst, a, w);
        }
    }
  if (got)
    pl_interp_free_outputs (got, n_out);
  if (want)
    pl_interp_free_outputs (want, n_out);
  pl_interp_free_outputs (in, n_in);
  return differs;
}

/* Also declared in cli.h (the command table's list). */
int pl_cli_fuzz (int argc, char **argv);

static void
print_failure (const PlFuzzFailure *f, gpointer user_data)
{
  g_autofree char *msg = g_strdup (f->message ? f->message : "");
  g_strdelimit (msg, "\r\n\t", ' ');
  printf ("FAIL seed %u: %s%s%s: %s", f->seed, pl_fuzz_kind_name (f->kind),
          !f->pass ? "" : g_str_has_prefix (f->pass, "backend ") ? " in " : " in pass ", f->pass ? f->pass : "", msg);
  if (f->path)
    printf (" (%d -> %d nodes: %s)", f->n_nodes, f->shrunk_nodes, f->path);
  printf ("\n");
  fflush (stdout);
}

int
pl_cli_fuzz (int argc, char **argv)
{
  int n_graphs = 100, n_nodes = 20, timeout_s = 60, max_rank = 4, max_dim = 5;
  gint64 seed = 1;
  g_autofree char *passes = NULL;
  g_autofree char *out_dir = NULL, *backend_name = NULL, *cache_dir = NULL;
  gboolean quiet = FALSE, no_shrink = FALSE;
  const GOptionEntry entries[] = {
    { "graphs", 'n', 0, G_OPTION_ARG_INT, &n_graphs, "Graphs to generate (default 100)", "N" },
    { "seed", 's', 0, G_OPTION_ARG_INT64, &seed, "Seed of the first graph; the others follow (default 1)", "S" },
    { "passes", 'p', 0, G_OPTION_ARG_STRING, &passes,
      "Pipeline to test, e.g. simplify,fuse-loops (default: every built-in pass)", "A,B,C" },
    { "nodes", 'k', 0, G_OPTION_ARG_INT, &n_nodes, "Op nodes per graph (default 20)", "K" },
    { "max-rank", 0, 0, G_OPTION_ARG_INT, &max_rank, "Largest rank of inputs and op outputs (default 4)", "R" },
    { "max-dim", 0, 0, G_OPTION_ARG_INT, &max_dim, "Largest dim of inputs and constants (default 5)", "D" },
    { "out", 'o', 0, G_OPTION_ARG_FILENAME, &out_dir,
      "Folder for fuzz-fail-SEED.graph, the smallest failing graph of each failure (default .)", "DIR" },
    { "timeout", 't', 0, G_OPTION_ARG_INT, &timeout_s, "Seconds one graph may take (default 60)", "S" },
    { "no-shrink", 0, 0, G_OPTION_ARG_NONE, &no_shrink, "Write failing graphs as generated", NULL },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "Print only failures and the summary", NULL },
    { "backend", 'b', 0, G_OPTION_ARG_STRING, &backend_name,
      "cpu or cuda: also compile the pipeline's result for this backend and compare it with the reference", "B" },
    { "cache-dir", 0, 0, G_OPTION_ARG_FILENAME, &cache_dir, "cpu: where compiled kernels are cached", "DIR" },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = pl_cli_context ("",
    "Builds random well-formed graphs (broadcasting elementwise ops, reshapes,\n"
    "reductions, matmuls, concat/slice, gathers, scatters, CumSum, TopK, Einsum\n"
    "and the idioms the passes rewrite), runs\n"
    "the pipeline on each with the numerical check after every step, and\n"
    "reports every seed where a pass changed the results, broke the graph,\n"
    "failed, crashed or hung. Each graph runs in its own process. The smallest\n"
    "failing graph found for a seed is written to DIR/fuzz-fail-SEED.graph.\n"
    "Exits 1 if any seed failed.", entries);
  if (!pl_cli_parse (ctx, &argc, &argv))
    return 1;
  if (argc > 1)
    return pl_cli_fail ("unexpected argument '%s' (see '%s --help')", argv[1], argv[0]);
  if (n_graphs < 0)
    return pl_cli_fail ("--graphs must be >= 0");
  if (n_nodes < 1)
    return pl_cli_fail ("--nodes must be >= 1");
  if (max_rank < 1 || max_rank > PL_MAX_RANK)
    return pl_cli_fail ("--max-rank must be in 1..%d", PL_MAX_RANK);
  if (max_dim < 1)
    return pl_cli_fail ("--max-dim must be >= 1");
  if (timeout_s < 1)
    return pl_cli_fail ("--timeout must be >= 1");
  if (seed < 0 || seed > G_MAXUINT32)
    return pl_cli_fail ("--seed must be in 0..%u", G_MAXUINT32);

  g_autoptr (GError) error = NULL;
  pl_passes_init ();
  if (passes)
    {
      g_autoptr (PlPipeline) check = pl_pipeline_parse (passes, &error);
      if (!check)
        return pl_cli_fail_error (error);
    }

  FuzzBackend fb = { PL_BACKEND_REFERENCE, cache_dir };
  if (backend_name)
    {
      if (!pl_backend_from_name (backend_name, &fb.backend) || fb.backend == PL_BACKEND_REFERENCE)
        return pl_cli_fail ("--backend: '%s' is neither cpu nor cuda", backend_name);
      g_autofree char *why = NULL;
      if (!pl_backend_available (fb.backend, &why))
        return pl_cli_fail ("the %s backend is not available: %s", pl_backend_name (fb.backend), why);
    }

  PlFuzzOptions o;
  pl_fuzz_options_init (&o);
  if (backend_name)
    {
      o.backend = backend_check;
      o.backend_name = pl_backend_name (fb.backend);
      o.backend_data = &fb;
    }
  o.seed = (guint32) seed;
  o.n_graphs = n_graphs;
  o.graph.n_nodes = n_nodes;
  o.graph.max_rank = max_rank;
  o.graph.max_dim = max_dim;
  o.passes = passes;
  o.out_dir = out_dir ? out_dir : ".";
  o.shrink = !no_shrink;
  o.timeout_s = (unsigned) timeout_s;
  o.on_failure = print_failure;
  if (!quiet)
    {
      printf ("fuzzing %d graphs of %d nodes (seeds %" G_GINT64_FORMAT "..%" G_GINT64_FORMAT ") through %s%s%s\n",
              n_graphs, n_nodes, seed, seed + n_graphs - 1, passes ? passes : "every built-in pass",
              backend_name ? ", then on the backend " : "", backend_name ? pl_backend_name (fb.backend) : "");
      fflush (stdout);
    }

  PlFuzzResult r;
  bool ok = pl_fuzz_run (&o, &r, &error);
  if (ok || r.n_graphs > 0)
    {
      if (!quiet && r.n_rounding > 0)
        printf ("(%d graphs failed the f32 check only by rounding: they agree in f64)\n", r.n_rounding);
      printf ("fuzzed %d graphs: %d passed, %d failed\n", r.n_graphs, r.n_passed, r.n_failed);
      fflush (stdout);
    }
  int failed = r.n_failed;
  pl_fuzz_result_clear (&r);
  if (!ok)
    return pl_cli_fail_error (error);
  return failed > 0 ? 1 : 0;
}
