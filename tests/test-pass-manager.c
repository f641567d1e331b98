/* test-pass-manager.c — pipelines, history, statistics, diffs, the
 * numerical check, parameters and the JSON report, driven by small passes
 * registered here. */
#include "pass-manager.h"
#include "rewrite.h"
#include "test-util.h"

#include <math.h>
#include <string.h>

/* y = Relu(Neg(x)) + c, outputs y. */
static PlGraph *
chain_graph (void)
{
  g_autoptr (GError) error = NULL;
  PlGraph *g = pl_graph_new ("chain");
  PlShape s = pl_shape_from_dims (2, PL_DIMS (4, 8));
  PlValue *x = pl_graph_add_input (g, "x", PL_DTYPE_F32, &s, &error);
  g_autoptr (PlTensor) ct = pl_test_tensor (PL_DTYPE_F32, 1, PL_DIMS (8), PL_VALS (1, 2, 3, 4, 5, 6, 7, 8));
  PlValue *c = pl_graph_add_constant (g, "c", ct, &error);
  PlNode *neg = pl_rw_add_op (g, "Neg", "neg", 1, &x, &error);
  PlNode *relu = pl_rw_add_op (g, "Relu", "relu", 1, neg->outputs, &error);
  PlNode *add = pl_rw_add_op (g, "Add", "y", 2, (PlValue *[]) { relu->outputs[0], c }, &error);
  g_assert_no_error (error);
  pl_graph_add_output (g, add->outputs[0]);
  return g;
}

/* Replaces every Neg(x) by x * -1 (meaning-preserving). */
static bool
run_neg_to_mul (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer data, GError **error)
{
  g_autoptr (GPtrArray) negs = g_ptr_array_new ();
  for (guint i = 0; i < g->nodes->len; i++)
    if (((PlNode *) g->nodes->pdata[i])->op == PL_OP_Neg)
      g_ptr_array_add (negs, g->nodes->pdata[i]);
  for (guint i = 0; i < negs->len; i++)
    {
      PlNode *neg = negs->pdata[i];
      PlValue *k = pl_rw_const_scalar (g, "minus_one", neg->inputs[0]->dtype, pl_pass_args_float (args, "factor"));
      PlNode *mul = pl_rw_add_op (g, "Mul", "mul", 2, (PlValue *[]) { neg->inputs[0], k }, error);
      if (!mul)
        return false;
      pl_pass_report_printf (report, "rewrote %s", neg->name);
      pl_value_replace_uses (neg->outputs[0], mul->outputs[0]);
      pl_graph_remove_node (g, neg);
      pl_pass_report_count (report, "rewrites", 1);
    }
  return true;
}

/* Leaves a dangling use behind: the verifier must catch it. */
static bool
run_corrupt (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer data, GError **error)
{
  PlNode *n = g->nodes->pdata[0];
  n->outputs[0]->n_uses = 0;
  return true;
}

static bool
run_nothing (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer data, GError **error)
{
  return true;
}

static bool
run_fail (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer data, GError **error)
{
  g_set_error (error, PL_ERROR, PL_ERROR_FAILED, "refusing on purpose");
  return false;
}

static void
register_test_passes (void)
{
  static const PlPassParam params[] = {
    { .name = "factor", .type = PL_PARAM_FLOAT, .default_value = "-1", .description = "multiplier" },
  };
  g_assert_true (pl_pass_register (pl_pass_new ("neg-to-mul", "Neg(x) -> x * factor", params, 1,
                                                run_neg_to_mul, NULL, NULL), NULL));
  g_assert_true (pl_pass_register (pl_pass_new ("corrupt", "breaks an invariant", NULL, 0, run_corrupt, NULL, NULL), NULL));
  g_assert_true (pl_pass_register (pl_pass_new ("nothing", "does nothing", NULL, 0, run_nothing, NULL, NULL), NULL));
  g_assert_true (pl_pass_register (pl_pass_new ("fail", "fails", NULL, 0, run_fail, NULL, NULL), NULL));
}

static void
test_history_and_stats (void)
{
  g_autoptr (PlGraph) g = chain_graph ();
  g_autoptr (GError) error = NULL;
  g_autoptr (PlPipeline) p = pl_pipeline_parse ("nothing, neg-to-mul", &error);
  g_assert_no_error (error);
  PlRunOptions o;
  pl_run_options_init (&o);
  o.check = true;
  g_autoptr (PlHistory) h = pl_pipeline_run (g, p, &o, &error);
  g_assert_no_error (error);
  g_assert_null (h->error);
  g_assert_cmpint (pl_history_n_steps (h), ==, 3);

  PlStep *s0 = pl_history_step (h, 0), *s1 = pl_history_step (h, 1), *s2 = pl_history_step (h, 2);
  g_assert_null (s0->pass_name);
  g_assert_cmpint (s0->stats.nodes, ==, 3);
  g_assert_cmpint (s0->stats.kernels, ==, 3);
  /* each op reads and writes a 4x8 f32 tensor (128 B), Add also reads c (32 B) */
  g_assert_cmpint (s0->stats.bytes_moved, ==, 3 * 256 + 32);
  g_assert_false (s1->changed);
  g_assert_false (s1->checked);            /* unchanged steps need no check */
  g_assert_true (s2->changed);
  g_assert_true (s2->checked);
  g_assert_false (s2->check_failed);
  g_assert_cmpfloat (s2->max_rel_error, ==, 0.0);
  g_assert_cmpuint (s2->diff->added->len, ==, 1);      /* the Mul */
  g_assert_cmpuint (s2->diff->removed->len, ==, 1);    /* the Neg */
  g_assert_cmpuint (s2->diff->changed->len, ==, 1);    /* the Relu now reads the Mul */
  g_assert_nonnull (strstr (s2->report, "rewrote neg"));
  g_assert_cmpint (pl_pass_report_get (s2->counters, "rewrites"), ==, 1);
  /* The input graph is untouched; each version is its own graph. */
  g_assert_cmpuint (g->nodes->len, ==, 3);
  g_assert_nonnull (pl_graph_find_node (s1->graph, "neg"));
  g_assert_null (pl_graph_find_node (s2->graph, "neg"));
}

static void
test_check_flags_wrong_rewrite (void)
{
  g_autoptr (PlGraph) g = chain_graph ();
  g_autoptr (GError) error = NULL;
  /* the parameter in the pipeline text, as pl_pipeline_set_param would set it */
  g_autoptr (PlPipeline) p = pl_pipeline_parse ("neg-to-mul{factor=-2}, nothing", &error);
  g_assert_no_error (error);
  PlRunOptions o;
  pl_run_options_init (&o);
  o.check = true;
  g_autoptr (PlHistory) h = pl_pipeline_run (g, p, &o, &error);
  g_assert_no_error (error);
  PlStep *s = pl_history_step (h, 1);
  g_assert_cmpstr (s->args_text, ==, "factor=-2");
  g_assert_true (s->check_failed);
  g_assert_cmpfloat (s->max_rel_error, >, 0.1);
  g_assert_nonnull (strstr (s->check_message, "neg-to-mul"));
  g_assert_nonnull (strstr (s->check_message, "'y'"));

  /* With stop_on_check_failure the pipeline says so. */
  o.stop_on_check_failure = true;
  g_autoptr (PlHistory) h2 = pl_pipeline_run (g, p, &o, &error);
  g_assert_error (error, PL_ERROR, PL_ERROR_EXEC);
  g_assert_nonnull (h2->error);
}

static void
test_failures_keep_history (void)
{
  g_autoptr (PlGraph) g = chain_graph ();
  g_autoptr (GError) error = NULL;
  g_autoptr (PlPipeline) p = pl_pipeline_parse ("neg-to-mul,corrupt,nothing", &error);
  g_autoptr (PlHistory) h = pl_pipeline_run (g, p, NULL, &error);
  g_assert_error (error, PL_ERROR, PL_ERROR_INVALID);
  g_assert_nonnull (strstr (h->error, "after pass corrupt"));
  g_assert_cmpint (pl_history_n_steps (h), ==, 2);    /* input + neg-to-mul; stopped there */
  g_clear_error (&error);

  g_autoptr (PlPipeline) p2 = pl_pipeline_parse ("fail", &error);
  g_autoptr (PlHistory) h2 = pl_pipeline_run (g, p2, NULL, &error);
  g_assert_nonnull (strstr (error->message, "refusing on purpose"));
  g_assert_cmpint (pl_history_n_steps (h2), ==, 1);
}

static void
test_pipeline_errors (void)
{
  g_autoptr (GError) error = NULL;
  g_assert_null (pl_pipeline_parse ("nothing,no-such-pass", &error));
  g_assert_nonnull (strstr (error->message, "unknown pass 'no-such-pass'"));
  g_clear_error (&error);
  g_autoptr (PlPipeline) p = pl_pipeline_parse ("neg-to-mul", &error);
  g_assert_false (pl_pipeline_set_param (p, "neg-to-mul.factor=abc", &error));
  g_assert_nonnull (strstr (error->message, "not a float"));
  g_clear_error (&error);
  g_assert_false (pl_pipeline_set_param (p, "neg-to-mul.nope=1", &error));
  g_assert_nonnull (strstr (error->message, "no parameter 'nope'"));
  g_clear_error (&error);
  g_assert_false (pl_pipeline_set_param (p, "nothing.x=1", &error));
  g_assert_nonnull (strstr (error->message, "not in the pipeline"));
  g_clear_error (&error);
  g_assert_false (pl_pipeline_set_param (p, "garbage", &error));
  g_clear_error (&error);
  /* Parameters in the pipeline text: PASS{key=value ...} */
  const char *bad[][2] = {
    { "neg-to-mul{factor=abc}", "not a float" },
    { "neg-to-mul{nope=1}", "no parameter 'nope'" },
    { "neg-to-mul{factor}", "'factor' is not key=value" },
    { "neg-to-mul{factor=2", "unbalanced" },
    { "neg-to-mul{factor=2}}", "unbalanced" },
    { "neg-to-mul{{factor=2}}", "unbalanced" },
    { "neg-to-mul{factor=2} x", "expected PASS{key=value ...}" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_assert_null (pl_pipeline_parse (bad[i][0], &error));
      g_assert_nonnull (error);
      if (!strstr (error->message, bad[i][1]))
        g_error ("'%s': '%s' lacks '%s'", bad[i][0], error->message, bad[i][1]);
      g_clear_error (&error);
    }
  /* Built-ins cannot be replaced; custom passes can. */
  g_assert_false (pl_pass_register (pl_pass_new ("simplify", "x", NULL, 0, run_nothing, NULL, NULL), &error));
  g_clear_error (&error);
  g_assert_true (pl_pass_register (pl_pass_new ("nothing", "again", NULL, 0, run_nothing, NULL, NULL), &error));
  g_assert_cmpstr (pl_pass_find ("nothing")->description, ==, "again");
}

static void
test_json_report (void)
{
  g_autoptr (PlGraph) g = chain_graph ();
  g_autoptr (GError) error = NULL;
  g_autoptr (PlPipeline) p = pl_pipeline_parse ("neg-to-mul", &error);
  PlRunOptions o;
  pl_run_options_init (&o);
  o.check = true;
  g_autoptr (PlHistory) h = pl_pipeline_run (g, p, &o, &error);
  g_autofree char *json = pl_history_to_json (h);
  g_assert_nonnull (strstr (json, "{\"steps\":["));
  g_assert_nonnull (strstr (json, "\"pass\":null"));
  g_assert_nonnull (strstr (json, "\"pass\":\"neg-to-mul\""));
  g_assert_nonnull (strstr (json, "\"changed\":true"));
  g_assert_nonnull (strstr (json, "\"max_rel_error\":0"));
  g_assert_nonnull (strstr (json, "\"kernels\":3"));
}

static void
test_builtins_listed (void)
{
  g_autoptr (GPtrArray) all = pl_pass_list ();
  const char *expected[] = { "simplify", "decompose", "reshape-sink", "fuse-library", "fuse-loops" };
  for (guint i = 0; i < G_N_ELEMENTS (expected); i++)
    {
      const PlPass *pass = pl_pass_find (expected[i]);
      g_assert_nonnull (pass);
      g_assert_true (pass->builtin);
      g_assert_true (all->pdata[i] == pass);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_passes_init ();
  register_test_passes ();
  g_test_add_func ("/Passlab/PassManager/history-and-stats", test_history_and_stats);
  g_test_add_func ("/Passlab/PassManager/check-flags-wrong-rewrite", test_check_flags_wrong_rewrite);
  g_test_add_func ("/Passlab/PassManager/failures-keep-history", test_failures_keep_history);
  g_test_add_func ("/Passlab/PassManager/pipeline-errors", test_pipeline_errors);
  g_test_add_func ("/Passlab/PassManager/json-report", test_json_report);
  g_test_add_func ("/Passlab/PassManager/builtins-listed", test_builtins_listed);
  return g_test_run ();
}
