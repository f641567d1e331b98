/* test-pass-stitch.c — the stitch pass (seed 002, AStitch): which ops end
 * up in one stitch kernel, the backbones and sub-backbones, the thread
 * mapping for given shapes and device parameters (the seed's [4×2048] on 16
 * SMs among them), the reuse level of key edges, shared-memory buffer reuse
 * and its fallback to global memory, groups of two row spaces in one
 * kernel, earlier fusions absorbed, control edges, never a cycle; every
 * changed step verified and checked numerically through pl_pipeline_run
 * (the reference interpreter runs fusion bodies). */
#include "builtin-passes.h"
#include "cost.h"
#include "pass-manager.h"
#include "text-format.h"
#include "test-util.h"

#include <string.h>

/* --- helpers ------------------------------------------------------------------- */

static PlGraph *
load_graph (const char *relative)
{
  g_autofree char *path = pl_test_source_path (relative);
  g_autoptr (GError) error = NULL;
  PlGraph *g = pl_text_load (path, &error);
  g_assert_no_error (error);
  return g;
}

/* Runs spec on g (params "pass.key=value", NULL-terminated) with the
 * numerical check after every changed step; every step must verify and pass
 * its check. */
static PlHistory *
run_checked (const PlGraph *g, const char *spec, const char *const *params)
{
  return pl_test_run_checked (g, spec, params, 1e-4, 11);
}

static PlStep *
last_step (const PlHistory *h)
{
  return pl_history_step (h, pl_history_n_steps (h) - 1);
}

/* The stitch fusion producing the value called name. */
static PlNode *
stitch_producing (const PlGraph *g, const char *name)
{
  PlValue *v = pl_graph_find_value (g, name);
  g_assert_nonnull (v);
  g_assert_nonnull (v->producer);
  g_assert_cmpstr (v->producer->op_type, ==, "Fusion");
  g_assert_cmpstr (pl_node_attr_string (v->producer, "kind", ""), ==, "stitch");
  return v->producer;
}

static int
count_stitches (const PlGraph *g)
{
  int n = 0;
  for (guint i = 0; i < g->nodes->len; i++)
    {
      PlNode *x = g->nodes->pdata[i];
      n += x->op == PL_OP_Fusion && g_str_equal (pl_node_attr_string (x, "kind", ""), "stitch");
    }
  return n;
}

/* A STRINGS attribute joined by '|'. */
static char *
strings (const PlNode *f, const char *name)
{
  const PlAttr *a = pl_node_attr (f, name);
  g_assert_nonnull (a);
  g_assert_cmpint (a->type, ==, PL_ATTR_STRINGS);
  GString *s = g_string_new (NULL);
  for (int i = 0; i < a->strings.n; i++)
    g_string_append_printf (s, "%s%s", i ? "|" : "", a->strings.v[i]);
  return g_string_free (s, FALSE);
}

/* An INTS attribute joined by ','. */
static char *
ints (const PlNode *f, const char *name)
{
  const int64_t *v;
  int n;
  g_assert_true (pl_node_attr_ints (f, name, &v, &n));
  GString *s = g_string_new (NULL);
  for (int i = 0; i < n; i++)
    g_string_append_printf (s, "%s%" G_GINT64_FORMAT, i ? "," : "", v[i]);
  return g_string_free (s, FALSE);
}

static bool
has_string (const PlNode *f, const char *name, const char *value)
{
  const PlAttr *a = pl_node_attr (f, name);
  for (int i = 0; a && i < a->strings.n; i++)
    if (g_str_equal (a->strings.v[i], value))
      return true;
  return false;
}

static void
assert_level (const PlNode *f, const char *value, const char *level)
{
  g_autofree char *want = g_strdup_printf ("%s:%s", value, level);
  if (!has_string (f, "reuse", want))
    {
      g_autofree char *all = strings (f, "reuse");
      g_error ("reuse of '%s' lacks %s: %s", f->name, want, all);
    }
}

/* The thread mapping of f. */
static void
assert_mapping (const PlNode *f, int64_t rows, int64_t row_length, int64_t block, int64_t rows_per_block,
                int64_t blocks_per_row, int64_t grid, int64_t grid_barrier)
{
  g_assert_cmpint (pl_node_attr_int (f, "rows", -1), ==, rows);
  g_assert_cmpint (pl_node_attr_int (f, "row_length", -1), ==, row_length);
  g_assert_cmpint (pl_node_attr_int (f, "block_size", -1), ==, block);
  g_assert_cmpint (pl_node_attr_int (f, "rows_per_block", -1), ==, rows_per_block);
  g_assert_cmpint (pl_node_attr_int (f, "blocks_per_row", -1), ==, blocks_per_row);
  g_assert_cmpint (pl_node_attr_int (f, "grid", -1), ==, grid);
  g_assert_cmpint (pl_node_attr_int (f, "grid_barrier", -1), ==, grid_barrier);
}

static void
assert_report_has (const PlStep *s, const char *text)
{
  if (!strstr (s->report, text))
    g_error ("report lacks '%s':\n%s", text, s->report);
}

/* --- layer norm, softmax ---------------------------------------------------------- */

static void
test_layer_norm (void)
{
  g_autoptr (PlGraph) g = load_graph ("data/graphs/layer_norm.graph");
  g_autoptr (PlHistory) h = run_checked (g, "stitch", NULL);
  PlStep *s = last_step (h);
  g_assert_true (s->changed);
  g_assert_cmpint (s->graph->nodes->len, ==, 1);
  g_assert_cmpint (s->stats.kernels, ==, 1);
  PlNode *f = stitch_producing (s->graph, "out");
  g_assert_cmpint (f->body->nodes->len, ==, 9);
  g_autofree char *groups = strings (f, "groups");
  g_assert_cmpstr (groups, ==, "mean,d,d2,var,var_eps,std,normalized,scaled,out");
  g_autofree char *bb = strings (f, "backbones");
  g_assert_cmpstr (bb, ==, "mean");
  g_autofree char *sub = strings (f, "sub_backbones");
  g_assert_cmpstr (sub, ==, "var:mean");
  g_assert_cmpstr (pl_node_attr_string (f, "target", ""), ==, "cuda");
  /* 512 rows of 256 on 132 SMs: one row per block of 256 threads */
  assert_mapping (f, 512, 256, 256, 1, 1, 512, 0);
  /* the means are broadcast back to their rows; d is read again after var's barrier */
  assert_level (f, "mean", "shared");
  assert_level (f, "var", "shared");
  assert_level (f, "d", "shared");
  assert_level (f, "d2", "register");
  assert_level (f, "std", "register");
  assert_level (f, "normalized", "register");
  assert_level (f, "x", "shared");   /* read in two phases: cached */
  /* x's buffer becomes d's (Sub writes in place), var takes mean's: 16 + 1024 bytes */
  g_assert_cmpint (pl_node_attr_int (f, "shared_bytes", -1), ==, 1040);
  g_autofree char *buffers = strings (f, "shared_buffers");
  g_assert_cmpstr (buffers, ==, "mean:0:4|x:16:1024|d:16:1024|var:0:4");
  assert_report_has (s, "backbone mean, sub-backbones var");
  assert_report_has (s, "mean→d shared");
  assert_report_has (s, "kernels 9 → 1");
  g_assert_cmpint (pl_pass_report_get (s->counters, "sub-backbones"), ==, 1);
}

static void
test_softmax (void)
{
  g_autoptr (PlGraph) g = load_graph ("data/graphs/softmax.graph");
  g_autoptr (PlHistory) h = run_checked (g, "stitch", NULL);
  PlStep *s = last_step (h);
  g_assert_cmpint (s->graph->nodes->len, ==, 1);
  PlNode *f = stitch_producing (s->graph, "probs");
  g_autofree char *bb = strings (f, "backbones");
  g_assert_cmpstr (bb, ==, "row_max");
  g_autofree char *sub = strings (f, "sub_backbones");
  g_assert_cmpstr (sub, ==, "row_sum:row_max");
  assert_mapping (f, 1024, 256, 256, 1, 1, 1024, 0);
  assert_level (f, "logits", "shared");
  assert_level (f, "row_max", "shared");
  assert_level (f, "shifted", "register");
  assert_level (f, "e", "shared");
  assert_level (f, "row_sum", "shared");
  /* e takes the buffer logits held (dead after shifted), row_sum row_max's */
  g_autofree char *buffers = strings (f, "shared_buffers");
  g_assert_cmpstr (buffers, ==, "row_max:0:4|logits:16:1024|e:16:1024|row_sum:0:4");
  g_assert_cmpint (pl_node_attr_int (f, "shared_bytes", -1), ==, 1040);
}

/* --- thread mapping ---------------------------------------------------------------- */

static PlNode *
stitched_reduce (int rows, int len, const char *const *params, PlHistory **out)
{
  g_autofree char *text = g_strdup_printf ("graph r opset 17 {\n"
                                           "  input x: f32[%d, %d]\n"
                                           "  const axes: i64[1] = [1]\n"
                                           "  y = ReduceSum(x, axes) {keepdims=1}\n"
                                           "  output y\n"
                                           "}\n", rows, len);
  g_autoptr (PlGraph) g = pl_test_parse (text);
  *out = run_checked (g, "stitch", params);
  return stitch_producing (last_step (*out)->graph, "y");
}

static void
test_seed_example (void)
{
  /* [4×2048] → [4×1] on 16 free SMs: each row split over 4 blocks, 16 SMs in all */
  g_autoptr (PlHistory) h = NULL;
  PlNode *f = stitched_reduce (4, 2048, (const char *const[]) { "stitch.sm_count=16", NULL }, &h);
  assert_mapping (f, 4, 2048, 512, 1, 4, 16, 1);
  assert_level (f, "y", "global");
  g_autofree char *bb = strings (f, "backbones");
  g_assert_cmpstr (bb, ==, "y");
  assert_report_has (last_step (h), "each row split over 4 blocks");
  assert_report_has (last_step (h), "grid barrier");

  /* on 132 SMs the pieces reach their floor of 256 elements: 8 blocks per row */
  g_autoptr (PlHistory) h2 = NULL;
  f = stitched_reduce (4, 2048, NULL, &h2);
  assert_mapping (f, 4, 2048, 256, 1, 8, 32, 1);
}

static void
test_packing (void)
{
  /* rows of 32: eight to a block of 256 threads while there are blocks for every SM */
  g_autoptr (PlHistory) h = NULL;
  PlNode *f = stitched_reduce (8192, 32, NULL, &h);
  assert_mapping (f, 8192, 32, 256, 8, 1, 1024, 0);
  g_assert_cmpint (pl_pass_report_get (last_step (h)->counters, "packed rows"), ==, 1);
  /* 64 rows: packing would leave SMs idle, so one warp per row */
  g_autoptr (PlHistory) h2 = NULL;
  f = stitched_reduce (64, 32, NULL, &h2);
  assert_mapping (f, 64, 32, 32, 1, 1, 64, 0);
  /* rows of 8 share a warp */
  g_autoptr (PlHistory) h3 = NULL;
  f = stitched_reduce (100000, 8, NULL, &h3);
  assert_mapping (f, 100000, 8, 256, 32, 1, 3125, 0);
  /* long rows, many of them: one row per block of at most 1024 threads */
  g_autoptr (PlHistory) h4 = NULL;
  f = stitched_reduce (256, 5000, (const char *const[]) { "stitch.max_threads_per_block=512", NULL }, &h4);
  assert_mapping (f, 256, 5000, 512, 1, 1, 256, 0);
}

static void
test_cpu (void)
{
  g_autoptr (PlGraph) g = load_graph ("data/graphs/layer_norm.graph");
  g_autoptr (PlHistory) h = run_checked (g, "stitch", (const char *const[]) { "stitch.target=cpu", "stitch.cores=4", NULL });
  PlNode *f = stitch_producing (last_step (h)->graph, "out");
  g_assert_cmpstr (pl_node_attr_string (f, "target", ""), ==, "cpu");
  /* 512 rows in 4 chunks of 128, one thread each */
  assert_mapping (f, 512, 256, 1, 128, 1, 4, 0);
  /* a thread keeps one row at a time */
  g_assert_cmpint (pl_node_attr_int (f, "shared_bytes", -1), ==, 1040);

  /* few long rows on the cpu: split over the cores, combined behind a barrier */
  g_autoptr (PlHistory) h2 = NULL;
  f = stitched_reduce (1, 4096, (const char *const[]) { "stitch.target=cpu", "stitch.cores=8", NULL }, &h2);
  assert_mapping (f, 1, 4096, 1, 1, 8, 8, 1);
}

static void
test_shared_overflow (void)
{
  /* 1040 bytes do not fit in 1000: the two row buffers (x and d) fall back to global memory */
  g_autoptr (PlGraph) g = load_graph ("data/graphs/layer_norm.graph");
  g_autoptr (PlHistory) h = run_checked (g, "stitch", (const char *const[]) { "stitch.shared_mem_per_block=1000", NULL });
  PlStep *s = last_step (h);
  PlNode *f = stitch_producing (s->graph, "out");
  assert_level (f, "x", "global");
  assert_level (f, "d", "global");
  assert_level (f, "mean", "shared");
  assert_level (f, "var", "shared");
  g_assert_cmpint (pl_node_attr_int (f, "shared_bytes", -1), ==, 16);
  g_assert_cmpint (pl_node_attr_int (f, "grid_barrier", -1), ==, 0);   /* each block reads back its own rows */
  g_assert_cmpint (pl_pass_report_get (s->counters, "values demoted to global"), ==, 2);
  assert_report_has (s, "fall back to global memory");
}

static void
test_params (void)
{
  g_autoptr (PlGraph) g = load_graph ("data/graphs/layer_norm.graph");
  const char *bad[] = { "stitch.target=gpu", "stitch.sm_count=0", "stitch.max_threads_per_block=16", "stitch.cores=0" };
  const char *why[] = { "neither 'cuda' nor 'cpu'", "sm_count must be at least 1", "at least 32", "cores must be at least 1" };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (PlPipeline) p = pl_pipeline_parse ("stitch", &error);
      g_assert_true (pl_pipeline_set_param (p, bad[i], &error));
      PlRunOptions options;
      pl_run_options_init (&options);
      g_autoptr (PlHistory) h = pl_pipeline_run (g, p, &options, &error);
      g_assert_nonnull (error);
      g_assert_nonnull (strstr (error->message, why[i]));
      g_assert_cmpint (pl_history_n_steps (h), ==, 1);
    }
}

/* --- groups --------------------------------------------------------------------------- */

static void
test_group_norm (void)
{
  g_autoptr (PlGraph) g = load_graph ("data/graphs/group_norm.graph");
  g_autoptr (PlHistory) h = run_checked (g, "stitch", NULL);
  PlStep *s = last_step (h);
  g_assert_cmpint (s->graph->nodes->len, ==, 1);
  g_assert_cmpint (pl_history_step (h, 0)->stats.kernels, ==, 12);
  g_assert_cmpint (s->stats.kernels, ==, 1);
  PlNode *f = stitch_producing (s->graph, "out");
  g_assert_cmpint (f->body->nodes->len, ==, 16);
  g_autofree char *bb = strings (f, "backbones");
  g_assert_cmpstr (bb, ==, "mean");
  g_autofree char *sub = strings (f, "sub_backbones");
  g_assert_cmpstr (sub, ==, "var:mean");
  /* 16 (batch, group) rows of 56·56·4 = 12544: each split over 132 / 16 = 8 blocks */
  assert_mapping (f, 16, 12544, 1024, 1, 8, 128, 1);
  assert_level (f, "mean", "global");
  assert_level (f, "var", "global");
  assert_level (f, "centered", "shared");   /* read again after var; each block keeps its piece */
  assert_level (f, "grouped", "register");  /* a view of the input: re-read */
  assert_level (f, "normalized", "register");
  g_assert_cmpint (pl_node_attr_int (f, "shared_bytes", -1), ==, 1568 * 4);
}

static void
test_group_norm_sunk (void)
{
  /* After reshape sinking the statistics reduce the image over H, W first
   * ([2,56,56,32] → 64 rows of 3136) and then 4 channels per group ([2,4,8],
   * 16 rows of 4): two row spaces, one kernel, global memory between them. */
  g_autoptr (PlGraph) g = load_graph ("data/graphs/group_norm.graph");
  g_autoptr (PlHistory) h = run_checked (g, "reshape-sink,stitch", NULL);
  PlStep *s = last_step (h);
  g_assert_cmpint (pl_history_step (h, 1)->stats.kernels, ==, 14);
  g_assert_cmpint (s->stats.kernels, ==, 1);
  g_assert_cmpint (count_stitches (s->graph), ==, 1);
  PlNode *f = stitch_producing (s->graph, "out");
  g_assert_cmpint (f->body->nodes->len, ==, 20);
  g_autofree char *bb = strings (f, "backbones");
  g_assert_cmpstr (bb, ==, "mean_early|mean");
  g_autofree char *sub = strings (f, "sub_backbones");
  g_assert_true (has_string (f, "sub_backbones", "var_early:mean_early"));
  g_assert_true (has_string (f, "sub_backbones", "var:mean"));
  g_autofree char *rows = ints (f, "group_rows");
  g_autofree char *len = ints (f, "group_row_length");
  g_autofree char *bpr = ints (f, "group_blocks_per_row");
  g_autofree char *rpb = ints (f, "group_rows_per_block");
  g_assert_cmpstr (rows, ==, "64,16");
  g_assert_cmpstr (len, ==, "3136,4");
  g_assert_cmpstr (bpr, ==, "2,1");
  g_assert_cmpstr (rpb, ==, "1,16");   /* the small statistics fill one block of the kernel's 1024 threads */
  assert_mapping (f, 64, 3136, 1024, 1, 2, 128, 1);
  assert_level (f, "mean_early", "global");
  assert_level (f, "mean", "shared");
  assert_level (f, "mean_b_widened", "global");  /* into the image's group */
  assert_level (f, "centered", "shared");
  assert_level (f, "image", "shared");           /* read for mean_early and again for centered */
  assert_level (f, "rstd_b_sunk", "register");
  g_assert_cmpint (pl_node_attr_int (f, "shared_bytes", -1), >, 0);
}

static void
test_cross_group (void)
{
  /* a row sum, then a column max of the normalized rows: two row spaces */
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph cross opset 17 {\n"
    "  input x: f32[64, 512]\n"
    "  const ax1: i64[1] = [1]\n"
    "  const ax0: i64[1] = [0]\n"
    "  s = ReduceSum(x, ax1) {keepdims=1}\n"
    "  y = Div(x, s)\n"
    "  col = ReduceMax(y, ax0) {keepdims=1}\n"
    "  out = Mul(y, col)\n"
    "  output out\n"
    "}\n");
  g_autoptr (PlHistory) h = run_checked (g, "stitch", NULL);
  PlNode *f = stitch_producing (last_step (h)->graph, "out");
  g_autofree char *bb = strings (f, "backbones");
  g_assert_cmpstr (bb, ==, "s|col");
  g_autofree char *groups = strings (f, "groups");
  g_assert_cmpstr (groups, ==, "s,y,out|col");
  g_autofree char *rows = ints (f, "group_rows");
  g_assert_cmpstr (rows, ==, "64,512");
  g_autofree char *rpb = ints (f, "group_rows_per_block");
  g_assert_cmpstr (rpb, ==, "1,4");
  /* 64 rows of 512 on 132 SMs: 2 blocks per row */
  assert_mapping (f, 64, 512, 256, 1, 2, 128, 1);
  assert_level (f, "s", "global");
  assert_level (f, "col", "global");
  assert_level (f, "y", "global");   /* read by the column group */
  assert_level (f, "x", "shared");

  /* On 2 SMs holding one 512-thread block each the grid is 2 blocks that
   * loop over the rows: s still reaches y through shared memory (a block
   * barrier apart), but nothing is kept in shared memory past the grid
   * barrier before out. */
  g_autoptr (PlGraph) g2 = pl_test_parse (
    "graph cross opset 17 {\n"
    "  input x: f32[256, 512]\n"
    "  const ax1: i64[1] = [1]\n"
    "  const ax0: i64[1] = [0]\n"
    "  s = ReduceSum(x, ax1) {keepdims=1}\n"
    "  y = Div(x, s)\n"
    "  col = ReduceMax(y, ax0) {keepdims=1}\n"
    "  out = Mul(y, col)\n"
    "  output out\n"
    "}\n");
  g_autoptr (PlHistory) h2 = run_checked (g2, "stitch", (const char *const[]) { "stitch.sm_count=2",
                                                                                "stitch.threads_per_sm=512", NULL });
  f = stitch_producing (last_step (h2)->graph, "out");
  assert_mapping (f, 256, 512, 512, 1, 1, 2, 1);
  assert_level (f, "s", "shared");
  assert_level (f, "y", "global");
  g_assert_false (has_string (f, "reuse", "x:shared"));
  assert_report_has (last_step (h2), "looping within one wave");
}

/* --- whole graphs ------------------------------------------------------------------- */

static void
test_transformer (void)
{
  g_autoptr (PlGraph) g = load_graph ("data/graphs/transformer_block.graph");
  g_autoptr (PlHistory) h = run_checked (g, "decompose,stitch", NULL);
  PlStep *s = last_step (h);
  /* every memory-bound region between the 8 MatMuls is one stitch kernel */
  g_assert_cmpint (pl_history_step (h, 1)->stats.kernels, ==, 49);
  g_assert_cmpint (s->stats.kernels, ==, 17);
  g_assert_cmpint (count_stitches (s->graph), ==, 9);
  for (guint i = 0; i < s->graph->nodes->len; i++)
    {
      PlNode *x = s->graph->nodes->pdata[i];
      g_assert_true (x->op == PL_OP_MatMul || x->op == PL_OP_Fusion);
    }
  PlNode *ln1 = stitch_producing (s->graph, "ln1");
  g_autofree char *bb = strings (ln1, "backbones");
  g_assert_cmpstr (bb, ==, "ln1/mean");
  g_autofree char *sub = strings (ln1, "sub_backbones");
  g_assert_cmpstr (sub, ==, "ln1/var:ln1/mean");
  assert_mapping (ln1, 64, 128, 128, 1, 1, 64, 0);
  assert_level (ln1, "ln1/sub", "shared");

  PlNode *sm = stitch_producing (s->graph, "probs");
  g_autofree char *sbb = strings (sm, "backbones");
  g_assert_cmpstr (sbb, ==, "probs/max");
  g_autofree char *sbody = strings (sm, "groups");
  g_assert_cmpstr (sbody, ==, "scaled_scores,probs/max,probs/sub,probs/exp,probs/sum,probs/div");
  assert_mapping (sm, 256, 64, 64, 1, 1, 256, 0);
  assert_level (sm, "scaled_scores", "shared");

  /* the residual and the second layer norm share a kernel; the final residual cannot (a cycle through the MLP) */
  PlNode *ln2 = stitch_producing (s->graph, "ln2");
  g_assert_true (ln2 == stitch_producing (s->graph, "h"));
  g_assert_true (stitch_producing (s->graph, "y") != ln2);

  /* the GELU region has no backbone: elementwise rows of 1, 128 per block */
  PlNode *gelu = stitch_producing (s->graph, "gelu");
  g_autofree char *gbb = strings (gelu, "backbones");
  g_assert_cmpstr (gbb, ==, "");
  assert_mapping (gelu, 32768, 1, 128, 128, 1, 256, 0);
  assert_level (gelu, "up", "register");
  assert_report_has (s, "kernels 49 → 17");
}

static void
test_transformer_composite (void)
{
  /* without decompose, LayerNormalization and Softmax are backbones themselves */
  g_autoptr (PlGraph) g = load_graph ("data/graphs/transformer_block.graph");
  g_autoptr (PlHistory) h = run_checked (g, "stitch", NULL);
  PlStep *s = last_step (h);
  g_assert_cmpint (count_stitches (s->graph), ==, 9);
  PlNode *ln1 = stitch_producing (s->graph, "ln1");
  g_assert_cmpint (ln1->body->nodes->len, ==, 1);
  g_autofree char *bb = strings (ln1, "backbones");
  g_assert_cmpstr (bb, ==, "ln1");
  assert_mapping (ln1, 64, 128, 128, 1, 1, 64, 0);
  assert_level (ln1, "x", "shared");   /* the composite reads its rows in each pass */
  PlNode *sm = stitch_producing (s->graph, "probs");
  g_autofree char *sbb = strings (sm, "backbones");
  g_assert_cmpstr (sbb, ==, "probs");
  assert_level (sm, "scaled_scores", "shared");
  PlNode *ln2 = stitch_producing (s->graph, "ln2");
  assert_level (ln2, "h", "shared");
  assert_level (ln2, "attn", "register");
}

static void
test_gelu_bias (void)
{
  g_autoptr (PlGraph) g = load_graph ("data/graphs/gelu_mlp.graph");
  g_autoptr (PlHistory) h = run_checked (g, "stitch", NULL);
  PlStep *s = last_step (h);
  g_assert_cmpint (pl_history_step (h, 0)->stats.kernels, ==, 12);
  g_assert_cmpint (s->stats.kernels, ==, 4);   /* 2 MatMuls, the bias + GELU kernel, the last bias add */
  g_assert_cmpint (count_stitches (s->graph), ==, 1);
  PlNode *f = stitch_producing (s->graph, "gelu");
  g_autofree char *groups = strings (f, "groups");
  g_assert_cmpstr (groups, ==, "h,h3,half_h,h3c,inner,scaled,t,one_plus_t,gelu");   /* the body's order */
  g_autofree char *bb = strings (f, "backbones");
  g_assert_cmpstr (bb, ==, "");
  /* 65536 elements, one per thread: blocks of 256 */
  assert_mapping (f, 65536, 1, 256, 256, 1, 256, 0);
  const PlAttr *reuse = pl_node_attr (f, "reuse");
  g_assert_cmpint (reuse->strings.n, ==, 8);
  for (int i = 0; i < reuse->strings.n; i++)
    g_assert_true (g_str_has_suffix (reuse->strings.v[i], ":register"));
  g_assert_cmpint (pl_node_attr_int (f, "shared_bytes", -1), ==, 0);
  g_assert_nonnull (pl_graph_find_node (s->graph, "y"));   /* alone between the MatMul and the output */
}

static void
test_absorb (void)
{
  /* fuse-loops makes an input fusion and a loop fusion of layer norm; stitch
   * inlines both and makes the same single kernel as from the primitives */
  g_autoptr (PlGraph) g = load_graph ("data/graphs/layer_norm.graph");
  g_autoptr (PlHistory) h = run_checked (g, "fuse-loops,stitch", NULL);
  g_assert_cmpint (pl_history_step (h, 1)->stats.kernels, ==, 2);
  PlStep *s = last_step (h);
  g_assert_cmpint (s->graph->nodes->len, ==, 1);
  PlNode *f = stitch_producing (s->graph, "out");
  g_autofree char *groups = strings (f, "groups");
  g_assert_cmpstr (groups, ==, "mean,d,d2,var,var_eps,std,normalized,scaled,out");
  assert_mapping (f, 512, 256, 256, 1, 1, 512, 0);
  g_assert_cmpint (pl_pass_report_get (s->counters, "fusions absorbed"), ==, 2);

  /* stitching twice gives the same plan */
  g_autoptr (PlHistory) h2 = run_checked (g, "stitch,stitch", NULL);
  PlNode *a = stitch_producing (pl_history_step (h2, 1)->graph, "out");
  PlNode *b = stitch_producing (pl_history_step (h2, 2)->graph, "out");
  const char *keys[] = { "reuse", "shared_buffers", "groups", "backbones" };
  for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
    {
      g_autofree char *x = strings (a, keys[i]);
      g_autofree char *y = strings (b, keys[i]);
      g_assert_cmpstr (x, ==, y);
    }
  g_assert_cmpint (pl_node_attr_int (b, "grid", -1), ==, 512);
}

static void
test_no_cycle (void)
{
  /* b reads a directly and through the MatMul: a and b cannot share a kernel */
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph c opset 17 {\n"
    "  input x: f32[8, 16]\n"
    "  const w: f32[16, 16] = random(seed=1, lo=-0.5, hi=0.5)\n"
    "  a = Relu(x)\n"
    "  a2 = Exp(a)\n"
    "  m = MatMul(a2, w)\n"
    "  b = Add(a, m)\n"
    "  c = Sigmoid(b)\n"
    "  output c\n"
    "}\n");
  g_autoptr (PlHistory) h = run_checked (g, "stitch", NULL);
  PlStep *s = last_step (h);
  g_assert_cmpint (count_stitches (s->graph), ==, 2);
  PlNode *first = stitch_producing (s->graph, "a2");
  PlNode *second = stitch_producing (s->graph, "c");
  g_assert_true (first != second);
  g_autofree char *g1 = strings (first, "groups");
  g_autofree char *g2 = strings (second, "groups");
  g_assert_cmpstr (g1, ==, "a,a2");
  g_assert_cmpstr (g2, ==, "b,c");
  g_assert_cmpint (s->stats.kernels, ==, 3);
}

static void
test_controls (void)
{
  /* control edges into and out of a region move to its kernel; a stitch
   * fusion with control edges is kept as it is by a second stitch */
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph c opset 17 {\n"
    "  input x: f32[8, 64]\n"
    "  const w: f32[64, 64] = random(seed=3, lo=-0.2, hi=0.2)\n"
    "  const ax: i64[1] = [1]\n"
    "  m = MatMul(x, w)\n"
    "  s = ReduceMax(m, ax) {keepdims=1}\n"
    "  d = Sub(m, s) after(serialize: m)\n"
    "  e = Exp(d)\n"
    "  o = MatMul(e, w) after(prefetch: s)\n"
    "  output o\n"
    "}\n");
  g_autoptr (PlHistory) h = run_checked (g, "stitch,stitch", NULL);
  PlStep *s1 = pl_history_step (h, 1), *s2 = pl_history_step (h, 2);
  PlNode *f = stitch_producing (s1->graph, "e");
  g_assert_cmpint (f->n_controls, ==, 1);
  g_assert_cmpstr (f->controls[0].node->name, ==, "m");
  PlNode *o = pl_graph_find_node (s1->graph, "o");
  g_assert_cmpint (o->n_controls, ==, 1);
  g_assert_true (o->controls[0].node == f);
  g_assert_false (s2->changed);
  g_assert_cmpint (count_stitches (s2->graph), ==, 1);
}

static void
test_nothing (void)
{
  /* a lone elementwise op between MatMuls is left alone */
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph n opset 17 {\n"
    "  input x: f32[4, 4]\n"
    "  const w: f32[4, 4] = random(seed=2, lo=-1, hi=1)\n"
    "  m = MatMul(x, w)\n"
    "  r = Relu(m)\n"
    "  o = MatMul(r, w)\n"
    "  output o\n"
    "}\n");
  g_autoptr (PlHistory) h = run_checked (g, "stitch", NULL);
  PlStep *s = last_step (h);
  g_assert_false (s->changed);
  g_assert_cmpint (count_stitches (s->graph), ==, 0);
  assert_report_has (s, "nothing to stitch");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_passes_init ();
  g_test_add_func ("/Passlab/PassStitch/layer-norm", test_layer_norm);
  g_test_add_func ("/Passlab/PassStitch/softmax", test_softmax);
  g_test_add_func ("/Passlab/PassStitch/seed-example", test_seed_example);
  g_test_add_func ("/Passlab/PassStitch/packing", test_packing);
  g_test_add_func ("/Passlab/PassStitch/cpu", test_cpu);
  g_test_add_func ("/Passlab/PassStitch/shared-overflow", test_shared_overflow);
  g_test_add_func ("/Passlab/PassStitch/params", test_params);
  g_test_add_func ("/Passlab/PassStitch/group-norm", test_group_norm);
  g_test_add_func ("/Passlab/PassStitch/group-norm-sunk", test_group_norm_sunk);
  g_test_add_func ("/Passlab/PassStitch/cross-group", test_cross_group);
  g_test_add_func ("/Passlab/PassStitch/transformer", test_transformer);
  g_test_add_func ("/Passlab/PassStitch/transformer-composite", test_transformer_composite);
  g_test_add_func ("/Passlab/PassStitch/gelu-bias", test_gelu_bias);
  g_test_add_func ("/Passlab/PassStitch/absorb", test_absorb);
  g_test_add_func ("/Passlab/PassStitch/no-cycle", test_no_cycle);
  g_test_add_func ("/Passlab/PassStitch/controls", test_controls);
  g_test_add_func ("/Passlab/PassStitch/nothing", test_nothing);
  return g_test_run ();
}
