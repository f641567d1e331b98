/* cli-fuzz.c — `passlab-cli fuzz`: random graphs through a pass pipeline
 * with the numerical check after every step (passes/fuzz.h). Prints a line
 * per failing seed, writes the smallest failing graph of each to --out, and
 * exits 1 if any seed failed. */
#define G_LOG_DOMAIN "passlab"

#include "cli.h"

#include <stdio.h>

#include "fuzz.h"

/* Also declared in cli.h (the command table's list). */
int pl_cli_fuzz (int argc, char **argv);

static void
print_failure (const PlFuzzFailure *f, gpointer user_data)
{
  g_autofree char *msg = g_strdup (f->message ? f->message : "");
  g_strdelimit (msg, "\r\n\t", ' ');
  printf ("FAIL seed %u: %s%s%s: %s", f->seed, pl_fuzz_kind_name (f->kind),
          f->pass ? " in pass " : "", f->pass ? f->pass : "", msg);
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
  g_autofree char *out_dir = NULL;
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
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = pl_cli_context ("",
    "Builds random well-formed graphs (broadcasting elementwise ops, reshapes,\n"
    "reductions, matmuls, concat/slice and the idioms the passes rewrite), runs\n"
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

  PlFuzzOptions o;
  pl_fuzz_options_init (&o);
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
      printf ("fuzzing %d graphs of %d nodes (seeds %" G_GINT64_FORMAT "..%" G_GINT64_FORMAT ") through %s\n",
              n_graphs, n_nodes, seed, seed + n_graphs - 1, passes ? passes : "every built-in pass");
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
