/* bench-passes.c — how the pass manager and each built-in pass scale with
 * graph size.
 *
 * Builds pl_random_chain_graph() at each size (default 10,000, 30,000 and
 * 100,000 nodes) and times the graph basics (copy, verify, stats, topological
 * order), each built-in pass on its own (a one-pass pipeline on a fresh
 * history, check off) and the whole built-in pipeline. "pass ms" is the
 * pass's own time as the history records it; "step ms" is the whole
 * pipeline run (copying, verifying, diffing and statistics included).
 * A verdict per row compares microseconds per node at the largest size with
 * the smallest: a ratio of at most 2 reads as linear. Every run is
 * repeated (--repeat, default 2) and the fastest kept, which takes out most
 * of the noise of a busy machine. "pl_rw_dce (all dead)" removes the whole
 * graph (its output rerouted to its input): dead-code elimination at its
 * largest, which the passes run after every rewrite.
 *
 *   bench-passes [--sizes 10000,30000,100000] [--seed S] [--passes a,b] [--repeat N]
 */
#define G_LOG_DOMAIN "passlab"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "pass-manager.h"
#include "random-graph.h"
#include "rewrite.h"

#define MAX_SIZES 8
#define MAX_ROWS  32

typedef struct {
  char   *name;
  double  ms[MAX_SIZES];      /* the operation (or the pass itself) */
  double  step_ms[MAX_SIZES]; /* the whole pipeline run; < 0 for the basics */
  int64_t nodes[MAX_SIZES];
} Row;

static Row rows[MAX_ROWS];
static int n_rows;
static int repeat = 2;

static Row *
row (const char *name)
{
  for (int i = 0; i < n_rows; i++)
    if (strcmp (rows[i].name, name) == 0)
      return &rows[i];
  g_assert (n_rows < MAX_ROWS);
  rows[n_rows].name = g_strdup (name);
  return &rows[n_rows++];
}

static double
now_ms (void)
{
  return g_get_monotonic_time () / 1000.0;
}

static void
report (const char *name, int size_index, int64_t nodes, double ms, double step_ms)
{
  Row *r = row (name);
  r->ms[size_index] = ms;
  r->step_ms[size_index] = step_ms;
  r->nodes[size_index] = nodes;
  if (step_ms >= 0)
    printf ("%8" G_GINT64_FORMAT "  %-22s %10.1f %10.1f %10.2f\n", nodes, name, ms, step_ms, 1000.0 * ms / nodes);
  else
    printf ("%8" G_GINT64_FORMAT "  %-22s %10.1f %10s %10.2f\n", nodes, name, ms, "", 1000.0 * ms / nodes);
  fflush (stdout);
}

/* The best of `repeat` (at least three) runs of the graph basics. */
static void
bench_basics (const PlGraph *g, int si)
{
  int64_t n = g->nodes->len;
  double best[5] = { G_MAXDOUBLE, G_MAXDOUBLE, G_MAXDOUBLE, G_MAXDOUBLE, G_MAXDOUBLE };
  for (int rep = 0; rep < MAX (repeat, 3); rep++)
    {
      double t = now_ms ();
      PlGraph *c = pl_graph_copy (g);
      best[0] = MIN (best[0], now_ms () - t);
      pl_graph_free (c);

      g_autoptr (GError) error = NULL;
      t = now_ms ();
      if (!pl_graph_verify (g, &error))
        g_error ("the chain graph does not verify: %s", error->message);
      best[1] = MIN (best[1], now_ms () - t);

      PlGraphStats stats;
      t = now_ms ();
      pl_graph_stats (g, 1, &stats);
      best[2] = MIN (best[2], now_ms () - t);

      int k;
      t = now_ms ();
      g_autofree PlNode **order = pl_graph_topo_order (g, &k, NULL);
      best[3] = MIN (best[3], now_ms () - t);

      c = pl_graph_copy (g);
      pl_graph_set_output (c, 0, c->inputs->pdata[0]);
      t = now_ms ();
      pl_rw_dce (c);
      best[4] = MIN (best[4], now_ms () - t);
      pl_graph_free (c);
    }
  report ("pl_graph_copy", si, n, best[0], -1);
  report ("pl_graph_verify", si, n, best[1], -1);
  report ("pl_graph_stats", si, n, best[2], -1);
  report ("pl_graph_topo_order", si, n, best[3], -1);
  report ("pl_rw_dce (all dead)", si, n, best[4], -1);
}

/* Runs pipeline p on g (check off), `repeat` times; reports the fastest
 * sum of the passes' own times and the fastest whole run. */
static void
bench_pipeline (const PlGraph *g, const PlPipeline *p, const char *name, int si)
{
  PlRunOptions ro;
  pl_run_options_init (&ro);
  double best_passes = G_MAXDOUBLE, best_total = G_MAXDOUBLE;
  for (int rep = 0; rep < repeat; rep++)
    {
      double t = now_ms ();
      g_autoptr (PlHistory) h = pl_pipeline_run (g, p, &ro, NULL);
      best_total = MIN (best_total, now_ms () - t);
      if (h->error && rep == 0)
        printf ("          %s stopped: %s\n", name, h->error);
      double passes = 0;
      for (int i = 1; i < pl_history_n_steps (h); i++)
        passes += pl_history_step (h, i)->time_ms;
      best_passes = MIN (best_passes, passes);
    }
  report (name, si, g->nodes->len, best_passes, best_total);
}

static void
print_verdicts (int n_sizes)
{
  printf ("\n%-22s %12s %12s %8s  %s\n", "", "us/node", "us/node", "ratio", "verdict");
  printf ("%-22s %12" G_GINT64_FORMAT " %12" G_GINT64_FORMAT "\n", "nodes", rows[0].nodes[0],
          rows[0].nodes[n_sizes - 1]);
  for (int i = 0; i < n_rows; i++)
    {
      const Row *r = &rows[i];
      double a = 1000.0 * r->ms[0] / r->nodes[0];
      double b = 1000.0 * r->ms[n_sizes - 1] / r->nodes[n_sizes - 1];
      /* Below 1 ms, timer noise and caches decide the ratio. */
      double ratio = r->ms[0] < 1.0 && r->ms[n_sizes - 1] < 10.0 ? 1.0 : b / MAX (a, 1e-9);
      printf ("%-22s %12.3f %12.3f %8.2f  %s\n", r->name, a, b, ratio, ratio <= 2.0 ? "linear" : "SUPERLINEAR");
      if (r->step_ms[0] >= 0)
        {
          double sa = 1000.0 * r->step_ms[0] / r->nodes[0];
          double sb = 1000.0 * r->step_ms[n_sizes - 1] / r->nodes[n_sizes - 1];
          printf ("%-22s %12.3f %12.3f %8.2f  %s\n", "  (whole step)", sa, sb, sb / MAX (sa, 1e-9),
                  sb / MAX (sa, 1e-9) <= 2.0 ? "linear" : "SUPERLINEAR");
        }
    }
}

int
main (int argc, char **argv)
{
  const char *sizes_arg = "10000,30000,100000", *passes_arg = NULL;
  guint32 seed = 1;
  for (int i = 1; i < argc; i++)
    {
      if (strcmp (argv[i], "--sizes") == 0 && i + 1 < argc)
        sizes_arg = argv[++i];
      else if (strcmp (argv[i], "--seed") == 0 && i + 1 < argc)
        seed = (guint32) strtoul (argv[++i], NULL, 10);
      else if (strcmp (argv[i], "--passes") == 0 && i + 1 < argc)
        passes_arg = argv[++i];
      else if (strcmp (argv[i], "--repeat") == 0 && i + 1 < argc)
        {
          repeat = atoi (argv[++i]);   /* not inside MAX: it would read argv twice */
          repeat = MAX (repeat, 1);
        }
      else
        {
          fprintf (stderr, "usage: %s [--sizes N,N,...] [--seed S] [--passes A,B] [--repeat N]\n", argv[0]);
          return 1;
        }
    }
  pl_passes_init ();

  g_auto (GStrv) size_texts = g_strsplit (sizes_arg, ",", MAX_SIZES);
  int n_sizes = (int) g_strv_length (size_texts);
  if (n_sizes < 1)
    return 1;

  /* The passes: those named, or every built-in one in registration order. */
  g_autoptr (GError) error = NULL;
  g_autoptr (PlPipeline) everything = passes_arg ? pl_pipeline_parse (passes_arg, &error) : pl_pipeline_new ();
  if (!everything)
    {
      fprintf (stderr, "%s: %s\n", argv[0], error->message);
      return 1;
    }
  g_autoptr (GPtrArray) all = pl_pass_list ();
  for (guint i = 0; !passes_arg && i < all->len; i++)
    if (((const PlPass *) all->pdata[i])->builtin)
      pl_pipeline_append (everything, pl_pass_args_new (all->pdata[i]));

  printf ("%8s  %-22s %10s %10s %10s\n", "nodes", "what", "pass ms", "step ms", "us/node");
  for (int si = 0; si < n_sizes; si++)
    {
      int size = atoi (size_texts[si]);
      double t = now_ms ();
      g_autoptr (PlGraph) g = pl_random_chain_graph (size, seed);
      report ("pl_random_chain_graph", si, g->nodes->len, now_ms () - t, -1);
      bench_basics (g, si);
      for (guint i = 0; i < everything->entries->len; i++)
        {
          const PlPassArgs *args = everything->entries->pdata[i];
          g_autoptr (PlPipeline) one = pl_pipeline_new ();
          pl_pipeline_append (one, pl_pass_args_copy (args));
          bench_pipeline (g, one, pl_pass_args_pass (args)->name, si);
        }
      bench_pipeline (g, everything, "whole pipeline", si);
      printf ("\n");
    }
  if (n_sizes > 1)
    print_verdicts (n_sizes);
  for (int i = 0; i < n_rows; i++)
    g_free (rows[i].name);
  return 0;
}
