/* test-pass-layout.c — the `layout` pass (seed 003, MACO): the calibration
 * (keys, cost table, cache file, a measured run on a tiny conv), the plan on
 * resnet_block with analytic costs and with a cost table that forces a known
 * optimum, a mixed-layout optimum on two convs of different shapes (one
 * direct), force=NHWC, idempotence, fused graphs, bad parameters, a
 * MaxPool between two convs (it follows their layout, or stays NCHW where
 * the table says it cannot run otherwise; measured pool costs); each
 * result verifies, passes the numerical check, keeps the graph outputs NCHW
 * and computes the same outputs on the CPU backend as the reference. */
#include "calibrate.h"
#include "tune.h"
#include "pass-manager.h"
#include "runtime.h"
#include "test-util.h"
#include "text-format.h"

#include <glib/gstdio.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static char *cache_dir;   /* PASSLAB_CACHE_DIR for this process */

/* Every convolution of resnet_block has this key (plus layout and impl). */
#define RESNET_CONV "conv 1x64x56x56 k64x3x3 s1,1 p1,1,1,1 d1,1 g1 f32"
#define RESNET_T "transform 1x64x56x56 f32"
/* Fixed ceilings, so tables need no measuring. */
#define CEILINGS "ceiling memcpy 256MiB\t50\nceiling sgemm 1024^3\t20\n"

static const char *mixed_graph =
  "graph mixed opset 17 {\n"
  "  input x: f32[2, 8, 12, 12]\n"
  "  const w1: f32[16, 8, 3, 3] = random(seed=1, lo=-0.3, hi=0.3)\n"
  "  const w2: f32[16, 16, 1, 1] = random(seed=2, lo=-0.3, hi=0.3)\n"
  "  const b1: f32[1, 16, 1, 1] = random(seed=4, lo=-0.3, hi=0.3)\n"
  "  c1 = Conv(x, w1) {kernel_shape=[3, 3], pads=[1, 1, 1, 1]}\n"
  "  a1 = Add(c1, b1)\n"
  "  r1 = Relu(a1)\n"
  "  c2 = Conv(r1, w2) {kernel_shape=[1, 1]}\n"
  "  out = Relu(c2)\n"
  "  output out\n"
  "}\n";

static const char *tiny_graph =
  "graph tiny opset 17 {\n"
  "  input x: f32[1, 4, 8, 8]\n"
  "  const w: f32[4, 4, 3, 3] = random(seed=3, lo=-0.3, hi=0.3)\n"
  "  c = Conv(x, w) {kernel_shape=[3, 3], pads=[1, 1, 1, 1]}\n"
  "  out = Relu(c)\n"
  "  output out\n"
  "}\n";

static PlGraph *
resnet_block (void)
{
  g_autofree char *path = pl_test_source_path ("data/graphs/resnet_block.graph");
  g_autoptr (GError) error = NULL;
  PlGraph *g = pl_text_load (path, &error);
  g_assert_no_error (error);
  return g;
}

/* A cost table file in the cache dir; g_free the path. */
static char *
write_table (const char *name, const char *text)
{
  char *path = g_build_filename (cache_dir, name, NULL);
  g_autoptr (GError) error = NULL;
  g_file_set_contents (path, text, -1, &error);
  g_assert_no_error (error);
  return path;
}

static PlStep *
last_step (const PlHistory *h)
{
  return pl_history_step (h, pl_history_n_steps (h) - 1);
}

static PlLayout
layout_of (const PlGraph *g, const char *value)
{
  PlValue *v = pl_graph_find_value (g, value);
  g_assert_nonnull (v);
  return v->layout;
}

static int
count_op (const PlGraph *g, PlOp op)
{
  int n = 0;
  for (guint i = 0; i < g->nodes->len; i++)
    n += ((PlNode *) g->nodes->pdata[i])->op == op;
  return n;
}

static int
compare_strings (gconstpointer a, gconstpointer b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* "FROM>TO" of every transform, sorted and comma-joined. */
static char *
transforms_text (const PlGraph *g)
{
  g_autoptr (GPtrArray) items = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < g->nodes->len; i++)
    {
      PlNode *t = g->nodes->pdata[i];
      if (t->op == PL_OP_LayoutTransform)
        g_ptr_array_add (items, g_strdup_printf ("%s>%s", pl_layout_name (t->inputs[0]->layout),
                                                 pl_layout_name (t->outputs[0]->layout)));
    }
  g_ptr_array_sort (items, compare_strings);
  g_ptr_array_add (items, NULL);
  return g_strjoinv (",", (char **) items->pdata);
}

/* The graph outputs keep their names and are NCHW; every non-NCHW value is rank 4. */
static void
assert_outputs_nchw (const PlGraph *before, const PlGraph *after)
{
  g_assert_cmpuint (after->outputs->len, ==, before->outputs->len);
  for (guint i = 0; i < after->outputs->len; i++)
    {
      const PlValue *a = after->outputs->pdata[i], *b = before->outputs->pdata[i];
      g_assert_cmpstr (a->name, ==, b->name);
      g_assert_cmpint (a->layout, ==, PL_LAYOUT_NCHW);
    }
  for (guint i = 0; i < after->values->len; i++)
    {
      const PlValue *v = after->values->pdata[i];
      g_assert_true (v->layout == PL_LAYOUT_NCHW || v->shape.rank == 4);
      g_assert_true (v->layout == PL_LAYOUT_NCHW || (!v->is_input && !v->constant));
    }
}

/* The CPU backend on the planned graph computes what the reference computes
 * on the original. */
static void
assert_cpu_matches_reference (const PlGraph *before, const PlGraph *after)
{
  g_autoptr (GError) error = NULL;
  PlTensor **inputs = pl_random_inputs (before, 5, 1, &error);
  g_assert_no_error (error);
  PlTensor **want = pl_interp_run (before, inputs, NULL, &error);
  g_assert_no_error (error);
  PlCompileOptions o;
  pl_compile_options_init (&o, PL_BACKEND_CPU);
  g_autofree char *kernels = g_build_filename (cache_dir, "kernels", NULL);
  o.cache_dir = kernels;
  PlExecutable *e = pl_executable_new (after, &o, &error);
  g_assert_no_error (error);
  PlTensor **got = pl_executable_run (e, inputs, 1, NULL, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < before->outputs->len; i++)
    pl_test_assert_close (got[i], want[i], 1e-4, 1e-4);
  pl_interp_free_outputs (got, (int) after->outputs->len);
  pl_interp_free_outputs (want, (int) before->outputs->len);
  pl_interp_free_outputs (inputs, (int) before->inputs->len);
  pl_executable_free (e);
}

/* --- the calibration ------------------------------------------------------------------- */

static void
test_calibration_keys_and_table (void)
{
  g_autoptr (PlGraph) g = resnet_block ();
  g_autoptr (GError) error = NULL;
  g_autoptr (PlCalibration) cal = pl_calibration_new (PL_BACKEND_CPU, false, &error);
  g_assert_no_error (error);
  g_assert_true (g_str_has_prefix (pl_calibration_machine (cal), "cpu "));
  g_assert_nonnull (strstr (pl_calibration_machine (cal), " threads"));
  g_assert_true (g_str_has_prefix (pl_calibration_path (cal), cache_dir));

  PlNode *conv1 = pl_graph_find_node (g, "conv1");
  g_autofree char *key = pl_calibration_conv_key (conv1, PL_LAYOUT_NHWC, PL_CONV_IMPL_GEMM);
  g_assert_cmpstr (key, ==, RESNET_CONV " NHWC gemm");
  g_autofree char *tkey = pl_calibration_transform_key (conv1->outputs[0], PL_LAYOUT_NCHW, PL_LAYOUT_CHWN);
  g_assert_cmpstr (tkey, ==, RESNET_T " NCHW>CHWN");
  g_assert_null (pl_calibration_conv_key (pl_graph_find_node (g, "bn1"), PL_LAYOUT_NCHW, PL_CONV_IMPL_GEMM));

  g_autofree char *table = write_table ("keys.table", CEILINGS "# a comment\n" RESNET_CONV " NHWC gemm\t2.5\n"
                                        RESNET_CONV " CHWN direct\tinf\n" RESNET_T " NCHW>NHWC\t0.125\n");
  g_assert_true (pl_calibration_load_table (cal, table, &error));
  g_assert_no_error (error);
  PlCost c = pl_calibration_conv (cal, conv1, PL_LAYOUT_NHWC, PL_CONV_IMPL_GEMM);
  g_assert_cmpfloat (c.ms, ==, 2.5);
  g_assert_cmpint (c.source, ==, PL_COST_TABLE);
  g_assert_true (isinf (pl_calibration_conv (cal, conv1, PL_LAYOUT_CHWN, PL_CONV_IMPL_DIRECT).ms));
  c = pl_calibration_transform (cal, conv1->outputs[0], PL_LAYOUT_NCHW, PL_LAYOUT_NHWC);
  g_assert_cmpfloat (c.ms, ==, 0.125);
  g_assert_cmpfloat (pl_calibration_transform (cal, conv1->outputs[0], PL_LAYOUT_NHWC, PL_LAYOUT_NHWC).ms, ==, 0);

  /* analytic where the table has nothing: from the ceilings (50 ms per 256 MiB copy, 20 ms per sgemm) */
  double gbps, gflops;
  pl_calibration_ceilings (cal, &gbps, &gflops);
  g_assert_cmpfloat_with_epsilon (gbps, 2.0 * 268435456 / 50 / 1e6, 1e-9);
  g_assert_cmpfloat_with_epsilon (gflops, 2.0 * 1073741824 / 20 / 1e6, 1e-9);
  c = pl_calibration_transform (cal, conv1->outputs[0], PL_LAYOUT_NHWC, PL_LAYOUT_NCHW);
  g_assert_cmpint (c.source, ==, PL_COST_ANALYTIC);
  g_assert_cmpfloat_with_epsilon (c.ms, 2.0 * 64 * 56 * 56 * 4 / (gbps * 1e6), 1e-9);
  c = pl_calibration_conv (cal, conv1, PL_LAYOUT_NCHW, PL_CONV_IMPL_GEMM);
  g_assert_cmpint (c.source, ==, PL_COST_ANALYTIC);
  g_assert_cmpfloat (c.ms, >=, 2.0 * 64 * 56 * 56 * 64 * 9 / (gflops * 1e6) - 1e-9);

  /* a damaged table names its line */
  g_autofree char *bad = write_table ("bad.table", RESNET_CONV " NHWC gemm\t2.5\nno tab here\n");
  g_assert_false (pl_calibration_load_table (cal, bad, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_PARSE);
  g_assert_nonnull (strstr (error->message, "bad.table:2"));
}

/* A measured run on a tiny conv: one batch, cached, not measured again,
 * and the plan runs on the CPU. */
static void
test_measured_tiny_conv (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (tiny_graph);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_graph_infer_shapes (g, &error));
  {
    g_autoptr (PlCalibration) cal = pl_calibration_new (PL_BACKEND_CPU, true, &error);
    g_assert_no_error (error);
    g_assert_true (pl_calibration_prepare (cal, g, &error));
    g_assert_no_error (error);
    g_assert_cmpint (pl_calibration_n_measured (cal), >=, 3 + 6);   /* a conv per layout (gemm), the transforms */
    PlNode *c = pl_graph_find_node (g, "c");
    for (int l = 0; l < PL_LAYOUT_COUNT; l++)
      {
        PlCost cost = pl_calibration_conv (cal, c, l, PL_CONV_IMPL_GEMM);
        g_assert_cmpint (cost.source, ==, PL_COST_MEASURED);
        g_assert_true (cost.ms > 0 && isfinite (cost.ms));
      }
    for (int a = 0; a < PL_LAYOUT_COUNT; a++)
      for (int b = 0; b < PL_LAYOUT_COUNT; b++)
        if (a != b)
          {
            PlCost cost = pl_calibration_transform (cal, c->outputs[0], a, b);
            g_assert_cmpint (cost.source, ==, PL_COST_MEASURED);
            g_assert_true (cost.ms > 0 && isfinite (cost.ms));
          }
  }
  g_autofree char *path = g_build_filename (cache_dir, "calibration.txt", NULL);
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  g_assert_nonnull (strstr (text, "\tcpu\tconv 1x4x8x8 k4x3x3 s1,1 p1,1,1,1 d1,1 g1 f32 NHWC gemm\t"));
  g_assert_nonnull (strstr (text, "\tcpu\ttransform 1x4x8x8 f32 NCHW>CHWN\t"));
  {
    /* a second calibration finds everything in the cache */
    g_autoptr (PlCalibration) cal = pl_calibration_new (PL_BACKEND_CPU, true, &error);
    g_assert_true (pl_calibration_prepare (cal, g, &error));
    g_assert_cmpint (pl_calibration_n_measured (cal), ==, 0);
  }
  /* the pass with measured costs (the default) */
  g_autoptr (PlHistory) h = pl_test_run_checked (g, "layout", NULL, 1e-5, 1);
  PlStep *s = last_step (h);
  g_assert_nonnull (strstr (s->report, "costs: measured"));
  g_assert_nonnull (strstr (s->report, "0 entries measured now"));
  g_assert_true (strstr (s->report, "search: chain DP") || strstr (s->report, "search: frontier DP"));
  g_test_message ("%s", s->report);
  assert_outputs_nchw (g, s->graph);
  assert_cpu_matches_reference (g, s->graph);
  /* the cpu's arithmetic peak is measured and cached beside the other
   * ceilings, and each conv's line says its share of it */
  g_assert_nonnull (strstr (s->report, " GFLOP/s, FMA peak "));
  g_assert_nonnull (strstr (s->report, " ms  peak   GB/s "));
  {
    /* the line of conv c: its time, share of the peak, and the bandwidth
     * that time implies for the bytes it must move */
    const char *line = strstr (s->report, "\nc    ");
    g_assert_nonnull (line);
    /* two spaces between the text columns (what the workbench's table
     * parser needs when a name or shape overflows its width) */
    g_assert_true (g_str_has_prefix (line + 1 + 16, "  1x4x8x8 -> 4 k3x3 p1"));
    g_assert_true (line[1 + 18 + 28] == ' ' && line[1 + 18 + 29] == ' ');
    double ms = 0, share = -1, gbps = 0;
    g_assert_cmpint (sscanf (line + 1 + 61, "%lf %lf%% %lf", &ms, &share, &gbps), ==, 3);
    const PlNode *c = pl_graph_find_node (g, "c");
    g_assert_cmpfloat (ms, >, 0);
    g_assert_cmpfloat (fabs (gbps - (double) pl_node_bytes (c, 1, NULL) / ms / 1e6), <=, 0.05 + 0.01 * gbps);
  }
  g_autofree char *text2 = NULL;
  g_assert_true (g_file_get_contents (path, &text2, NULL, NULL));
  g_assert_nonnull (strstr (text2, "\tcpu\tceiling fma f32 2^33\t"));
  {
    g_autoptr (PlCalibration) cal = pl_calibration_new (PL_BACKEND_CPU, true, &error);
    double gflops = 0, peak = pl_calibration_fma_peak (cal);
    pl_calibration_ceilings (cal, NULL, &gflops);
    g_test_message ("FMA peak %.1f GFLOP/s, GEMM %.1f GFLOP/s (%s)", peak, gflops, pl_calibration_machine (cal));
    g_assert_cmpfloat (peak, >, 0.1);
  }

  /* measured costs, every conv held to NHWC: measured transforms, and the CPU agrees */
  const char *nhwc[] = { "layout.force=NHWC", NULL };
  g_autoptr (PlHistory) h2 = pl_test_run_checked (g, "layout", nhwc, 1e-5, 1);
  s = last_step (h2);
  g_test_message ("%s", s->report);
  g_assert_cmpint (layout_of (s->graph, "c"), ==, PL_LAYOUT_NHWC);
  g_assert_nonnull (strstr (s->report, "transforms 2 measured, 0 analytic"));
  assert_outputs_nchw (g, s->graph);
  assert_cpu_matches_reference (g, s->graph);
}

/* Where the value text of key's line (this machine, cpu) starts in the
 * cache text: "ms" or "ms\trounds", up to the newline. */
static const char *
cache_value_at (const char *text, const char *machine, const char *key)
{
  g_autofree char *head = g_strdup_printf ("%s\tcpu\t%s\t", machine, key);
  const char *at = strstr (text, head);
  g_assert_nonnull (at);
  return at + strlen (head);
}

/* The cache text with key's value text replaced by `value`. */
static char *
with_cache_value (const char *text, const char *machine, const char *key, const char *value)
{
  const char *at = cache_value_at (text, machine, key);
  const char *eol = strchr (at, '\n');
  g_assert_nonnull (eol);
  return g_strdup_printf ("%.*s%s%s", (int) (at - text), text, value, eol);
}

/* Measurements come in rounds and the cache says so: an entry of fewer
 * rounds (a cache from before them) is measured again, a full one is
 * trusted, and recalibrating (pl_calibration_set_remeasure, the pass's
 * layout.recalibrate) measures every entry again and replaces the cache's. */
static void
test_recalibrate (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (tiny_graph);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_graph_infer_shapes (g, &error));
  PlNode *c = pl_graph_find_node (g, "c");
  g_autofree char *key = pl_calibration_conv_key (c, PL_LAYOUT_NHWC, PL_CONV_IMPL_GEMM);
  g_autofree char *path = g_build_filename (cache_dir, "calibration.txt", NULL);
  g_autofree char *machine = NULL;
  {
    g_autoptr (PlCalibration) cal = pl_calibration_new (PL_BACKEND_CPU, true, &error);
    g_assert_true (pl_calibration_prepare (cal, g, &error));
    g_assert_no_error (error);
    machine = g_strdup (pl_calibration_machine (cal));
  }
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  g_autofree char *full = g_strdup_printf ("%s\tcpu\t%s\t", machine, key);
  const char *line = strstr (text, full);
  g_assert_nonnull (line);
  g_assert_true (g_str_has_prefix (strchr (line + strlen (full), '\t'), "\t3\n"));   /* ms, then 3 rounds */

  /* another process's full entry in the file does not change this process's
   * view (its plans stay comparable) */
  g_autofree char *slow = with_cache_value (text, machine, key, "1000\t3");
  g_assert_true (g_file_set_contents (path, slow, -1, &error));
  {
    g_autoptr (PlCalibration) cal = pl_calibration_new (PL_BACKEND_CPU, true, &error);
    g_assert_true (pl_calibration_prepare (cal, g, &error));
    g_assert_cmpint (pl_calibration_n_measured (cal), ==, 0);
    g_assert_cmpfloat (pl_calibration_conv (cal, c, PL_LAYOUT_NHWC, PL_CONV_IMPL_GEMM).ms, <, 1000);
  }
  /* a new process trusts a full entry, however slow */
  pl_calibration_forget_process_view ();
  {
    g_autoptr (PlCalibration) cal = pl_calibration_new (PL_BACKEND_CPU, true, &error);
    g_assert_true (pl_calibration_prepare (cal, g, &error));
    g_assert_cmpint (pl_calibration_n_measured (cal), ==, 0);
    g_assert_cmpfloat (pl_calibration_conv (cal, c, PL_LAYOUT_NHWC, PL_CONV_IMPL_GEMM).ms, ==, 1000);
    double median = 0, max = 0;
    g_assert_false (pl_calibration_round_spread (cal, &median, &max));
  }
  /* recalibrating measures it and the rest again */
  {
    g_autoptr (PlCalibration) cal = pl_calibration_new (PL_BACKEND_CPU, true, &error);
    pl_calibration_set_remeasure (cal, true);
    g_assert_true (pl_calibration_prepare (cal, g, &error));
    g_assert_no_error (error);
    g_assert_cmpint (pl_calibration_n_measured (cal), >=, 3 + 6);
    g_assert_cmpfloat (pl_calibration_conv (cal, c, PL_LAYOUT_NHWC, PL_CONV_IMPL_GEMM).ms, <, 1000);
    double median = 0, max = 0;
    g_assert_true (pl_calibration_round_spread (cal, &median, &max));
    g_assert_cmpfloat (median, >=, 1);
    g_assert_cmpfloat (max, >=, median);
  }
  g_autofree char *after = NULL;
  g_assert_true (g_file_get_contents (path, &after, NULL, NULL));
  g_autofree char *slow_line = g_strdup_printf ("%s1000\t3\n", full);
  g_assert_null (strstr (after, slow_line));

  /* an entry of one round (no count: an older cache) is measured again, by
   * a process that has not read or measured it itself */
  g_autofree char *old = with_cache_value (after, machine, key, "1000");
  g_assert_true (g_file_set_contents (path, old, -1, &error));
  {
    g_autoptr (PlCalibration) cal = pl_calibration_new (PL_BACKEND_CPU, true, &error);
    g_assert_true (pl_calibration_prepare (cal, g, &error));
    g_assert_cmpint (pl_calibration_n_measured (cal), ==, 0);   /* this one has */
    g_assert_cmpfloat (pl_calibration_conv (cal, c, PL_LAYOUT_NHWC, PL_CONV_IMPL_GEMM).ms, <, 1000);
  }
  pl_calibration_forget_process_view ();
  {
    /* ... and with it the conv's other layouts and impls, though their
     * entries are full: they are compared with it, and costs measured at
     * different times are not comparable (the machine's speed drifts);
     * the transforms between other layouts than NCHW stay as cached */
    g_autofree char *stale = g_strdup (old);
    g_autofree char *chwn_nhwc = pl_calibration_transform_key (c->outputs[0], PL_LAYOUT_CHWN, PL_LAYOUT_NHWC);
    g_autofree char *t = with_cache_value (stale, machine, chwn_nhwc, "1000\t3");
    g_free (stale);
    stale = g_steal_pointer (&t);
    int n_convs = 0;
    for (int l = 0; l < PL_LAYOUT_COUNT; l++)
      for (int m = 0; m <= PL_CONV_IMPL_DIRECT; m++)
        {
          g_autofree char *k = pl_calibration_conv_key (c, l, m);
          g_autofree char *head = g_strdup_printf ("%s\tcpu\t%s", machine, k);
          const char *at = strstr (stale, head);
          if (!at || (l == PL_LAYOUT_NHWC && m == PL_CONV_IMPL_GEMM))
            continue;
          /* the whole key: a direct conv's names its tile and kernel */
          g_autofree char *whole = g_strndup (at + strlen (machine) + 5, strcspn (at + strlen (machine) + 5, "\t"));
          t = with_cache_value (stale, machine, whole, "1000\t3");
          g_free (stale);
          stale = g_steal_pointer (&t);
          n_convs++;
        }
    g_assert_cmpint (n_convs, >=, 2);   /* gemm in NCHW and CHWN at least */
    g_assert_true (g_file_set_contents (path, stale, -1, &error));
    g_autoptr (PlCalibration) cal = pl_calibration_new (PL_BACKEND_CPU, true, &error);
    g_assert_true (pl_calibration_prepare (cal, g, &error));
    g_assert_cmpint (pl_calibration_n_measured (cal), >=, 1 + n_convs);
    for (int l = 0; l < PL_LAYOUT_COUNT; l++)
      for (int m = 0; m <= PL_CONV_IMPL_DIRECT; m++)
        {
          PlCost cost = pl_calibration_conv (cal, c, l, m);
          g_test_message ("%s %s: %g ms", pl_layout_name (l), m ? "direct" : "gemm", cost.ms);
          g_assert_true (!isfinite (cost.ms) || cost.ms < 1000);
        }
    g_assert_cmpfloat (pl_calibration_transform (cal, c->outputs[0], PL_LAYOUT_CHWN, PL_LAYOUT_NHWC).ms, ==, 1000);
  }

  /* the pass's parameter */
  const char *params[] = { "layout.recalibrate=true", NULL };
  g_autoptr (PlHistory) h = pl_test_run_checked (g, "layout", params, 1e-5, 1);
  PlStep *s = last_step (h);
  g_test_message ("%s", s->report);
  g_assert_nonnull (strstr (s->report, "cached ones again"));
  g_assert_nonnull (strstr (s->report, "the least of 3 rounds' medians"));
  g_assert_null (strstr (s->report, " 0 entries measured now"));
}

/* Key's value text (this machine, cpu) in the cache file, g_free it. */
static char *
cache_value (const char *machine, const char *key)
{
  g_autofree char *path = g_build_filename (cache_dir, "calibration.txt", NULL), *text = NULL;
  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  const char *at = cache_value_at (text, machine, key);
  return g_strndup (at, strcspn (at, "\n"));
}

/* A calibration beside other busy processes (two spinning children here; a
 * build, in life) runs its rounds again, keeps the least when none was left
 * alone, caches those entries as of one round, and the next process's
 * calibration measures them again (this one keeps what it measured); the
 * same for the machine's ceilings. */
static void
test_busy_machine (void)
{
  g_autofree char *ignore = g_strdup (g_getenv ("PASSLAB_CALIBRATE_IGNORE_LOAD"));
  g_unsetenv ("PASSLAB_CALIBRATE_IGNORE_LOAD");
  /* a round (a warm-up and 5 runs) must span several /proc/stat ticks for
   * the others' CPU time to show beyond its 20 ms tolerance: batch 8 makes
   * it ~50 ms alone (at batch 1, two spinning children beside it were
   * taken for calm in 3 of 4 runs) */
  g_autoptr (PlGraph) g = pl_test_parse ("graph busy opset 17 {\n"
                                 "  input x: f32[8, 64, 56, 56]\n"
                                 "  const w: f32[64, 64, 3, 3] = random(seed=6, lo=-0.1, hi=0.1)\n"
                                 "  c = Conv(x, w) {kernel_shape=[3, 3], pads=[1, 1, 1, 1]}\n"
                                 "  output c\n}\n");
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_graph_infer_shapes (g, &error));
  PlNode *c = pl_graph_find_node (g, "c");
  g_autofree char *key = pl_calibration_conv_key (c, PL_LAYOUT_NCHW, PL_CONV_IMPL_GEMM);
  g_autofree char *machine = NULL;
  pid_t spin[2];
  for (int i = 0; i < 2; i++)
    if ((spin[i] = fork ()) == 0)
      {
        /* die with the test, also when an assertion aborts it */
        prctl (PR_SET_PDEATHSIG, SIGKILL);
        if (getppid () == 1)
          _exit (0);
        for (volatile unsigned long n = 0;; n++)
          ;
      }
  {
    g_autoptr (PlCalibration) cal = pl_calibration_new (PL_BACKEND_CPU, true, &error);
    pl_calibration_restrict (cal, 1u << PL_LAYOUT_NCHW, 1u << PL_CONV_IMPL_GEMM);
    g_assert_true (pl_calibration_prepare (cal, g, &error));
    g_assert_no_error (error);
    machine = g_strdup (pl_calibration_machine (cal));
    g_assert_cmpint (pl_calibration_n_measured (cal), >, 0);
    g_assert_cmpint (pl_calibration_n_disturbed_rounds (cal), >, 0);
    g_assert_cmpint (pl_calibration_n_unsettled (cal), >, 0);
  }
  {
    /* the ceilings measured again beside them: the FMA peak cached as of one round */
    g_autoptr (PlCalibration) cal = pl_calibration_new (PL_BACKEND_CPU, true, &error);
    pl_calibration_set_remeasure (cal, true);
    g_assert_cmpfloat (pl_calibration_fma_peak (cal), >, 0);
    g_assert_cmpint (pl_calibration_n_unsettled (cal), >, 0);
  }
  for (int i = 0; i < 2; i++)
    {
      kill (spin[i], SIGKILL);
      waitpid (spin[i], NULL, 0);
    }
  g_autofree char *busy = cache_value (machine, key);
  g_assert_true (g_str_has_suffix (busy, "\t1"));
  g_autofree char *busy_peak = cache_value (machine, "ceiling fma f32 2^33");
  g_assert_true (g_str_has_suffix (busy_peak, "\t1"));
  {
    /* this process keeps what it measured (a bench's variants plan alike) */
    g_autoptr (PlCalibration) cal = pl_calibration_new (PL_BACKEND_CPU, true, &error);
    pl_calibration_restrict (cal, 1u << PL_LAYOUT_NCHW, 1u << PL_CONV_IMPL_GEMM);
    g_assert_true (pl_calibration_prepare (cal, g, &error));
    g_assert_cmpint (pl_calibration_n_measured (cal), ==, 0);
  }
  pl_calibration_forget_process_view ();
  {
    /* the next process measures them again */
    g_autoptr (PlCalibration) cal = pl_calibration_new (PL_BACKEND_CPU, true, &error);
    pl_calibration_restrict (cal, 1u << PL_LAYOUT_NCHW, 1u << PL_CONV_IMPL_GEMM);
    g_assert_true (pl_calibration_prepare (cal, g, &error));
    g_assert_cmpint (pl_calibration_n_measured (cal), >, 0);   /* measured again */
  }
  if (ignore)
    g_setenv ("PASSLAB_CALIBRATE_IGNORE_LOAD", ignore, TRUE);
}

/* Tuned tiles (layout.tune): the pruned tile search runs once per direct
 * conv and layout (a "tuned" marker in the cache), a tile it finds is
 * measured in the batch beside the pebble tile, the direct cost is the
 * faster of the two and the pass writes that tile on the conv. */
static void
test_tuned_tiles (void)
{
  g_autoptr (PlGraph) g = pl_test_parse ("graph tuned opset 17 {\n"
                                 "  input x: f32[1, 16, 28, 28]\n"
                                 "  const w: f32[32, 16, 3, 3] = random(seed=5, lo=-0.2, hi=0.2)\n"
                                 "  c = Conv(x, w) {kernel_shape=[3, 3], pads=[1, 1, 1, 1]}\n"
                                 "  out = Relu(c)\n  output out\n}\n");
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_graph_infer_shapes (g, &error));
  PlNode *c = pl_graph_find_node (g, "c");
  g_autofree char *key = pl_calibration_conv_key (c, PL_LAYOUT_NHWC, PL_CONV_IMPL_DIRECT);
  int64_t tile[3];
  {
    g_autoptr (PlCalibration) cal = pl_calibration_new (PL_BACKEND_CPU, true, &error);
    g_assert_no_error (error);
    pl_calibration_restrict (cal, 1u << PL_LAYOUT_NHWC, 1u << PL_CONV_IMPL_DIRECT);
    pl_calibration_set_tuning (cal, 4);
    g_assert_true (pl_calibration_prepare (cal, g, &error));
    g_assert_no_error (error);
    PlCost cost = pl_calibration_conv (cal, c, PL_LAYOUT_NHWC, PL_CONV_IMPL_DIRECT);
    g_assert_cmpint (cost.source, ==, PL_COST_MEASURED);
    pl_calibration_conv_tile (cal, c, PL_LAYOUT_NHWC, tile);
    g_assert_cmpint (tile[0], >, 0);
  }
  g_autofree char *path = g_build_filename (cache_dir, "calibration.txt", NULL);
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  /* every measured direct entry names its tile: the pebble rule's, searched once, and the tile used */
  int64_t pebble[3];
  g_autoptr (GArray) full = NULL, pruned = NULL;
  g_assert_true (pl_tune_spaces (c, PL_LAYOUT_NHWC, &full, &pruned, pebble, &error));
  g_autofree char *pebble_key = g_strdup_printf ("%s tile %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT,
                                                 key, pebble[0], pebble[1], pebble[2]);
  /* ... and the kernel it timed (a hash of the generated source) */
  g_autofree char *marker = g_strdup_printf ("\tcpu\ttuned %s src ", pebble_key);
  g_assert_nonnull (strstr (text, marker));
  g_autofree char *pebble_line = g_strdup_printf ("\tcpu\t%s src ", pebble_key);
  g_assert_nonnull (strstr (text, pebble_line));
  g_autofree char *plain_line = g_strdup_printf ("\tcpu\t%s\t", key);
  g_assert_null (strstr (text, plain_line));
  /* the tile used is the pebble rule's or a measured tuned one */
  g_autofree char *tuned_line = g_strdup_printf ("\tcpu\t%s tile %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                                                 "x%" G_GINT64_FORMAT " src ", key, tile[0], tile[1], tile[2]);
  g_assert_nonnull (strstr (text, tuned_line));
  {
    /* searched once: a second calibration measures nothing */
    g_autoptr (PlCalibration) cal = pl_calibration_new (PL_BACKEND_CPU, true, &error);
    pl_calibration_restrict (cal, 1u << PL_LAYOUT_NHWC, 1u << PL_CONV_IMPL_DIRECT);
    pl_calibration_set_tuning (cal, 4);
    g_assert_true (pl_calibration_prepare (cal, g, &error));
    g_assert_cmpint (pl_calibration_n_measured (cal), ==, 0);
    int64_t again[3];
    pl_calibration_conv_tile (cal, c, PL_LAYOUT_NHWC, again);
    g_assert_cmpmem (again, sizeof again, tile, sizeof tile);
  }
  {
    /* a time measured of another kernel (another source hash: an older
     * generator) does not count, however fast */
    g_autoptr (PlCalibration) probe = pl_calibration_new (PL_BACKEND_CPU, true, &error);
    g_autofree char *stale = g_strdup_printf ("%s%s\tcpu\t%s tile 1x1x1 src 00000000\t0.000001\n", text,
                                              pl_calibration_machine (probe), key);
    g_assert_true (g_file_set_contents (path, stale, -1, &error));
    g_autoptr (PlCalibration) cal = pl_calibration_new (PL_BACKEND_CPU, true, &error);
    pl_calibration_restrict (cal, 1u << PL_LAYOUT_NHWC, 1u << PL_CONV_IMPL_DIRECT);
    g_assert_true (pl_calibration_prepare (cal, g, &error));
    PlCost cost = pl_calibration_conv (cal, c, PL_LAYOUT_NHWC, PL_CONV_IMPL_DIRECT);
    g_assert_cmpfloat (cost.ms, >, 0.000001);
    int64_t again[3];
    pl_calibration_conv_tile (cal, c, PL_LAYOUT_NHWC, again);
    g_assert_cmpmem (again, sizeof again, tile, sizeof tile);
  }
  /* the pass writes the tile on the conv and the plan runs right */
  const char *params[] = { "layout.tune=4", "layout.force=NHWC", "layout.impls=direct", NULL };
  g_autoptr (PlHistory) h = pl_test_run_checked (g, "layout", params, 1e-5, 1);
  PlStep *s = last_step (h);
  g_test_message ("%s", s->report);
  PlNode *pc = pl_graph_find_node (s->graph, "c");
  const int64_t *t;
  int n;
  g_assert_true (pl_node_attr_ints (pc, "tile", &t, &n));
  g_assert_cmpint (n, ==, 3);
  g_assert_cmpmem (t, sizeof tile, tile, sizeof tile);
  g_autofree char *in_report = g_strdup_printf ("tile %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT,
                                                tile[0], tile[1], tile[2]);
  g_assert_nonnull (strstr (s->report, in_report));
  assert_cpu_matches_reference (g, s->graph);
}

/* Costs in context (layout.refine): the single-layout plans and the plan
 * run whole; their kernels' times replace the calibration's for this run
 * only — the cache keeps the kernels-alone measurements. */
static void
test_refine_in_context (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (tiny_graph);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_graph_infer_shapes (g, &error));
  {
    /* calibrated first, so the cache is complete before the refined run */
    g_autoptr (PlCalibration) cal = pl_calibration_new (PL_BACKEND_CPU, true, &error);
    g_assert_true (pl_calibration_prepare (cal, g, &error));
    g_assert_no_error (error);
  }
  g_autofree char *path = g_build_filename (cache_dir, "calibration.txt", NULL);
  g_autofree char *before = NULL, *after = NULL;
  g_assert_true (g_file_get_contents (path, &before, NULL, NULL));
  const char *params[] = { "layout.refine=2", NULL };
  g_autoptr (PlHistory) h = pl_test_run_checked (g, "layout", params, 1e-5, 1);
  PlStep *s = last_step (h);
  g_test_message ("%s", s->report);
  /* 3 single-layout plans and the plan in round 1; round 2 runs the plan
   * only if the new costs chose another one */
  g_assert_true (strstr (s->report, "refined in context: 4 graphs run in 1 round") ||
                 strstr (s->report, "refined in context: 5 graphs run in 2 rounds"));
  assert_outputs_nchw (g, s->graph);
  assert_cpu_matches_reference (g, s->graph);
  g_assert_true (g_file_get_contents (path, &after, NULL, NULL));
  g_assert_cmpstr (after, ==, before);

  {
    /* measured in a graph: each conv, pool and transform there gets its in-context time */
    g_autoptr (PlCalibration) cal = pl_calibration_new (PL_BACKEND_CPU, true, &error);
    g_assert_true (pl_calibration_prepare (cal, g, &error));
    g_assert_cmpint (pl_calibration_measure_graph (cal, s->graph, &error), >=, 1);
    g_assert_no_error (error);
    g_assert_cmpint (pl_calibration_n_in_context (cal), >=, 1);
  }
}

/* --- resnet_block ---------------------------------------------------------------------- */

/* Analytic costs (this machine's ceilings, measured here): with one image
 * the model sees the same bytes and FLOPs in every layout, so the plan is
 * the default one and nothing changes. */
static void
test_resnet_analytic (void)
{
  g_autoptr (PlGraph) g = resnet_block ();
  const char *params[] = { "layout.cost=analytic", NULL };
  g_autoptr (PlHistory) h = pl_test_run_checked (g, "layout", params, 1e-5, 1);
  PlStep *s = last_step (h);
  g_test_message ("%s", s->report);
  g_assert_nonnull (strstr (s->report, "costs: analytic"));
  g_assert_nonnull (strstr (s->report, "conv1"));
  g_assert_nonnull (strstr (s->report, "search: frontier DP"));
  g_assert_nonnull (strstr (s->report, "transforms: 0 in the graph"));
  g_assert_false (s->changed);
  g_assert_cmpint (layout_of (s->graph, "conv1"), ==, PL_LAYOUT_NCHW);
  g_assert_cmpint (pl_pass_report_get (s->counters, "convs"), ==, 2);
  assert_outputs_nchw (g, s->graph);
}

/* Convs are cheapest in NHWC; transforms through CHWN are cheaper than the
 * direct NCHW <-> NHWC ones. The unique optimum: both convs NHWC; x goes
 * NCHW -> CHWN once (shared by the residual Add) and CHWN -> NHWC for conv1;
 * bn2's result goes NHWC -> CHWN for the Add, which runs in CHWN with the
 * final Relu; the output goes CHWN -> NCHW. Transforms: 0.1 + 0.4 + 0.3 + 0.2. */
static const char *resnet_table =
  CEILINGS
  RESNET_CONV " NCHW gemm\t10\n" RESNET_CONV " NHWC gemm\t4\n" RESNET_CONV " CHWN gemm\t9\n"
  RESNET_T " NCHW>NHWC\t1.0\n" RESNET_T " NHWC>NCHW\t1.0\n" RESNET_T " NCHW>CHWN\t0.1\n"
  RESNET_T " CHWN>NCHW\t0.2\n" RESNET_T " NHWC>CHWN\t0.3\n" RESNET_T " CHWN>NHWC\t0.4\n";

static void
test_resnet_table (void)
{
  g_autoptr (PlGraph) g = resnet_block ();
  g_autofree char *table = write_table ("resnet.table", resnet_table);
  g_autofree char *tp = g_strdup_printf ("layout.table=%s", table);
  const char *params[] = { tp, "layout.impls=gemm", "layout.cost=analytic", NULL };
  g_autoptr (PlHistory) h = pl_test_run_checked (g, "layout", params, 1e-5, 1);
  PlStep *s = last_step (h);
  g_test_message ("%s", s->report);
  g_assert_true (s->changed);
  const PlGraph *r = s->graph;
  g_assert_cmpint (layout_of (r, "conv1"), ==, PL_LAYOUT_NHWC);
  g_assert_cmpint (layout_of (r, "conv2"), ==, PL_LAYOUT_NHWC);
  g_assert_cmpint (layout_of (r, "relu1"), ==, PL_LAYOUT_NHWC);
  g_assert_cmpint (layout_of (r, "residual"), ==, PL_LAYOUT_CHWN);
  g_assert_cmpint (pl_graph_find_node (r, "residual")->inputs[1]->layout, ==, PL_LAYOUT_CHWN);
  g_autofree char *ts = transforms_text (r);
  g_assert_cmpstr (ts, ==, "CHWN>NCHW,CHWN>NHWC,NCHW>CHWN,NHWC>CHWN");
  /* x is transformed once, to CHWN, shared by conv1's transform and the Add */
  PlValue *x = pl_graph_find_value (r, "x");
  g_assert_cmpint (x->n_uses, ==, 1);
  g_assert_cmpint (x->uses[0].node->op, ==, PL_OP_LayoutTransform);
  g_assert_nonnull (strstr (s->report, "transforms: 4 in the graph, 1.0000 ms predicted (model: 1.0000 ms)"));
  g_assert_nonnull (strstr (s->report, "convs 0 measured, 0 analytic, 2 table"));
  g_assert_nonnull (strstr (s->report, "NHWC gemm"));
  g_assert_null (pl_node_attr (pl_graph_find_node (r, "conv1"), "impl"));
  g_assert_cmpint (pl_pass_report_get (s->counters, "transforms"), ==, 4);
  assert_outputs_nchw (g, r);
  assert_cpu_matches_reference (g, r);
}

/* force=NHWC: every conv NHWC and exactly the two transforms a single
 * layout needs (into NHWC once, back to NCHW once). */
static void
test_resnet_force_nhwc (void)
{
  g_autoptr (PlGraph) g = resnet_block ();
  g_autofree char *table = write_table ("ceilings.table", CEILINGS);
  g_autofree char *tp = g_strdup_printf ("layout.table=%s", table);
  const char *params[] = { "layout.cost=analytic", "layout.force=NHWC", tp, NULL };
  g_autoptr (PlHistory) h = pl_test_run_checked (g, "layout", params, 1e-5, 1);
  PlStep *s = last_step (h);
  g_test_message ("%s", s->report);
  const PlGraph *r = s->graph;
  g_assert_cmpint (layout_of (r, "conv1"), ==, PL_LAYOUT_NHWC);
  g_assert_cmpint (layout_of (r, "conv2"), ==, PL_LAYOUT_NHWC);
  g_autofree char *ts = transforms_text (r);
  g_assert_cmpstr (ts, ==, "NCHW>NHWC,NHWC>NCHW");
  g_assert_cmpint (count_op (r, PL_OP_LayoutTransform), ==, 2);
  g_assert_nonnull (strstr (s->report, "forced NHWC"));
  assert_outputs_nchw (g, r);
  assert_cpu_matches_reference (g, r);
}

/* Running twice: the second run finds the plan in place and changes nothing. */
static void
test_idempotent (void)
{
  g_autoptr (PlGraph) g = resnet_block ();
  g_autofree char *table = write_table ("resnet2.table", resnet_table);
  g_autofree char *tp = g_strdup_printf ("layout.table=%s", table);
  const char *params[] = { tp, "layout.impls=gemm", "layout.cost=analytic", NULL };
  g_autoptr (PlHistory) h = pl_test_run_checked (g, "layout,layout", params, 1e-5, 1);
  g_assert_cmpint (pl_history_n_steps (h), ==, 3);
  PlStep *first = pl_history_step (h, 1), *second = pl_history_step (h, 2);
  g_assert_true (first->changed);
  g_assert_false (second->changed);
  g_assert_true (pl_graph_diff_empty (second->diff));
  g_assert_nonnull (strstr (second->report, "nothing changed"));

  /* and a different plan on top of one replaces it: back to NCHW leaves no transform */
  const char *nchw[] = { "layout.cost=analytic", "layout.force=NCHW", "layout.impls=gemm", NULL };
  g_autoptr (PlHistory) h2 = pl_test_run_checked (second->graph, "layout", nchw, 1e-5, 1);
  PlStep *back = last_step (h2);
  g_assert_true (back->changed);
  g_assert_cmpint (count_op (back->graph, PL_OP_LayoutTransform), ==, 0);
  for (guint i = 0; i < back->graph->values->len; i++)
    g_assert_cmpint (((PlValue *) back->graph->values->pdata[i])->layout, ==, PL_LAYOUT_NCHW);
  assert_outputs_nchw (g, back->graph);
  g_assert_cmpuint (back->graph->nodes->len, ==, g->nodes->len);
}

/* After fusion the conv sits in a fusion body (conv + relu epilogue): the
 * pass says so and changes nothing. */
static void
test_fused_graph (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (tiny_graph);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_graph_infer_shapes (g, &error));
  g_autoptr (PlHistory) h = pl_test_run_checked (g, "fuse-library,layout", NULL, 1e-4, 1);
  g_assert_true (pl_history_step (h, 1)->changed);
  PlStep *s = last_step (h);
  g_assert_false (s->changed);
  g_assert_nonnull (strstr (s->report, "must run before fusion"));
}

/* --- two convs of different shapes: a mixed optimum ------------------------------------- */

#define C1 "conv 2x8x12x12 k16x3x3 s1,1 p1,1,1,1 d1,1 g1 f32"
#define C2 "conv 2x16x12x12 k16x1x1 s1,1 p0,0,0,0 d1,1 g1 f32"
#define TA "transform 2x8x12x12 f32 "
#define TB "transform 2x16x12x12 f32 "

/* c1 is cheapest in NHWC (gemm), c2 in CHWN (direct); every transform 0.25.
 * Mixed: 2 + 0.5 + 3 transforms = 3.25 ms; single NHWC 2 + 6 + 2 = 8.5 (c2
 * NHWC 6), single CHWN 6 + 0.5 + 0.5 = 7, single NCHW 10. */
static const char *mixed_table =
  CEILINGS
  C1 " NCHW gemm\t5\n" C1 " NHWC gemm\t2\n" C1 " CHWN gemm\t6\n"
  C1 " NCHW direct\t7\n" C1 " NHWC direct\t7\n" C1 " CHWN direct\t7\n"
  C2 " NCHW gemm\t5\n" C2 " NHWC gemm\t6\n" C2 " CHWN gemm\t1\n"
  C2 " NCHW direct\t5\n" C2 " NHWC direct\t6\n" C2 " CHWN direct\t0.5\n"
  TA "NCHW>NHWC\t0.25\n" TA "NHWC>NCHW\t0.25\n" TA "NCHW>CHWN\t0.25\n"
  TA "CHWN>NCHW\t0.25\n" TA "NHWC>CHWN\t0.25\n" TA "CHWN>NHWC\t0.25\n"
  TB "NCHW>NHWC\t0.25\n" TB "NHWC>NCHW\t0.25\n" TB "NCHW>CHWN\t0.25\n"
  TB "CHWN>NCHW\t0.25\n" TB "NHWC>CHWN\t0.25\n" TB "CHWN>NHWC\t0.25\n";

static void
test_mixed_optimum (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (mixed_graph);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_graph_infer_shapes (g, &error));
  g_autofree char *table = write_table ("mixed.table", mixed_table);
  g_autofree char *tp = g_strdup_printf ("layout.table=%s", table);
  const char *params[] = { tp, "layout.cost=analytic", NULL };
  g_autoptr (PlHistory) h = pl_test_run_checked (g, "layout", params, 1e-5, 1);
  PlStep *s = last_step (h);
  g_test_message ("%s", s->report);
  const PlGraph *r = s->graph;
  g_assert_cmpint (layout_of (r, "c1"), ==, PL_LAYOUT_NHWC);
  g_assert_cmpint (layout_of (r, "c2"), ==, PL_LAYOUT_CHWN);
  g_assert_cmpint (layout_of (r, "out"), ==, PL_LAYOUT_NCHW);
  /* the bias constant stays NCHW and is read as it is by the Add */
  g_assert_cmpint (layout_of (r, "b1"), ==, PL_LAYOUT_NCHW);
  g_assert_true (pl_graph_find_node (r, "a1")->inputs[1] == pl_graph_find_value (r, "b1"));
  PlNode *c1 = pl_graph_find_node (r, "c1"), *c2 = pl_graph_find_node (r, "c2");
  g_assert_null (pl_node_attr (c1, "impl"));
  g_assert_cmpstr (pl_node_attr_string (c2, "impl", ""), ==, "direct");
  const int64_t *tile;
  int n;
  g_assert_true (pl_node_attr_ints (c2, "tile", &tile, &n));
  g_assert_cmpint (n, ==, 3);
  g_assert_cmpint (tile[0] * tile[1] * tile[2], >, 0);
  g_assert_cmpint (c1->inputs[0]->layout, ==, PL_LAYOUT_NHWC);
  g_assert_cmpint (c2->inputs[0]->layout, ==, PL_LAYOUT_CHWN);
  g_autofree char *ts = transforms_text (r);
  g_assert_cmpstr (ts, ==, "CHWN>NCHW,NCHW>NHWC,NHWC>CHWN");
  g_assert_nonnull (strstr (s->report, "CHWN direct"));
  g_assert_nonnull (strstr (s->report, "transforms: 3 in the graph, 0.7500 ms predicted"));
  g_assert_nonnull (strstr (s->report, "best single layout: CHWN"));
  g_assert_nonnull (strstr (s->report, "search: chain DP"));
  assert_outputs_nchw (g, r);
  assert_cpu_matches_reference (g, r);
}

/* The value a LayoutTransform to layout `to` reads (the first such), or NULL. */
static const PlValue *
transform_input (const PlGraph *g, PlLayout to)
{
  for (guint i = 0; i < g->nodes->len; i++)
    {
      PlNode *t = g->nodes->pdata[i];
      if (t->op == PL_OP_LayoutTransform && t->outputs[0]->layout == to)
        return t->inputs[0];
    }
  return NULL;
}

/* Pointwise ops that fuse into their producer (a conv's bias and Relu, its
 * epilogue; a pointwise op's loop) cost nothing in its layout and their own
 * cost where a transform parts them: the transforms go after the Relus
 * (r1 NHWC with c1, out's Relu CHWN with c2), and the plan's pointwise
 * time is 0. A Mul after the epilogue is no epilogue op: it runs apart and
 * counts. */
static void
test_fused_pointwise (void)
{
  g_autofree char *table = write_table ("fused.table", mixed_table);
  g_autofree char *tp = g_strdup_printf ("layout.table=%s", table);
  const char *params[] = { tp, "layout.cost=analytic", NULL };
  for (int mul = 0; mul < 2; mul++)
    {
      g_auto (GStrv) parts = g_strsplit (mixed_graph, "r1 = Relu(a1)", 2);
      g_autofree char *text = g_strjoinv (mul ? "k = Constant() {value_float=0.5}\n  r1 = Mul(a1, k)" : "r1 = Relu(a1)",
                                          parts);
      g_autoptr (PlGraph) g = pl_test_parse (text);
      g_autoptr (PlHistory) h = pl_test_run_checked (g, "layout", params, 1e-5, 1);
      PlStep *s = last_step (h);
      g_test_message ("%s", s->report);
      const PlValue *to_nchw = transform_input (s->graph, PL_LAYOUT_NCHW);
      g_assert_nonnull (to_nchw);
      g_assert_cmpint (to_nchw->producer->op, ==, PL_OP_Relu);
      if (mul)
        g_assert_null (strstr (s->report, "pointwise 0.0000"));
      else
        {
          g_assert_cmpstr (transform_input (s->graph, PL_LAYOUT_CHWN)->name, ==, "r1");
          g_assert_nonnull (strstr (s->report, "pointwise 0.0000 +"));
        }
      assert_cpu_matches_reference (g, s->graph);
    }
}

/* The same graph with c1 in CHWN only 0.3 ms slower than in NHWC: the
 * mixed plan (3.25 ms; its pointwise ops fuse into the convs, at no cost)
 * predicts 1.5% less than all CHWN (3.30), under min_gain's 3%, so CHWN is
 * kept and the report says why; with min_gain=0 the search's own optimum. */
static void
test_min_gain (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (mixed_graph);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_graph_infer_shapes (g, &error));
  const char *line = C1 " CHWN gemm\t6\n", *at = strstr (mixed_table, line);
  g_assert_nonnull (at);
  g_autofree char *text = g_strdup_printf ("%.*s" C1 " CHWN gemm\t2.3\n%s", (int) (at - mixed_table), mixed_table,
                                           at + strlen (line));
  g_autofree char *table = write_table ("close.table", text);
  g_autofree char *tp = g_strdup_printf ("layout.table=%s", table);
  for (int zero = 0; zero < 2; zero++)
    {
      const char *params[] = { tp, "layout.cost=analytic", zero ? "layout.min_gain=0" : NULL, NULL };
      g_autoptr (PlHistory) h = pl_test_run_checked (g, "layout", params, 1e-5, 1);
      PlStep *s = last_step (h);
      g_test_message ("%s", s->report);
      g_assert_cmpint (layout_of (s->graph, "c1"), ==, zero ? PL_LAYOUT_NHWC : PL_LAYOUT_CHWN);
      g_assert_cmpint (layout_of (s->graph, "c2"), ==, PL_LAYOUT_CHWN);
      if (zero)
        g_assert_null (strstr (s->report, "kept"));
      else
        g_assert_nonnull (strstr (s->report, "kept CHWN: the search's mixed plan predicted 3.2500 ms, 1.5% less, "
                                             "below layout.min_gain (3%)"));
    }
}

/* --- a pool between two convs ------------------------------------------------------------- */

static const char *pool_graph =
  "graph cpc opset 17 {\n"
  "  input x: f32[1, 8, 16, 16]\n"
  "  const w1: f32[16, 8, 3, 3] = random(seed=1, lo=-0.3, hi=0.3)\n"
  "  const w2: f32[16, 16, 3, 3] = random(seed=2, lo=-0.3, hi=0.3)\n"
  "  c1 = Conv(x, w1) {kernel_shape=[3, 3], pads=[1, 1, 1, 1]}\n"
  "  r1 = Relu(c1)\n"
  "  p = MaxPool(r1) {kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]}\n"
  "  c2 = Conv(p, w2) {kernel_shape=[3, 3], pads=[1, 1, 1, 1]}\n"
  "  out = Relu(c2)\n"
  "  output out\n"
  "}\n";

#define PC1 "conv 1x8x16x16 k16x3x3 s1,1 p1,1,1,1 d1,1 g1 f32 "
#define PC2 "conv 1x16x8x8 k16x3x3 s1,1 p1,1,1,1 d1,1 g1 f32 "
#define PP "pool max 1x16x16x16 k3x3 s2,2 p1,1,1,1 d1,1 o8x8 f32 "
#define PT(shape) \
  "transform " shape " f32 NCHW>NHWC\t0.25\n" "transform " shape " f32 NHWC>NCHW\t0.25\n" \
  "transform " shape " f32 NCHW>CHWN\t0.25\n" "transform " shape " f32 CHWN>NCHW\t0.25\n" \
  "transform " shape " f32 NHWC>CHWN\t0.25\n" "transform " shape " f32 CHWN>NHWC\t0.25\n"

/* Both convs cheapest in NHWC; every transform 0.25 ms. */
static const char *pool_table =
  CEILINGS
  PC1 "NCHW gemm\t5\n" PC1 "NHWC gemm\t1\n" PC1 "CHWN gemm\t6\n"
  PC2 "NCHW gemm\t5\n" PC2 "NHWC gemm\t1\n" PC2 "CHWN gemm\t6\n"
  PT ("1x8x16x16") PT ("1x16x16x16") PT ("1x16x8x8");

/* The layout pass on pool_graph with pool_table plus `pool_costs`. */
static PlHistory *
plan_pool_graph (const PlGraph *g, const char *name, const char *pool_costs)
{
  g_autofree char *text = g_strconcat (pool_table, pool_costs, NULL);
  g_autofree char *table = write_table (name, text);
  g_autofree char *tp = g_strdup_printf ("layout.table=%s", table);
  const char *params[] = { tp, "layout.impls=gemm", "layout.cost=analytic", NULL };
  return pl_test_run_checked (g, "layout", params, 1e-5, 1);
}

/* conv -> MaxPool -> conv: the pool takes the convs' NHWC and no transform
 * sits around it, whether its cost is analytic (the same in every layout)
 * or a table's that makes NHWC dearer than NCHW by less than the two
 * transforms NCHW would need; where the table says the pool cannot run in
 * NHWC or CHWN it stays NCHW between two transforms. */
static void
test_pool_between_convs (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (pool_graph);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_graph_infer_shapes (g, &error));
  g_autofree char *key = pl_calibration_pool_key (pl_graph_find_node (g, "p"), PL_LAYOUT_NHWC);
  g_assert_cmpstr (key, ==, PP "NHWC");
  const char *follows[] = { "", PP "NCHW\t0.1\n" PP "NHWC\t0.2\n" PP "CHWN\t0.3\n" };
  for (guint i = 0; i < G_N_ELEMENTS (follows); i++)
    {
      g_autoptr (PlHistory) h = plan_pool_graph (g, "pool.table", follows[i]);
      PlStep *s = last_step (h);
      g_test_message ("%s", s->report);
      const PlGraph *r = s->graph;
      g_assert_cmpint (layout_of (r, "c1"), ==, PL_LAYOUT_NHWC);
      g_assert_cmpint (layout_of (r, "p"), ==, PL_LAYOUT_NHWC);
      g_assert_cmpint (layout_of (r, "c2"), ==, PL_LAYOUT_NHWC);
      /* the pool reads r1 itself and c2 reads the pool's output itself */
      g_assert_true (pl_graph_find_node (r, "p")->inputs[0] == pl_graph_find_value (r, "r1"));
      g_assert_true (pl_graph_find_node (r, "c2")->inputs[0] == pl_graph_find_value (r, "p"));
      g_autofree char *ts = transforms_text (r);
      g_assert_cmpstr (ts, ==, "NCHW>NHWC,NHWC>NCHW");
      g_assert_nonnull (strstr (s->report, "1 pool, the rest fixed NCHW"));
      g_assert_nonnull (strstr (s->report, i == 0 ? "pools 0 measured, 1 analytic, 0 table"
                                                  : "pools 0 measured, 0 analytic, 1 table"));
      g_assert_nonnull (strstr (s->report, "1x16x16x16 max k3x3 s2 p1"));
      g_assert_cmpint (pl_pass_report_get (s->counters, "pools"), ==, 1);
      assert_outputs_nchw (g, r);
      assert_cpu_matches_reference (g, r);
    }
  g_autoptr (PlHistory) h = plan_pool_graph (g, "pool-nchw.table", PP "NCHW\t0.1\n" PP "NHWC\tinf\n" PP "CHWN\tinf\n");
  PlStep *s = last_step (h);
  g_test_message ("%s", s->report);
  const PlGraph *r = s->graph;
  g_assert_cmpint (layout_of (r, "c1"), ==, PL_LAYOUT_NHWC);
  g_assert_cmpint (layout_of (r, "p"), ==, PL_LAYOUT_NCHW);
  g_assert_cmpint (layout_of (r, "c2"), ==, PL_LAYOUT_NHWC);
  g_autofree char *ts = transforms_text (r);
  g_assert_cmpstr (ts, ==, "NCHW>NHWC,NCHW>NHWC,NHWC>NCHW,NHWC>NCHW");
  assert_outputs_nchw (g, r);
  assert_cpu_matches_reference (g, r);
}

/* Measured: the calibration times the pool in each layout (cached like a
 * conv) and the plan runs on the CPU. */
static void
test_measured_pool (void)
{
  g_autoptr (PlGraph) g = pl_test_parse (pool_graph);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_graph_infer_shapes (g, &error));
  g_autoptr (PlCalibration) cal = pl_calibration_new (PL_BACKEND_CPU, true, &error);
  g_assert_no_error (error);
  pl_calibration_restrict (cal, (1u << PL_LAYOUT_COUNT) - 1, 1u << PL_CONV_IMPL_GEMM);
  g_assert_true (pl_calibration_prepare (cal, g, &error));
  g_assert_no_error (error);
  PlNode *p = pl_graph_find_node (g, "p");
  for (int l = 0; l < PL_LAYOUT_COUNT; l++)
    {
      PlCost cost = pl_calibration_pool (cal, p, l);
      g_assert_cmpint (cost.source, ==, PL_COST_MEASURED);
      g_assert_true (cost.ms > 0 && isfinite (cost.ms));
    }
  g_autofree char *path = g_build_filename (cache_dir, "calibration.txt", NULL);
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  g_assert_nonnull (strstr (text, "\tcpu\t" PP "NHWC\t"));
  g_assert_nonnull (strstr (text, "\tcpu\ttransform 1x16x8x8 f32 NHWC>NCHW\t"));
  /* a pool nobody generates (its Indices are read) has no key and costs nothing in NCHW only */
  g_autoptr (PlGraph) gi = pl_test_parse ("graph i opset 17 {\n  input x: f32[1, 2, 4, 4]\n"
                                  "  m, idx = MaxPool(x) {kernel_shape=[2, 2]}\n  output m\n  output idx\n}\n");
  g_assert_true (pl_graph_infer_shapes (gi, &error));
  PlNode *m = pl_graph_find_node (gi, "m");
  g_assert_null (pl_calibration_pool_key (m, PL_LAYOUT_NCHW));
  g_assert_cmpfloat (pl_calibration_pool (cal, m, PL_LAYOUT_NCHW).ms, ==, 0);
  g_assert_true (isinf (pl_calibration_pool (cal, m, PL_LAYOUT_NHWC).ms));

  const char *params[] = { "layout.impls=gemm", NULL };
  g_autoptr (PlHistory) h = pl_test_run_checked (g, "layout", params, 1e-5, 1);
  PlStep *s = last_step (h);
  g_test_message ("%s", s->report);
  g_assert_nonnull (strstr (s->report, "pools 1 measured"));
  assert_outputs_nchw (g, s->graph);
  assert_cpu_matches_reference (g, s->graph);
}

/* --- parameters ------------------------------------------------------------------------ */

static void
test_bad_params (void)
{
  g_autoptr (PlGraph) g = resnet_block ();
  const char *bad[][2] = {
    { "layout.cost=guess", "not measured or analytic" },
    { "layout.backend=reference", "not cpu or cuda" },
    { "layout.layouts=NCHW,NWHC", "'NWHC'" },
    { "layout.impls=winograd", "not gemm or direct" },
    { "layout.force=nhwc", "layout.force" },
    { "layout.table=/nonexistent/table", "cost table" },
    { "layout.tune=-1", "layout.tune: -1 is not in 0..1000" },
    { "layout.refine=11", "layout.refine: 11 is not in 0..10" },
    { "layout.min_gain=1.5", "layout.min_gain: 1.5 is not in [0, 1)" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (PlPipeline) p = pl_pipeline_parse ("layout", &error);
      g_assert_true (pl_pipeline_set_param (p, bad[i][0], &error));
      PlRunOptions o;
      pl_run_options_init (&o);
      g_autoptr (PlHistory) h = pl_pipeline_run (g, p, &o, &error);
      g_assert_nonnull (error);
      g_assert_nonnull (strstr (error->message, bad[i][1]));
    }
}

/* --- main -------------------------------------------------------------------------------- */

static void
remove_tree (const char *path)
{
  if (g_file_test (path, G_FILE_TEST_IS_DIR) && !g_file_test (path, G_FILE_TEST_IS_SYMLINK))
    {
      g_autoptr (GDir) dir = g_dir_open (path, 0, NULL);
      const char *name;
      while (dir && (name = g_dir_read_name (dir)))
        {
          g_autofree char *child = g_build_filename (path, name, NULL);
          remove_tree (child);
        }
      g_rmdir (path);
    }
  else
    g_unlink (path);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_passes_init ();
  g_autoptr (GError) error = NULL;
  cache_dir = g_dir_make_tmp ("passlab-layout-XXXXXX", &error);
  g_assert_no_error (error);
  g_setenv ("PASSLAB_CACHE_DIR", cache_dir, TRUE);
  g_test_add_func ("/Passlab/Layout/calibration-keys-table", test_calibration_keys_and_table);
  g_test_add_func ("/Passlab/Layout/resnet-analytic", test_resnet_analytic);
  g_test_add_func ("/Passlab/Layout/resnet-table", test_resnet_table);
  g_test_add_func ("/Passlab/Layout/resnet-force-nhwc", test_resnet_force_nhwc);
  g_test_add_func ("/Passlab/Layout/idempotent", test_idempotent);
  g_test_add_func ("/Passlab/Layout/fused-graph", test_fused_graph);
  g_test_add_func ("/Passlab/Layout/mixed-optimum", test_mixed_optimum);
  g_test_add_func ("/Passlab/Layout/min-gain", test_min_gain);
  g_test_add_func ("/Passlab/Layout/fused-pointwise", test_fused_pointwise);
  g_test_add_func ("/Passlab/Layout/measured-tiny-conv", test_measured_tiny_conv);
  g_test_add_func ("/Passlab/Layout/recalibrate", test_recalibrate);
  g_test_add_func ("/Passlab/Layout/busy-machine", test_busy_machine);
  g_test_add_func ("/Passlab/Layout/tuned-tiles", test_tuned_tiles);
  g_test_add_func ("/Passlab/Layout/refine-in-context", test_refine_in_context);
  g_test_add_func ("/Passlab/Layout/pool-between-convs", test_pool_between_convs);
  g_test_add_func ("/Passlab/Layout/measured-pool", test_measured_pool);
  g_test_add_func ("/Passlab/Layout/bad-params", test_bad_params);
  int status = g_test_run ();
  remove_tree (cache_dir);
  g_free (cache_dir);
  return status;
}
