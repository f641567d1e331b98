/* test-pass-reshape-sink.c — the reshape-sink pass (seed 000): the exact
 * rewritten structure of pattern A (reduce(reshape(X))) and pattern B
 * (reshape(f(reshape(X), broadcast(Y)))), the cases it must leave alone,
 * graph outputs, the report, and the group-norm / ghost-batch-norm samples.
 * Every rewrite runs through the pass manager with the numerical check on. */
#include "pass-manager.h"
#include "test-util.h"
#include "text-format.h"

#include <string.h>

/* Runs pipeline spec on g with the numerical check; asserts that every step
 * verifies and passes the check. */
static PlHistory *
run_checked (const PlGraph *g, const char *spec, const char *param)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PlPipeline) p = pl_pipeline_parse (spec, &error);
  g_assert_no_error (error);
  if (param)
    {
      pl_pipeline_set_param (p, param, &error);
      g_assert_no_error (error);
    }
  PlRunOptions options;
  pl_run_options_init (&options);
  options.check = true;
  PlHistory *h = pl_pipeline_run (g, p, &options, &error);
  g_assert_no_error (error);
  g_assert_null (h->error);
  for (int i = 1; i < pl_history_n_steps (h); i++)
    {
      PlStep *s = pl_history_step (h, i);
      g_assert_true (pl_graph_verify (s->graph, &error));
      g_assert_no_error (error);
      if (s->changed)
        {
          g_assert_true (s->checked);
          if (s->check_failed)
            g_error ("%s", s->check_message);
        }
    }
  return h;
}

static PlStep *
last_step (const PlHistory *h)
{
  return pl_history_step (h, pl_history_n_steps (h) - 1);
}

/* "Op[shape] Op[shape] ..." over the nodes in topological order. */
static char *
op_sequence (const PlGraph *g)
{
  int n;
  g_autofree PlNode **order = pl_graph_topo_order (g, &n, NULL);
  GString *s = g_string_new (NULL);
  for (int k = 0; k < n; k++)
    {
      g_autofree char *shape = pl_shape_to_string (&order[k]->outputs[0]->shape);
      g_string_append_printf (s, "%s%s%s", k ? " " : "", order[k]->op_type, shape);
    }
  return g_string_free (s, FALSE);
}

/* The nodes of op_type in topological order. */
static PlNode *
nth_node (const PlGraph *g, const char *op_type, int nth)
{
  int n;
  g_autofree PlNode **order = pl_graph_topo_order (g, &n, NULL);
  for (int k = 0; k < n; k++)
    if (strcmp (order[k]->op_type, op_type) == 0 && nth-- == 0)
      return order[k];
  g_error ("no %s node #%d", op_type, nth);
  return NULL;
}

/* A reduction's axes, from its attribute or constant input, as "[1, 2]". */
static char *
axes_of (const PlNode *node)
{
  const int64_t *v = NULL;
  int n = 0;
  g_autoptr (PlTensor) t = NULL;
  if (node->n_inputs > 1 && node->inputs[1])
    {
      t = pl_tensor_ref (node->inputs[1]->constant);
      g_assert_nonnull (t);
      v = t->data;
      n = (int) t->numel;
    }
  else
    pl_node_attr_ints (node, "axes", &v, &n);
  GString *s = g_string_new ("[");
  for (int i = 0; i < n; i++)
    g_string_append_printf (s, "%s%" G_GINT64_FORMAT, i ? ", " : "", v[i]);
  g_string_append_c (s, ']');
  return g_string_free (s, FALSE);
}

static void
assert_ops (const PlGraph *g, const char *want)
{
  g_autofree char *got = op_sequence (g);
  g_assert_cmpstr (got, ==, want);
}

static void
assert_axes (const PlNode *node, const char *want)
{
  g_autofree char *got = axes_of (node);
  g_assert_cmpstr (got, ==, want);
}

/* Applies reshape-sink alone (checked) and returns the result. */
static PlGraph *
sink (const char *text, PlPassReport **report)
{
  g_autoptr (PlGraph) g = pl_test_parse (text);
  g_autoptr (PlHistory) h = run_checked (g, "reshape-sink", NULL);
  PlStep *s = last_step (h);
  if (report)
    *report = g_steal_pointer (&s->counters);
  return pl_graph_copy (s->graph);
}

/* --- pattern A ------------------------------------------------------------------ */

/* The seed's group norm statistics: reduce(reshape(image, [B,H,W,C/G,G]), [1,2,3])
 * → reduce(reshape(reduce(image, [1,2]), [B,C/G,G]), [1]). */
static void
test_reduce_group_norm (void)
{
  g_autoptr (PlGraph) in = pl_test_parse ("graph a opset 17 {\n"
                                  "  input x: f32[2, 6, 6, 8]\n"
                                  "  const s: i64[5] = [2, 6, 6, 2, 4]\n"
                                  "  g = Reshape(x, s)\n"
                                  "  m = ReduceMean(g) {axes=[1, 2, 3], keepdims=0}\n"
                                  "  output m\n"
                                  "}\n");
  guint32 m_id = pl_graph_find_node (in, "m")->id;
  g_autoptr (PlHistory) h = run_checked (in, "reshape-sink", NULL);
  PlGraph *g = last_step (h)->graph;
  assert_ops (g, "ReduceMean[2, 8] Reshape[2, 2, 4] ReduceMean[2, 4]");
  PlNode *early = nth_node (g, "ReduceMean", 0), *rest = nth_node (g, "ReduceMean", 1);
  g_assert_true (early->inputs[0] == pl_graph_find_value (g, "x"));
  assert_axes (early, "[1, 2]");
  g_assert_cmpint (pl_node_attr_int (early, "keepdims", 1), ==, 0);
  assert_axes (rest, "[1]");
  g_assert_cmpint (pl_node_attr_int (rest, "keepdims", 1), ==, 0);
  /* the reduction was rewritten in place: same node, same output name */
  g_assert_cmpuint (rest->id, ==, m_id);
  g_assert_cmpstr (((PlValue *) g->outputs->pdata[0])->name, ==, "m");

  PlPassReport *r = last_step (h)->counters;
  g_assert_cmpint (pl_pass_report_get (r, "pattern A (reduce)"), ==, 1);
  g_assert_cmpint (pl_pass_report_get (r, "pattern B (broadcast)"), ==, 0);
  g_assert_cmpint (pl_pass_report_get (r, "reshape bytes before"), ==, 576 * 4);
  g_assert_cmpint (pl_pass_report_get (r, "reshape bytes after"), ==, 16 * 4);
  g_assert_cmpint (last_step (h)->stats.reshape_bytes, ==, 64);
}

/* keepdims=1 with the axes as an input (ReduceSum, opset 13+): the reshape
 * target keeps 1s where the early axes were, the outer reduction keeps dims. */
static void
test_reduce_keepdims_axes_input (void)
{
  g_autoptr (PlGraph) g = sink ("graph a opset 17 {\n"
                                "  input x: f32[2, 6, 6, 8]\n"
                                "  const s: i64[5] = [2, 6, 6, 2, 4]\n"
                                "  const axes: i64[3] = [1, 2, -2]\n"
                                "  g = Reshape(x, s)\n"
                                "  m = ReduceSum(g, axes) {keepdims=1}\n"
                                "  output m\n"
                                "}\n", NULL);
  assert_ops (g, "ReduceSum[2, 8] Reshape[2, 1, 1, 2, 4] ReduceSum[2, 1, 1, 1, 4]");
  PlNode *early = nth_node (g, "ReduceSum", 0), *rest = nth_node (g, "ReduceSum", 1);
  g_assert_cmpint (early->n_inputs, ==, 2);  /* axes stay an input */
  assert_axes (early, "[1, 2]");
  g_assert_cmpint (rest->n_inputs, ==, 2);
  assert_axes (rest, "[3]");
  g_assert_cmpint (pl_node_attr_int (rest, "keepdims", 1), ==, 1);
  g_assert_null (pl_node_attr (rest, "axes"));
}

/* Each reduction splits into an inner and an outer one that compose exactly;
 * the check runs both versions on the same inputs. Exp keeps LogSum's sums
 * positive. */
static void
test_reduce_ops (void)
{
  static const struct { const char *op, *inner, *outer; } cases[] = {
    { "ReduceSum", "ReduceSum", "ReduceSum" },
    { "ReduceMean", "ReduceMean", "ReduceMean" },
    { "ReduceMax", "ReduceMax", "ReduceMax" },
    { "ReduceMin", "ReduceMin", "ReduceMin" },
    { "ReduceProd", "ReduceProd", "ReduceProd" },
    { "ReduceSumSquare", "ReduceSumSquare", "ReduceSum" },
    { "ReduceL1", "ReduceL1", "ReduceSum" },
    { "ReduceL2", "ReduceL2", "ReduceL2" },
    { "ReduceLogSumExp", "ReduceLogSumExp", "ReduceLogSumExp" },
    { "ReduceLogSum", "ReduceLogSum", "ReduceLogSumExp" },
  };
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    for (int keepdims = 0; keepdims <= 1; keepdims++)
      {
        bool sum = strcmp (cases[c].op, "ReduceSum") == 0;
        g_autofree char *text = g_strdup_printf ("graph a opset 17 {\n"
                                                 "  input x: f32[3, 4, 5, 6]\n"
                                                 "  const s: i64[5] = [3, 4, 5, 2, 3]\n"
                                                 "  const axes: i64[2] = [2, 3]\n"
                                                 "  e = Exp(x)\n"
                                                 "  g = Reshape(e, s)\n"
                                                 "  m = %s(g%s) {%skeepdims=%d}\n"
                                                 "  output m\n"
                                                 "}\n",
                                                 cases[c].op, sum ? ", axes" : "", sum ? "" : "axes=[2, 3], ",
                                                 keepdims);
        g_autoptr (PlGraph) g = sink (text, NULL);
        g_autofree char *want = g_strdup_printf ("Exp[3, 4, 5, 6] %s[3, 4, 6] Reshape[3, 4, %s2, 3] %s[3, 4, %s3]",
                                                 cases[c].inner, keepdims ? "1, " : "", cases[c].outer,
                                                 keepdims ? "1, 1, " : "");
        assert_ops (g, want);
        assert_axes (nth_node (g, cases[c].inner, 0), "[2]");
        /* without keepdims, the early axis is gone from the reshape target */
        assert_axes (nth_node (g, cases[c].outer, strcmp (cases[c].inner, cases[c].outer) == 0),
                     keepdims ? "[3]" : "[2]");
      }
}

/* Dims of X merged into one reduced dim are all reduced first; the reshape
 * and the outer reduction vanish. */
static void
test_reduce_merged_dims (void)
{
  g_autoptr (PlGraph) g = sink ("graph a opset 17 {\n"
                                "  input x: f32[2, 3, 4, 5]\n"
                                "  const s: i64[3] = [2, 12, 5]\n"
                                "  g = Reshape(x, s)\n"
                                "  m = ReduceMax(g) {axes=[1], keepdims=0}\n"
                                "  output m\n"
                                "}\n", NULL);
  assert_ops (g, "ReduceMax[2, 5]");
  assert_axes (nth_node (g, "ReduceMax", 0), "[1, 2]");
  g_assert_cmpstr (((PlValue *) g->outputs->pdata[0])->name, ==, "m");

  g_autoptr (PlGraph) k = sink ("graph a opset 17 {\n"
                                "  input x: f32[2, 3, 4, 5]\n"
                                "  const s: i64[3] = [2, 12, 5]\n"
                                "  g = Reshape(x, s)\n"
                                "  m = ReduceMax(g) {axes=[1], keepdims=1}\n"
                                "  output m\n"
                                "}\n", NULL);
  assert_ops (k, "ReduceMax[2, 5] Reshape[2, 1, 5]");
}

/* [2, 6, 4] → [2, 4, 6] mixes the last two dims; reducing both reduces the
 * whole mixed stretch, so x is reduced directly. */
static void
test_reduce_mixed_stretch (void)
{
  g_autoptr (PlGraph) g = sink ("graph a opset 17 {\n"
                                "  input x: f32[2, 6, 4]\n"
                                "  const s: i64[3] = [2, 4, 6]\n"
                                "  const axes: i64[2] = [1, 2]\n"
                                "  g = Reshape(x, s)\n"
                                "  m = ReduceSum(g, axes) {keepdims=1}\n"
                                "  output m\n"
                                "}\n", NULL);
  assert_ops (g, "ReduceSum[2, 1, 1]");
  assert_axes (nth_node (g, "ReduceSum", 0), "[1, 2]");
  g_assert_cmpint (pl_node_attr_int (nth_node (g, "ReduceSum", 0), "keepdims", 0), ==, 1);
}

static void
assert_unchanged (const char *text)
{
  g_autoptr (PlGraph) in = pl_test_parse (text);
  g_autofree char *before = op_sequence (in);
  PlPassReport *report = NULL;
  g_autoptr (PlGraph) out = sink (text, &report);
  assert_ops (out, before);
  g_assert_cmpint (pl_pass_report_get (report, "pattern A (reduce)"), ==, 0);
  g_assert_cmpint (pl_pass_report_get (report, "pattern B (broadcast)"), ==, 0);
  pl_pass_report_free (report);
}

/* Reshapes that touch every reduced dim, or rewrites that would not pay. */
static void
test_reduce_negative (void)
{
  /* the reduced dim 4 comes from splitting x's 12 */
  assert_unchanged ("graph a opset 17 {\n"
                    "  input x: f32[2, 12]\n"
                    "  const s: i64[3] = [2, 3, 4]\n"
                    "  g = Reshape(x, s)\n"
                    "  m = ReduceMax(g) {axes=[2], keepdims=0}\n"
                    "  output m\n"
                    "}\n");
  /* [4, 6] → [6, 4]: no dim survives */
  assert_unchanged ("graph a opset 17 {\n"
                    "  input x: f32[4, 6]\n"
                    "  const s: i64[2] = [6, 4]\n"
                    "  g = Reshape(x, s)\n"
                    "  m = ReduceMean(g) {axes=[1], keepdims=0}\n"
                    "  output m\n"
                    "}\n");
  /* only the split channel dim is reduced */
  assert_unchanged ("graph a opset 17 {\n"
                    "  input x: f32[2, 6, 6, 8]\n"
                    "  const s: i64[5] = [2, 6, 6, 2, 4]\n"
                    "  g = Reshape(x, s)\n"
                    "  m = ReduceMean(g) {axes=[3], keepdims=0}\n"
                    "  output m\n"
                    "}\n");
  /* the reshape stays anyway (a graph output): another reshape would add bytes */
  assert_unchanged ("graph a opset 17 {\n"
                    "  input x: f32[2, 6, 6, 8]\n"
                    "  const s: i64[5] = [2, 6, 6, 2, 4]\n"
                    "  g = Reshape(x, s)\n"
                    "  m = ReduceMean(g) {axes=[1, 2, 3], keepdims=0}\n"
                    "  output m, g\n"
                    "}\n");
  /* integer means truncate: a mean of means is not the mean */
  assert_unchanged ("graph a opset 17 {\n"
                    "  input x: i64[2, 6, 6, 8]\n"
                    "  const s: i64[5] = [2, 6, 6, 2, 4]\n"
                    "  g = Reshape(x, s)\n"
                    "  m = ReduceMean(g) {axes=[1, 2, 3], keepdims=0}\n"
                    "  output m\n"
                    "}\n");
  /* ArgMax is no composable reduction */
  assert_unchanged ("graph a opset 17 {\n"
                    "  input x: f32[2, 6, 8]\n"
                    "  const s: i64[4] = [2, 6, 2, 4]\n"
                    "  g = Reshape(x, s)\n"
                    "  m = ArgMax(g) {axis=1, keepdims=0}\n"
                    "  output m\n"
                    "}\n");
}

/* Integer sums wrap identically in any order. */
static void
test_reduce_integer_sum (void)
{
  g_autoptr (PlGraph) g = sink ("graph a opset 17 {\n"
                                "  input x: i32[2, 6, 6, 8]\n"
                                "  const s: i64[5] = [2, 6, 6, 2, 4]\n"
                                "  const axes: i64[3] = [1, 2, 3]\n"
                                "  g = Reshape(x, s)\n"
                                "  m = ReduceSum(g, axes) {keepdims=0}\n"
                                "  output m\n"
                                "}\n", NULL);
  assert_ops (g, "ReduceSum[2, 8] Reshape[2, 2, 4] ReduceSum[2, 4]");
}

/* --- pattern B ------------------------------------------------------------------ */

/* reshape(add(reshape(x), b)) with b broadcast implicitly: b is widened over
 * the split dim and reshaped into x's dims instead. */
static void
test_broadcast_implicit (void)
{
  PlPassReport *report = NULL;
  g_autoptr (PlGraph) g = sink ("graph b opset 17 {\n"
                                "  input x: f32[2, 4, 6]\n"
                                "  input b: f32[2, 1, 1, 3]\n"
                                "  const s: i64[4] = [2, 4, 2, 3]\n"
                                "  const p: i64[3] = [2, 4, 6]\n"
                                "  g = Reshape(x, s)\n"
                                "  y = Add(g, b)\n"
                                "  out = Reshape(y, p)\n"
                                "  output out\n"
                                "}\n", &report);
  assert_ops (g, "Expand[2, 1, 2, 3] Reshape[2, 1, 6] Add[2, 4, 6]");
  PlNode *add = nth_node (g, "Add", 0), *expand = nth_node (g, "Expand", 0);
  g_assert_true (add->inputs[0] == pl_graph_find_value (g, "x"));
  g_assert_true (add->inputs[1] == nth_node (g, "Reshape", 0)->outputs[0]);
  g_assert_true (expand->inputs[0] == pl_graph_find_value (g, "b"));
  g_assert_true (g->outputs->pdata[0] == add->outputs[0]);
  g_assert_cmpstr (add->outputs[0]->name, ==, "out");
  g_assert_cmpint (pl_pass_report_get (report, "pattern B (broadcast)"), ==, 1);
  g_assert_cmpint (pl_pass_report_get (report, "reshape bytes before"), ==, 2 * 48 * 4);
  g_assert_cmpint (pl_pass_report_get (report, "reshape bytes after"), ==, 12 * 4);
  g_assert_cmpint (pl_pass_report_get (report, "reshapes before"), ==, 2);
  g_assert_cmpint (pl_pass_report_get (report, "reshapes after"), ==, 1);
  pl_pass_report_free (report);
}

/* An operand that already broadcasts against x (per channel, the dims the
 * reshape merges are 1) is used as it is: no reshape remains. */
static void
test_broadcast_direct (void)
{
  g_autoptr (PlGraph) g = sink ("graph b opset 17 {\n"
                                "  input x: f32[8, 3]\n"
                                "  const c: f32[3] = [1.5, -2, 0.25]\n"
                                "  const s: i64[3] = [2, 4, 3]\n"
                                "  const p: i64[2] = [8, 3]\n"
                                "  g = Reshape(x, s)\n"
                                "  y = Mul(g, c)\n"
                                "  r = Relu(y)\n"
                                "  out = Reshape(r, p)\n"
                                "  output out\n"
                                "}\n", NULL);
  assert_ops (g, "Mul[8, 3] Relu[8, 3]");
  g_assert_true (nth_node (g, "Mul", 0)->inputs[1] == pl_graph_find_value (g, "c"));
}

/* Group norm's normalization: Reshape back(Mul(Sub(Reshape(x), mean_b), invstd_b))
 * with explicit Expands, and the statistics' reductions on the same reshape
 * (pattern A at the exits). One rewrite removes both big reshapes. */
static void
test_broadcast_group_norm (void)
{
  g_autoptr (PlGraph) in = pl_test_parse ("graph gn opset 17 {\n"
                                  "  input x: f32[2, 5, 5, 12]\n"
                                  "  const gs: i64[5] = [2, 5, 5, 3, 4]\n"
                                  "  const ss: i64[5] = [2, 1, 1, 1, 4]\n"
                                  "  const xs: i64[4] = [2, 5, 5, 12]\n"
                                  "  g = Reshape(x, gs)\n"
                                  "  mean = ReduceMean(g) {axes=[1, 2, 3], keepdims=0}\n"
                                  "  mean_r = Reshape(mean, ss)\n"
                                  "  mean_b = Expand(mean_r, gs)\n"
                                  "  c = Sub(g, mean_b)\n"
                                  "  sq = Mul(c, c)\n"
                                  "  var = ReduceMean(sq) {axes=[1, 2, 3], keepdims=1}\n"
                                  "  rstd = Reciprocal(var)\n"
                                  "  rstd_b = Expand(rstd, gs)\n"
                                  "  n = Mul(c, rstd_b)\n"
                                  "  out = Reshape(n, xs)\n"
                                  "  output out\n"
                                  "}\n");
  guint32 sub_id = pl_graph_find_node (in, "c")->id;
  g_autoptr (PlHistory) h = run_checked (in, "reshape-sink", NULL);
  PlGraph *g = last_step (h)->graph;
  assert_ops (g, "ReduceMean[2, 12] Reshape[2, 3, 4] ReduceMean[2, 4] Reshape[2, 1, 1, 1, 4] "
                 "Expand[2, 1, 1, 3, 4] Reshape[2, 1, 1, 12] Sub[2, 5, 5, 12] Mul[2, 5, 5, 12] "
                 "ReduceMean[2, 12] Reshape[2, 1, 1, 3, 4] ReduceMean[2, 1, 1, 1, 4] Reciprocal[2, 1, 1, 1, 4] "
                 "Expand[2, 1, 1, 3, 4] Reshape[2, 1, 1, 12] Mul[2, 5, 5, 12]");
  PlNode *sub = pl_graph_find_node (g, "c");
  g_assert_cmpuint (sub->id, ==, sub_id);  /* rewritten in place */
  g_assert_true (sub->inputs[0] == pl_graph_find_value (g, "x"));
  assert_axes (nth_node (g, "ReduceMean", 0), "[1, 2]");
  assert_axes (nth_node (g, "ReduceMean", 1), "[1]");
  assert_axes (nth_node (g, "ReduceMean", 2), "[1, 2]");
  assert_axes (nth_node (g, "ReduceMean", 3), "[3]");
  g_assert_cmpstr (((PlValue *) g->outputs->pdata[0])->name, ==, "out");
  PlPassReport *r = last_step (h)->counters;
  g_assert_cmpint (pl_pass_report_get (r, "pattern A (reduce)"), ==, 2);
  g_assert_cmpint (pl_pass_report_get (r, "pattern B (broadcast)"), ==, 1);
  /* before: 2 × 600 floats + 8; after: 24 + 8 + 24 (operand) + 24 + 24 (operand) */
  g_assert_cmpint (pl_pass_report_get (r, "reshape bytes before"), ==, (1200 + 8) * 4);
  g_assert_cmpint (pl_pass_report_get (r, "reshape bytes after"), ==, (24 + 8 + 24 + 24 + 24) * 4);
}

/* Group norm as exported from NCHW frameworks: [N, C, H, W] → [N, G, C/G·H·W].
 * No dim of the reshape is untouched, yet H and W lie wholly inside the
 * reduced dim: they are reduced first. The statistics [N, G, 1] are widened
 * over C/G in unit space ([N·G, 1] → [N·G, C/G]) and reshaped to [N, C, 1, 1]. */
static void
test_broadcast_group_norm_nchw (void)
{
  PlPassReport *report = NULL;
  g_autoptr (PlGraph) g = sink ("graph gn opset 17 {\n"
                                "  input x: f32[2, 8, 3, 3]\n"
                                "  const gs: i64[3] = [2, 4, 18]\n"
                                "  const xs: i64[4] = [2, 8, 3, 3]\n"
                                "  const eps: f32[] = 1e-05\n"
                                "  g = Reshape(x, gs)\n"
                                "  mean = ReduceMean(g) {axes=[2], keepdims=1}\n"
                                "  c = Sub(g, mean)\n"
                                "  sq = Mul(c, c)\n"
                                "  var = ReduceMean(sq) {axes=[2], keepdims=1}\n"
                                "  ve = Add(var, eps)\n"
                                "  sd = Sqrt(ve)\n"
                                "  n = Div(c, sd)\n"
                                "  out = Reshape(n, xs)\n"
                                "  output out\n"
                                "}\n", &report);
  assert_ops (g, "ReduceMean[2, 8] Reshape[2, 4, 2] ReduceMean[2, 4, 1] Reshape[8, 1] Expand[8, 2] "
                 "Reshape[2, 8, 1, 1] Sub[2, 8, 3, 3] Mul[2, 8, 3, 3] ReduceMean[2, 8] Reshape[2, 4, 2] "
                 "ReduceMean[2, 4, 1] Add[2, 4, 1] Sqrt[2, 4, 1] Reshape[8, 1] Expand[8, 2] "
                 "Reshape[2, 8, 1, 1] Div[2, 8, 3, 3]");
  assert_axes (nth_node (g, "ReduceMean", 0), "[2, 3]");
  assert_axes (nth_node (g, "ReduceMean", 1), "[2]");
  /* before: 2 × 144 floats; after: 2 × 16 (statistics) + 2 × (8 + 16) (operands) */
  g_assert_cmpint (pl_pass_report_get (report, "reshape bytes before"), ==, 288 * 4);
  g_assert_cmpint (pl_pass_report_get (report, "reshape bytes after"), ==, 80 * 4);
  pl_pass_report_free (report);
}

/* [2, 6, 4] → [2, 4, 6]: an operand varying along the last dim of S varies
 * along the whole mixed stretch; it is widened over it at S's level. */
static void
test_broadcast_mixed_stretch (void)
{
  g_autoptr (PlGraph) g = sink ("graph b opset 17 {\n"
                                "  input x: f32[2, 6, 4]\n"
                                "  input b: f32[6]\n"
                                "  const s: i64[3] = [2, 4, 6]\n"
                                "  const p: i64[3] = [2, 6, 4]\n"
                                "  g = Reshape(x, s)\n"
                                "  y = Mul(g, b)\n"
                                "  out = Reshape(y, p)\n"
                                "  output out\n"
                                "}\n", NULL);
  assert_ops (g, "Expand[1, 4, 6] Reshape[6, 4] Mul[2, 6, 4]");
}

/* Two tensors reshaped alike: the second reshape goes away too. */
static void
test_broadcast_two_reshapes (void)
{
  g_autoptr (PlGraph) g = sink ("graph b opset 17 {\n"
                                "  input x: f32[4, 6]\n"
                                "  input z: f32[4, 6]\n"
                                "  const s: i64[3] = [4, 2, 3]\n"
                                "  const p: i64[2] = [4, 6]\n"
                                "  gx = Reshape(x, s)\n"
                                "  gz = Reshape(z, s)\n"
                                "  y = Add(gx, gz)\n"
                                "  w = Softmax(y) {axis=2}\n"
                                "  out = Reshape(w, p)\n"
                                "  output out\n"
                                "}\n", NULL);
  /* x and z are added unreshaped; only the Softmax still needs [4, 2, 3] */
  assert_ops (g, "Add[4, 6] Reshape[4, 2, 3] Softmax[4, 2, 3] Reshape[4, 6]");
}

/* Left alone: a full-size operand would need a reshape as big as the one
 * saved; an exit that needs the reshaped shape costs as much as it saves. */
static void
test_broadcast_negative (void)
{
  assert_unchanged ("graph b opset 17 {\n"
                    "  input x: f32[4, 6]\n"
                    "  input z: f32[4, 2, 3]\n"
                    "  const s: i64[3] = [4, 2, 3]\n"
                    "  const p: i64[2] = [4, 6]\n"
                    "  g = Reshape(x, s)\n"
                    "  y = Add(g, z)\n"
                    "  out = Reshape(y, p)\n"
                    "  output out\n"
                    "}\n");
  assert_unchanged ("graph b opset 17 {\n"
                    "  input x: f32[4, 6]\n"
                    "  const b: f32[3] = [1, 2, 3]\n"
                    "  const s: i64[3] = [4, 2, 3]\n"
                    "  g = Reshape(x, s)\n"
                    "  y = Add(g, b)\n"
                    "  out = Softmax(y) {axis=2}\n"
                    "  output out\n"
                    "}\n");
  /* a broadcast that grows the region's shape is not elementwise on it */
  assert_unchanged ("graph b opset 17 {\n"
                    "  input x: f32[4, 6]\n"
                    "  input z: f32[5, 1, 1, 1]\n"
                    "  const s: i64[3] = [4, 2, 3]\n"
                    "  g = Reshape(x, s)\n"
                    "  y = Add(g, z)\n"
                    "  output y\n"
                    "}\n");
}

/* Region values that are graph outputs keep name and shape (through a
 * reshape back); another reshape of one is retargeted. */
static void
test_broadcast_outputs (void)
{
  g_autoptr (PlGraph) g = sink ("graph b opset 17 {\n"
                                "  input x: f32[4, 6]\n"
                                "  const s: i64[3] = [2, 2, 6]\n"
                                "  const p: i64[2] = [4, 6]\n"
                                "  const f: i64[1] = [24]\n"
                                "  g = Reshape(x, s)\n"
                                "  y = Neg(g)\n"
                                "  w = Reshape(y, p)\n"
                                "  z = Reshape(y, f)\n"
                                "  output w, y, z\n"
                                "}\n", NULL);
  assert_ops (g, "Neg[4, 6] Reshape[24] Reshape[2, 2, 6]");
  const char *names[] = { "w", "y", "z" };
  const char *shapes[] = { "[4, 6]", "[2, 2, 6]", "[24]" };
  for (int i = 0; i < 3; i++)
    {
      PlValue *v = g->outputs->pdata[i];
      g_autofree char *shape = pl_shape_to_string (&v->shape);
      g_assert_cmpstr (v->name, ==, names[i]);
      g_assert_cmpstr (shape, ==, shapes[i]);
    }
  /* reshape(reshape(x)) back to x's shape is x itself */
  g_autoptr (PlGraph) c = sink ("graph c opset 17 {\n"
                                "  input x: f32[4, 6]\n"
                                "  const s: i64[3] = [2, 2, 6]\n"
                                "  const p: i64[2] = [4, 6]\n"
                                "  g = Reshape(x, s)\n"
                                "  e = Exp(g)\n"
                                "  back = Reshape(e, p)\n"
                                "  output back\n"
                                "}\n", NULL);
  assert_ops (c, "Exp[4, 6]");
  g_assert_cmpstr (((PlValue *) c->outputs->pdata[0])->name, ==, "back");
}

/* --- the report and the fixed point -------------------------------------------- */

/* align=4: a reshape of rows of 3 needs one vector per row, of 6 two. */
static void
test_align_report (void)
{
  g_autoptr (PlGraph) in = pl_test_parse ("graph b opset 17 {\n"
                                  "  input x: f32[2, 4, 6]\n"
                                  "  input b: f32[2, 1, 1, 3]\n"
                                  "  const s: i64[4] = [2, 4, 2, 3]\n"
                                  "  const p: i64[3] = [2, 4, 6]\n"
                                  "  g = Reshape(x, s)\n"
                                  "  y = Add(g, b)\n"
                                  "  out = Reshape(y, p)\n"
                                  "  output out\n"
                                  "}\n");
  g_autoptr (PlHistory) h = run_checked (in, "reshape-sink", "reshape-sink.align=4");
  PlStep *s = last_step (h);
  /* before: [2,4,2,3] 16 rows × 1 + [2,4,6] 8 rows × 2; after: [2,1,6] 2 rows × 2 */
  g_assert_cmpint (pl_pass_report_get (s->counters, "vector moves before"), ==, 32);
  g_assert_cmpint (pl_pass_report_get (s->counters, "vector moves after"), ==, 4);
  g_assert_nonnull (strstr (s->report, "reshape bytes: 384 → 48 (8.0× less)"));
  g_assert_nonnull (strstr (s->report, "aligned vector moves (4 elements each): 32 → 4"));

  /* a second run finds nothing more */
  g_autoptr (PlHistory) again = run_checked (s->graph, "reshape-sink", NULL);
  g_assert_false (last_step (again)->changed);
}

/* --- random reshapes ---------------------------------------------------------------- */

static void
append_dims (GString *s, int rank, const int64_t *dims)
{
  for (int i = 0; i < rank; i++)
    g_string_append_printf (s, "%s%" G_GINT64_FORMAT, i ? ", " : "", dims[i]);
}

/* A random reshape target for P: its prime factors, sometimes shuffled
 * (which makes stretches the reshape mixes), grouped into dims, with 1s. */
static int
random_target (GRand *rng, int rp, const int64_t *p, int64_t *s)
{
  int64_t f[32];
  int nf = 0;
  for (int i = 0; i < rp; i++)
    for (int64_t d = p[i], q = 2; d > 1;)
      if (d % q == 0)
        {
          f[nf++] = q;
          d /= q;
        }
      else
        q++;
  if (g_rand_int_range (rng, 0, 3) == 0)
    for (int i = nf - 1; i > 0; i--)
      {
        int j = g_rand_int_range (rng, 0, i + 1);
        int64_t t = f[i];
        f[i] = f[j];
        f[j] = t;
      }
  int rs = 0;
  for (int i = 0; i < nf && rs < PL_MAX_RANK - 1; i++)
    {
      if (rs > 0 && g_rand_boolean (rng))
        s[rs - 1] *= f[i];
      else
        s[rs++] = f[i];
      if (rs < PL_MAX_RANK - 1 && g_rand_int_range (rng, 0, 6) == 0)
        s[rs++] = 1;
    }
  if (rs == 0)
    s[rs++] = 1;
  /* factors left over when the rank ran out */
  int64_t numel = 1, want = 1;
  for (int i = 0; i < rs; i++)
    numel *= s[i];
  for (int i = 0; i < rp; i++)
    want *= p[i];
  s[rs - 1] *= want / numel;
  return rs;
}

/* Random reshapes, broadcast operands and reductions: whatever the pass
 * does must pass the numerical check, verify, and never add reshape bytes. */
static void
test_random (void)
{
  static const char *reduces[] = { "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                                   "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSumExp" };
  static const int64_t sizes[] = { 1, 2, 3, 4, 6 };
  g_autoptr (GRand) rng = g_rand_new_with_seed (7);
  int rewritten = 0;
  for (int iter = 0; iter < 300; iter++)
    {
      int64_t p[PL_MAX_RANK], s[PL_MAX_RANK], b[PL_MAX_RANK];
      int rp = g_rand_int_range (rng, 1, 5), rs, rb;
      for (int i = 0; i < rp; i++)
        p[i] = sizes[g_rand_int_range (rng, 0, G_N_ELEMENTS (sizes))];
      rs = random_target (rng, rp, p, s);
      /* the operand: each dim of S, or 1; sometimes fewer leading dims */
      rb = rs - g_rand_int_range (rng, 0, rs);
      for (int j = 0; j < rb; j++)
        b[j] = g_rand_boolean (rng) ? s[rs - rb + j] : 1;
      const char *red = reduces[g_rand_int_range (rng, 0, G_N_ELEMENTS (reduces))];
      bool sum = strcmp (red, "ReduceSum") == 0, expand = g_rand_boolean (rng), back = g_rand_int_range (rng, 0, 4) > 0;
      bool reduce_y = g_rand_boolean (rng);

      GString *t = g_string_new ("graph r opset 17 {\n  input a: f32[");
      append_dims (t, rp, p);
      g_string_append (t, "]\n  input b: f32[");
      append_dims (t, rb, b);
      g_string_append_printf (t, "]\n  const s: i64[%d] = [", rs);
      append_dims (t, rs, s);
      g_string_append_printf (t, "]\n  const p: i64[%d] = [", rp);
      append_dims (t, rp, p);
      g_string_append (t, "]\n  const axes: i64[");
      GString *axes = g_string_new (NULL);
      for (int j = 0, n = 0; j < rs; j++)
        if (g_rand_int_range (rng, 0, 3) > 0)
          g_string_append_printf (axes, "%s%d", n++ ? ", " : "", j);
      if (axes->len == 0)
        g_string_append (axes, "0");
      int n_axes = 1;
      for (const char *c = axes->str; *c; c++)
        n_axes += *c == ',';
      g_string_append_printf (t, "%d] = [%s]\n", n_axes, axes->str);
      g_string_append (t, "  x = Exp(a)\n  y = Reshape(x, s)\n");
      g_string_append (t, expand ? "  bb = Expand(b, s)\n  v = Mul(y, bb)\n" : "  v = Mul(y, b)\n");
      g_string_append (t, "  w = Neg(v)\n");
      if (sum)
        g_string_append_printf (t, "  m = ReduceSum(%s, axes) {keepdims=%d}\n", reduce_y ? "y" : "v",
                                g_rand_boolean (rng));
      else
        g_string_append_printf (t, "  m = %s(%s) {axes=[%s], keepdims=%d}\n", red, reduce_y ? "y" : "v", axes->str,
                                g_rand_boolean (rng));
      g_string_append (t, back ? "  o = Reshape(w, p)\n  output m, o\n}\n" : "  output m, w\n}\n");
      g_string_free (axes, TRUE);

      g_autofree char *text = g_string_free (t, FALSE);
      g_autoptr (PlGraph) g = pl_test_parse (text);
      g_autoptr (PlHistory) h = run_checked (g, "reshape-sink", NULL);
      PlStep *first = pl_history_step (h, 0), *last = last_step (h);
      if (last->stats.reshape_bytes > first->stats.reshape_bytes)
        g_error ("reshape bytes grew on\n%s", text);
      rewritten += last->changed;
    }
  g_test_message ("%d of 300 random graphs rewritten", rewritten);
  g_assert_cmpint (rewritten, >, 100);
}

/* --- the samples ---------------------------------------------------------------- */

static void
check_sample (const char *file, const char *reshape, const char *stats_shape)
{
  g_autofree char *path = pl_test_source_path (file);
  g_autoptr (GError) error = NULL;
  g_autoptr (PlGraph) g = pl_text_load (path, &error);
  g_assert_no_error (error);
  g_autoptr (PlHistory) h = run_checked (g, "simplify,reshape-sink", NULL);
  PlStep *first = pl_history_step (h, 0), *last = last_step (h);
  g_test_message ("%s: reshape bytes %" G_GINT64_FORMAT " -> %" G_GINT64_FORMAT, file,
                  first->stats.reshape_bytes, last->stats.reshape_bytes);
  g_assert_cmpint (last->stats.reshape_bytes * 4, <=, first->stats.reshape_bytes);
  g_assert_cmpint (pl_pass_report_get (last->counters, "pattern A (reduce)"), ==, 2);
  g_assert_cmpint (pl_pass_report_get (last->counters, "pattern B (broadcast)"), ==, 1);
  /* no reshape of the input's size is left, and the statistics are reduced
   * over H and W before their reshape */
  int64_t big = pl_shape_numel (&((PlValue *) last->graph->inputs->pdata[0])->shape);
  for (guint i = 0; i < last->graph->nodes->len; i++)
    {
      PlNode *node = last->graph->nodes->pdata[i];
      if (node->op == PL_OP_Reshape)
        g_assert_cmpint (pl_shape_numel (&node->outputs[0]->shape), <, big);
    }
  PlNode *early = nth_node (last->graph, "ReduceMean", 0);
  assert_axes (early, "[1, 2]");
  g_assert_true (early->inputs[0] == last->graph->inputs->pdata[0]);
  g_autofree char *shape = pl_shape_to_string (&pl_graph_find_node (last->graph, reshape)->outputs[0]->shape);
  g_assert_cmpstr (shape, ==, stats_shape);
}

static void
test_sample_group_norm (void)
{
  check_sample ("data/graphs/group_norm.graph", "mean_reshape", "[2, 4, 8]");
}

static void
test_sample_ghost_batch_norm (void)
{
  check_sample ("data/graphs/ghost_batch_norm.graph", "mean_reshape", "[4, 4, 32]");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_passes_init ();
  g_test_add_func ("/Passlab/PassReshapeSink/reduce-group-norm", test_reduce_group_norm);
  g_test_add_func ("/Passlab/PassReshapeSink/reduce-keepdims-axes-input", test_reduce_keepdims_axes_input);
  g_test_add_func ("/Passlab/PassReshapeSink/reduce-ops", test_reduce_ops);
  g_test_add_func ("/Passlab/PassReshapeSink/reduce-merged-dims", test_reduce_merged_dims);
  g_test_add_func ("/Passlab/PassReshapeSink/reduce-mixed-stretch", test_reduce_mixed_stretch);
  g_test_add_func ("/Passlab/PassReshapeSink/reduce-negative", test_reduce_negative);
  g_test_add_func ("/Passlab/PassReshapeSink/reduce-integer-sum", test_reduce_integer_sum);
  g_test_add_func ("/Passlab/PassReshapeSink/broadcast-implicit", test_broadcast_implicit);
  g_test_add_func ("/Passlab/PassReshapeSink/broadcast-direct", test_broadcast_direct);
  g_test_add_func ("/Passlab/PassReshapeSink/broadcast-group-norm", test_broadcast_group_norm);
  g_test_add_func ("/Passlab/PassReshapeSink/broadcast-group-norm-nchw", test_broadcast_group_norm_nchw);
  g_test_add_func ("/Passlab/PassReshapeSink/broadcast-mixed-stretch", test_broadcast_mixed_stretch);
  g_test_add_func ("/Passlab/PassReshapeSink/broadcast-two-reshapes", test_broadcast_two_reshapes);
  g_test_add_func ("/Passlab/PassReshapeSink/broadcast-negative", test_broadcast_negative);
  g_test_add_func ("/Passlab/PassReshapeSink/broadcast-outputs", test_broadcast_outputs);
  g_test_add_func ("/Passlab/PassReshapeSink/align-report", test_align_report);
  g_test_add_func ("/Passlab/PassReshapeSink/random", test_random);
  g_test_add_func ("/Passlab/PassReshapeSink/sample-group-norm", test_sample_group_norm);
  g_test_add_func ("/Passlab/PassReshapeSink/sample-ghost-batch-norm", test_sample_ghost_batch_norm);
  return g_test_run ();
}
