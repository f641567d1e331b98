/* test-util.c — helpers for the GLib unit tests. */
#define G_LOG_DOMAIN "passlab-test"
#include "test-util.h"

#include "random-graph.h"
#include "text-format.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

PlTensor *
pl_test_tensor (PlDType dtype, int rank, const int64_t *dims, const double *values)
{
  g_autoptr (GError) error = NULL;
  PlTensor *t = pl_tensor_new (dtype, rank, dims, &error);
  g_assert_no_error (error);
  for (int64_t i = 0; values && i < t->numel; i++)
    pl_tensor_set_f64 (t, i, values[i]);
  return t;
}

PlTensor *
pl_test_random (PlDType dtype, int rank, const int64_t *dims, guint32 seed, double lo, double hi)
{
  PlTensor *t = pl_test_tensor (dtype, rank, dims, NULL);
  g_autoptr (GRand) rand = g_rand_new_with_seed (seed);
  pl_tensor_fill_random (t, rand, lo, hi);
  return t;
}

PlGraph *
pl_test_node_graph (const char *op_type, int n_inputs, PlTensor *const *inputs, guint32 const_mask,
                    int n_outputs, PlNode **node)
{
  g_autoptr (GError) error = NULL;
  PlGraph *g = pl_graph_new ("test");
  g->opset = 17;
  g_autofree PlValue **vals = g_new0 (PlValue *, MAX (n_inputs, 1));

  for (int i = 0; i < n_inputs; i++)
    {
      if (!inputs[i])
        continue;
      g_autofree char *name = g_strdup_printf ("in%d", i);
      if (const_mask & (1u << i))
        vals[i] = pl_graph_add_constant (g, name, inputs[i], &error);
      else
        {
          PlShape s = pl_tensor_shape (inputs[i]);
          vals[i] = pl_graph_add_input (g, name, inputs[i]->dtype, &s, &error);
        }
      g_assert_no_error (error);
    }
  PlNode *n = pl_graph_add_node (g, op_type, NULL, "node", n_inputs, vals, n_outputs, NULL, &error);
  g_assert_no_error (error);
  for (int i = 0; i < n_outputs; i++)
    pl_graph_add_output (g, n->outputs[i]);
  if (node)
    *node = n;
  return g;
}

/* The non-constant inputs, in graph-input order. */
static PlTensor **
graph_inputs (PlGraph *g, PlTensor *const *inputs, guint32 const_mask)
{
  PlNode *node = g->nodes->pdata[0];
  PlTensor **ins = g_new0 (PlTensor *, MAX (node->n_inputs, 1));
  int k = 0;
  for (int i = 0; i < node->n_inputs; i++)
    if (inputs[i] && !(const_mask & (1u << i)))
      ins[k++] = inputs[i];
  return ins;
}

PlTensor **
pl_test_run (PlGraph *g, PlTensor *const *inputs, guint32 const_mask)
{
  g_autoptr (GError) error = NULL;
  PlNode *node = g->nodes->pdata[0];

  g_assert_true (pl_graph_infer_shapes (g, &error));
  g_assert_no_error (error);
  g_autofree PlTensor **ins = graph_inputs (g, inputs, const_mask);
  PlTensor **outs = pl_interp_run (g, ins, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (outs);

  for (int i = 0; i < node->n_outputs; i++)
    {
      PlValue *v = node->outputs[i];
      PlShape got = pl_tensor_shape (outs[i]);
      g_assert_cmpstr (pl_dtype_name (outs[i]->dtype), ==, pl_dtype_name (v->dtype));
      if (v->shape.rank >= 0)
        {
          /* Every inferred dim that is known must match what was computed. */
          bool ok = v->shape.rank == got.rank;
          for (int d = 0; ok && d < got.rank; d++)
            ok = v->shape.dims[d].size < 0 || v->shape.dims[d].size == got.dims[d].size;
          if (!ok)
            {
              g_autofree char *a = pl_shape_to_string (&v->shape);
              g_autofree char *b = pl_shape_to_string (&got);
              g_error ("output %d: inferred shape %s, computed %s", i, a, b);
            }
        }
    }
  return outs;
}

void
pl_test_expect_infer_error (PlGraph *g, const char *substring)
{
  g_autoptr (GError) error = NULL;
  g_assert_false (pl_graph_infer_shapes (g, &error));
  g_assert_nonnull (error);
  if (!strstr (error->message, substring))
    g_error ("expected an error containing '%s', got '%s'", substring, error->message);
}

void
pl_test_expect_run_error (PlGraph *g, PlTensor *const *inputs, guint32 const_mask, const char *substring)
{
  g_autoptr (GError) error = NULL;
  PlNode *node = g->nodes->pdata[0];
  if (!pl_graph_infer_shapes (g, &error))
    {
      if (!strstr (error->message, substring))
        g_error ("expected an error containing '%s', got '%s'", substring, error->message);
      return;
    }
  g_autofree PlTensor **ins = graph_inputs (g, inputs, const_mask);
  PlTensor **outs = pl_interp_run (g, ins, NULL, &error);
  if (outs)
    {
      pl_interp_free_outputs (outs, node->n_outputs);
      g_error ("expected a run-time error containing '%s', but the run succeeded", substring);
    }
  if (!strstr (error->message, substring))
    g_error ("expected an error containing '%s', got '%s'", substring, error->message);
}

void
pl_test_assert_close (const PlTensor *got, const PlTensor *want, double rtol, double atol)
{
  PlShape gs = pl_tensor_shape (got), ws = pl_tensor_shape (want);
  g_autofree char *a = pl_shape_to_string (&gs);
  g_autofree char *b = pl_shape_to_string (&ws);
  g_assert_cmpstr (a, ==, b);
  g_assert_cmpstr (pl_dtype_name (got->dtype), ==, pl_dtype_name (want->dtype));
  for (int64_t i = 0; i < got->numel; i++)
    {
      double x = pl_tensor_get_f64 (got, i), y = pl_tensor_get_f64 (want, i);
      if (isnan (x) && isnan (y))
        continue;
      if (x == y)
        continue;
      if (!(fabs (x - y) <= atol + rtol * fabs (y)))
        g_error ("element %" G_GINT64_FORMAT ": got %.9g, want %.9g", i, x, y);
    }
}

void
pl_test_assert_values (const PlTensor *got, const double *want)
{
  for (int64_t i = 0; i < got->numel; i++)
    {
      double x = pl_tensor_get_f64 (got, i), y = want[i];
      if (isnan (x) && isnan (y))
        continue;
      if (x == y)
        continue;
      if (!(fabs (x - y) <= 1e-5 * MAX (fabs (y), 1e-6)))
        g_error ("element %" G_GINT64_FORMAT ": got %.9g, want %.9g", i, x, y);
    }
}

char *
pl_test_source_path (const char *relative)
{
  const char *root = g_getenv ("PASSLAB_SOURCE_DIR");
  return g_build_filename (root ? root : ".", relative, NULL);
}

void
pl_test_remove_tree (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  for (const char *name; d && (name = g_dir_read_name (d));)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);
      if (g_file_test (path, G_FILE_TEST_IS_DIR) && !g_file_test (path, G_FILE_TEST_IS_SYMLINK))
        pl_test_remove_tree (path);
      else
        g_remove (path);
    }
  g_rmdir (dir);
}

PlGraph *
pl_test_parse (const char *text)
{
  g_autoptr (GError) error = NULL;
  PlGraph *g = pl_text_parse (text, -1, "<test>", &error);
  g_assert_no_error (error);
  return g;
}

PlGraph *
pl_test_passes (const PlGraph *g, const char *spec)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PlPipeline) p = pl_pipeline_parse (spec, &error);
  g_assert_no_error (error);
  PlRunOptions o;
  pl_run_options_init (&o);
  g_autoptr (PlHistory) h = pl_pipeline_run (g, p, &o, &error);
  g_assert_no_error (error);
  return pl_graph_copy (pl_history_step (h, pl_history_n_steps (h) - 1)->graph);
}

PlGraph *
pl_test_load_sample (const char *name)
{
  g_autofree char *rel = g_strdup_printf ("data/graphs/%s", name);
  g_autofree char *path = pl_test_source_path (rel);
  g_autoptr (GError) error = NULL;
  PlGraph *g = pl_text_load (path, &error);
  g_assert_no_error (error);
  return g;
}

PlHistory *
pl_test_run_checked (const PlGraph *g, const char *spec, const char *const *params, double tolerance,
                     guint32 seed)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PlPipeline) p = pl_pipeline_parse (spec, &error);
  g_assert_no_error (error);
  for (int i = 0; params && params[i]; i++)
    {
      g_assert_true (pl_pipeline_set_param (p, params[i], &error));
      g_assert_no_error (error);
    }
  PlRunOptions o;
  pl_run_options_init (&o);
  o.check = true;
  o.tolerance = tolerance;
  o.seed = seed;
  PlHistory *h = pl_pipeline_run (g, p, &o, &error);
  g_assert_no_error (error);
  g_assert_null (h->error);
  g_assert_cmpint (pl_history_n_steps (h), ==, (int) p->entries->len + 1);
  for (int i = 1; i < pl_history_n_steps (h); i++)
    {
      PlStep *s = pl_history_step (h, i);
      if (s->check_failed)
        g_error ("%s", s->check_message);
      g_assert_true (s->checked == s->changed);
      if (s->checked)
        g_assert_cmpfloat (s->max_rel_error, <=, tolerance);
      g_assert_true (pl_graph_verify (s->graph, &error));
      g_assert_no_error (error);
    }
  return h;
}

PlGraph *
pl_test_random_graph (guint32 seed, int n_nodes)
{
  PlRandomGraphOptions o;
  pl_random_graph_options_init (&o);
  o.seed = seed;
  o.n_nodes = n_nodes;
  return pl_random_graph (&o);
}

PlTensor **
pl_test_run_backend (const PlGraph *g, PlBackend backend, PlTensor *const *inputs, PlRunReport **report)
{
  g_autoptr (GError) error = NULL;
  PlCompileOptions o;
  pl_compile_options_init (&o, backend);
  PlExecutable *e = pl_executable_new (g, &o, &error);
  g_assert_no_error (error);
  /* the outputs are copies: they outlive the executable */
  PlTensor **got = pl_executable_run (e, inputs, 1, report, &error);
  g_assert_no_error (error);
  pl_executable_free (e);
  return got;
}

void
pl_test_index_out_of_range (PlBackend backend)
{
  g_autoptr (PlGraph) g = pl_test_parse ("graph ix opset 17 {\n"
                                         "  input d: f32[5, 4]\n  input i: i64[3]\n  input j: i32[5, 2]\n"
                                         "  y = Gather(d, i) {axis=0}\n  z = GatherElements(d, j) {axis=1}\n"
                                         "  output y, z\n}\n");
  g_autoptr (GError) error = NULL;
  PlCompileOptions o;
  pl_compile_options_init (&o, backend);
  PlExecutable *e = pl_executable_new (g, &o, &error);
  g_assert_no_error (error);
  g_autoptr (PlTensor) d = pl_test_random (PL_DTYPE_F32, 2, (int64_t[]) { 5, 4 }, 3, -1, 1);
  const double good_i[] = { 4, -5, 0 }, bad_i[] = { 4, 5, 0 }, good_j[] = { 0, 3, -4, -1, 1, 2, 3, 0, -2, 1 };
  const double bad_j[] = { 0, 3, -4, -1, 1, 2, 3, 0, -5, 1 };
  for (int round = 0; round < 4; round++)
    {
      /* in range, Gather's index out, in range, GatherElements' out */
      PlTensor *in[] = { d, pl_test_tensor (PL_DTYPE_I64, 1, (int64_t[]) { 3 }, round == 1 ? bad_i : good_i),
                         pl_test_tensor (PL_DTYPE_I32, 2, (int64_t[]) { 5, 2 }, round == 3 ? bad_j : good_j) };
      g_clear_error (&error);
      PlTensor **got = pl_executable_run (e, in, 0, NULL, &error);
      if (round % 2)
        {
          g_assert_error (error, PL_ERROR, PL_ERROR_EXEC);
          /* which op, which index, and the axis it indexes */
          g_assert_nonnull (strstr (error->message, round == 1 ? "(Gather): index 5 of Gather 'y' (axis 0 of size 5)"
                                                               : "(GatherElements): index -5 of GatherElements 'z' "
                                                                 "(axis 1 of size 4)"));
          g_assert_nonnull (strstr (error->message, "is out of range"));
          g_assert_null (got);
        }
      else
        {
          g_assert_no_error (error);
          PlTensor **want = pl_interp_run (g, in, NULL, &error);
          g_assert_no_error (error);
          pl_test_assert_close (got[0], want[0], 0, 0);
          pl_test_assert_close (got[1], want[1], 0, 0);
          pl_interp_free_outputs (got, 2);
          pl_interp_free_outputs (want, 2);
        }
      pl_tensor_unref (in[1]);
      pl_tensor_unref (in[2]);
    }
  pl_executable_free (e);
}

int
pl_test_backend_fallbacks (const PlGraph *g, const char *spec, PlBackend backend, PlTensor *const *inputs,
                           double rtol, double atol, int *n_kernels)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PlGraph) compiled = pl_test_passes (g, spec);
  PlTensor **want = pl_interp_run (g, inputs, NULL, &error);
  g_assert_no_error (error);
  g_autoptr (PlRunReport) r = NULL;
  PlTensor **got = pl_test_run_backend (compiled, backend, inputs, &r);
  const int n_out = (int) g->outputs->len;
  int fallbacks = 0;

  for (int k = 0; k < r->n_kernels; k++)
    fallbacks += r->kernels[k].fallback;
  for (int i = 0; i < n_out; i++)
    pl_test_assert_close (got[i], want[i], rtol, atol);
  pl_interp_free_outputs (got, n_out);
  pl_interp_free_outputs (want, n_out);
  if (n_kernels)
    *n_kernels = r->n_kernels;
  return fallbacks;
}
