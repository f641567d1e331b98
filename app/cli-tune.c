/* cli-tune.c — `passlab-cli tune`: tunes the tile of the generated direct
 * convolution (seed 003; kernels/tune.h) for each Conv of a graph in one
 * layout, the full space of tiles against the space the red-blue pebble
 * rule prunes it to, and shows how the two searches converge. */
#define G_LOG_DOMAIN "passlab"

#include "cli.h"

#include <stdio.h>
#include <string.h>

#include "calibrate.h"
#include "tune.h"

/* Best so far of each search after 1, 2, 4, ... trials and after its last. */
static void
print_convergence (const PlTuneResult *r)
{
  const guint nf = r->full->len, np = r->pruned->len, n = MAX (nf, np);
  printf ("  %8s  %16s  %16s\n", "trials", "full best ms", "pruned best ms");
  for (guint t = 1; t <= n; t++)
    {
      if ((t & (t - 1)) != 0 && t != nf && t != np)
        continue;
      char full[32] = "", pruned[32] = "";
      if (t <= nf)
        g_snprintf (full, sizeof full, "%.4f", g_array_index (r->full, PlTuneTrial, t - 1).best_ms);
      if (t <= np)
        g_snprintf (pruned, sizeof pruned, "%.4f", g_array_index (r->pruned, PlTuneTrial, t - 1).best_ms);
      printf ("  %8u  %16s  %16s\n", t, full, pruned);
    }
}

/* The first trial (1-based) whose best so far is at most ms. */
static guint
trials_to (const GArray *trials, double ms)
{
  for (guint i = 0; i < trials->len; i++)
    if (g_array_index (trials, PlTuneTrial, i).best_ms <= ms)
      return i + 1;
  return trials->len;
}

/* fma_peak: this cpu's arithmetic peak in GFLOP/s (0: unknown), the tile's speed as a share of it. */
static void
print_best (const char *what, const int64_t t[3], double ms, double gflop, double fma_peak)
{
  double rate = ms > 0 ? gflop / ms * 1e3 : 0.0;   /* GFLOP/s */
  printf ("  %-12s %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "  %.4f ms  %.1f GFLOP/s", what,
          t[0], t[1], t[2], ms, rate);
  if (fma_peak > 0)
    printf (" (%.0f%% of the FMA peak)", 100.0 * rate / fma_peak);
  printf ("\n");
}

static void
print_result (const PlTuneResult *r, double fma_peak)
{
  printf ("%s: %s in %s, %.3f GFLOP\n", r->conv, r->shape, pl_layout_name (r->layout), r->gflop);
  printf ("  pebble tile %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
          " (x y z: xy = R z, xyz = S with R = %.3g, S = %.0f elements per core)\n",
          r->pebble_tile[0], r->pebble_tile[1], r->pebble_tile[2], r->reuse_r, r->fast_mem_s);
  printf ("  space: full %d tiles, pruned %d (%.1f%%); output checked at %s\n", r->full_space, r->pruned_space,
          100.0 * r->pruned_space / MAX (r->full_space, 1), r->verified);
  print_convergence (r);
  print_best ("full best", r->best_full_tile, r->best_full_ms, r->gflop, fma_peak);
  print_best ("pruned best", r->best_pruned_tile, r->best_pruned_ms, r->gflop, fma_peak);
  const guint np = r->pruned->len, nf = r->full->len;
  /* when the pruned search found its best tile, and the full search its own */
  const guint when = trials_to (r->pruned, r->best_pruned_ms), full_when = trials_to (r->full, r->best_full_ms);
  if (r->head_pruned_ms <= 0)
    {
      printf ("\n");
      return;
    }
  const double pct = 100.0 * r->head_full_ms / r->head_pruned_ms;
  printf ("  head to head (median of %d rounds): full best %.4f ms, pruned best %.4f ms\n", r->rounds,
          r->head_full_ms, r->head_pruned_ms);
  printf ("  pruned best runs at %.0f%% of the full best's speed (%s), found in %u of %u trials "
          "(the full search found its best in %u of %u)\n\n",
          pct, r->head_pruned_ms <= 1.05 * r->head_full_ms ? "within 5%" : "NOT within 5%", when, np, full_when, nf);
}

/* With several convs: one line each and the totals, the figures the seed's
 * claim is judged by (the pruned best within 5% of the full best, in a
 * fraction of the trials). */
static void
print_summary (PlTuneResult **rs, guint n)
{
  printf ("summary: %-18s %9s %9s %12s %12s %10s\n", "conv", "space", "pruned", "pruned best", "full best", "head2head");
  guint within = 0, judged = 0, trials_pruned = 0, trials_full = 0;
  for (guint i = 0; i < n; i++)
    {
      const PlTuneResult *r = rs[i];
      const guint when = trials_to (r->pruned, r->best_pruned_ms), full_when = trials_to (r->full, r->best_full_ms);
      trials_pruned += r->pruned->len;
      trials_full += r->full->len;
      char h2h[32] = "-";
      if (r->head_pruned_ms > 0)
        {
          judged++;
          within += r->head_pruned_ms <= 1.05 * r->head_full_ms;
          g_snprintf (h2h, sizeof h2h, "%.0f%%", 100.0 * r->head_full_ms / r->head_pruned_ms);
        }
      char pb[32], fb[32];
      g_snprintf (pb, sizeof pb, "%u of %u", when, r->pruned->len);
      g_snprintf (fb, sizeof fb, "%u of %u", full_when, r->full->len);
      printf ("         %-18s %9d %8.1f%% %12s %12s %10s\n", r->conv, r->full_space,
              100.0 * r->pruned_space / MAX (r->full_space, 1), pb, fb, h2h);
    }
  printf ("  pruned best within 5%% of the full best on %u of %u convs; the pruned searches ran %u trials, "
          "the full searches %u (%.1f%%)\n", within, judged, trials_pruned, trials_full,
          100.0 * trials_pruned / MAX (trials_full, 1));
}

int
pl_cli_tune (int argc, char **argv)
{
  g_autofree char *node_name = NULL, *layout_name = NULL, *json = NULL, *cache_dir = NULL;
  gboolean all = FALSE;
  int trials = 32, repeat = 3, rounds = 7;
  gint64 seed = 1;
  const GOptionEntry entries[] = {
    { "node", 'n', 0, G_OPTION_ARG_STRING, &node_name, "Tune this Conv node", "NAME" },
    { "all", 'a', 0, G_OPTION_ARG_NONE, &all, "Tune every Conv (the default)", NULL },
    { "layout", 'l', 0, G_OPTION_ARG_STRING, &layout_name, "Layout of X and Y: NCHW (default), NHWC or CHWN", "L" },
    { "trials", 't', 0, G_OPTION_ARG_INT, &trials, "Tiles tried per search (default 32; 0: the whole space)", "N" },
    { "repeat", 'r', 0, G_OPTION_ARG_INT, &repeat, "Timed runs per trial, the fastest counts (default 3)", "N" },
    { "rounds", 0, 0, G_OPTION_ARG_INT, &rounds,
      "Head-to-head rounds timing the two best tiles side by side (default 7)", "N" },
    { "seed", 's', 0, G_OPTION_ARG_INT64, &seed, "Seed of the random search order and data (default 1)", "N" },
    { "json", 'j', 0, G_OPTION_ARG_FILENAME, &json, "Write the results as JSON", "OUT" },
    { "cache-dir", 0, 0, G_OPTION_ARG_FILENAME, &cache_dir, "Compiled kernels (default: the user cache)", "DIR" },
    { NULL },
  };
  g_autoptr (GOptionContext) ctx = pl_cli_context ("FILE", "Tune the direct convolution's output tile (x, y, z) on "
                                                   "the cpu: the full space of tiles against the space pruned by "
                                                   "the red-blue pebble rule.", entries);
  if (!pl_cli_parse (ctx, &argc, &argv))
    return 1;
  if (argc != 2)
    return pl_cli_fail ("tune: expected one FILE (see 'passlab-cli tune --help')");
  if (node_name && all)
    return pl_cli_fail ("tune: --node and --all exclude each other");
  if (trials < 0 || repeat < 1 || repeat > 64 || rounds < 1 || rounds > 64 || seed < 0 || seed > G_MAXUINT32)
    return pl_cli_fail ("tune: --trials must not be negative, --repeat and --rounds in 1..64, --seed in 0..%u",
                        G_MAXUINT32);
  PlLayout layout = PL_LAYOUT_NCHW;
  if (layout_name && !pl_layout_parse (layout_name, &layout))
    return pl_cli_fail ("tune: unknown layout '%s' (NCHW, NHWC or CHWN)", layout_name);

  g_autoptr (GError) error = NULL;
  g_autoptr (PlGraph) g = pl_cli_load (argv[1], &error);
  if (!g)
    return pl_cli_fail_error (error);
  g_autoptr (GPtrArray) convs = g_ptr_array_new ();
  if (node_name)
    {
      PlNode *n = pl_graph_find_node (g, node_name);
      if (!n)
        return pl_cli_fail ("tune: no node named '%s' in %s", node_name, argv[1]);
      if (n->op != PL_OP_Conv)
        return pl_cli_fail ("tune: %s is a %s, not a Conv", node_name, n->op_type);
      g_ptr_array_add (convs, n);
    }
  else
    for (guint i = 0; i < g->nodes->len; i++)
      if (((PlNode *) g->nodes->pdata[i])->op == PL_OP_Conv)
        g_ptr_array_add (convs, g->nodes->pdata[i]);
  if (convs->len == 0)
    return pl_cli_fail ("tune: no Conv in %s", argv[1]);

  /* the calibration's, measured once per machine and cached */
  double fma_peak = 0;
  {
    g_autoptr (PlCalibration) cal = pl_calibration_new (PL_BACKEND_CPU, false, NULL);
    fma_peak = cal ? pl_calibration_fma_peak (cal) : 0;
    if (fma_peak > 0)
      printf ("FMA peak of this cpu: %.0f GFLOP/s (%s)\n", fma_peak, pl_calibration_path (cal));
  }
  PlTuneOptions o = { .max_trials = trials, .repeat = repeat, .seed = (guint32) seed, .rounds = rounds, .cache_dir = cache_dir };
  GString *out = g_string_new ("[");
  g_autoptr (GPtrArray) results = g_ptr_array_new_with_free_func ((GDestroyNotify) pl_tune_result_free);
  int status = 0;
  for (guint i = 0; i < convs->len && status == 0; i++)
    {
      PlTuneResult *r = pl_tune_conv (convs->pdata[i], layout, &o, &error);
      if (!r)
        {
          status = pl_cli_fail_error (error);
          break;
        }
      g_ptr_array_add (results, r);
      print_result (r, fma_peak);
      fflush (stdout);
      g_autofree char *j = pl_tune_result_json (r);
      g_string_append_printf (out, "%s%s", i ? ",\n" : "", j);
    }
  if (status == 0 && results->len > 1)
    print_summary ((PlTuneResult **) results->pdata, results->len);
  g_string_append (out, "]\n");
  g_autofree char *text = g_string_free (out, FALSE);
  if (status == 0 && json && !g_file_set_contents (json, text, -1, &error))
    status = pl_cli_fail_error (error);
  return status;
}
