/* test-pass-decompose.c — the decompose pass: every supported op expanded on
 * a hand-written graph and checked numerically against the original through
 * the pass manager, with the exact ops and names the expansion produces;
 * nodes that must stay; the ops parameter; and the sample graphs. */
#define G_LOG_DOMAIN "passlab"

#include <string.h>

#include "builtin-passes.h"
#include "pass-manager.h"
#include "test-util.h"
#include "text-format.h"

/* Runs the pipeline with the numerical check; asserts that every step
 * verified and passed the check within tolerance. */
static PlHistory *
run_checked (const PlGraph *g, const char *spec, const char *const *params, double tolerance)
{
  return pl_test_run_checked (g, spec, params, tolerance, 1);
}

static PlStep *
last_step (const PlHistory *h)
{
  return pl_history_step (h, pl_history_n_steps (h) - 1);
}

/* "Add:1 Relu:2", op types sorted by name, of every node but those named in
 * skip (NULL-terminated; may be NULL). */
static char *
op_histogram (const PlGraph *g, const char *const *skip)
{
  g_autoptr (GTree) counts = g_tree_new ((GCompareFunc) strcmp);
  for (guint i = 0; i < g->nodes->len; i++)
    {
      const PlNode *n = g->nodes->pdata[i];
      if (skip && g_strv_contains (skip, n->name))
        continue;
      g_tree_insert (counts, (gpointer) n->op_type,
                     GINT_TO_POINTER (GPOINTER_TO_INT (g_tree_lookup (counts, n->op_type)) + 1));
    }
  GString *out = g_string_new (NULL);
  for (GTreeNode *n = g_tree_node_first (counts); n; n = g_tree_node_next (n))
    g_string_append_printf (out, "%s%s:%d", out->len ? " " : "", (char *) g_tree_node_key (n),
                            GPOINTER_TO_INT (g_tree_node_value (n)));
  return g_string_free (out, FALSE);
}

static void
assert_ops_except (const PlGraph *g, const char *const *skip, const char *want)
{
  g_autofree char *have = op_histogram (g, skip);
  g_assert_cmpstr (have, ==, want);
}

static void
assert_ops (const PlGraph *g, const char *want)
{
  assert_ops_except (g, NULL, want);
}

static PlNode *
node (const PlGraph *g, const char *name)
{
  PlNode *n = pl_graph_find_node (g, name);
  if (!n)
    g_error ("no node '%s'", name);
  return n;
}

static const char *
input_name (const PlNode *n, int i)
{
  g_assert_cmpint (i, <, n->n_inputs);
  g_assert_nonnull (n->inputs[i]);
  return n->inputs[i]->name;
}

static void
assert_ints_attr (const PlNode *n, const char *name, const int64_t *want, int n_want)
{
  const int64_t *v;
  int count;
  g_assert_true (pl_node_attr_ints (n, name, &v, &count));
  g_assert_cmpint (count, ==, n_want);
  for (int i = 0; i < count; i++)
    g_assert_cmpint (v[i], ==, want[i]);
}

static void
assert_const_ints (const PlValue *v, const int64_t *want, int n_want)
{
  g_assert_nonnull (v);
  g_assert_nonnull (v->constant);
  g_assert_cmpint (v->constant->numel, ==, n_want);
  for (int i = 0; i < n_want; i++)
    g_assert_cmpint (pl_tensor_get_i64 (v->constant, i), ==, want[i]);
}

/* Decomposes text (float32 graphs: the expansion rounds each step to
 * float32, the reference op once, so allow a few ulps). */
static PlHistory *
decompose (const char *text, const char *const *params)
{
  g_autoptr (PlGraph) g = pl_test_parse (text);
  return run_checked (g, "decompose", params, 1e-4);
}

/* The graph's single output keeps its name and is produced by node `by`. */
static void
assert_output (const PlGraph *g, const char *name, const char *by)
{
  PlValue *y = g->outputs->pdata[0];
  g_assert_cmpstr (y->name, ==, name);
  g_assert_cmpstr (y->producer->name, ==, by);
}

/* --- softmax ----------------------------------------------------------------------- */

static void
test_softmax (void)
{
  g_autoptr (PlHistory) h = decompose ("graph g opset 17 {\n"
                                       "  input x: f32[2, 3, 5]\n"
                                       "  y = Softmax(x) {axis=1}\n"
                                       "  output y\n"
                                       "}\n", NULL);
  PlStep *s = last_step (h);
  g_assert_true (s->changed);
  assert_ops (s->graph, "Div:1 Exp:1 ReduceMax:1 ReduceSum:1 Sub:1");
  assert_output (s->graph, "y", "y/div");
  PlNode *max = node (s->graph, "y/max");
  assert_ints_attr (max, "axes", PL_DIMS (1), 1);
  g_assert_cmpint (pl_node_attr_int (max, "keepdims", 0), ==, 1);
  g_assert_cmpstr (input_name (node (s->graph, "y/sub"), 1), ==, "y/max");
  /* ReduceSum takes its axes as an input from opset 13. */
  PlNode *sum = node (s->graph, "y/sum");
  g_assert_null (pl_node_attr (sum, "axes"));
  assert_const_ints (sum->inputs[1], PL_DIMS (1), 1);
  g_assert_cmpint (pl_pass_report_get (s->counters, "Softmax expanded"), ==, 1);
  g_assert_cmpint (pl_pass_report_get (s->counters, "nodes added"), ==, 5);
  g_assert_nonnull (strstr (s->report, "expanded 1 Softmax into 5 nodes"));
}

/* Before opset 13 Softmax works on the input coerced to 2-D at axis
 * (default 1): it reduces over every axis from axis on. */
static void
test_softmax_opset11 (void)
{
  g_autoptr (PlHistory) h = decompose ("graph g opset 11 {\n"
                                       "  input x: f32[2, 3, 4]\n"
                                       "  y = Softmax(x)\n"
                                       "  z = LogSoftmax(x) {axis=2}\n"
                                       "  output y, z\n"
                                       "}\n", NULL);
  PlStep *s = last_step (h);
  assert_ops (s->graph, "Div:1 Exp:2 Log:1 ReduceMax:2 ReduceSum:2 Sub:3");
  assert_ints_attr (node (s->graph, "y/max"), "axes", PL_DIMS (-2, -1), 2);
  assert_ints_attr (node (s->graph, "y/sum"), "axes", PL_DIMS (-2, -1), 2);
  assert_ints_attr (node (s->graph, "z/sum"), "axes", PL_DIMS (-1), 1);
}

static void
test_log_softmax (void)
{
  g_autoptr (PlHistory) h = decompose ("graph g opset 17 {\n"
                                       "  input x: f32[N, 7]\n"
                                       "  y = LogSoftmax(x)\n"
                                       "  output y\n"
                                       "}\n", NULL);
  PlStep *s = last_step (h);
  assert_ops (s->graph, "Exp:1 Log:1 ReduceMax:1 ReduceSum:1 Sub:2");
  assert_output (s->graph, "y", "y/sub_log");
  /* The symbolic batch dim survives. */
  PlValue *y = s->graph->outputs->pdata[0];
  g_assert_cmpstr (y->shape.dims[0].sym, ==, "N");
  g_assert_cmpint (pl_pass_report_get (s->counters, "LogSoftmax expanded"), ==, 1);
}

/* --- normalizations ------------------------------------------------------------------- */

static void
test_layer_norm (void)
{
  g_autoptr (PlHistory) h = decompose ("graph g opset 17 {\n"
                                       "  input x: f32[2, 4, 6]\n"
                                       "  const scale: f32[6] = random(seed=1, lo=0.5, hi=1.5)\n"
                                       "  const bias: f32[6] = random(seed=2)\n"
                                       "  const scale2: f32[4, 6] = random(seed=3, lo=0.5, hi=1.5)\n"
                                       "  y = LayerNormalization(x, scale, bias) {epsilon=0.001}\n"
                                       "  z = LayerNormalization(x, scale2) {axis=1}\n"
                                       "  output y, z\n"
                                       "}\n", NULL);
  PlStep *s = last_step (h);
  assert_ops (s->graph, "Add:3 Div:2 Mul:4 ReduceMean:4 Sqrt:2 Sub:2");
  assert_output (s->graph, "y", "y/bias");
  g_assert_cmpstr (((PlValue *) s->graph->outputs->pdata[1])->producer->name, ==, "z/scale");
  assert_ints_attr (node (s->graph, "y/mean"), "axes", PL_DIMS (-1), 1);
  assert_ints_attr (node (s->graph, "z/var"), "axes", PL_DIMS (-2, -1), 2);
  PlNode *sq = node (s->graph, "y/square");
  g_assert_cmpstr (sq->op_type, ==, "Mul");
  g_assert_true (sq->inputs[0] == sq->inputs[1]);
  PlValue *eps = node (s->graph, "y/add_eps")->inputs[1];
  g_assert_cmpint (eps->constant->rank, ==, 0);
  g_assert_cmpfloat_with_epsilon (pl_tensor_get_f64 (eps->constant, 0), 0.001, 1e-9);
  g_assert_nonnull (strstr (s->report, "expanded 2 LayerNormalization into 17 nodes"));
}

/* Mean and InvStdDev have no expansion here: such nodes stay. */
static void
test_layer_norm_stats_kept (void)
{
  g_autoptr (PlHistory) h = decompose ("graph g opset 17 {\n"
                                       "  input x: f32[2, 6]\n"
                                       "  const scale: f32[6] = random(seed=1)\n"
                                       "  y, mean, _ = LayerNormalization(x, scale)\n"
                                       "  output y, mean\n"
                                       "}\n", NULL);
  PlStep *s = last_step (h);
  g_assert_false (s->changed);
  assert_ops (s->graph, "LayerNormalization:1");
  g_assert_cmpint (pl_pass_report_get (s->counters, "LayerNormalization kept"), ==, 1);
  g_assert_nonnull (strstr (s->report, "kept 1 LayerNormalization (Mean/InvStdDev are used)"));
}

static void
test_batch_norm_constant (void)
{
  g_autoptr (PlHistory) h = decompose ("graph g opset 17 {\n"
                                       "  input x: f32[2, 3, 4, 4]\n"
                                       "  const s: f32[3] = [0.5, 1.0, 2.0]\n"
                                       "  const b: f32[3] = [0.1, -0.2, 0.3]\n"
                                       "  const m: f32[3] = [0.0, 0.5, -0.5]\n"
                                       "  const v: f32[3] = [1.0, 0.25, 4.0]\n"
                                       "  y = BatchNormalization(x, s, b, m, v) {epsilon=0.0}\n"
                                       "  output y\n"
                                       "}\n", NULL);
  PlStep *s = last_step (h);
  assert_ops (s->graph, "Add:1 Mul:1");
  assert_output (s->graph, "y", "y/add");
  /* factor = s / sqrt(v + eps), offset = b - m * factor, shaped [C, 1, 1]. */
  PlTensor *f = node (s->graph, "y/mul")->inputs[1]->constant;
  PlTensor *o = node (s->graph, "y/add")->inputs[1]->constant;
  g_assert_cmpint (f->rank, ==, 3);
  g_assert_cmpint (f->dims[0], ==, 3);
  g_assert_cmpint (f->dims[1], ==, 1);
  g_assert_cmpint (f->dims[2], ==, 1);
  pl_test_assert_values (f, PL_VALS (0.5, 2.0, 1.0));
  pl_test_assert_values (o, PL_VALS (0.1, -1.2, 0.8));
  /* The parameters nobody reads any more are left for simplify. */
  g_assert_cmpint (pl_graph_find_value (s->graph, "m")->n_uses, ==, 0);
  g_assert_nonnull (strstr (s->report, "left 4 constants that no node reads (simplify removes them)"));
}

static void
test_batch_norm_inputs (void)
{
  g_autoptr (PlHistory) h = decompose ("graph g opset 17 {\n"
                                       "  input x: f32[2, 3, 5]\n"
                                       "  input s: f32[3]\n"
                                       "  input b: f32[3]\n"
                                       "  input m: f32[3]\n"
                                       "  input v: f32[3]\n"
                                       "  const one: f32[] = 1.0\n"
                                       "  v1 = Add(v, one)\n"
                                       "  y = BatchNormalization(x, s, b, m, v1)\n"
                                       "  output y\n"
                                       "}\n", NULL);
  PlStep *s = last_step (h);
  assert_ops (s->graph, "Add:3 Div:1 Mul:1 Sqrt:1 Sub:1 Unsqueeze:4");
  PlNode *u = node (s->graph, "y/mean_c");
  g_assert_cmpstr (u->op_type, ==, "Unsqueeze");
  assert_const_ints (u->inputs[1], PL_DIMS (1), 1);
  g_assert_cmpstr (input_name (node (s->graph, "y/sub"), 1), ==, "y/mean_c");
}

static void
test_batch_norm_2d_and_training (void)
{
  g_autoptr (PlHistory) h = decompose ("graph g opset 17 {\n"
                                       "  input x: f32[4, 3]\n"
                                       "  const s: f32[3] = [0.5, 1.0, 2.0]\n"
                                       "  const b: f32[3] = [0.1, -0.2, 0.3]\n"
                                       "  const m: f32[3] = [0.0, 0.5, -0.5]\n"
                                       "  const v: f32[3] = [1.0, 0.25, 4.0]\n"
                                       "  y = BatchNormalization(x, s, b, m, v)\n"
                                       "  output y\n"
                                       "}\n", NULL);
  /* [N, C]: the [C] vectors broadcast as they are. */
  assert_ops (last_step (h)->graph, "Add:1 Mul:1");
  g_assert_cmpint (node (last_step (h)->graph, "y/mul")->inputs[1]->shape.rank, ==, 1);

  g_autoptr (PlGraph) g = pl_test_parse ("graph g opset 17 {\n"
                                 "  input x: f32[4, 3]\n"
                                 "  input s: f32[3]\n"
                                 "  y, rm, rv = BatchNormalization(x, s, s, s, s) {training_mode=1}\n"
                                 "  output y, rm, rv\n"
                                 "}\n");
  g_autoptr (GError) error = NULL;
  g_autoptr (PlPipeline) p = pl_pipeline_parse ("decompose", &error);
  g_autoptr (PlHistory) t = pl_pipeline_run (g, p, NULL, &error);
  g_assert_no_error (error);
  g_assert_false (last_step (t)->changed);
  g_assert_nonnull (strstr (last_step (t)->report, "kept 1 BatchNormalization (training mode)"));
}

static void
test_instance_norm (void)
{
  g_autoptr (PlHistory) h = decompose ("graph g opset 17 {\n"
                                       "  input x: f32[2, 3, 4, 5]\n"
                                       "  const s: f32[3] = [0.5, 1.0, 2.0]\n"
                                       "  input b: f32[3]\n"
                                       "  y = InstanceNormalization(x, s, b) {epsilon=0.01}\n"
                                       "  output y\n"
                                       "}\n", NULL);
  PlStep *s = last_step (h);
  /* The constant scale is reshaped to [3, 1, 1]; the input bias gets an Unsqueeze. */
  assert_ops (s->graph, "Add:2 Div:1 Mul:2 ReduceMean:2 Sqrt:1 Sub:1 Unsqueeze:1");
  assert_ints_attr (node (s->graph, "y/mean"), "axes", PL_DIMS (-2, -1), 2);
  PlTensor *sc = node (s->graph, "y/scale")->inputs[1]->constant;
  g_assert_cmpint (sc->rank, ==, 3);
  assert_const_ints (node (s->graph, "y/bias_c")->inputs[1], PL_DIMS (1, 2), 2);
}

/* MVN over its default axes [0, 2, 3] (opset 17: the axes are ReduceMean's
 * attribute) and over [1] (opset 18: an input); checked against the
 * reference, whose epsilon is added after the root. */
static void
test_mvn (void)
{
  g_autoptr (PlHistory) h = decompose ("graph g opset 17 {\n"
                                       "  input x: f32[2, 3, 4, 5]\n"
                                       "  y = MeanVarianceNormalization(x)\n"
                                       "  output y\n"
                                       "}\n", NULL);
  PlStep *s = last_step (h);
  assert_ops (s->graph, "Add:1 Div:1 Mul:1 ReduceMean:2 Sqrt:1 Sub:1");
  assert_ints_attr (node (s->graph, "y/mean"), "axes", PL_DIMS (0, 2, 3), 3);
  g_autoptr (PlHistory) h2 = decompose ("graph g opset 18 {\n"
                                        "  input x: f32[2, 3, 4]\n"
                                        "  y = MeanVarianceNormalization(x) {axes=[1]}\n"
                                        "  output y\n"
                                        "}\n", NULL);
  assert_ops (last_step (h2)->graph, "Add:1 Div:1 Mul:1 ReduceMean:2 Sqrt:1 Sub:1");
}

/* --- activations ----------------------------------------------------------------------- */

typedef struct {
  const char *op;
  const char *attrs;
  const char *ops_after;
  const char *last;
} Activation;

static const Activation activations[] = {
  { "Gelu", "", "Add:1 Div:1 Erf:1 Mul:2", "y/half" },
  { "Gelu", "{approximate=\"tanh\"}", "Add:2 Mul:4 Pow:1 Tanh:1", "y/mul" },
  { "HardSigmoid", "{alpha=0.3, beta=0.4}", "Add:1 Max:1 Min:1 Mul:1", "y/max" },
  { "HardSigmoid", "", "Add:1 Max:1 Min:1 Mul:1", "y/max" },
  { "HardSwish", "", "Add:1 Max:1 Min:1 Mul:2", "y/mul" },
  { "Softplus", "", "Add:1 Exp:1 Log:1", "y/log" },
  { "Mish", "", "Add:1 Exp:1 Log:1 Mul:1 Tanh:1", "y/mul" },
  { "Elu", "", "Exp:1 Less:1 Sub:1 Where:1", "y/where" },
  { "Elu", "{alpha=0.5}", "Exp:1 Less:1 Mul:1 Sub:1 Where:1", "y/where" },
  { "Selu", "", "Exp:1 Greater:1 Mul:2 Sub:1 Where:1", "y/where" },
  { "Selu", "{alpha=2.0, gamma=3.0}", "Exp:1 Greater:1 Mul:2 Sub:1 Where:1", "y/where" },
  { "Celu", "", "Add:1 Exp:1 Max:1 Min:1 Sub:1", "y/add" },
  { "Celu", "{alpha=2.0}", "Add:1 Div:1 Exp:1 Max:1 Min:1 Mul:1 Sub:1", "y/add" },
};

/* Each activation on [-3, 3) (the ranges where each branch matters). */
static void
test_activations (void)
{
  for (size_t i = 0; i < G_N_ELEMENTS (activations); i++)
    {
      const Activation *a = &activations[i];
      g_autofree char *text = g_strdup_printf ("graph g opset 17 {\n"
                                               "  input x: f32[4, 16]\n"
                                               "  const three: f32[] = 3.0\n"
                                               "  x3 = Mul(x, three)\n"
                                               "  y = %s(x3) %s\n"
                                               "  output y\n"
                                               "}\n", a->op, a->attrs);
      g_test_message ("%s %s", a->op, a->attrs);
      g_autoptr (PlHistory) h = decompose (text, NULL);
      PlStep *s = last_step (h);
      assert_ops_except (s->graph, (const char *const[]) { "x3", NULL }, a->ops_after);
      assert_output (s->graph, "y", a->last);
      g_autofree char *counter = g_strdup_printf ("%s expanded", a->op);
      g_assert_cmpint (pl_pass_report_get (s->counters, counter), ==, 1);
    }
}

/* --- reductions ------------------------------------------------------------------------- */

typedef struct {
  const char *op;
  const char *attrs;
  const char *ops_after;
  const char *last;
} Reduction;

static const Reduction reductions[] = {
  { "ReduceL1", "{axes=[1], keepdims=1}", "Abs:1 ReduceSum:1", "y/sum" },
  { "ReduceL1", "{keepdims=0}", "Abs:1 ReduceSum:1", "y/sum" },
  { "ReduceL2", "{axes=[0, 2], keepdims=0}", "Mul:1 ReduceSum:1 Sqrt:1", "y/sqrt" },
  { "ReduceSumSquare", "{axes=[-1]}", "Mul:1 ReduceSum:1", "y/sum" },
  { "ReduceLogSum", "{axes=[1, 2], keepdims=0}", "Log:1 ReduceSum:1", "y/log" },
  { "ReduceLogSumExp", "{axes=[1], keepdims=1}", "Add:1 Exp:1 Log:1 ReduceMax:1 ReduceSum:1 Sub:1", "y/add" },
  { "ReduceLogSumExp", "{axes=[2], keepdims=0}",
    "Add:1 Exp:1 Log:1 ReduceMax:1 ReduceSum:1 Squeeze:1 Sub:1", "y/add" },
  { "ReduceLogSumExp", "{keepdims=0}", "Add:1 Exp:1 Log:1 ReduceMax:1 ReduceSum:1 Squeeze:1 Sub:1", "y/add" },
};

static void
test_reductions (void)
{
  for (size_t i = 0; i < G_N_ELEMENTS (reductions); i++)
    {
      const Reduction *r = &reductions[i];
      /* Positive data (|x| + 0.5) keeps ReduceLogSum's logarithm defined. */
      g_autofree char *text = g_strdup_printf ("graph g opset 17 {\n"
                                               "  input x: f32[3, 4, 5]\n"
                                               "  const half: f32[] = 0.5\n"
                                               "  a = Abs(x)\n"
                                               "  p = Add(a, half)\n"
                                               "  y = %s(p) %s\n"
                                               "  output y\n"
                                               "}\n", r->op, r->attrs);
      g_test_message ("%s %s", r->op, r->attrs);
      g_autoptr (PlGraph) g = pl_test_parse (text);
      g_autoptr (PlHistory) h = run_checked (g, "decompose", NULL, 1e-4);
      PlStep *s = last_step (h);
      assert_ops_except (s->graph, (const char *const[]) { "a", "p", NULL }, r->ops_after);
      assert_output (s->graph, "y", r->last);
      /* ReduceSum's axes are an input at opset 17; ReduceMax keeps the attribute. */
      PlNode *sum = node (s->graph, "y/sum");
      g_assert_null (pl_node_attr (sum, "axes"));
      g_assert_cmpint (sum->n_inputs, ==, strstr (r->attrs, "axes") ? 2 : 1);
    }
}

/* The axes as an input (opset 18 style) and noop_with_empty_axes. */
static void
test_reduction_axes_input (void)
{
  g_autoptr (PlHistory) h = decompose ("graph g opset 17 {\n"
                                       "  input x: f32[3, 4]\n"
                                       "  const ax: i64[1] = [1]\n"
                                       "  const none: i64[0] = []\n"
                                       "  y = ReduceL2(x, ax) {keepdims=0}\n"
                                       "  z = ReduceL2(x, none) {noop_with_empty_axes=1}\n"
                                       "  output y, z\n"
                                       "}\n", NULL);
  PlStep *s = last_step (h);
  assert_ops (s->graph, "Mul:1 ReduceL2:1 ReduceSum:1 Sqrt:1");
  assert_const_ints (node (s->graph, "y/sum")->inputs[1], PL_DIMS (1), 1);
  g_assert_nonnull (strstr (s->report, "kept 1 ReduceL2 (empty axes with noop_with_empty_axes)"));
}

/* --- the pass as a whole -------------------------------------------------------------- */

/* Every expansion in float64, where the expansions must agree with the
 * reference to rounding: a wrong constant or axis would show. */
static void
test_exact_f64 (void)
{
  g_autoptr (PlHistory) h = decompose ("graph g opset 17 {\n"
                                       "  input x: f64[2, 3, 4, 5]\n"
                                       "  const s: f64[3] = [0.5, 1.0, 2.0]\n"
                                       "  const b: f64[3] = [0.1, -0.2, 0.3]\n"
                                       "  const m: f64[3] = [0.0, 0.5, -0.5]\n"
                                       "  const v: f64[3] = [1.0, 0.25, 4.0]\n"
                                       "  const ls: f64[5] = random(seed=1)\n"
                                       "  const lb: f64[5] = random(seed=2)\n"
                                       "  const two: f64[] = 2.0\n"
                                       "  x2 = Mul(x, two)\n"
                                       "  a = Softmax(x2) {axis=2}\n"
                                       "  b1 = LogSoftmax(x2)\n"
                                       "  c = LayerNormalization(x2, ls, lb) {epsilon=0.1}\n"
                                       "  d = Gelu(x2)\n"
                                       "  e = Gelu(x2) {approximate=\"tanh\"}\n"
                                       "  f = BatchNormalization(x2, s, b, m, v) {epsilon=0.01}\n"
                                       "  g2 = InstanceNormalization(x2, s, b) {epsilon=0.01}\n"
                                       "  h = HardSigmoid(x2)\n"
                                       "  i = HardSwish(x2)\n"
                                       "  j = Softplus(x2)\n"
                                       "  k = Mish(x2)\n"
                                       "  l = Elu(x2) {alpha=0.7}\n"
                                       "  m2 = Selu(x2)\n"
                                       "  n = Celu(x2) {alpha=1.5}\n"
                                       "  o = ReduceL1(x2) {axes=[1, 3]}\n"
                                       "  p = ReduceL2(x2) {axes=[0], keepdims=0}\n"
                                       "  q = ReduceSumSquare(x2)\n"
                                       "  r = ReduceLogSumExp(x2) {axes=[3], keepdims=0}\n"
                                       "  t = ReduceLogSum(o)\n"
                                       "  output a, b1, c, d, e, f, g2, h, i, j, k, l, m2, n, o, p, q, r, t\n"
                                       "}\n", NULL);
  PlStep *s = last_step (h);
  g_assert_cmpfloat (s->max_rel_error, <, 1e-12);
  for (guint i = 0; i < s->graph->nodes->len; i++)
    {
      PlNode *n = s->graph->nodes->pdata[i];
      g_assert_true (n == node (s->graph, "x2") || strchr (n->name, '/'));
    }
  const char *names[] = { "a", "b1", "c", "d", "e", "f", "g2", "h", "i", "j", "k", "l", "m2", "n", "o", "p", "q", "r", "t" };
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    g_assert_cmpstr (((PlValue *) s->graph->outputs->pdata[i])->name, ==, names[i]);
}

static void
test_ops_param (void)
{
  static const char text[] = "graph g opset 17 {\n"
                             "  input x: f32[4, 8]\n"
                             "  a = Softmax(x)\n"
                             "  b = Gelu(a)\n"
                             "  c = Softplus(b)\n"
                             "  output c\n"
                             "}\n";
  static const char *const only_softmax[] = { "decompose.ops=Softmax", NULL };
  g_autoptr (PlHistory) h = decompose (text, only_softmax);
  assert_ops (last_step (h)->graph, "Div:1 Exp:1 Gelu:1 ReduceMax:1 ReduceSum:1 Softplus:1 Sub:1");

  static const char *const two[] = { "decompose.ops= Gelu , Softplus", NULL };
  g_autoptr (PlHistory) h2 = decompose (text, two);
  assert_ops (last_step (h2)->graph, "Add:2 Div:1 Erf:1 Exp:1 Log:1 Mul:2 Softmax:1");

  g_autoptr (PlGraph) g = pl_test_parse (text);
  g_autoptr (GError) error = NULL;
  g_autoptr (PlPipeline) p = pl_pipeline_parse ("decompose", &error);
  g_assert_true (pl_pipeline_set_param (p, "decompose.ops=Softmax,Conv", &error));
  g_autoptr (PlHistory) bad = pl_pipeline_run (g, p, NULL, &error);
  g_assert_error (error, PL_ERROR, PL_ERROR_INVALID);
  g_assert_nonnull (strstr (error->message, "cannot decompose 'Conv'"));
  g_assert_nonnull (bad->error);
}

static void
test_no_change (void)
{
  g_autoptr (PlHistory) h = decompose ("graph g opset 17 {\n"
                                       "  input x: f32[2, 3]\n"
                                       "  const w: f32[3, 4] = random(seed=1)\n"
                                       "  m = MatMul(x, w)\n"
                                       "  y = Relu(m)\n"
                                       "  output y\n"
                                       "}\n", NULL);
  PlStep *s = last_step (h);
  g_assert_false (s->changed);
  g_assert_false (s->checked);
  g_assert_cmpstr (s->report, ==, "nothing to decompose\n");
}

/* A composite op inside a chain: its readers read the expansion. */
static void
test_readers (void)
{
  g_autoptr (PlHistory) h = decompose ("graph g opset 17 {\n"
                                       "  input x: f32[3, 8]\n"
                                       "  sp = Softplus(x)\n"
                                       "  a = Relu(sp)\n"
                                       "  b = Abs(sp)\n"
                                       "  y = Add(a, b)\n"
                                       "  output y\n"
                                       "}\n", NULL);
  PlStep *s = last_step (h);
  assert_ops (s->graph, "Abs:1 Add:2 Exp:1 Log:1 Relu:1");
  PlValue *sp = pl_graph_find_value (s->graph, "sp");
  g_assert_cmpstr (sp->producer->name, ==, "sp/log");
  g_assert_cmpint (sp->n_uses, ==, 2);
}

static void
test_samples (void)
{
  g_autofree char *dir_path = pl_test_source_path ("data/graphs");
  g_autoptr (GDir) dir = g_dir_open (dir_path, 0, NULL);
  if (!dir)
    {
      g_test_skip ("no data/graphs");
      return;
    }
  const char *name;
  while ((name = g_dir_read_name (dir)))
    {
      if (!g_str_has_suffix (name, ".graph"))
        continue;
      g_autofree char *path = g_build_filename (dir_path, name, NULL);
      g_autoptr (GError) error = NULL;
      g_autoptr (PlGraph) g = pl_text_load (path, &error);
      g_assert_no_error (error);
      /* Whole networks in float32: the expansions round each step, and the
       * check's floor (1e-3) meets outputs near zero after a residual sum. */
      g_autoptr (PlHistory) h = run_checked (g, "decompose", NULL, 1e-3);
      PlStep *s = last_step (h);
      for (guint i = 0; i < s->graph->nodes->len; i++)
        {
          PlOp op = ((PlNode *) s->graph->nodes->pdata[i])->op;
          g_assert_true (op != PL_OP_Softmax && op != PL_OP_LayerNormalization && op != PL_OP_Gelu
                         && op != PL_OP_BatchNormalization);
        }
      for (guint i = 0; i < g->outputs->len; i++)
        g_assert_cmpstr (((PlValue *) s->graph->outputs->pdata[i])->name, ==,
                         ((PlValue *) g->outputs->pdata[i])->name);
    }
}

/* --- LRN ------------------------------------------------------------------------------------------ */

/* Odd and even windows (the even one reaches one channel further after), a
 * window wider than the channels, the opset 9 forms of Pad and Slice. */
static void
test_lrn (void)
{
  g_autoptr (PlHistory) h = decompose ("graph g opset 17 {\n"
                                       "  input x: f32[2, 7, 3, 3]\n"
                                       "  y = LRN(x) {size=5, alpha=0.01, beta=0.75, bias=2}\n"
                                       "  z = LRN(x) {size=2, alpha=0.5}\n"
                                       "  w = LRN(x) {size=9, alpha=0.1, beta=1.5}\n"
                                       "  output y, z, w\n"
                                       "}\n", NULL);
  PlStep *s = last_step (h);
  g_assert_cmpint (pl_pass_report_get (s->counters, "LRN expanded"), ==, 3);
  assert_ops (s->graph, "Add:16 Div:3 Mul:6 Pad:3 Pow:3 Slice:16");
  assert_output (s->graph, "y", "y/div");
  assert_const_ints (node (s->graph, "z/pad")->inputs[1], PL_DIMS (0, 0, 0, 0, 0, 1, 0, 0), 8);
  assert_const_ints (node (s->graph, "y/window0")->inputs[2], PL_DIMS (-4), 1);

  g_autoptr (PlHistory) h9 = decompose ("graph g opset 9 {\n"
                                        "  input x: f32[1, 4, 2, 5]\n"
                                        "  y = LRN(x) {size=3, alpha=0.2}\n"
                                        "  output y\n"
                                        "}\n", NULL);
  PlStep *s9 = last_step (h9);
  assert_ops (s9->graph, "Add:3 Div:1 Mul:2 Pad:1 Pow:1 Slice:3");
  assert_ints_attr (node (s9->graph, "y/pad"), "pads", PL_DIMS (0, 1, 0, 0, 0, 1, 0, 0), 8);
  assert_ints_attr (node (s9->graph, "y/window1"), "starts", PL_DIMS (1), 1);
}

/* --- Einsum ------------------------------------------------------------------------------------------ */

/* Einsum as ReduceSum, Transpose, Reshape and MatMul: matrix and batched
 * products, attention's scores, implicit outputs, an ellipsis, an outer
 * product, sums, a transpose, a label only one operand has; a diagonal is
 * kept. Each checked against the op on random inputs. */
static void
test_einsum (void)
{
  static const struct { const char *eq, *a, *b, *ops; } cases[] = {
    { "bij,bjk->bik", "f32[2, 3, 4]", "f32[2, 4, 5]", "MatMul:1" },
    { "ij,jk", "f32[3, 4]", "f32[4, 5]", "MatMul:1" },
    { "bhqd,bhkd->bhqk", "f32[2, 3, 4, 8]", "f32[2, 3, 5, 8]", "MatMul:1 Reshape:3 Transpose:1" },
    { "...ij,...jk->...ik", "f64[2, 3, 4, 5]", "f64[2, 3, 5, 2]", "MatMul:1 Reshape:3" },
    { "abc,cd->dba", "f32[2, 3, 4]", "f32[4, 5]", "MatMul:1 Reshape:2 Transpose:1" },
    { "ij,kl->ijkl", "f32[2, 3]", "f32[4, 5]", "MatMul:1 Reshape:3" },
    { "ijk,ik->j", "f32[3, 4, 5]", "f32[3, 5]", "MatMul:1 Reshape:3 Transpose:1" },
    { "i,i", "f64[7]", "f64[7]", "MatMul:1 Reshape:3" },
    { "ij,j->i", "f32[3, 6]", "f32[6]", "MatMul:1 Reshape:2" },
    { "ij->ji", "f32[3, 4]", NULL, "Transpose:1" },
    { "ijk->i", "f32[3, 4, 5]", NULL, "ReduceSum:1" },
    { "ij", "f32[3, 4]", NULL, "Identity:1" },
  };
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_autofree char *text = g_strdup_printf ("graph g opset 17 {\n  input a: %s\n%s%s%s"
                                               "  y = Einsum(a%s) {equation=\"%s\"}\n  output y\n}\n",
                                               cases[c].a, cases[c].b ? "  input b: " : "", cases[c].b ? cases[c].b : "",
                                               cases[c].b ? "\n" : "", cases[c].b ? ", b" : "", cases[c].eq);
      g_autoptr (PlHistory) h = decompose (text, NULL);
      PlStep *s = last_step (h);
      assert_ops (s->graph, cases[c].ops);
      g_assert_cmpint (pl_pass_report_get (s->counters, "Einsum expanded"), ==, 1);
    }
  g_autoptr (PlHistory) h = decompose ("graph g opset 17 {\n  input a: f32[2, 3, 3]\n"
                                       "  y = Einsum(a) {equation=\"bii->bi\"}\n  output y\n}\n", NULL);
  PlStep *s = last_step (h);
  assert_ops (s->graph, "Einsum:1");
  g_assert_nonnull (strstr (s->report, "kept 1 Einsum (a subscript repeats in an operand (a diagonal))"));
}

/* --- losses ------------------------------------------------------------------------------------ */

/* Both losses with and without weights and ignore_index, every reduction,
 * SoftmaxCrossEntropyLoss's log_prob read (it keeps its name); then grad
 * over the expansion; and a target out of range still fails the run. */
static void
test_losses (void)
{
  static const char head[] = "graph g opset 17 {\n"
                             "  input x: f32[4, 3, 2]\n"
                             "  const t: i64[4, 2] = [0, 2, 1, -1, 2, 0, -1, 2]\n"
                             "  const t2: i64[4, 2] = [0, 2, 1, 1, 2, 0, 1, 2]\n"
                             "  const w: f32[3] = [0.5, 1.5, 2.0]\n";
  g_autofree char *text = g_strconcat (head,
                                       "  lsm = LogSoftmax(x) {axis=1}\n"
                                       "  a = NegativeLogLikelihoodLoss(lsm, t, w) {ignore_index=-1}\n"
                                       "  b = NegativeLogLikelihoodLoss(lsm, t2) {reduction=\"sum\"}\n"
                                       "  c, lp = SoftmaxCrossEntropyLoss(x, t) {reduction=\"none\", ignore_index=-1}\n"
                                       "  d = SoftmaxCrossEntropyLoss(x, t2)\n"
                                       "  output a, b, c, lp, d\n}\n", NULL);
  g_autoptr (PlHistory) h = decompose (text, NULL);
  PlStep *s = last_step (h);
  g_assert_true (s->changed);
  g_assert_cmpint (pl_pass_report_get (s->counters, "NegativeLogLikelihoodLoss expanded"), ==, 2);
  g_assert_cmpint (pl_pass_report_get (s->counters, "SoftmaxCrossEntropyLoss expanded"), ==, 2);
  for (guint i = 0; i < s->graph->nodes->len; i++)
    {
      PlOp op = ((PlNode *) s->graph->nodes->pdata[i])->op;
      g_assert_true (op != PL_OP_NegativeLogLikelihoodLoss && op != PL_OP_SoftmaxCrossEntropyLoss);
    }
  static const char *const outs[] = { "a", "b", "c", "lp", "d" };
  for (guint i = 0; i < G_N_ELEMENTS (outs); i++)
    g_assert_cmpstr (((PlValue *) s->graph->outputs->pdata[i])->name, ==, outs[i]);
  g_assert_cmpstr (((PlValue *) s->graph->outputs->pdata[3])->producer->name, ==, "c/sub_log");
  /* mean with weights: the weights of the targets used divide */
  g_assert_cmpstr (((PlValue *) s->graph->outputs->pdata[0])->producer->name, ==, "a/mean_loss");
  g_assert_cmpstr (node (s->graph, "a/mean_loss")->op_type, ==, "Div");

  /* grad differentiates the expansion as the op: the same gradient either way */
  g_autoptr (PlGraph) tg = pl_test_parse ("graph g opset 17 {\n"
                                          "  const s: f32[4, 3, 2] = random(seed=1, lo=-2, hi=2)\n"
                                          "  const t: i64[4, 2] = [0, 2, 1, -1, 2, 0, -1, 2]\n"
                                          "  const w: f32[3] = [0.5, 1.5, 2.0]\n"
                                          "  loss = SoftmaxCrossEntropyLoss(s, t, w) {ignore_index=-1}\n"
                                          "  output loss\n}\n");
  static const char *const grads[] = { "grad.params=s", "grad.outputs=grads", NULL };
  g_autoptr (PlHistory) th = run_checked (tg, "grad,decompose", grads, 1e-4);
  g_autoptr (PlHistory) dh = run_checked (tg, "decompose,grad", grads, 1e-4);
  PlGraph *ga = last_step (th)->graph, *gb = last_step (dh)->graph;
  g_assert_cmpint (ga->outputs->len, ==, 2);
  g_assert_cmpint (gb->outputs->len, ==, 2);
  g_autoptr (GError) error = NULL;
  PlTensor **ya = pl_interp_run (ga, NULL, NULL, &error);
  g_assert_no_error (error);
  PlTensor **yb = pl_interp_run (gb, NULL, NULL, &error);
  g_assert_no_error (error);
  for (int i = 0; i < 2; i++)
    pl_test_assert_close (yb[i], ya[i], 1e-4, 1e-6);
  pl_interp_free_outputs (ya, 2);
  pl_interp_free_outputs (yb, 2);

  /* A negative target that is not ignored fails, as the op does, instead of
   * being read from the end. */
  g_autoptr (PlGraph) bad = pl_test_parse ("graph g opset 17 {\n"
                                           "  input x: f32[2, 3]\n"
                                           "  const t: i64[2] = [1, -1]\n"
                                           "  y = SoftmaxCrossEntropyLoss(x, t)\n"
                                           "  output y\n}\n");
  g_autoptr (PlGraph) dbad = pl_test_passes (bad, "decompose");
  g_autoptr (PlTensor) x2 = pl_test_random (PL_DTYPE_F32, 2, PL_DIMS (2, 3), 1, -1, 1);
  g_assert_null (pl_interp_run (dbad, (PlTensor *[]) { x2 }, NULL, &error));
  g_assert_nonnull (error);
  g_assert_nonnull (strstr (error->message, "out of range"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_passes_init ();
  g_test_add_func ("/Passlab/PassDecompose/softmax", test_softmax);
  g_test_add_func ("/Passlab/PassDecompose/softmax-opset11", test_softmax_opset11);
  g_test_add_func ("/Passlab/PassDecompose/log-softmax", test_log_softmax);
  g_test_add_func ("/Passlab/PassDecompose/layer-norm", test_layer_norm);
  g_test_add_func ("/Passlab/PassDecompose/layer-norm-stats-kept", test_layer_norm_stats_kept);
  g_test_add_func ("/Passlab/PassDecompose/batch-norm-constant", test_batch_norm_constant);
  g_test_add_func ("/Passlab/PassDecompose/batch-norm-inputs", test_batch_norm_inputs);
  g_test_add_func ("/Passlab/PassDecompose/batch-norm-2d-and-training", test_batch_norm_2d_and_training);
  g_test_add_func ("/Passlab/PassDecompose/instance-norm", test_instance_norm);
  g_test_add_func ("/Passlab/PassDecompose/mvn", test_mvn);
  g_test_add_func ("/Passlab/PassDecompose/activations", test_activations);
  g_test_add_func ("/Passlab/PassDecompose/reductions", test_reductions);
  g_test_add_func ("/Passlab/PassDecompose/reduction-axes-input", test_reduction_axes_input);
  g_test_add_func ("/Passlab/PassDecompose/exact-f64", test_exact_f64);
  g_test_add_func ("/Passlab/PassDecompose/ops-param", test_ops_param);
  g_test_add_func ("/Passlab/PassDecompose/no-change", test_no_change);
  g_test_add_func ("/Passlab/PassDecompose/readers", test_readers);
  g_test_add_func ("/Passlab/PassDecompose/lrn", test_lrn);
  g_test_add_func ("/Passlab/PassDecompose/einsum", test_einsum);
  g_test_add_func ("/Passlab/PassDecompose/losses", test_losses);
  g_test_add_func ("/Passlab/PassDecompose/samples", test_samples);
  return g_test_run ();
}
