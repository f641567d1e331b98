/* test-fuzz.c — the random graph generator and the pass fuzzer: generated
 * graphs verify, run, print and parse back; the idioms the passes look for
 * occur; deliberately broken passes (wrong results, a broken graph, an
 * error, a crash) and a backend stage that disagrees are caught, named and
 * shrunk to a graph of a node or two; and the built-in passes survive 200
 * random graphs. */
#include "fuzz.h"
#include "rewrite.h"
#include "test-util.h"
#include "text-format.h"

#include <glib/gstdio.h>
#include <math.h>
#include <signal.h>
#include <string.h>

/* Verifies g, runs it on random inputs and asserts finite outputs. */
static void
assert_runs (const PlGraph *g, guint32 seed)
{
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_graph_verify (g, &error));
  g_assert_no_error (error);
  PlTensor **inputs = pl_random_inputs (g, seed, 1, &error);
  g_assert_no_error (error);
  PlTensor **outputs = pl_interp_run (g, inputs, NULL, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < g->outputs->len; i++)
    for (int64_t k = 0; k < outputs[i]->numel; k++)
      g_assert_true (isfinite (pl_tensor_get_f64 (outputs[i], k)));
  pl_interp_free_outputs (outputs, (int) g->outputs->len);
  pl_interp_free_outputs (inputs, (int) g->inputs->len);
}

static void
check_generated (const PlRandomGraphOptions *o)
{
  g_autoptr (PlGraph) g = pl_random_graph (o);
  assert_runs (g, o->seed);
  g_assert_cmpuint (g->outputs->len, >=, 1);
  g_assert_cmpuint (g->outputs->len, <=, 4);
  g_assert_cmpuint (g->nodes->len, >=, (guint) o->n_nodes);
  g_assert_cmpint (g->opset, ==, 17);
  for (guint i = 0; i < g->values->len; i++)
    {
      const PlValue *v = g->values->pdata[i];
      g_assert_true (pl_shape_is_static (&v->shape));
      if (!v->constant)   /* weights of MatMul and Gemm are 2-D whatever max_rank says */
        g_assert_cmpint (v->shape.rank, <=, o->max_rank);
      g_assert_cmpint (pl_shape_numel (&v->shape), <=, o->max_numel);
      if (!v->constant)   /* a Reshape to a scalar reads an empty shape constant */
        g_assert_cmpint (pl_shape_numel (&v->shape), >=, 1);
    }
  for (guint i = 0; i < g->inputs->len; i++)
    {
      const PlValue *v = g->inputs->pdata[i];
      for (int d = 0; d < v->shape.rank; d++)
        g_assert_cmpint (v->shape.dims[d].size, <=, o->max_dim);
    }
}

static void
test_generator_valid (void)
{
  PlRandomGraphOptions o;
  for (guint32 seed = 1; seed <= 300; seed++)
    {
      pl_random_graph_options_init (&o);
      o.seed = seed;
      check_generated (&o);
    }
  /* Other sizes, ranks and op mixes. */
  static const guint mixes[] = {
    PL_RANDOM_ELEMENTWISE, PL_RANDOM_SHAPE, PL_RANDOM_REDUCE, PL_RANDOM_MATMUL, PL_RANDOM_CONCAT,
    PL_RANDOM_PATTERNS, PL_RANDOM_ELEMENTWISE | PL_RANDOM_SHAPE, PL_RANDOM_INDEX,
  };
  for (guint32 seed = 1; seed <= 140; seed++)
    {
      pl_random_graph_options_init (&o);
      o.seed = seed;
      o.ops = mixes[seed % G_N_ELEMENTS (mixes)];
      o.n_nodes = 1 + (int) (seed % 7) * 9;
      o.max_rank = 1 + (int) (seed % 6);
      o.max_dim = 1 + (int) (seed % 7);
      o.n_inputs = 1 + (int) (seed % 4);
      check_generated (&o);
    }
}

static char *
print_random (guint32 seed)
{
  PlRandomGraphOptions o;
  pl_random_graph_options_init (&o);
  o.seed = seed;
  g_autoptr (PlGraph) g = pl_random_graph (&o);
  return pl_text_print (g);
}

static void
test_generator_deterministic (void)
{
  g_autofree char *a = print_random (42), *b = print_random (42), *c = print_random (43);
  g_assert_cmpstr (a, ==, b);
  g_assert_cmpstr (a, !=, c);
}

/* Printed graphs parse back to graphs that print the same and compute the same. */
static void
test_text_round_trip (void)
{
  for (guint32 seed = 1; seed <= 100; seed++)
    {
      PlRandomGraphOptions o;
      pl_random_graph_options_init (&o);
      o.seed = seed;
      g_autoptr (PlGraph) g = pl_random_graph (&o);
      g_autofree char *text = pl_text_print (g);
      g_autoptr (GError) error = NULL;
      g_autoptr (PlGraph) back = pl_text_parse (text, -1, NULL, &error);
      g_assert_no_error (error);
      g_autofree char *again = pl_text_print (back);
      g_assert_cmpstr (text, ==, again);
      double errors[4];
      g_assert_true (pl_check_graphs (g, back, seed, 1, errors, &error));
      g_assert_no_error (error);
      for (guint i = 0; i < g->outputs->len; i++)
        g_assert_cmpfloat (errors[i], ==, 0.0);
    }
}

static bool
produced_by (const PlValue *v, PlOp op)
{
  return v && v->producer && v->producer->op == op;
}

static bool
is_reduce (const PlNode *n)
{
  return n->op >= PL_OP_ReduceSum && n->op <= PL_OP_ReduceSumSquare;
}

/* Over many seeds, every op the generator knows appears (Pad in each mode,
 * Slice with negative steps), and so do the reshape-sinking patterns
 * reduce(reshape(x)) and reshape(f(reshape(x), y)). */
static void
test_generator_coverage (void)
{
  static const PlOp wanted[] = {
    PL_OP_Add, PL_OP_Sub, PL_OP_Mul, PL_OP_Div, PL_OP_Max, PL_OP_Min, PL_OP_Pow, PL_OP_Where,
    PL_OP_Sum, PL_OP_Mean, PL_OP_Exp, PL_OP_Log, PL_OP_Sqrt, PL_OP_Tanh, PL_OP_Relu, PL_OP_Gelu,
    PL_OP_Reshape, PL_OP_Transpose, PL_OP_Expand, PL_OP_Squeeze, PL_OP_Unsqueeze, PL_OP_Flatten,
    PL_OP_ReduceSum, PL_OP_ReduceMean, PL_OP_ReduceMax, PL_OP_ReduceMin, PL_OP_Softmax,
    PL_OP_LogSoftmax, PL_OP_LayerNormalization, PL_OP_MatMul, PL_OP_Gemm, PL_OP_Concat, PL_OP_Slice,
    PL_OP_Pad, PL_OP_Tile, PL_OP_Gather, PL_OP_GatherElements, PL_OP_GatherND, PL_OP_CumSum, PL_OP_TopK,
    PL_OP_ScatterND, PL_OP_ScatterElements, PL_OP_Einsum,
  };
  static const char *const pad_modes[] = { "constant", "edge", "reflect", "wrap" };
  int pads[4] = { 0 }, negative_steps = 0;
  gboolean seen[PL_OP_COUNT] = { FALSE };
  int reduce_reshape = 0, reshape_sandwich = 0, scalar_broadcast = 0, rank_broadcast = 0, keepdims0 = 0;
  for (guint32 seed = 1; seed <= 300; seed++)
    {
      PlRandomGraphOptions o;
      pl_random_graph_options_init (&o);
      o.seed = seed;
      g_autoptr (PlGraph) g = pl_random_graph (&o);
      for (guint i = 0; i < g->nodes->len; i++)
        {
          const PlNode *n = g->nodes->pdata[i];
          seen[n->op] = TRUE;
          for (int m = 0; m < 4; m++)
            pads[m] += n->op == PL_OP_Pad && strcmp (pl_node_attr_string (n, "mode", "constant"), pad_modes[m]) == 0;
          if (n->op == PL_OP_Slice && n->n_inputs > 4 && pl_value_constant (n->inputs[4]))
            {
              const PlTensor *st = pl_value_constant (n->inputs[4]);
              for (int64_t k = 0; k < st->numel; k++)
                negative_steps += pl_tensor_get_i64 (st, k) < 0;
            }
          if (is_reduce (n) && produced_by (n->inputs[0], PL_OP_Reshape))
            reduce_reshape++;
          if (is_reduce (n) && pl_node_attr_int (n, "keepdims", 1) == 0)
            keepdims0++;
          if (n->op == PL_OP_Reshape && n->inputs[0]->producer
              && pl_op_info (n->inputs[0]->producer->op)->category == PL_CAT_ELEMENTWISE)
            {
              const PlNode *f = n->inputs[0]->producer;
              for (int k = 0; k < f->n_inputs; k++)
                if (produced_by (f->inputs[k], PL_OP_Reshape)
                    && pl_shape_equal (&f->inputs[k]->producer->inputs[0]->shape, &n->outputs[0]->shape))
                  reshape_sandwich++;
            }
          if (n->op == PL_OP_Add || n->op == PL_OP_Mul || n->op == PL_OP_Sub)
            {
              int ra = n->inputs[0]->shape.rank, rb = n->inputs[1]->shape.rank;
              scalar_broadcast += (ra == 0) != (rb == 0);
              rank_broadcast += ra != rb && ra > 0 && rb > 0;
            }
        }
    }
  for (guint i = 0; i < G_N_ELEMENTS (wanted); i++)
    if (!seen[wanted[i]])
      g_error ("no generated graph has %s", pl_op_name (wanted[i]));
  g_assert_cmpint (reduce_reshape, >=, 20);
  g_assert_cmpint (reshape_sandwich, >=, 20);
  g_assert_cmpint (scalar_broadcast, >=, 20);
  g_assert_cmpint (rank_broadcast, >=, 20);
  g_assert_cmpint (keepdims0, >=, 20);
  for (int m = 0; m < 4; m++)
    g_assert_cmpint (pads[m], >=, 5);
  g_assert_cmpint (negative_steps, >=, 5);
}

static void
test_chain_graph (void)
{
  g_autoptr (PlGraph) g = pl_random_chain_graph (3000, 7);
  g_assert_cmpuint (g->nodes->len, >=, 3000);
  g_assert_cmpuint (g->nodes->len, <, 3016);
  g_assert_cmpuint (g->outputs->len, ==, 1);
  assert_runs (g, 1);
  gboolean seen[PL_OP_COUNT] = { FALSE };
  for (guint i = 0; i < g->nodes->len; i++)
    seen[((PlNode *) g->nodes->pdata[i])->op] = TRUE;
  g_assert_true (seen[PL_OP_ReduceMean] && seen[PL_OP_MatMul] && seen[PL_OP_Softmax] && seen[PL_OP_Reshape]
                 && seen[PL_OP_Transpose] && seen[PL_OP_Tanh] && seen[PL_OP_Identity]);
  /* The same seed gives the same graph. */
  g_autoptr (PlGraph) again = pl_random_chain_graph (3000, 7);
  g_autofree char *a = pl_text_print (g), *b = pl_text_print (again);
  g_assert_cmpstr (a, ==, b);
}

/* --- deliberately broken passes ---------------------------------------------------- */

static GPtrArray *
nodes_with_op (PlGraph *g, PlOp op)
{
  GPtrArray *found = g_ptr_array_new ();
  for (guint i = 0; i < g->nodes->len; i++)
    if (((PlNode *) g->nodes->pdata[i])->op == op)
      g_ptr_array_add (found, g->nodes->pdata[i]);
  return found;
}

/* Add(a, b) -> Sub(a, b): wrong results. */
static bool
run_add_to_sub (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer data, GError **error)
{
  g_autoptr (GPtrArray) adds = nodes_with_op (g, PL_OP_Add);
  for (guint i = 0; i < adds->len; i++)
    {
      PlNode *add = adds->pdata[i];
      PlNode *sub = pl_rw_add_op (g, "Sub", "sub", 2, add->inputs, error);
      if (!sub)
        return false;
      pl_value_replace_uses (add->outputs[0], sub->outputs[0]);
      pl_graph_remove_node (g, add);
    }
  return true;
}

/* Breaks an invariant: a Relu's output claims a wrong shape. */
static bool
run_bad_shape (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer data, GError **error)
{
  g_autoptr (GPtrArray) relus = nodes_with_op (g, PL_OP_Relu);
  for (guint i = 0; i < relus->len; i++)
    {
      PlValue *v = ((PlNode *) relus->pdata[i])->outputs[0];
      if (v->shape.rank > 0)
        v->shape.dims[0].size += 1;
    }
  return true;
}

static bool
run_nothing (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer data, GError **error)
{
  return true;
}

static bool
run_refuse_softmax (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer data, GError **error)
{
  g_autoptr (GPtrArray) found = nodes_with_op (g, PL_OP_Softmax);
  if (found->len > 0)
    g_set_error (error, PL_ERROR, PL_ERROR_FAILED, "refusing Softmax on purpose");
  return found->len == 0;
}

static bool
run_crash_on_gemm (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer data, GError **error)
{
  g_autoptr (GPtrArray) found = nodes_with_op (g, PL_OP_Gemm);
  if (found->len > 0)
    raise (SIGSEGV);
  return true;
}

static bool
run_hang (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer data, GError **error)
{
  for (;;)
    g_usleep (G_USEC_PER_SEC);
  return true;
}

static void
register_broken_passes (void)
{
  static gsize once = 0;
  if (!g_once_init_enter (&once))
    return;
  g_assert_true (pl_pass_register (pl_pass_new ("add-to-sub", "Add -> Sub (wrong)", NULL, 0, run_add_to_sub, NULL, NULL), NULL));
  g_assert_true (pl_pass_register (pl_pass_new ("nothing", "does nothing", NULL, 0, run_nothing, NULL, NULL), NULL));
  g_assert_true (pl_pass_register (pl_pass_new ("bad-shape", "corrupts Relu shapes", NULL, 0, run_bad_shape, NULL, NULL), NULL));
  g_assert_true (pl_pass_register (pl_pass_new ("refuse-softmax", "fails on Softmax", NULL, 0, run_refuse_softmax, NULL, NULL), NULL));
  g_assert_true (pl_pass_register (pl_pass_new ("hang", "never returns", NULL, 0, run_hang, NULL, NULL), NULL));
  g_assert_true (pl_pass_register (pl_pass_new ("crash-on-gemm", "segfaults on Gemm", NULL, 0, run_crash_on_gemm, NULL, NULL), NULL));
  g_once_init_leave (&once, 1);
}

/* Fuzzes 12 graphs through passes; asserts that at least one seed failed,
 * every failure is of kind in pass `blamed` and shrank to at most max_nodes
 * nodes, and that the written graph fails again the same way. */
static void
expect_caught (const char *passes, const char *blamed, PlFuzzKind kind, int max_nodes, bool isolate)
{
  register_broken_passes ();
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("passlab-fuzz-XXXXXX", &error);
  g_assert_no_error (error);
  PlFuzzOptions o;
  pl_fuzz_options_init (&o);
  o.n_graphs = 12;
  o.passes = passes;
  o.out_dir = dir;
  o.isolate = isolate;
  PlFuzzResult r;
  g_assert_true (pl_fuzz_run (&o, &r, &error));
  g_assert_no_error (error);
  g_assert_cmpint (r.n_graphs, ==, 12);
  g_assert_cmpint (r.n_failed, >=, 1);
  g_assert_cmpint (r.n_passed + r.n_failed, ==, 12);
  g_assert_cmpuint (r.failures->len, ==, (guint) r.n_failed);
  for (guint i = 0; i < r.failures->len; i++)
    {
      const PlFuzzFailure *f = r.failures->pdata[i];
      g_test_message ("seed %u: %s in %s: %s (%d -> %d nodes)", f->seed, pl_fuzz_kind_name (f->kind),
                      f->pass, f->message, f->n_nodes, f->shrunk_nodes);
      g_assert_cmpint (f->kind, ==, kind);
      g_assert_cmpstr (f->pass, ==, blamed);
      g_assert_cmpint (f->shrunk_nodes, <=, max_nodes);
      g_assert_cmpint (f->shrunk_nodes, >=, 1);
      g_assert_cmpint (f->n_nodes, >=, f->shrunk_nodes);
      g_autofree char *base = g_strdup_printf ("fuzz-fail-%u.graph", f->seed);
      g_autofree char *want = g_build_filename (dir, base, NULL);
      g_assert_cmpstr (f->path, ==, want);

      /* The written graph loads and (for failures that do not kill the
       * process) fails again in the same pass. */
      g_autoptr (PlGraph) small = pl_text_load (f->path, &error);
      g_assert_no_error (error);
      g_assert_cmpint ((int) small->nodes->len, ==, f->shrunk_nodes);
      if (kind != PL_FUZZ_CRASH)
        {
          g_autoptr (PlPipeline) p = pl_pipeline_parse (passes, &error);
          PlRunOptions ro;
          pl_run_options_init (&ro);
          ro.check = true;
          ro.seed = f->seed;
          g_autoptr (PlHistory) h = pl_pipeline_run (small, p, &ro, NULL);
          bool failed = h->error != NULL;
          for (int s = 0; s < pl_history_n_steps (h); s++)
            failed |= pl_history_step (h, s)->check_failed;
          g_assert_true (failed);
        }
      g_assert_cmpint (g_unlink (f->path), ==, 0);
    }
  pl_fuzz_result_clear (&r);
  g_assert_cmpint (g_rmdir (dir), ==, 0);
}

static void
test_catches_wrong_results (void)
{
  /* Add -> Sub: the smallest graph is one Add of two inputs (a Sub of
   * x - 0 would pass, so at most an Add and what feeds it). */
  expect_caught ("add-to-sub", "add-to-sub", PL_FUZZ_CHECK, 3, true);
}

static void
test_catches_wrong_results_in_process (void)
{
  expect_caught ("add-to-sub", "add-to-sub", PL_FUZZ_CHECK, 3, false);
}

static void
test_catches_broken_graph (void)
{
  expect_caught ("nothing,bad-shape", "bad-shape", PL_FUZZ_VERIFY, 2, true);
}

static void
test_catches_pass_error (void)
{
  expect_caught ("refuse-softmax", "refuse-softmax", PL_FUZZ_PASS_ERROR, 1, true);
}

static void
test_catches_crash (void)
{
  expect_caught ("crash-on-gemm", "crash-on-gemm", PL_FUZZ_CRASH, 1, true);
}

/* A backend stage that "miscompiles" every Mul: the failures are the
 * stage's ("backend fake"), in the child and in process, and shrink to the
 * Mul and what feeds it. */
static char *
fake_backend (const PlGraph *generated, const PlGraph *final, guint32 seed, double tolerance, gpointer data)
{
  int *calls = data;
  (*calls)++;
  for (guint i = 0; i < final->nodes->len; i++)
    if (((PlNode *) final->nodes->pdata[i])->op == PL_OP_Mul)
      return g_strdup_printf ("Mul '%s' miscompiled", ((PlNode *) final->nodes->pdata[i])->name);
  return NULL;
}

static void
test_catches_backend (void)
{
  for (int isolate = 0; isolate < 2; isolate++)
    {
      int calls = 0;
      PlFuzzOptions o;
      pl_fuzz_options_init (&o);
      o.n_graphs = 8;
      o.passes = "simplify";
      o.isolate = isolate;
      o.backend = fake_backend;
      o.backend_name = "fake";
      o.backend_data = &calls;
      PlFuzzResult r;
      g_autoptr (GError) error = NULL;
      g_assert_true (pl_fuzz_run (&o, &r, &error));
      g_assert_no_error (error);
      g_assert_cmpint (r.n_failed, >=, 1);
      if (!isolate)
        g_assert_cmpint (calls, >=, 8);   /* every graph reached the stage (more: shrinking) */
      for (guint i = 0; i < r.failures->len; i++)
        {
          const PlFuzzFailure *f = r.failures->pdata[i];
          g_assert_cmpint (f->kind, ==, PL_FUZZ_BACKEND);
          g_assert_cmpstr (f->pass, ==, "backend fake");
          g_assert_nonnull (strstr (f->message, "miscompiled"));
          g_assert_cmpint (f->shrunk_nodes, <=, 3);
          g_assert_cmpint (f->shrunk_nodes, >=, 1);
        }
      g_assert_cmpstr (pl_fuzz_kind_name (PL_FUZZ_BACKEND), ==, "backend");
      pl_fuzz_result_clear (&r);
    }
}

/* A pass that never returns is stopped after timeout_s and named. */
static void
test_catches_hang (void)
{
  register_broken_passes ();
  PlFuzzOptions o;
  pl_fuzz_options_init (&o);
  o.n_graphs = 2;
  o.passes = "nothing,hang";
  o.timeout_s = 1;
  PlFuzzResult r;
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_fuzz_run (&o, &r, &error));
  g_assert_no_error (error);
  g_assert_cmpint (r.n_failed, ==, 2);
  for (guint i = 0; i < r.failures->len; i++)
    {
      const PlFuzzFailure *f = r.failures->pdata[i];
      g_assert_cmpint (f->kind, ==, PL_FUZZ_TIMEOUT);
      g_assert_cmpstr (f->pass, ==, "hang");
      g_assert_null (f->path);
      g_assert_nonnull (strstr (f->message, "timed out"));
    }
  pl_fuzz_result_clear (&r);
}

/* The regression test: every built-in pass, in order, on 200 random graphs. */
static void
test_builtin_passes (void)
{
  PlFuzzOptions o;
  pl_fuzz_options_init (&o);
  o.n_graphs = 200;
  o.out_dir = NULL;
  o.max_trials = 100;
  PlFuzzResult r;
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_fuzz_run (&o, &r, &error));
  g_assert_no_error (error);
  for (guint i = 0; i < r.failures->len; i++)
    {
      const PlFuzzFailure *f = r.failures->pdata[i];
      g_printerr ("seed %u: %s in %s: %s (shrunk to %d nodes)\n", f->seed, pl_fuzz_kind_name (f->kind),
                  f->pass ? f->pass : "-", f->message, f->shrunk_nodes);
    }
  g_assert_cmpint (r.n_graphs, ==, 200);
  g_assert_cmpint (r.n_failed, ==, 0);
  pl_fuzz_result_clear (&r);
}

static void
test_unknown_pass (void)
{
  PlFuzzOptions o;
  pl_fuzz_options_init (&o);
  o.passes = "simplify,no-such-pass";
  PlFuzzResult r;
  g_autoptr (GError) error = NULL;
  g_assert_false (pl_fuzz_run (&o, &r, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_INVALID);
  g_assert_nonnull (strstr (error->message, "no-such-pass"));
  pl_fuzz_result_clear (&r);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_passes_init ();
  g_test_add_func ("/Passlab/Fuzz/generator-valid", test_generator_valid);
  g_test_add_func ("/Passlab/Fuzz/generator-deterministic", test_generator_deterministic);
  g_test_add_func ("/Passlab/Fuzz/text-round-trip", test_text_round_trip);
  g_test_add_func ("/Passlab/Fuzz/generator-coverage", test_generator_coverage);
  g_test_add_func ("/Passlab/Fuzz/chain-graph", test_chain_graph);
  g_test_add_func ("/Passlab/Fuzz/catches-wrong-results", test_catches_wrong_results);
  g_test_add_func ("/Passlab/Fuzz/catches-wrong-results-in-process", test_catches_wrong_results_in_process);
  g_test_add_func ("/Passlab/Fuzz/catches-broken-graph", test_catches_broken_graph);
  g_test_add_func ("/Passlab/Fuzz/catches-pass-error", test_catches_pass_error);
  g_test_add_func ("/Passlab/Fuzz/catches-crash", test_catches_crash);
  g_test_add_func ("/Passlab/Fuzz/catches-hang", test_catches_hang);
  g_test_add_func ("/Passlab/Fuzz/catches-backend", test_catches_backend);
  g_test_add_func ("/Passlab/Fuzz/unknown-pass", test_unknown_pass);
  g_test_add_func ("/Passlab/Fuzz/builtin-passes", test_builtin_passes);
  return g_test_run ();
}
