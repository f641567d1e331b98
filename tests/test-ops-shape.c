/* test-ops-shape.c — shape inference and reference evaluation of the ops in
 * ops-shape.c, ops-slice.c, ops-index.c and ops-resize.c: data movement,
 * indexing, shape computation and Resize.
 *
 * Expected values were computed with numpy (Resize with the ONNX reference
 * functions in onnx/backend/test/case/node/resize.py) or by hand; comments
 * give the numpy expression where it is not obvious.
 */
#define G_LOG_DOMAIN "passlab-test"
#include "test-util.h"

#include <string.h>

/* --- helpers --------------------------------------------------------------- */

static void
assert_shape (const PlShape *s, const char *want)
{
  g_autofree char *got = pl_shape_to_string (s);
  g_assert_cmpstr (got, ==, want);
}

/* Asserts a tensor's shape ("[2, 3]") and values. */
static void
check (const PlTensor *t, const char *shape, const double *values)
{
  PlShape s = pl_tensor_shape (t);
  assert_shape (&s, shape);
  pl_test_assert_values (t, values);
}

static PlTensor *
iota (PlDType dtype, int rank, const int64_t *dims)
{
  PlTensor *t = pl_test_tensor (dtype, rank, dims, NULL);
  for (int64_t i = 0; i < t->numel; i++)
    pl_tensor_set_f64 (t, i, (double) i);
  return t;
}

/* Asserts t holds 0, 1, 2, ... (data that only changed shape). */
static void
check_iota (const PlTensor *t)
{
  for (int64_t i = 0; i < t->numel; i++)
    g_assert_cmpfloat (pl_tensor_get_f64 (t, i), ==, (double) i);
}

/* A 1-D i64 tensor. */
static PlTensor *
ints (int n, const double *v)
{
  return pl_test_tensor (PL_DTYPE_I64, 1, (int64_t[]) { n }, v);
}

#define INTS(...) ints (G_N_ELEMENTS (PL_VALS (__VA_ARGS__)), PL_VALS (__VA_ARGS__))

/* "N,3,?" -> [N, 3, ?]; "" is a scalar. */
static PlShape
parse_shape (const char *spec)
{
  g_auto (GStrv) parts = g_strsplit (spec, ",", -1);
  PlShape s = pl_shape_scalar ();
  for (int i = 0; parts[i] != NULL && *parts[i] != '\0'; i++)
    {
      const char *p = g_strstrip (parts[i]);
      if (g_ascii_isdigit (*p))
        s.dims[s.rank++] = pl_dim_static (g_ascii_strtoll (p, NULL, 10));
      else if (strcmp (p, "?") == 0)
        s.dims[s.rank++] = pl_dim_unknown ();
      else
        s.dims[s.rank++] = pl_dim_symbol (p);
    }
  return s;
}

/* A one-node graph for inference tests: input i is consts[i] as a constant
 * when given, else a graph input of shape shapes[i] ("i64:N,3" names the
 * dtype, default f32), else omitted. */
static PlGraph *
sym_graph (const char *op, int n_in, const char *const *shapes, PlTensor *const *consts,
           int n_out, PlNode **node)
{
  g_autoptr (GError) error = NULL;
  PlGraph *g = pl_graph_new ("sym");
  PlValue *vals[8] = { NULL };

  g->opset = 17;
  for (int i = 0; i < n_in; i++)
    {
      g_autofree char *name = g_strdup_printf ("in%d", i);
      if (consts != NULL && consts[i] != NULL)
        vals[i] = pl_graph_add_constant (g, name, consts[i], &error);
      else if (shapes != NULL && shapes[i] != NULL)
        {
          const char *spec = shapes[i], *colon = strchr (spec, ':');
          PlDType dtype = PL_DTYPE_F32;
          if (colon != NULL)
            {
              g_autofree char *dt = g_strndup (spec, colon - spec);
              dtype = pl_dtype_from_name (dt);
              spec = colon + 1;
            }
          PlShape s = parse_shape (spec);
          vals[i] = pl_graph_add_input (g, name, dtype, &s, &error);
        }
      g_assert_no_error (error);
    }
  *node = pl_graph_add_node (g, op, NULL, "node", n_in, vals, n_out, NULL, &error);
  g_assert_no_error (error);
  for (int i = 0; i < n_out; i++)
    pl_graph_add_output (g, (*node)->outputs[i]);
  return g;
}

/* Infers g and asserts output i's shape. */
static void
assert_inferred (PlGraph *g, int i, const char *want)
{
  g_autoptr (GError) error = NULL;
  PlNode *node = g->nodes->pdata[g->nodes->len - 1];
  g_assert_true (pl_graph_infer_shapes (g, &error));
  g_assert_no_error (error);
  assert_shape (&node->outputs[i]->shape, want);
}

/* Runs g and returns its outputs, checked against inference by pl_test_run. */
#define RUN(g, in, mask) pl_test_run ((g), (in), (mask))

/* --- Reshape ------------------------------------------------------------- */

static void
test_reshape (void)
{
  g_autoptr (PlTensor) x = iota (PL_DTYPE_F32, 3, PL_DIMS (2, 3, 4));
  g_autoptr (PlTensor) shape = INTS (4, 0, -1);
  PlTensor *in[] = { x, shape };

  /* constant target: 0 copies dim 1 (3), -1 becomes 24 / 12 */
  g_autoptr (PlGraph) g = pl_test_node_graph ("Reshape", 2, in, 0x2, 1, NULL);
  PlTensor **out = RUN (g, in, 0x2);
  assert_shape (&((PlNode *) g->nodes->pdata[0])->outputs[0]->shape, "[4, 3, 2]");
  check_iota (out[0]);
  pl_interp_free_outputs (out, 1);

  /* target given at run time: inference knows only the rank */
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Reshape", 2, in, 0, 1, NULL);
  assert_inferred (g2, 0, "[?, ?, ?]");
  out = RUN (g2, in, 0);
  PlShape s = pl_tensor_shape (out[0]);
  assert_shape (&s, "[4, 3, 2]");
  check_iota (out[0]);
  pl_interp_free_outputs (out, 1);
}

/* allowzero: a 0 in the target is a real zero-sized dim. */
static void
test_reshape_allowzero (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (0, 3), NULL);
  g_autoptr (PlTensor) shape = INTS (3, 0);
  PlTensor *in[] = { x, shape };
  PlNode *n;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Reshape", 2, in, 0x2, 1, &n);
  pl_node_set_attr_int (n, "allowzero", 1);
  PlTensor **out = RUN (g, in, 0x2);
  check (out[0], "[3, 0]", NULL);
  pl_interp_free_outputs (out, 1);

  /* without allowzero the 0 copies the input's dim 0 ... and the counts differ */
  pl_node_set_attr_int (n, "allowzero", 0);
  g_autoptr (PlTensor) shape2 = INTS (0, 3);
  PlTensor *in2[] = { x, shape2 };
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Reshape", 2, in2, 0x2, 1, NULL);
  out = RUN (g2, in2, 0x2);
  check (out[0], "[0, 3]", NULL);
  pl_interp_free_outputs (out, 1);
}

/* The target comes from a Constant node: inference sees through it. */
static void
test_reshape_through_constant_node (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PlGraph) g = pl_graph_new ("c");
  g_autoptr (PlTensor) target = INTS (-1, 6);
  PlShape s = pl_shape_from_dims (3, PL_DIMS (2, 3, 4));
  PlValue *x = pl_graph_add_input (g, "x", PL_DTYPE_F32, &s, &error);
  PlNode *c = pl_graph_add_node (g, "Constant", NULL, "c", 0, NULL, 1, NULL, &error);
  pl_node_set_attr_tensor (c, "value", target);
  PlValue *ins[] = { x, c->outputs[0] };
  PlNode *r = pl_graph_add_node (g, "Reshape", NULL, "r", 2, ins, 1, NULL, &error);
  g_assert_no_error (error);
  pl_graph_add_output (g, r->outputs[0]);
  g_assert_true (pl_graph_infer_shapes (g, &error));
  assert_shape (&c->outputs[0]->shape, "[2]");
  assert_shape (&r->outputs[0]->shape, "[4, 6]");
}

/* Symbolic dims: 0 copies N; -1 resolves when N cancels. */
static void
test_reshape_symbolic (void)
{
  const char *shapes[] = { "N,3,4", NULL };
  struct { double t[3]; int n; const char *want; } cases[] = {
    { { 0, -1 }, 2, "[N, 12]" },
    { { 0, 2, -1 }, 3, "[N, 2, 6]" },
    { { -1, 4 }, 2, "[?, 4]" },   /* N does not reappear: unknown */
    { { 0, 12 }, 2, "[N, 12]" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr (PlTensor) t = ints (cases[i].n, cases[i].t);
      PlTensor *consts[] = { NULL, t };
      PlNode *n;
      g_autoptr (PlGraph) g = sym_graph ("Reshape", 2, shapes, consts, 1, &n);
      assert_inferred (g, 0, cases[i].want);
    }
  /* a non-constant target of static length 2: rank 2 */
  const char *shapes2[] = { "N,3,4", "i64:2" };
  PlNode *n;
  g_autoptr (PlGraph) g = sym_graph ("Reshape", 2, shapes2, NULL, 1, &n);
  assert_inferred (g, 0, "[?, ?]");
}

static void
test_reshape_errors (void)
{
  g_autoptr (PlTensor) x = iota (PL_DTYPE_F32, 2, PL_DIMS (2, 3));
  struct { double t[3]; int n; const char *msg; } cases[] = {
    { { 4 }, 1, "cannot reshape [2, 3] (6 elements) into [4]" },
    { { -1, -1 }, 2, "more than one -1" },
    { { 4, -1 }, 2, "do not divide" },
    { { -2, 3 }, 2, "invalid target dim -2" },
    { { 0, 0, 0 }, 3, "the input has rank 2" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr (PlTensor) t = ints (cases[i].n, cases[i].t);
      PlTensor *in[] = { x, t };
      g_autoptr (PlGraph) g = pl_test_node_graph ("Reshape", 2, in, 0x2, 1, NULL);
      pl_test_expect_infer_error (g, cases[i].msg);
    }

  /* a bad target known only at run time fails there, as an execution error */
  g_autoptr (PlTensor) t = INTS (5);
  PlTensor *in[] = { x, t };
  g_autoptr (PlGraph) g = pl_test_node_graph ("Reshape", 2, in, 0, 1, NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_graph_infer_shapes (g, &error));
  PlTensor *ins[] = { x, t };
  PlTensor **out = pl_interp_run (g, ins, NULL, &error);
  g_assert_null (out);
  g_assert_error (error, PL_ERROR, PL_ERROR_EXEC);
  g_assert_nonnull (strstr (error->message, "cannot reshape"));
}

/* --- Transpose, Squeeze, Unsqueeze, Flatten ---------------------------------- */

static void
test_transpose (void)
{
  g_autoptr (PlTensor) x = iota (PL_DTYPE_I32, 3, PL_DIMS (2, 3, 4));
  PlTensor *in[] = { x };
  PlNode *n;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Transpose", 1, in, 0, 1, &n);
  pl_node_set_attr_ints (n, "perm", PL_DIMS (1, 2, 0), 3);
  PlTensor **out = RUN (g, in, 0);
  /* numpy: x.transpose(1, 2, 0) */
  check (out[0], "[3, 4, 2]", PL_VALS (0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17, 6, 18, 7, 19,
                                        8, 20, 9, 21, 10, 22, 11, 23));
  pl_interp_free_outputs (out, 1);

  /* default: reversed axes */
  pl_node_remove_attr (n, "perm");
  out = RUN (g, in, 0);
  check (out[0], "[4, 3, 2]", PL_VALS (0, 12, 4, 16, 8, 20, 1, 13, 5, 17, 9, 21, 2, 14, 6, 18,
                                        10, 22, 3, 15, 7, 19, 11, 23));
  pl_interp_free_outputs (out, 1);

  pl_node_set_attr_ints (n, "perm", PL_DIMS (0, 0, 1), 3);
  pl_test_expect_infer_error (g, "not a permutation");
  pl_node_set_attr_ints (n, "perm", PL_DIMS (1, 0), 2);
  pl_test_expect_infer_error (g, "perm has 2 entries for rank 3");
}

static void
test_squeeze_unsqueeze (void)
{
  g_autoptr (PlTensor) x = iota (PL_DTYPE_F32, 4, PL_DIMS (1, 3, 1, 2));
  g_autoptr (PlTensor) axes = INTS (-2);
  PlTensor *in[] = { x, axes };

  /* opset 13: axes as input */
  g_autoptr (PlGraph) g = pl_test_node_graph ("Squeeze", 2, in, 0x2, 1, NULL);
  PlTensor **out = RUN (g, in, 0x2);
  check (out[0], "[1, 3, 2]", PL_VALS (0, 1, 2, 3, 4, 5));
  pl_interp_free_outputs (out, 1);

  /* no axes: every 1 goes */
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Squeeze", 1, in, 0, 1, NULL);
  out = RUN (g2, in, 0);
  check (out[0], "[3, 2]", PL_VALS (0, 1, 2, 3, 4, 5));
  pl_interp_free_outputs (out, 1);

  /* opset 11: axes as attribute */
  PlNode *n;
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("Unsqueeze", 1, in, 0, 1, &n);
  g3->opset = 11;
  pl_node_set_attr_ints (n, "axes", PL_DIMS (5, 0), 2);
  out = RUN (g3, in, 0);
  check (out[0], "[1, 1, 3, 1, 2, 1]", PL_VALS (0, 1, 2, 3, 4, 5));
  pl_interp_free_outputs (out, 1);

  /* squeezing a dim that is not 1 */
  g_autoptr (PlTensor) bad = INTS (1);
  PlTensor *in4[] = { x, bad };
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("Squeeze", 2, in4, 0x2, 1, NULL);
  pl_test_expect_infer_error (g4, "cannot squeeze axis 1 of size 3");
  /* an axis out of range, and a repeated one */
  g_autoptr (PlTensor) far = INTS (4);
  PlTensor *in5[] = { x, far };
  g_autoptr (PlGraph) g5 = pl_test_node_graph ("Squeeze", 2, in5, 0x2, 1, NULL);
  pl_test_expect_infer_error (g5, "out of range");
  g_autoptr (PlTensor) twice = INTS (0, -6);
  PlTensor *in6[] = { x, twice };
  g_autoptr (PlGraph) g6 = pl_test_node_graph ("Unsqueeze", 2, in6, 0x2, 1, NULL);
  pl_test_expect_infer_error (g6, "repeated");
}

static void
test_squeeze_unsqueeze_symbolic (void)
{
  const char *shapes[] = { "N,3", NULL };
  g_autoptr (PlTensor) axes = INTS (0, -1);
  PlTensor *consts[] = { NULL, axes };
  PlNode *n;
  g_autoptr (PlGraph) g = sym_graph ("Unsqueeze", 2, shapes, consts, 1, &n);
  assert_inferred (g, 0, "[1, N, 3, 1]");

  /* axes unknown, but two of them */
  const char *shapes2[] = { "N,3", "i64:2" };
  g_autoptr (PlGraph) g2 = sym_graph ("Unsqueeze", 2, shapes2, NULL, 1, &n);
  assert_inferred (g2, 0, "[?, ?, ?, ?]");

  /* Squeeze without axes cannot tell whether N is 1 */
  const char *shapes3[] = { "N,1" };
  g_autoptr (PlGraph) g3 = sym_graph ("Squeeze", 1, shapes3, NULL, 1, &n);
  assert_inferred (g3, 0, "[*]");
  g_autoptr (PlTensor) one = INTS (1);
  PlTensor *consts4[] = { NULL, one };
  g_autoptr (PlGraph) g4 = sym_graph ("Squeeze", 2, shapes3, consts4, 1, &n);
  assert_inferred (g4, 0, "[N]");
}

static void
test_flatten (void)
{
  g_autoptr (PlTensor) x = iota (PL_DTYPE_F32, 3, PL_DIMS (2, 3, 4));
  PlTensor *in[] = { x };
  struct { int64_t axis; const char *want; } cases[] = {
    { 0, "[1, 24]" }, { 1, "[2, 12]" }, { 2, "[6, 4]" }, { 3, "[24, 1]" }, { -1, "[6, 4]" },
    { -3, "[1, 24]" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      PlNode *n;
      g_autoptr (PlGraph) g = pl_test_node_graph ("Flatten", 1, in, 0, 1, &n);
      pl_node_set_attr_int (n, "axis", cases[i].axis);
      PlTensor **out = RUN (g, in, 0);
      PlShape s = pl_tensor_shape (out[0]);
      assert_shape (&s, cases[i].want);
      check_iota (out[0]);
      pl_interp_free_outputs (out, 1);
    }
}

static void
test_flatten_values_and_errors (void)
{
  g_autoptr (PlTensor) x = iota (PL_DTYPE_F32, 3, PL_DIMS (2, 1, 2));
  PlTensor *in[] = { x };
  PlNode *n;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Flatten", 1, in, 0, 1, &n);
  PlTensor **out = RUN (g, in, 0);
  check (out[0], "[2, 2]", PL_VALS (0, 1, 2, 3));
  pl_interp_free_outputs (out, 1);
  pl_node_set_attr_int (n, "axis", 4);
  pl_test_expect_infer_error (g, "axis 4 out of range for rank 3");

  const char *shapes[] = { "N,3,4" };
  g_autoptr (PlGraph) g2 = sym_graph ("Flatten", 1, shapes, NULL, 1, &n);
  assert_inferred (g2, 0, "[N, 12]");
  pl_node_set_attr_int (n, "axis", 2);
  assert_inferred (g2, 0, "[?, 4]");
}

/* --- Concat, Split, Slice ---------------------------------------------------- */

static void
test_concat (void)
{
  g_autoptr (PlTensor) a = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 1), PL_VALS (1, 2));
  g_autoptr (PlTensor) b = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 2), PL_VALS (3, 4, 5, 6));
  g_autoptr (PlTensor) e = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 0), NULL);
  PlTensor *in[] = { a, e, b };
  PlNode *n;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Concat", 3, in, 0x1, 1, &n);
  pl_node_set_attr_int (n, "axis", -1);
  PlTensor **out = RUN (g, in, 0x1);
  check (out[0], "[2, 3]", PL_VALS (1, 3, 4, 2, 5, 6));
  pl_interp_free_outputs (out, 1);

  pl_node_set_attr_int (n, "axis", 0);
  pl_test_expect_infer_error (g, "does not match");
  pl_node_set_attr_int (n, "axis", 2);
  pl_test_expect_infer_error (g, "axis 2 out of range for rank 2");

  /* symbolic: N passes through, the concatenated axis adds up */
  const char *shapes[] = { "N,2", "N,3", "?,1" };
  g_autoptr (PlGraph) g2 = sym_graph ("Concat", 3, shapes, NULL, 1, &n);
  pl_node_set_attr_int (n, "axis", 1);
  assert_inferred (g2, 0, "[N, 6]");
  const char *shapes3[] = { "N,2", "M,3" };
  g_autoptr (PlGraph) g3 = sym_graph ("Concat", 2, shapes3, NULL, 1, &n);
  pl_node_set_attr_int (n, "axis", 1);
  assert_inferred (g3, 0, "[?, 5]");
  pl_node_set_attr_int (n, "axis", 0);
  pl_test_expect_infer_error (g3, "does not match");
  const char *shapes5[] = { "N,2", "M,2" };
  g_autoptr (PlGraph) g5 = sym_graph ("Concat", 2, shapes5, NULL, 1, &n);
  pl_node_set_attr_int (n, "axis", 0);
  assert_inferred (g5, 0, "[?, 2]");
  g_autoptr (PlTensor) c = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (4, 3), NULL);
  PlTensor *consts4[] = { NULL, c };
  g_autoptr (PlGraph) g4 = sym_graph ("Concat", 2, shapes3, consts4, 1, &n);
  pl_node_set_attr_int (n, "axis", 1);
  assert_inferred (g4, 0, "[4, 5]");  /* a static dim pins N */
}

static void
test_split (void)
{
  g_autoptr (PlTensor) x = iota (PL_DTYPE_I64, 2, PL_DIMS (2, 6));
  g_autoptr (PlTensor) split = INTS (1, 0, 5);
  PlTensor *in[] = { x, split };
  PlNode *n;

  /* equal parts */
  g_autoptr (PlGraph) g = pl_test_node_graph ("Split", 1, in, 0, 3, &n);
  pl_node_set_attr_int (n, "axis", 1);
  PlTensor **out = RUN (g, in, 0);
  check (out[0], "[2, 2]", PL_VALS (0, 1, 6, 7));
  check (out[1], "[2, 2]", PL_VALS (2, 3, 8, 9));
  check (out[2], "[2, 2]", PL_VALS (4, 5, 10, 11));
  pl_interp_free_outputs (out, 3);

  /* sizes as input (opset 13), a zero-sized part included */
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Split", 2, in, 0x2, 3, &n);
  pl_node_set_attr_int (n, "axis", -1);
  out = RUN (g2, in, 0x2);
  check (out[0], "[2, 1]", PL_VALS (0, 6));
  check (out[1], "[2, 0]", NULL);
  check (out[2], "[2, 5]", PL_VALS (1, 2, 3, 4, 5, 7, 8, 9, 10, 11));
  pl_interp_free_outputs (out, 3);

  /* sizes as attribute (opset 11) */
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("Split", 1, in, 0, 2, &n);
  g3->opset = 11;
  pl_node_set_attr_int (n, "axis", 1);
  pl_node_set_attr_ints (n, "split", PL_DIMS (4, 2), 2);
  out = RUN (g3, in, 0);
  check (out[0], "[2, 4]", PL_VALS (0, 1, 2, 3, 6, 7, 8, 9));
  check (out[1], "[2, 2]", PL_VALS (4, 5, 10, 11));
  pl_interp_free_outputs (out, 2);

  pl_node_set_attr_ints (n, "split", PL_DIMS (4, 1), 2);
  pl_test_expect_infer_error (g3, "split sizes add up to 5, not the axis size 6");
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("Split", 1, in, 0, 4, &n);
  pl_node_set_attr_int (n, "axis", 1);
  pl_test_expect_infer_error (g4, "does not split into 4 equal parts");
}

static void
test_slice (void)
{
  g_autoptr (PlTensor) x = iota (PL_DTYPE_F32, 2, PL_DIMS (4, 5));
  g_autoptr (PlTensor) starts = INTS (1, 4);
  g_autoptr (PlTensor) ends = INTS (1000, 0);
  g_autoptr (PlTensor) axes = INTS (0, 1);
  g_autoptr (PlTensor) steps = INTS (2, -2);
  PlTensor *in[] = { x, starts, ends, axes, steps };

  /* numpy: x[1::2, 4:0:-2] */
  g_autoptr (PlGraph) g = pl_test_node_graph ("Slice", 5, in, 0x1e, 1, NULL);
  PlTensor **out = RUN (g, in, 0x1e);
  check (out[0], "[2, 2]", PL_VALS (9, 7, 19, 17));
  pl_interp_free_outputs (out, 1);

  /* numpy: x[-3:-1, ::-1] with INT64_MIN as the end */
  g_autoptr (PlTensor) s2 = INTS (-3, -1);
  g_autoptr (PlTensor) e2 = pl_test_tensor (PL_DTYPE_I64, 1, PL_DIMS (2), NULL);
  ((int64_t *) e2->data)[0] = -1;
  ((int64_t *) e2->data)[1] = INT64_MIN;
  g_autoptr (PlTensor) st2 = INTS (1, -1);
  PlTensor *in2[] = { x, s2, e2, NULL, st2 };
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Slice", 5, in2, 0x16, 1, NULL);
  out = RUN (g2, in2, 0x16);
  check (out[0], "[2, 5]", PL_VALS (9, 8, 7, 6, 5, 14, 13, 12, 11, 10));
  pl_interp_free_outputs (out, 1);

  /* starts and ends at run time, axes constant: only axis 1 is unknown */
  g_autoptr (PlTensor) ax1 = INTS (-1);
  g_autoptr (PlTensor) s3 = INTS (1);
  g_autoptr (PlTensor) e3 = INTS (3);
  PlTensor *in3[] = { x, s3, e3, ax1 };
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("Slice", 4, in3, 0x8, 1, NULL);
  assert_inferred (g3, 0, "[4, ?]");
  out = RUN (g3, in3, 0x8);
  check (out[0], "[4, 2]", PL_VALS (1, 2, 6, 7, 11, 12, 16, 17));
  pl_interp_free_outputs (out, 1);

  /* opset 9: attributes */
  PlNode *n;
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("Slice", 1, in, 0, 1, &n);
  g4->opset = 9;
  pl_node_set_attr_ints (n, "starts", PL_DIMS (2), 1);
  pl_node_set_attr_ints (n, "ends", PL_DIMS (4), 1);
  pl_node_set_attr_ints (n, "axes", PL_DIMS (1), 1);
  out = RUN (g4, in, 0);
  check (out[0], "[4, 2]", PL_VALS (2, 3, 7, 8, 12, 13, 17, 18));
  pl_interp_free_outputs (out, 1);

  /* errors: a step of 0, an axis twice */
  g_autoptr (PlTensor) zero = INTS (0, 1);
  PlTensor *in5[] = { x, starts, ends, axes, zero };
  g_autoptr (PlGraph) g5 = pl_test_node_graph ("Slice", 5, in5, 0x1e, 1, NULL);
  pl_test_expect_infer_error (g5, "step is 0");
  g_autoptr (PlTensor) dup = INTS (1, -1);
  PlTensor *in6[] = { x, starts, ends, dup };
  g_autoptr (PlGraph) g6 = pl_test_node_graph ("Slice", 4, in6, 0xe, 1, NULL);
  pl_test_expect_infer_error (g6, "sliced twice");
}

static void
test_slice_symbolic (void)
{
  const char *shapes[] = { "N,C,8" };
  g_autoptr (PlTensor) starts = INTS (0, 2);
  g_autoptr (PlTensor) ends = pl_test_tensor (PL_DTYPE_I64, 1, PL_DIMS (2), NULL);
  ((int64_t *) ends->data)[0] = INT64_MAX;
  ((int64_t *) ends->data)[1] = -1;
  g_autoptr (PlTensor) axes = INTS (0, 2);
  PlTensor *consts[] = { NULL, starts, ends, axes };
  PlNode *n;
  g_autoptr (PlGraph) g = sym_graph ("Slice", 4, shapes, consts, 1, &n);
  /* N[0:] stays N; C is untouched; 8[2:-1] is 5 */
  assert_inferred (g, 0, "[N, C, 5]");
}

/* --- Pad, Tile, Expand ---------------------------------------------------- */

static void
test_pad (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 3), PL_VALS (1, 2, 3, 4, 5, 6));
  g_autoptr (PlTensor) pads = INTS (1, 2, 0, 1);
  g_autoptr (PlTensor) value = pl_test_tensor (PL_DTYPE_F32, 0, NULL, PL_VALS (9.5));
  PlTensor *in[] = { x, pads, value };
  PlNode *n;

  /* numpy: np.pad(x, ((1, 0), (2, 1)), constant_values=9.5) */
  g_autoptr (PlGraph) g = pl_test_node_graph ("Pad", 3, in, 0x6, 1, NULL);
  PlTensor **out = RUN (g, in, 0x6);
  check (out[0], "[3, 6]", PL_VALS (9.5, 9.5, 9.5, 9.5, 9.5, 9.5, 9.5, 9.5, 1, 2, 3, 9.5,
                                    9.5, 9.5, 4, 5, 6, 9.5));
  pl_interp_free_outputs (out, 1);

  /* numpy: np.pad(x, ((0, 1), (2, 2)), mode='reflect') */
  g_autoptr (PlTensor) p2 = INTS (0, 2, 1, 2);
  PlTensor *in2[] = { x, p2 };
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Pad", 2, in2, 0x2, 1, &n);
  pl_node_set_attr_string (n, "mode", "reflect");
  out = RUN (g2, in2, 0x2);
  check (out[0], "[3, 7]", PL_VALS (3, 2, 1, 2, 3, 2, 1, 6, 5, 4, 5, 6, 5, 4, 3, 2, 1, 2, 3, 2, 1));
  pl_interp_free_outputs (out, 1);

  /* numpy: np.pad(x, ((1, 1), (0, 2)), mode='edge') */
  g_autoptr (PlTensor) p3 = INTS (1, 0, 1, 2);
  PlTensor *in3[] = { x, p3 };
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("Pad", 2, in3, 0x2, 1, &n);
  pl_node_set_attr_string (n, "mode", "edge");
  out = RUN (g3, in3, 0x2);
  check (out[0], "[4, 5]", PL_VALS (1, 2, 3, 3, 3, 1, 2, 3, 3, 3, 4, 5, 6, 6, 6, 4, 5, 6, 6, 6));
  pl_interp_free_outputs (out, 1);

  /* a negative pad crops: np.pad(x, ((0, 0), (0, 1)))[:, 1:] */
  g_autoptr (PlTensor) p4 = INTS (0, -1, 0, 1);
  PlTensor *in4[] = { x, p4 };
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("Pad", 2, in4, 0x2, 1, NULL);
  out = RUN (g4, in4, 0x2);
  check (out[0], "[2, 3]", PL_VALS (2, 3, 0, 5, 6, 0));
  pl_interp_free_outputs (out, 1);

  /* the axes input picks axis 1 only */
  g_autoptr (PlTensor) p5 = INTS (1, 1);
  g_autoptr (PlTensor) ax = INTS (-1);
  PlTensor *in5[] = { x, p5, NULL, ax };
  g_autoptr (PlGraph) g5 = pl_test_node_graph ("Pad", 4, in5, 0xa, 1, NULL);
  out = RUN (g5, in5, 0xa);
  check (out[0], "[2, 5]", PL_VALS (0, 1, 2, 3, 0, 0, 4, 5, 6, 0));
  pl_interp_free_outputs (out, 1);

  /* opset 2..10: pads and value as attributes */
  g_autoptr (PlGraph) g6 = pl_test_node_graph ("Pad", 1, in, 0, 1, &n);
  g6->opset = 10;
  pl_node_set_attr_ints (n, "pads", PL_DIMS (0, 1, 0, 0), 4);
  pl_node_set_attr_float (n, "value", -1);
  out = RUN (g6, in, 0);
  check (out[0], "[2, 4]", PL_VALS (-1, 1, 2, 3, -1, 4, 5, 6));
  pl_interp_free_outputs (out, 1);

  /* cropping more than there is */
  g_autoptr (PlTensor) p7 = INTS (0, -2, 0, -2);
  PlTensor *in7[] = { x, p7 };
  g_autoptr (PlGraph) g7 = pl_test_node_graph ("Pad", 2, in7, 0x2, 1, NULL);
  pl_test_expect_infer_error (g7, "crop more than axis 1's size 3");
}

/* reflect pads longer than the axis repeat the mirror, as numpy does */
static void
test_pad_reflect_long (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_I32, 1, PL_DIMS (3), PL_VALS (1, 2, 3));
  g_autoptr (PlTensor) pads = INTS (5, 4);
  PlTensor *in[] = { x, pads };
  PlNode *n;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Pad", 2, in, 0x2, 1, &n);
  pl_node_set_attr_string (n, "mode", "reflect");
  PlTensor **out = RUN (g, in, 0x2);
  /* numpy: np.pad([1, 2, 3], (5, 4), mode='reflect') */
  check (out[0], "[12]", PL_VALS (2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3));
  pl_interp_free_outputs (out, 1);
}

static void
test_tile_expand (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 3), PL_VALS (1, 2, 3, 4, 5, 6));
  g_autoptr (PlTensor) reps = INTS (2, 2);
  PlTensor *in[] = { x, reps };
  g_autoptr (PlGraph) g = pl_test_node_graph ("Tile", 2, in, 0x2, 1, NULL);
  PlTensor **out = RUN (g, in, 0x2);
  /* numpy: np.tile(x, (2, 2)) */
  check (out[0], "[4, 6]", PL_VALS (1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6, 1, 2, 3, 1, 2, 3, 4, 5, 6,
                                    4, 5, 6));
  pl_interp_free_outputs (out, 1);
  g_autoptr (PlTensor) bad = INTS (2);
  PlTensor *in2[] = { x, bad };
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Tile", 2, in2, 0x2, 1, NULL);
  pl_test_expect_infer_error (g2, "repeats has 1 entries for rank 2");

  g_autoptr (PlTensor) col = pl_test_tensor (PL_DTYPE_I8, 2, PL_DIMS (3, 1), PL_VALS (1, 2, 3));
  g_autoptr (PlTensor) shape = INTS (2, 1, 4);
  PlTensor *in3[] = { col, shape };
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("Expand", 2, in3, 0x2, 1, NULL);
  out = RUN (g3, in3, 0x2);
  /* numpy: np.broadcast_to(col, (2, 3, 4)) — a target dim of 1 keeps the input's 3 */
  check (out[0], "[2, 3, 4]", PL_VALS (1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 1, 1, 1, 1, 2, 2, 2, 2,
                                       3, 3, 3, 3));
  pl_interp_free_outputs (out, 1);
  g_autoptr (PlTensor) bad2 = INTS (2, 4);
  PlTensor *in4[] = { col, bad2 };
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("Expand", 2, in4, 0x2, 1, NULL);
  pl_test_expect_infer_error (g4, "broadcast");
}

static void
test_tile_expand_symbolic (void)
{
  const char *shapes[] = { "N,1" };
  g_autoptr (PlTensor) target = INTS (1, 4);
  PlTensor *consts[] = { NULL, target };
  PlNode *n;
  g_autoptr (PlGraph) g = sym_graph ("Expand", 2, shapes, consts, 1, &n);
  assert_inferred (g, 0, "[N, 4]");
  g_autoptr (PlTensor) reps = INTS (1, 3);
  PlTensor *consts2[] = { NULL, reps };
  g_autoptr (PlGraph) g2 = sym_graph ("Tile", 2, shapes, consts2, 1, &n);
  assert_inferred (g2, 0, "[N, 3]");
  const char *shapes3[] = { "N,1", "i64:3" };
  g_autoptr (PlGraph) g3 = sym_graph ("Expand", 2, shapes3, NULL, 1, &n);
  assert_inferred (g3, 0, "[?, ?, ?]");
}

/* --- Gather family --------------------------------------------------------- */

static void
test_gather (void)
{
  g_autoptr (PlTensor) d = iota (PL_DTYPE_F32, 2, PL_DIMS (5, 3));
  g_autoptr (PlTensor) idx = pl_test_tensor (PL_DTYPE_I32, 2, PL_DIMS (2, 2), PL_VALS (2, -1, 0, 0));
  PlTensor *in[] = { d, idx };
  PlNode *n;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Gather", 2, in, 0, 1, &n);
  pl_node_set_attr_int (n, "axis", 1);
  PlTensor **out = RUN (g, in, 0);
  /* numpy: np.take(d, [[2, -1], [0, 0]], axis=1) */
  check (out[0], "[5, 2, 2]", PL_VALS (2, 2, 0, 0, 5, 5, 3, 3, 8, 8, 6, 6, 11, 11, 9, 9, 14, 14,
                                       12, 12));
  pl_interp_free_outputs (out, 1);

  g_autoptr (PlTensor) idx2 = INTS (4, -5, 1);
  PlTensor *in2[] = { d, idx2 };
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Gather", 2, in2, 0, 1, NULL);
  out = RUN (g2, in2, 0);
  check (out[0], "[3, 3]", PL_VALS (12, 13, 14, 0, 1, 2, 3, 4, 5));
  pl_interp_free_outputs (out, 1);

  /* a scalar index drops the axis */
  g_autoptr (PlTensor) one = pl_test_tensor (PL_DTYPE_I64, 0, NULL, PL_VALS (1));
  PlTensor *in3[] = { d, one };
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("Gather", 2, in3, 0x2, 1, NULL);
  out = RUN (g3, in3, 0x2);
  check (out[0], "[3]", PL_VALS (3, 4, 5));
  pl_interp_free_outputs (out, 1);
}

static void
test_gather_errors (void)
{
  g_autoptr (PlTensor) d = iota (PL_DTYPE_F32, 2, PL_DIMS (5, 3));
  g_autoptr (PlTensor) idx = INTS (1, 5);
  PlTensor *in[] = { d, idx };

  /* at run time: an execution error, nothing read */
  g_autoptr (PlGraph) g = pl_test_node_graph ("Gather", 2, in, 0, 1, NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_graph_infer_shapes (g, &error));
  PlTensor **out = pl_interp_run (g, in, NULL, &error);
  g_assert_null (out);
  g_assert_error (error, PL_ERROR, PL_ERROR_EXEC);
  g_assert_nonnull (strstr (error->message, "index 5 out of range for an axis of size 5"));

  /* constant indices are checked by inference */
  g_autoptr (PlTensor) neg = INTS (-6);
  PlTensor *in2[] = { d, neg };
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Gather", 2, in2, 0x2, 1, NULL);
  g_clear_error (&error);
  g_assert_false (pl_graph_infer_shapes (g2, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_SHAPE);
  g_assert_nonnull (strstr (error->message, "index -6 out of range"));

  PlNode *n;
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("Gather", 2, in, 0, 1, &n);
  pl_node_set_attr_int (n, "axis", -3);
  pl_test_expect_infer_error (g3, "axis -3 out of range for rank 2");
  g_autoptr (PlTensor) fidx = pl_test_tensor (PL_DTYPE_F32, 1, PL_DIMS (1), PL_VALS (0));
  PlTensor *in4[] = { d, fidx };
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("Gather", 2, in4, 0, 1, NULL);
  pl_test_expect_infer_error (g4, "input 1");
}

static void
test_gather_symbolic (void)
{
  const char *shapes[] = { "V,D", "i64:B,T" };
  PlNode *n;
  g_autoptr (PlGraph) g = sym_graph ("Gather", 2, shapes, NULL, 1, &n);
  assert_inferred (g, 0, "[B, T, D]");
  pl_node_set_attr_int (n, "axis", 1);
  assert_inferred (g, 0, "[V, B, T]");
}

static void
test_gather_elements_nd (void)
{
  g_autoptr (PlTensor) d = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 2), PL_VALS (1, 2, 3, 4));
  g_autoptr (PlTensor) idx = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (2, 2), PL_VALS (0, 0, -1, 0));
  PlTensor *in[] = { d, idx };
  PlNode *n;
  g_autoptr (PlGraph) g = pl_test_node_graph ("GatherElements", 2, in, 0, 1, &n);
  pl_node_set_attr_int (n, "axis", 1);
  PlTensor **out = RUN (g, in, 0);
  /* numpy: np.take_along_axis(d, [[0, 0], [1, 0]], axis=1) */
  check (out[0], "[2, 2]", PL_VALS (1, 1, 4, 3));
  pl_interp_free_outputs (out, 1);
  g_autoptr (PlTensor) bad = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (1, 1), PL_VALS (2));
  PlTensor *in2[] = { d, bad };
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("GatherElements", 2, in2, 0, 1, NULL);
  pl_test_expect_run_error (g2, in2, 0, "index 2 out of range");

  /* GatherND with batch_dims 1: data[0][1], data[1][0] */
  g_autoptr (PlTensor) d3 = iota (PL_DTYPE_I32, 3, PL_DIMS (2, 2, 2));
  g_autoptr (PlTensor) i3 = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (2, 1), PL_VALS (1, 0));
  PlTensor *in3[] = { d3, i3 };
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("GatherND", 2, in3, 0, 1, &n);
  pl_node_set_attr_int (n, "batch_dims", 1);
  out = RUN (g3, in3, 0);
  check (out[0], "[2, 2]", PL_VALS (2, 3, 4, 5));
  pl_interp_free_outputs (out, 1);

  /* batch_dims 0, full tuples: data[1, 0, 1], data[0, 1, 1] */
  g_autoptr (PlTensor) i4 = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (2, 3), PL_VALS (1, 0, 1, 0, -1, 1));
  PlTensor *in4[] = { d3, i4 };
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("GatherND", 2, in4, 0, 1, NULL);
  out = RUN (g4, in4, 0);
  check (out[0], "[2]", PL_VALS (5, 3));
  pl_interp_free_outputs (out, 1);

  g_autoptr (PlTensor) i5 = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (1, 4), NULL);
  PlTensor *in5[] = { d3, i5 };
  g_autoptr (PlGraph) g5 = pl_test_node_graph ("GatherND", 2, in5, 0, 1, NULL);
  pl_test_expect_infer_error (g5, "must be in [1, 3]");
}

static void
test_scatter (void)
{
  g_autoptr (PlTensor) d = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (1, 5), PL_VALS (1, 2, 3, 4, 5));
  g_autoptr (PlTensor) idx = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (1, 3), PL_VALS (1, 3, -4));
  g_autoptr (PlTensor) upd = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (1, 3), PL_VALS (1.5, 2.5, 10));
  PlTensor *in[] = { d, idx, upd };
  PlNode *n;
  g_autoptr (PlGraph) g = pl_test_node_graph ("ScatterElements", 3, in, 0, 1, &n);
  pl_node_set_attr_int (n, "axis", 1);
  pl_node_set_attr_string (n, "reduction", "add");
  PlTensor **out = RUN (g, in, 0);
  /* duplicates accumulate: d[0, 1] += 1.5 + 10, d[0, 3] += 2.5 */
  check (out[0], "[1, 5]", PL_VALS (1, 13.5, 3, 6.5, 5));
  pl_interp_free_outputs (out, 1);
  pl_node_set_attr_string (n, "reduction", "none");
  out = RUN (g, in, 0);
  check (out[0], "[1, 5]", PL_VALS (1, 10, 3, 2.5, 5));
  pl_interp_free_outputs (out, 1);
  pl_node_set_attr_string (n, "reduction", "max");
  out = RUN (g, in, 0);
  check (out[0], "[1, 5]", PL_VALS (1, 10, 3, 4, 5));
  pl_interp_free_outputs (out, 1);
  pl_node_set_attr_string (n, "reduction", "sub");
  pl_test_expect_infer_error (g, "reduction 'sub'");

  /* ScatterND, mul: numpy o[tuple(ind[i])] *= upd[i] */
  g_autoptr (PlTensor) d2 = pl_test_tensor (PL_DTYPE_F32, 3, PL_DIMS (2, 2, 2), PL_VALS (1, 2, 3, 4, 5, 6, 7, 8));
  g_autoptr (PlTensor) i2 = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (3, 2), PL_VALS (0, 1, 1, 0, 0, -1));
  g_autoptr (PlTensor) u2 = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (3, 2), PL_VALS (2, 3, 4, 5, 10, 10));
  PlTensor *in2[] = { d2, i2, u2 };
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("ScatterND", 3, in2, 0, 1, &n);
  pl_node_set_attr_string (n, "reduction", "mul");
  out = RUN (g2, in2, 0);
  check (out[0], "[2, 2, 2]", PL_VALS (1, 2, 60, 120, 20, 30, 7, 8));
  pl_interp_free_outputs (out, 1);

  g_autoptr (PlTensor) u3 = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (3, 3), NULL);
  PlTensor *in3[] = { d2, i2, u3 };
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("ScatterND", 3, in3, 0, 1, NULL);
  pl_test_expect_infer_error (g3, "updates [3, 3] should have shape [3, 2]");
  g_autoptr (PlTensor) i4 = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (3, 2), PL_VALS (0, 1, 2, 0, 0, 0));
  PlTensor *in4[] = { d2, i4, u2 };
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("ScatterND", 3, in4, 0, 1, NULL);
  pl_test_expect_run_error (g4, in4, 0, "index 2 out of range for an axis of size 2");
}

/* --- DepthToSpace, SpaceToDepth ---------------------------------------------- */

static void
test_depth_space (void)
{
  g_autoptr (PlTensor) x = iota (PL_DTYPE_F32, 4, PL_DIMS (1, 8, 2, 3));
  PlTensor *in[] = { x };
  PlNode *n;
  g_autoptr (PlGraph) g = pl_test_node_graph ("DepthToSpace", 1, in, 0, 1, &n);
  pl_node_set_attr_int (n, "blocksize", 2);
  PlTensor **out = RUN (g, in, 0);
  /* numpy: x.reshape(1, 2, 2, 2, 2, 3).transpose(0, 3, 4, 1, 5, 2).reshape(1, 2, 4, 6) */
  check (out[0], "[1, 2, 4, 6]",
         PL_VALS (0, 12, 1, 13, 2, 14, 24, 36, 25, 37, 26, 38, 3, 15, 4, 16, 5, 17, 27, 39, 28, 40,
                  29, 41, 6, 18, 7, 19, 8, 20, 30, 42, 31, 43, 32, 44, 9, 21, 10, 22, 11, 23, 33,
                  45, 34, 46, 35, 47));
  pl_interp_free_outputs (out, 1);
  pl_node_set_attr_string (n, "mode", "CRD");
  out = RUN (g, in, 0);
  /* numpy: x.reshape(1, 2, 2, 2, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(1, 2, 4, 6) */
  check (out[0], "[1, 2, 4, 6]",
         PL_VALS (0, 6, 1, 7, 2, 8, 12, 18, 13, 19, 14, 20, 3, 9, 4, 10, 5, 11, 15, 21, 16, 22, 17,
                  23, 24, 30, 25, 31, 26, 32, 36, 42, 37, 43, 38, 44, 27, 33, 28, 34, 29, 35, 39,
                  45, 40, 46, 41, 47));
  pl_interp_free_outputs (out, 1);
  pl_node_set_attr_int (n, "blocksize", 3);
  pl_test_expect_infer_error (g, "dim 1 (8) is not a multiple of 9");

  g_autoptr (PlTensor) y = iota (PL_DTYPE_F32, 4, PL_DIMS (1, 2, 4, 6));
  PlTensor *in2[] = { y };
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("SpaceToDepth", 1, in2, 0, 1, &n);
  pl_node_set_attr_int (n, "blocksize", 2);
  out = RUN (g2, in2, 0);
  /* numpy: y.reshape(1, 2, 2, 2, 3, 2).transpose(0, 3, 5, 1, 2, 4).reshape(1, 8, 2, 3) */
  check (out[0], "[1, 8, 2, 3]",
         PL_VALS (0, 2, 4, 12, 14, 16, 24, 26, 28, 36, 38, 40, 1, 3, 5, 13, 15, 17, 25, 27, 29, 37,
                  39, 41, 6, 8, 10, 18, 20, 22, 30, 32, 34, 42, 44, 46, 7, 9, 11, 19, 21, 23, 31,
                  33, 35, 43, 45, 47));
  pl_interp_free_outputs (out, 1);
}

/* --- Resize ------------------------------------------------------------------ */

/* X = 1..16 as [1, 1, 4, 4] */
static PlTensor *
resize_input (void)
{
  return pl_test_tensor (PL_DTYPE_F32, 4, PL_DIMS (1, 1, 4, 4),
                         PL_VALS (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16));
}

static PlTensor *
floats (int n, const double *v)
{
  return pl_test_tensor (PL_DTYPE_F32, 1, (int64_t[]) { n }, v);
}

/* Resize X with scales (sizes NULL) or sizes; returns the output. */
static PlTensor *
resize (const char *mode, const char *coord, PlTensor *scales, PlTensor *sizes, PlTensor *roi,
        void (*attrs) (PlNode *))
{
  g_autoptr (PlTensor) x = resize_input ();
  PlTensor *in[] = { x, roi, scales, sizes };
  PlNode *n;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Resize", sizes ? 4 : 3, in, 0xe, 1, &n);
  pl_node_set_attr_string (n, "mode", mode);
  if (coord != NULL)
    pl_node_set_attr_string (n, "coordinate_transformation_mode", coord);
  if (attrs != NULL)
    attrs (n);
  PlTensor **out = RUN (g, in, 0xe);
  PlTensor *y = pl_tensor_ref (out[0]);
  pl_interp_free_outputs (out, 1);
  return y;
}

static void
cubic_half_exclude (PlNode *n)
{
  pl_node_set_attr_float (n, "cubic_coeff_a", -0.5f);
  pl_node_set_attr_int (n, "exclude_outside", 1);
}

static void
nearest_ceil (PlNode *n)
{
  pl_node_set_attr_string (n, "nearest_mode", "ceil");
}

static void
extrapolate (PlNode *n)
{
  pl_node_set_attr_float (n, "extrapolation_value", -7);
}

/* Expected values from the ONNX reference: interpolate_nd (resize.py). */
static void
test_resize (void)
{
  g_autoptr (PlTensor) s1 = floats (4, PL_VALS (1, 1, 1.5, 0.5));
  g_autoptr (PlTensor) y1 = resize ("linear", NULL, s1, NULL, NULL, NULL);
  check (y1, "[1, 1, 6, 2]", PL_VALS (1.5, 3.5, 3.5, 5.5, 6.166666666666667, 8.166666666666666,
                                      8.833333333333334, 10.833333333333334, 11.5, 13.5, 13.5,
                                      15.5));

  g_autoptr (PlTensor) s2 = floats (4, PL_VALS (1, 1, 0.8, 1.6));
  g_autoptr (PlTensor) y2 = resize ("cubic", NULL, s2, NULL, NULL, cubic_half_exclude);
  check (y2, "[1, 1, 3, 6]",
         PL_VALS (1.2225456519425917, 1.6389470712064014, 2.357001349551803, 2.982001340238577,
                  3.6618096949818866, 4.260403683117339, 6.42804416734902, 6.844445586612829,
                  7.56249986495823, 8.187499855645004, 8.867308210388316, 9.465902198523768,
                  11.803385316159334, 12.21978673542314, 12.937841013768544, 13.562841004455318,
                  14.24264935919863, 14.841243347334082));

  g_autoptr (PlTensor) z3 = INTS (1, 1, 3, 5);
  g_autoptr (PlTensor) y3 = resize ("cubic", "align_corners", NULL, z3, NULL, NULL);
  check (y3, "[1, 1, 3, 5]", PL_VALS (1, 1.66796875, 2.5, 3.33203125, 4, 7, 7.66796875, 8.5,
                                      9.33203125, 10, 13, 13.66796875, 14.5, 15.33203125, 16));

  g_autoptr (PlTensor) z4 = INTS (1, 1, 3, 6);
  g_autoptr (PlTensor) y4 = resize ("nearest", "pytorch_half_pixel", NULL, z4, NULL, nearest_ceil);
  check (y4, "[1, 1, 3, 6]", PL_VALS (5, 6, 7, 7, 8, 8, 9, 10, 11, 11, 12, 12, 13, 14, 15, 15,
                                      16, 16));

  g_autoptr (PlTensor) z5 = INTS (1, 1, 3, 3);
  g_autoptr (PlTensor) roi = floats (8, PL_VALS (0, 0, 0.4, 0.6, 1, 1, 1.2, 1.7));
  g_autoptr (PlTensor) y5 = resize ("linear", "tf_crop_and_resize", NULL, z5, roi, extrapolate);
  check (y5, "[1, 1, 3, 3]", PL_VALS (7.6000001430511475, -7, -7, 12.40000057220459, -7, -7, -7,
                                      -7, -7));
}

/* Opset 10: (X, scales), asymmetric coordinates, nearest rounds down. */
static void
test_resize_opset10 (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 2), PL_VALS (1, 2, 3, 4));
  g_autoptr (PlTensor) scales = floats (2, PL_VALS (2, 3));
  PlTensor *in[] = { x, scales };
  g_autoptr (PlGraph) g = pl_test_node_graph ("Resize", 2, in, 0x2, 1, NULL);
  g->opset = 10;
  PlTensor **out = RUN (g, in, 0x2);
  check (out[0], "[4, 6]", PL_VALS (1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3,
                                    4, 4, 4));
  pl_interp_free_outputs (out, 1);
}

static void
test_resize_inference (void)
{
  const char *shapes[] = { "N,C,8,8", NULL, NULL, NULL };
  g_autoptr (PlTensor) scales = floats (4, PL_VALS (1, 1, 0.5, 2));
  PlTensor *consts[] = { NULL, NULL, scales, NULL };
  PlNode *n;
  g_autoptr (PlGraph) g = sym_graph ("Resize", 3, shapes, consts, 1, &n);
  assert_inferred (g, 0, "[N, C, 4, 16]");

  /* sizes at run time, scales an empty placeholder (the opset 11 form) */
  g_autoptr (PlTensor) empty = floats (0, NULL);
  const char *shapes2[] = { "N,C,8,8", NULL, NULL, "i64:4" };
  PlTensor *consts2[] = { NULL, empty, empty, NULL };
  g_autoptr (PlGraph) g2 = sym_graph ("Resize", 4, shapes2, consts2, 1, &n);
  assert_inferred (g2, 0, "[?, ?, ?, ?]");

  g_autoptr (PlTensor) sizes = INTS (1, 2, 3, 4);
  PlTensor *consts3[] = { NULL, NULL, scales, sizes };
  g_autoptr (PlGraph) g3 = sym_graph ("Resize", 4, shapes, consts3, 1, &n);
  pl_test_expect_infer_error (g3, "exactly one of scales and sizes");
  PlTensor *consts4[] = { NULL, NULL, NULL, sizes };
  g_autoptr (PlGraph) g4 = sym_graph ("Resize", 4, shapes, consts4, 1, &n);
  pl_node_set_attr_string (n, "mode", "bicubic");
  pl_test_expect_infer_error (g4, "mode 'bicubic'");
}

/* --- Compress, NonZero, OneHot, ReverseSequence ---------------------------- */

static void
test_compress_nonzero (void)
{
  g_autoptr (PlTensor) x = iota (PL_DTYPE_F32, 2, PL_DIMS (3, 2));
  g_autoptr (PlTensor) cond = pl_test_tensor (PL_DTYPE_BOOL, 1, PL_DIMS (3), PL_VALS (0, 1, 1));
  PlTensor *in[] = { x, cond };
  PlNode *n;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Compress", 2, in, 0, 1, &n);
  pl_node_set_attr_int (n, "axis", 0);
  assert_inferred (g, 0, "[?, 2]");
  PlTensor **out = RUN (g, in, 0);
  check (out[0], "[2, 2]", PL_VALS (2, 3, 4, 5));
  pl_interp_free_outputs (out, 1);

  /* no axis: the flattened input; a shorter condition drops the rest */
  g_autoptr (PlTensor) c2 = pl_test_tensor (PL_DTYPE_BOOL, 1, PL_DIMS (4), PL_VALS (1, 0, 0, 1));
  PlTensor *in2[] = { x, c2 };
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Compress", 2, in2, 0x2, 1, NULL);
  assert_inferred (g2, 0, "[2]");
  out = RUN (g2, in2, 0x2);
  check (out[0], "[2]", PL_VALS (0, 3));
  pl_interp_free_outputs (out, 1);

  g_autoptr (PlTensor) c3 = pl_test_tensor (PL_DTYPE_BOOL, 1, PL_DIMS (4), PL_VALS (0, 0, 0, 1));
  PlTensor *in3[] = { x, c3 };
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("Compress", 2, in3, 0, 1, &n);
  pl_node_set_attr_int (n, "axis", 0);
  pl_test_expect_run_error (g3, in3, 0, "condition entry 3 is true past the axis size 3");

  /* numpy: np.array(np.nonzero([[1, 0], [0, 3], [2, 2]])) */
  g_autoptr (PlTensor) nz = pl_test_tensor (PL_DTYPE_I32, 2, PL_DIMS (3, 2), PL_VALS (1, 0, 0, 3, 2, 2));
  PlTensor *in4[] = { nz };
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("NonZero", 1, in4, 0, 1, NULL);
  assert_inferred (g4, 0, "[2, ?]");
  out = RUN (g4, in4, 0);
  check (out[0], "[2, 4]", PL_VALS (0, 1, 2, 2, 0, 1, 0, 1));
  g_assert_cmpint (out[0]->dtype, ==, PL_DTYPE_I64);
  pl_interp_free_outputs (out, 1);
}

static void
test_onehot (void)
{
  g_autoptr (PlTensor) idx = pl_test_tensor (PL_DTYPE_I64, 1, PL_DIMS (3), PL_VALS (1, -1, 5));
  g_autoptr (PlTensor) depth = pl_test_tensor (PL_DTYPE_F32, 0, NULL, PL_VALS (3));
  g_autoptr (PlTensor) values = pl_test_tensor (PL_DTYPE_F64, 1, PL_DIMS (2), PL_VALS (-2, 7));
  PlTensor *in[] = { idx, depth, values };
  PlNode *n;
  g_autoptr (PlGraph) g = pl_test_node_graph ("OneHot", 3, in, 0x2, 1, &n);
  pl_node_set_attr_int (n, "axis", 0);
  PlTensor **out = RUN (g, in, 0x2);
  /* -1 wraps to 2; 5 is outside: all off */
  check (out[0], "[3, 3]", PL_VALS (-2, -2, -2, 7, -2, -2, -2, 7, -2));
  pl_interp_free_outputs (out, 1);
  pl_node_remove_attr (n, "axis");
  out = RUN (g, in, 0x2);
  check (out[0], "[3, 3]", PL_VALS (-2, 7, -2, -2, -2, 7, -2, -2, -2));
  pl_interp_free_outputs (out, 1);
  pl_node_set_attr_int (n, "axis", 2);
  pl_test_expect_infer_error (g, "axis 2 out of range for rank 2");

  g_autoptr (PlGraph) g2 = pl_test_node_graph ("OneHot", 3, in, 0, 1, NULL);
  assert_inferred (g2, 0, "[3, ?]");
}

static void
test_reverse_sequence (void)
{
  g_autoptr (PlTensor) x = iota (PL_DTYPE_F32, 2, PL_DIMS (4, 3));
  g_autoptr (PlTensor) lens = INTS (4, 1, 2);
  PlTensor *in[] = { x, lens };
  g_autoptr (PlGraph) g = pl_test_node_graph ("ReverseSequence", 2, in, 0, 1, NULL);
  PlTensor **out = RUN (g, in, 0);
  /* time axis 0, batch axis 1: column b's first lens[b] entries reversed */
  check (out[0], "[4, 3]", PL_VALS (9, 1, 5, 6, 4, 2, 3, 7, 8, 0, 10, 11));
  pl_interp_free_outputs (out, 1);

  g_autoptr (PlTensor) bad = INTS (4, 5, 0);
  PlTensor *in2[] = { x, bad };
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("ReverseSequence", 2, in2, 0, 1, NULL);
  pl_test_expect_run_error (g2, in2, 0, "sequence length 5 outside [0, 4]");
}

/* --- Shape, Size, Constant, ConstantOfShape, Range, EyeLike ------------------- */

static void
test_shape_size (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 3, PL_DIMS (2, 3, 4), NULL);
  PlTensor *in[] = { x };
  PlNode *n;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Shape", 1, in, 0, 1, &n);
  PlTensor **out = RUN (g, in, 0);
  check (out[0], "[3]", PL_VALS (2, 3, 4));
  pl_interp_free_outputs (out, 1);
  pl_node_set_attr_int (n, "start", -2);
  pl_node_set_attr_int (n, "end", 100);
  out = RUN (g, in, 0);
  check (out[0], "[2]", PL_VALS (3, 4));
  pl_interp_free_outputs (out, 1);
  pl_node_set_attr_int (n, "start", 2);
  pl_node_set_attr_int (n, "end", 1);
  out = RUN (g, in, 0);
  check (out[0], "[0]", NULL);
  pl_interp_free_outputs (out, 1);

  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Size", 1, in, 0, 1, NULL);
  out = RUN (g2, in, 0);
  check (out[0], "[]", PL_VALS (24));
  g_assert_cmpint (out[0]->dtype, ==, PL_DTYPE_I64);
  pl_interp_free_outputs (out, 1);

  const char *shapes[] = { "N,3" };
  g_autoptr (PlGraph) g3 = sym_graph ("Shape", 1, shapes, NULL, 1, &n);
  assert_inferred (g3, 0, "[2]");
}

static void
test_constant (void)
{
  g_autoptr (PlTensor) v = pl_test_tensor (PL_DTYPE_I32, 2, PL_DIMS (2, 2), PL_VALS (1, 2, 3, 4));
  PlNode *n;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Constant", 0, NULL, 0, 1, &n);
  pl_node_set_attr_tensor (n, "value", v);
  PlTensor **out = RUN (g, NULL, 0);
  check (out[0], "[2, 2]", PL_VALS (1, 2, 3, 4));
  g_assert_cmpint (out[0]->dtype, ==, PL_DTYPE_I32);
  pl_interp_free_outputs (out, 1);

  pl_node_remove_attr (n, "value");
  pl_node_set_attr_ints (n, "value_ints", PL_DIMS (5, -6, 7), 3);
  out = RUN (g, NULL, 0);
  check (out[0], "[3]", PL_VALS (5, -6, 7));
  g_assert_cmpint (out[0]->dtype, ==, PL_DTYPE_I64);
  pl_interp_free_outputs (out, 1);

  pl_node_remove_attr (n, "value_ints");
  pl_node_set_attr_float (n, "value_float", 2.5f);
  out = RUN (g, NULL, 0);
  check (out[0], "[]", PL_VALS (2.5));
  g_assert_cmpint (out[0]->dtype, ==, PL_DTYPE_F32);
  pl_interp_free_outputs (out, 1);

  pl_node_remove_attr (n, "value_float");
  pl_node_set_attr_floats (n, "value_floats", (const float[]) { 0.5f, -1 }, 2);
  out = RUN (g, NULL, 0);
  check (out[0], "[2]", PL_VALS (0.5, -1));
  pl_interp_free_outputs (out, 1);

  pl_node_remove_attr (n, "value_floats");
  pl_node_set_attr_int (n, "value_int", -3);
  out = RUN (g, NULL, 0);
  check (out[0], "[]", PL_VALS (-3));
  pl_interp_free_outputs (out, 1);

  pl_node_remove_attr (n, "value_int");
  pl_node_set_attr_string (n, "value_string", "hello");
  g_autoptr (GError) error = NULL;
  g_assert_false (pl_graph_infer_shapes (g, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED);
}

static void
test_constant_of_shape (void)
{
  g_autoptr (PlTensor) shape = INTS (2, 3);
  g_autoptr (PlTensor) value = pl_test_tensor (PL_DTYPE_I32, 1, PL_DIMS (1), PL_VALS (7));
  PlTensor *in[] = { shape };
  PlNode *n;
  g_autoptr (PlGraph) g = pl_test_node_graph ("ConstantOfShape", 1, in, 0x1, 1, &n);
  PlTensor **out = RUN (g, in, 0x1);
  check (out[0], "[2, 3]", PL_VALS (0, 0, 0, 0, 0, 0));
  g_assert_cmpint (out[0]->dtype, ==, PL_DTYPE_F32);
  pl_interp_free_outputs (out, 1);
  pl_node_set_attr_tensor (n, "value", value);
  out = RUN (g, in, 0x1);
  check (out[0], "[2, 3]", PL_VALS (7, 7, 7, 7, 7, 7));
  g_assert_cmpint (out[0]->dtype, ==, PL_DTYPE_I32);
  pl_interp_free_outputs (out, 1);

  g_autoptr (PlGraph) g2 = pl_test_node_graph ("ConstantOfShape", 1, in, 0, 1, NULL);
  assert_inferred (g2, 0, "[?, ?]");
  g_autoptr (PlTensor) neg = INTS (2, -1);
  PlTensor *in3[] = { neg };
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("ConstantOfShape", 1, in3, 0x1, 1, NULL);
  pl_test_expect_infer_error (g3, "negative dim -1");
}

static void
test_range (void)
{
  g_autoptr (PlTensor) s = pl_test_tensor (PL_DTYPE_F64, 0, NULL, PL_VALS (1));
  g_autoptr (PlTensor) l = pl_test_tensor (PL_DTYPE_F64, 0, NULL, PL_VALS (2));
  g_autoptr (PlTensor) d = pl_test_tensor (PL_DTYPE_F64, 0, NULL, PL_VALS (0.3));
  PlTensor *in[] = { s, l, d };
  g_autoptr (PlGraph) g = pl_test_node_graph ("Range", 3, in, 0x7, 1, NULL);
  PlTensor **out = RUN (g, in, 0x7);
  /* numpy: np.arange(1.0, 2.0, 0.3) */
  check (out[0], "[4]", PL_VALS (1, 1.3, 1.6, 1.9));
  pl_interp_free_outputs (out, 1);

  g_autoptr (PlTensor) si = pl_test_tensor (PL_DTYPE_I32, 0, NULL, PL_VALS (10));
  g_autoptr (PlTensor) li = pl_test_tensor (PL_DTYPE_I32, 0, NULL, PL_VALS (2));
  g_autoptr (PlTensor) di = pl_test_tensor (PL_DTYPE_I32, 0, NULL, PL_VALS (-3));
  PlTensor *in2[] = { si, li, di };
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Range", 3, in2, 0, 1, NULL);
  assert_inferred (g2, 0, "[?]");
  out = RUN (g2, in2, 0);
  check (out[0], "[3]", PL_VALS (10, 7, 4));
  pl_interp_free_outputs (out, 1);

  g_autoptr (PlTensor) zero = pl_test_tensor (PL_DTYPE_I32, 0, NULL, PL_VALS (0));
  PlTensor *in3[] = { si, li, zero };
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("Range", 3, in3, 0x7, 1, NULL);
  pl_test_expect_infer_error (g3, "delta is 0");
}

static void
test_eyelike (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_I32, 2, PL_DIMS (3, 4), NULL);
  PlTensor *in[] = { x };
  PlNode *n;
  g_autoptr (PlGraph) g = pl_test_node_graph ("EyeLike", 1, in, 0, 1, &n);
  pl_node_set_attr_int (n, "k", 1);
  pl_node_set_attr_int (n, "dtype", 1);  /* FLOAT */
  PlTensor **out = RUN (g, in, 0);
  /* numpy: np.eye(3, 4, k=1) */
  check (out[0], "[3, 4]", PL_VALS (0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1));
  g_assert_cmpint (out[0]->dtype, ==, PL_DTYPE_F32);
  pl_interp_free_outputs (out, 1);

  g_autoptr (PlTensor) y = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (4, 2), NULL);
  PlTensor *in2[] = { y };
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("EyeLike", 1, in2, 0, 1, &n);
  pl_node_set_attr_int (n, "k", -3);
  out = RUN (g2, in2, 0);
  /* numpy: np.eye(4, 2, k=-3) */
  check (out[0], "[4, 2]", PL_VALS (0, 0, 0, 0, 0, 0, 1, 0));
  pl_interp_free_outputs (out, 1);
}

/* Data movement is exact for every dtype: int64 values above 2^53 survive. */
static void
test_exact_int64 (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (2, 2), NULL);
  int64_t *v = x->data;
  v[0] = INT64_MAX;
  v[1] = INT64_MIN;
  v[2] = (1LL << 53) + 1;
  v[3] = -((1LL << 53) + 1);
  PlTensor *in[] = { x };
  g_autoptr (PlGraph) g = pl_test_node_graph ("Transpose", 1, in, 0, 1, NULL);
  PlTensor **out = RUN (g, in, 0);
  const int64_t *o = out[0]->data;
  g_assert_cmpint (o[0], ==, INT64_MAX);
  g_assert_cmpint (o[1], ==, (1LL << 53) + 1);
  g_assert_cmpint (o[2], ==, INT64_MIN);
  g_assert_cmpint (o[3], ==, -((1LL << 53) + 1));
  pl_interp_free_outputs (out, 1);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_ops_init ();

  g_test_add_func ("/Passlab/OpsShape/reshape", test_reshape);
  g_test_add_func ("/Passlab/OpsShape/reshape-allowzero", test_reshape_allowzero);
  g_test_add_func ("/Passlab/OpsShape/reshape-through-constant-node", test_reshape_through_constant_node);
  g_test_add_func ("/Passlab/OpsShape/reshape-symbolic", test_reshape_symbolic);
  g_test_add_func ("/Passlab/OpsShape/reshape-errors", test_reshape_errors);
  g_test_add_func ("/Passlab/OpsShape/transpose", test_transpose);
  g_test_add_func ("/Passlab/OpsShape/squeeze-unsqueeze", test_squeeze_unsqueeze);
  g_test_add_func ("/Passlab/OpsShape/squeeze-unsqueeze-symbolic", test_squeeze_unsqueeze_symbolic);
  g_test_add_func ("/Passlab/OpsShape/flatten", test_flatten);
  g_test_add_func ("/Passlab/OpsShape/flatten-values-errors", test_flatten_values_and_errors);
  g_test_add_func ("/Passlab/OpsShape/concat", test_concat);
  g_test_add_func ("/Passlab/OpsShape/split", test_split);
  g_test_add_func ("/Passlab/OpsShape/slice", test_slice);
  g_test_add_func ("/Passlab/OpsShape/slice-symbolic", test_slice_symbolic);
  g_test_add_func ("/Passlab/OpsShape/pad", test_pad);
  g_test_add_func ("/Passlab/OpsShape/pad-reflect-long", test_pad_reflect_long);
  g_test_add_func ("/Passlab/OpsShape/tile-expand", test_tile_expand);
  g_test_add_func ("/Passlab/OpsShape/tile-expand-symbolic", test_tile_expand_symbolic);
  g_test_add_func ("/Passlab/OpsShape/gather", test_gather);
  g_test_add_func ("/Passlab/OpsShape/gather-errors", test_gather_errors);
  g_test_add_func ("/Passlab/OpsShape/gather-symbolic", test_gather_symbolic);
  g_test_add_func ("/Passlab/OpsShape/gather-elements-nd", test_gather_elements_nd);
  g_test_add_func ("/Passlab/OpsShape/scatter", test_scatter);
  g_test_add_func ("/Passlab/OpsShape/depth-space", test_depth_space);
  g_test_add_func ("/Passlab/OpsShape/resize", test_resize);
  g_test_add_func ("/Passlab/OpsShape/resize-opset10", test_resize_opset10);
  g_test_add_func ("/Passlab/OpsShape/resize-inference", test_resize_inference);
  g_test_add_func ("/Passlab/OpsShape/compress-nonzero", test_compress_nonzero);
  g_test_add_func ("/Passlab/OpsShape/onehot", test_onehot);
  g_test_add_func ("/Passlab/OpsShape/reverse-sequence", test_reverse_sequence);
  g_test_add_func ("/Passlab/OpsShape/shape-size", test_shape_size);
  g_test_add_func ("/Passlab/OpsShape/constant", test_constant);
  g_test_add_func ("/Passlab/OpsShape/constant-of-shape", test_constant_of_shape);
  g_test_add_func ("/Passlab/OpsShape/range", test_range);
  g_test_add_func ("/Passlab/OpsShape/eyelike", test_eyelike);
  g_test_add_func ("/Passlab/OpsShape/exact-int64", test_exact_int64);
  return g_test_run ();
}
