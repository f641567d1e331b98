/* test-ops-nn.c — MatMul, Gemm, Einsum, convolutions, pooling and losses:
 * shape inference (static, symbolic, errors) and reference values.
 *
 * Inputs mostly come from pat(): ((i * mul) % mod - mod / 2) * 0.5, so the
 * expected values are exact multiples of 1/4. The expected values were
 * computed with numpy by independent naive loops (padding + slicing for
 * conv and pooling, scatter + crop for ConvTranspose, np.einsum, and ONNX's
 * own numpy loss functions); the equivalent Python is
 *   def pat(dims, mul, mod):
 *       return (((np.arange(np.prod(dims)) * mul) % mod - mod // 2) * 0.5).reshape(dims)
 */
#include <math.h>
#include <string.h>

#include "test-util.h"

#define SET_INTS(node, name, ...) \
  pl_node_set_attr_ints (node, name, PL_DIMS (__VA_ARGS__), sizeof (PL_DIMS (__VA_ARGS__)) / sizeof (int64_t))

/* An f32 tensor of the pattern ((i * mul) % mod - mod / 2) * 0.5. */
static PlTensor *
pat (int rank, const int64_t *dims, int mul, int mod)
{
  PlTensor *t = pl_test_tensor (PL_DTYPE_F32, rank, dims, NULL);

  for (int64_t i = 0; i < t->numel; i++)
    pl_tensor_set_f64 (t, i, (double) ((i * mul) % mod - mod / 2) * 0.5);
  return t;
}

static PlTensor *
f32 (int rank, const int64_t *dims, const double *values)
{
  return pl_test_tensor (PL_DTYPE_F32, rank, dims, values);
}

/* Asserts t's shape prints as `shape` and its values are `want`. */
static void
check (const PlTensor *t, const char *shape, const double *want)
{
  PlShape s = pl_tensor_shape (t);
  g_autofree char *got = pl_shape_to_string (&s);

  g_assert_cmpstr (got, ==, shape);
  if (want)
    pl_test_assert_values (t, want);
}

/* Infers g and returns output `i`'s shape as text. */
static char *
inferred_shape (PlGraph *g, int i)
{
  g_autoptr (GError) error = NULL;
  PlNode *node = g->nodes->pdata[0];

  g_assert_true (pl_graph_infer_shapes (g, &error));
  g_assert_no_error (error);
  return pl_shape_to_string (&node->outputs[i]->shape);
}

/* A graph input named name of the given shape; dims -1, -2, -3 become the
 * symbols N, H, W. */
static PlValue *
sym_input (PlGraph *g, const char *name, int rank, const int64_t *dims)
{
  g_autoptr (GError) error = NULL;
  PlShape s = pl_shape_from_dims (rank, dims);
  PlValue *v;

  for (int i = 0; i < rank; i++)
    if (dims[i] < 0)
      s.dims[i] = pl_dim_symbol (dims[i] == -1 ? "N" : dims[i] == -2 ? "H" : "W");
  v = pl_graph_add_input (g, name, PL_DTYPE_F32, &s, &error);
  g_assert_no_error (error);
  return v;
}

static PlNode *
add_node (PlGraph *g, const char *op, int n_in, PlValue **in, int n_out)
{
  g_autoptr (GError) error = NULL;
  PlNode *node = pl_graph_add_node (g, op, NULL, "node", n_in, in, n_out, NULL, &error);

  g_assert_no_error (error);
  for (int i = 0; i < n_out; i++)
    pl_graph_add_output (g, node->outputs[i]);
  return node;
}

/* --- MatMul ------------------------------------------------------------------- */

static void
test_matmul_2d (void)
{
  g_autoptr (PlTensor) a = f32 (2, PL_DIMS (2, 3), PL_VALS (1, 2, 3, 4, 5, 6));
  g_autoptr (PlTensor) b = f32 (2, PL_DIMS (3, 2), PL_VALS (7, 8, 9, 10, 11, 12));
  PlTensor *in[] = { a, b };
  g_autoptr (PlGraph) g = pl_test_node_graph ("MatMul", 2, in, 0, 1, NULL);
  PlTensor **out = pl_test_run (g, in, 0);

  check (out[0], "[2, 2]", PL_VALS (58, 64, 139, 154));
  pl_interp_free_outputs (out, 1);
}

static void
test_matmul_1d (void)
{
  g_autoptr (PlTensor) v = f32 (1, PL_DIMS (3), PL_VALS (1, 2, 3));
  g_autoptr (PlTensor) m = f32 (2, PL_DIMS (3, 2), PL_VALS (1, 2, 3, 4, 5, 6));
  g_autoptr (PlTensor) mt = f32 (2, PL_DIMS (2, 3), PL_VALS (1, 3, 5, 2, 4, 6));
  PlTensor *vm[] = { v, m }, *mv[] = { mt, v }, *vv[] = { v, v };
  g_autoptr (PlGraph) g1 = pl_test_node_graph ("MatMul", 2, vm, 0, 1, NULL);
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("MatMul", 2, mv, 0, 1, NULL);
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("MatMul", 2, vv, 0, 1, NULL);
  PlTensor **o1 = pl_test_run (g1, vm, 0), **o2 = pl_test_run (g2, mv, 0), **o3 = pl_test_run (g3, vv, 0);

  /* A 1-D operand's unit dim is dropped: [3]x[3,2] -> [2], [2,3]x[3] -> [2], [3]x[3] -> []. */
  check (o1[0], "[2]", PL_VALS (22, 28));
  check (o2[0], "[2]", PL_VALS (22, 28));
  check (o3[0], "[]", PL_VALS (14));
  pl_interp_free_outputs (o1, 1);
  pl_interp_free_outputs (o2, 1);
  pl_interp_free_outputs (o3, 1);
}

static void
test_matmul_batch_broadcast (void)
{
  /* [2,1,2,3] x [3,3,2]: batches [2,1] and [3] broadcast to [2,3]. */
  g_autoptr (PlTensor) a = pat (4, PL_DIMS (2, 1, 2, 3), 7, 11);
  g_autoptr (PlTensor) b = pat (3, PL_DIMS (3, 3, 2), 5, 13);
  PlTensor *in[] = { a, b };
  g_autoptr (PlGraph) g = pl_test_node_graph ("MatMul", 2, in, 0x2, 1, NULL);
  PlTensor **out = pl_test_run (g, in, 0x2);

  check (out[0], "[2, 3, 2, 2]",
         PL_VALS (9, -3.75, -7.25, -6.75, -2.5, -2.25, -7.5, 6, -1, 9, 5.25, -7.25,
                  -7, -7, -6.75, -7.25, -7, 6, -6.5, 6, 6, -7, 6.75, -6.75));
  pl_interp_free_outputs (out, 1);
}

static void
test_matmul_int64 (void)
{
  /* 2^40 * 2^20 + 3 * 5 = 2^60 + 15: exact only in integer arithmetic. */
  g_autoptr (PlTensor) a = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (1, 2), PL_VALS (1099511627776.0, 3));
  g_autoptr (PlTensor) b = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (2, 1), PL_VALS (1048576, 5));
  PlTensor *in[] = { a, b };
  g_autoptr (PlGraph) g = pl_test_node_graph ("MatMul", 2, in, 0, 1, NULL);
  PlTensor **out = pl_test_run (g, in, 0);

  g_assert_cmpint (out[0]->dtype, ==, PL_DTYPE_I64);
  g_assert_cmpint (pl_tensor_get_i64 (out[0], 0), ==, (G_GINT64_CONSTANT (1) << 60) + 15);
  pl_interp_free_outputs (out, 1);
}

static void
test_matmul_shapes (void)
{
  g_autoptr (PlGraph) g = pl_graph_new ("t");
  g_autoptr (PlGraph) bad = NULL;
  g_autoptr (PlTensor) a = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 3), NULL);
  g_autoptr (PlTensor) b = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (4, 5), NULL);
  PlTensor *in[] = { a, b };
  PlValue *ins[2];
  g_autofree char *s = NULL;

  /* A symbolic batch dim propagates. */
  ins[0] = sym_input (g, "a", 3, PL_DIMS (-1, 2, 3));
  ins[1] = sym_input (g, "b", 2, PL_DIMS (3, 4));
  add_node (g, "MatMul", 2, ins, 1);
  s = inferred_shape (g, 0);
  g_assert_cmpstr (s, ==, "[N, 2, 4]");

  bad = pl_test_node_graph ("MatMul", 2, in, 0, 1, NULL);
  pl_test_expect_infer_error (bad, "[2, 3] and [4, 5]");
}

/* --- Gemm ---------------------------------------------------------------------- */

static void
test_gemm (void)
{
  /* Y = 0.5 * A^T B^T + 2 * C with A [3,2], B [4,3], C [2,1] broadcast to [2,4]. */
  g_autoptr (PlTensor) a = pat (2, PL_DIMS (3, 2), 7, 11);
  g_autoptr (PlTensor) b = pat (2, PL_DIMS (4, 3), 5, 13);
  g_autoptr (PlTensor) c = pat (2, PL_DIMS (2, 1), 3, 7);
  PlTensor *in[] = { a, b, c };
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Gemm", 3, in, 0x6, 1, &node);
  PlTensor **out;

  pl_node_set_attr_int (node, "transA", 1);
  pl_node_set_attr_int (node, "transB", 1);
  pl_node_set_attr_float (node, "alpha", 0.5f);
  pl_node_set_attr_float (node, "beta", 2.0f);
  out = pl_test_run (g, in, 0x6);
  check (out[0], "[2, 4]", PL_VALS (1.5, 0, -3.125, -4.625, -3.625, -2.625, 3.25, 4.25));
  pl_interp_free_outputs (out, 1);
}

static void
test_gemm_no_c (void)
{
  g_autoptr (PlTensor) a = f32 (2, PL_DIMS (2, 3), PL_VALS (1, 2, 3, 4, 5, 6));
  g_autoptr (PlTensor) b = f32 (2, PL_DIMS (3, 2), PL_VALS (7, 8, 9, 10, 11, 12));
  g_autoptr (PlTensor) c = f32 (0, NULL, PL_VALS (100));
  PlTensor *in2[] = { a, b }, *in3[] = { a, b, c };
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Gemm", 2, in2, 0, 1, NULL);
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("Gemm", 3, in3, 0, 1, NULL);
  PlTensor **o2 = pl_test_run (g2, in2, 0), **o3 = pl_test_run (g3, in3, 0);

  check (o2[0], "[2, 2]", PL_VALS (58, 64, 139, 154));
  check (o3[0], "[2, 2]", PL_VALS (158, 164, 239, 254));
  pl_interp_free_outputs (o2, 1);
  pl_interp_free_outputs (o3, 1);
}

static void
test_gemm_errors (void)
{
  g_autoptr (PlTensor) a = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 3), NULL);
  g_autoptr (PlTensor) b = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 4), NULL);
  g_autoptr (PlTensor) b2 = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (3, 4), NULL);
  g_autoptr (PlTensor) c = pl_test_tensor (PL_DTYPE_F32, 1, PL_DIMS (3), NULL);
  PlTensor *in[] = { a, b }, *in_c[] = { a, b2, c };
  g_autoptr (PlGraph) g = pl_test_node_graph ("Gemm", 2, in, 0, 1, NULL);
  g_autoptr (PlGraph) gc = pl_test_node_graph ("Gemm", 3, in_c, 0, 1, NULL);

  pl_test_expect_infer_error (g, "[2, 3] and [2, 4]");
  pl_test_expect_infer_error (gc, "C does not broadcast");
}

/* --- Conv ----------------------------------------------------------------------- */

static void
test_conv_basic (void)
{
  /* ONNX's basic example: 0..24 in 5x5, a 3x3 kernel of ones, pads 1. */
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 4, PL_DIMS (1, 1, 5, 5), NULL);
  g_autoptr (PlTensor) w = f32 (4, PL_DIMS (1, 1, 3, 3), PL_VALS (1, 1, 1, 1, 1, 1, 1, 1, 1));
  PlTensor *in[] = { x, w };
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Conv", 2, in, 0x2, 1, &node);
  PlTensor **out;

  for (int i = 0; i < 25; i++)
    pl_tensor_set_f64 (x, i, i);
  SET_INTS (node, "pads", 1, 1, 1, 1);
  out = pl_test_run (g, in, 0x2);
  check (out[0], "[1, 1, 5, 5]",
         PL_VALS (12, 21, 27, 33, 24, 33, 54, 63, 72, 51, 63, 99, 108, 117, 81,
                  93, 144, 153, 162, 111, 72, 111, 117, 123, 84));
  pl_interp_free_outputs (out, 1);
}

static void
test_conv_strided_padded (void)
{
  /* Two input channels, three output channels with a bias, stride 2,
   * asymmetric pads (top 1, left 0, bottom 2, right 1). */
  g_autoptr (PlTensor) x = pat (4, PL_DIMS (1, 2, 5, 6), 3, 17);
  g_autoptr (PlTensor) w = pat (4, PL_DIMS (3, 2, 3, 3), 5, 7);
  g_autoptr (PlTensor) b = f32 (1, PL_DIMS (3), PL_VALS (0.5, -1, 2));
  PlTensor *in[] = { x, w, b };
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Conv", 3, in, 0x6, 1, &node);
  PlTensor **out;

  SET_INTS (node, "strides", 2, 2);
  SET_INTS (node, "pads", 1, 0, 2, 1);
  out = pl_test_run (g, in, 0x6);
  check (out[0], "[1, 3, 3, 3]",
         PL_VALS (-1.5, 15.25, -7.75, 2.75, 6.75, -6, 2, 13.25, -16.5, 1.25, -0.25, 4.75, -3.5, -7.75,
                  -7, 1, 2.5, -3.25, 3.25, -16.5, 14.75, 3.5, -9, 3.5, -0.75, -9, 12.75));
  pl_interp_free_outputs (out, 1);
}

static void
test_conv_grouped (void)
{
  /* group 2: channels 0-1 feed outputs 0-2, channels 2-3 outputs 3-5;
   * dilations [1, 2], pads 1 all round, batch 2. */
  g_autoptr (PlTensor) x = pat (4, PL_DIMS (2, 4, 4, 4), 7, 13);
  g_autoptr (PlTensor) w = pat (4, PL_DIMS (6, 2, 3, 3), 3, 11);
  PlTensor *in[] = { x, w };
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Conv", 2, in, 0x2, 1, &node);
  PlTensor **out;

  pl_node_set_attr_int (node, "group", 2);
  SET_INTS (node, "dilations", 1, 2);
  SET_INTS (node, "pads", 1, 1, 1, 1);
  out = pl_test_run (g, in, 0x2);
  check (out[0], "[2, 6, 4, 2]",
         PL_VALS (-4.75, -12.25, -2.5, 3.75, -9, 12, 8.5, -1, -4.75, -11.25, -13.75, -11, -14.25, 3.25,
                  9.75, -3.75, -2, -13, -8.5, -1, -3, -11, -8.25, 1.75, -6.5, -12.75, -7, 6, -15, 12.75,
                  9.25, 9, -9.25, 2.5, 1.75, -13.5, -0.25, 4.75, -5.5, 9, 4.5, -9.75, -8.75, -19.25,
                  0.75, 5, -12, 9, 9.5, 8.75, 4, 5.75, -5.75, -12, 7.25, 4.5, 10.5, 10.75, 14, 5.75,
                  10.25, -9.25, -6.5, 12.75, -5, 7.25, 4.75, 11.25, 7, 4.5, -3.75, -6.5, 4.75, 8.5,
                  17.75, 3.5, 6.5, -15.75, -4.75, -11.25, 6.25, -1, 12, 12, 6.75, 4.25, -2, -13,
                  -14.25, -2.25, 3.5, 17.75, 9.75, 16, 9, -12));
  pl_interp_free_outputs (out, 1);
}

static void
test_conv_auto_pad (void)
{
  /* 1-D, length 7, kernel 4, stride 2: output ceil(7/2) = 4, total pad 3;
   * SAME_UPPER pads 1 before and 2 after, SAME_LOWER 2 before and 1 after. */
  const char *modes[] = { "SAME_UPPER", "SAME_LOWER" };
  const double *want[] = { PL_VALS (-3.75, -3, -1, 1.5), PL_VALS (2, -4, 6.25, -4) };

  for (int m = 0; m < 2; m++)
    {
      g_autoptr (PlTensor) x = pat (3, PL_DIMS (1, 1, 7), 3, 11);
      g_autoptr (PlTensor) w = f32 (3, PL_DIMS (1, 1, 4), PL_VALS (1, 2, -1, 0.5));
      PlTensor *in[] = { x, w };
      PlNode *node;
      g_autoptr (PlGraph) g = pl_test_node_graph ("Conv", 2, in, 0x2, 1, &node);
      PlTensor **out;

      pl_node_set_attr_string (node, "auto_pad", modes[m]);
      SET_INTS (node, "strides", 2);
      out = pl_test_run (g, in, 0x2);
      check (out[0], "[1, 1, 4]", want[m]);
      pl_interp_free_outputs (out, 1);
    }
}

static void
test_conv_3d (void)
{
  g_autoptr (PlTensor) x = pat (5, PL_DIMS (1, 2, 3, 4, 4), 5, 9);
  g_autoptr (PlTensor) w = pat (5, PL_DIMS (2, 2, 2, 3, 3), 7, 5);
  PlTensor *in[] = { x, w };
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Conv", 2, in, 0x2, 1, &node);
  PlTensor **out;

  SET_INTS (node, "strides", 1, 2, 1);
  SET_INTS (node, "pads", 0, 1, 1, 0, 1, 1);
  out = pl_test_run (g, in, 0x2);
  check (out[0], "[1, 2, 2, 2, 4]",
         PL_VALS (-4, 2.75, 3.75, -2, 3.25, -0.25, 1.75, 6.5, -2.25, 3, -2.75, 4.75, -1.5, -6.5, 4.5, -2,
                  1, -3.5, -1, 3.25, -1.5, 1, -1.25, -1, -3.25, -1.75, 0.75, -4, 3.25, -3.5, -3.5, 3.25));
  pl_interp_free_outputs (out, 1);
}

static void
test_conv_shapes (void)
{
  g_autoptr (PlGraph) g = pl_graph_new ("t");
  g_autoptr (PlTensor) w = pl_test_tensor (PL_DTYPE_F32, 4, PL_DIMS (64, 3, 7, 7), NULL);
  g_autoptr (GError) error = NULL;
  g_autofree char *s = NULL;
  PlValue *ins[2];
  PlNode *node;

  /* ResNet's stem: [N,3,224,224] * [64,3,7,7], stride 2, pads 3 -> [N,64,112,112]. */
  ins[0] = sym_input (g, "x", 4, PL_DIMS (-1, 3, 224, 224));
  ins[1] = pl_graph_add_constant (g, "w", w, &error);
  g_assert_no_error (error);
  node = add_node (g, "Conv", 2, ins, 1);
  SET_INTS (node, "strides", 2, 2);
  SET_INTS (node, "pads", 3, 3, 3, 3);
  s = inferred_shape (g, 0);
  g_assert_cmpstr (s, ==, "[N, 64, 112, 112]");

  /* Symbolic spatial dims survive where the window keeps the size (SAME,
   * stride 1) and become unknown where it does not. */
  for (int strided = 0; strided < 2; strided++)
    {
      g_autoptr (PlGraph) gs = pl_graph_new ("t");
      g_autoptr (PlTensor) w3 = pl_test_tensor (PL_DTYPE_F32, 4, PL_DIMS (8, 3, 3, 3), NULL);
      g_autofree char *ss = NULL;

      ins[0] = sym_input (gs, "x", 4, PL_DIMS (-1, 3, -2, -3));
      ins[1] = pl_graph_add_constant (gs, "w", w3, &error);
      g_assert_no_error (error);
      node = add_node (gs, "Conv", 2, ins, 1);
      pl_node_set_attr_string (node, "auto_pad", "SAME_UPPER");
      if (strided)
        SET_INTS (node, "strides", 2, 2);
      ss = inferred_shape (gs, 0);
      g_assert_cmpstr (ss, ==, strided ? "[N, 8, ?, ?]" : "[N, 8, H, W]");
    }
}

static void
test_conv_errors (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 4, PL_DIMS (1, 3, 5, 5), NULL);
  g_autoptr (PlTensor) w = pl_test_tensor (PL_DTYPE_F32, 4, PL_DIMS (2, 4, 3, 3), NULL);
  g_autoptr (PlTensor) wg = pl_test_tensor (PL_DTYPE_F32, 4, PL_DIMS (3, 1, 3, 3), NULL);
  g_autoptr (PlTensor) big = pl_test_tensor (PL_DTYPE_F32, 4, PL_DIMS (2, 3, 7, 7), NULL);
  PlTensor *in[] = { x, w }, *in_g[] = { x, wg }, *in_big[] = { x, big };
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Conv", 2, in, 0x2, 1, NULL);
  g_autoptr (PlGraph) gg = pl_test_node_graph ("Conv", 2, in_g, 0x2, 1, &node);
  g_autoptr (PlGraph) gb = pl_test_node_graph ("Conv", 2, in_big, 0x2, 1, NULL);

  pl_test_expect_infer_error (g, "[1, 3, 5, 5] and [2, 4, 3, 3]");
  /* 3 output channels do not split into 2 groups (and 3 channels / 2 != 1). */
  pl_node_set_attr_int (node, "group", 2);
  pl_test_expect_infer_error (gg, "group 2");
  pl_test_expect_infer_error (gb, "does not fit");
}

/* A ResNet block's 3x3 conv, [1,64,56,56] -> [1,64,56,56]: must take seconds
 * at most. A few outputs are checked against direct sums. */
static void
test_conv_resnet_block (void)
{
  g_autoptr (PlTensor) x = pl_test_random (PL_DTYPE_F32, 4, PL_DIMS (1, 64, 56, 56), 1, -1, 1);
  g_autoptr (PlTensor) w = pl_test_random (PL_DTYPE_F32, 4, PL_DIMS (64, 64, 3, 3), 2, -1, 1);
  PlTensor *in[] = { x, w };
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Conv", 2, in, 0x2, 1, &node);
  const int64_t probe[][3] = { { 0, 0, 0 }, { 5, 17, 55 }, { 63, 55, 31 }, { 31, 28, 0 } };
  gint64 t0;
  PlTensor **out;

  SET_INTS (node, "pads", 1, 1, 1, 1);
  t0 = g_get_monotonic_time ();
  out = pl_test_run (g, in, 0x2);
  g_test_message ("3x3 conv on [1,64,56,56]: %.2f s", (g_get_monotonic_time () - t0) / 1e6);
  check (out[0], "[1, 64, 56, 56]", NULL);
  for (size_t p = 0; p < G_N_ELEMENTS (probe); p++)
    {
      int64_t m = probe[p][0], oh = probe[p][1], ow = probe[p][2];
      double want = 0;

      for (int c = 0; c < 64; c++)
        for (int kh = 0; kh < 3; kh++)
          for (int kw = 0; kw < 3; kw++)
            {
              int64_t ih = oh + kh - 1, iw = ow + kw - 1;

              if (ih >= 0 && ih < 56 && iw >= 0 && iw < 56)
                want += pl_tensor_get_f64 (x, (c * 56 + ih) * 56 + iw)
                        * pl_tensor_get_f64 (w, ((m * 64 + c) * 3 + kh) * 3 + kw);
            }
      g_assert_cmpfloat_with_epsilon (pl_tensor_get_f64 (out[0], (m * 56 + oh) * 56 + ow), want, 1e-4);
    }
  pl_interp_free_outputs (out, 1);
}

/* --- ConvTranspose ------------------------------------------------------------- */

static void
test_convtranspose_output_padding (void)
{
  /* [1,2,3,3] -> 3 channels, stride 2, pads 1, output_padding 1, bias:
   * 2 * (3 - 1) + 1 + 3 - 2 = 6 per spatial dim. */
  g_autoptr (PlTensor) x = pat (4, PL_DIMS (1, 2, 3, 3), 3, 7);
  g_autoptr (PlTensor) w = pat (4, PL_DIMS (2, 3, 3, 3), 5, 11);
  g_autoptr (PlTensor) b = f32 (1, PL_DIMS (3), PL_VALS (1, 0, -1));
  PlTensor *in[] = { x, w, b };
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("ConvTranspose", 3, in, 0x6, 1, &node);
  PlTensor **out;

  SET_INTS (node, "strides", 2, 2);
  SET_INTS (node, "pads", 1, 1, 1, 1);
  SET_INTS (node, "output_padding", 1, 1);
  out = pl_test_run (g, in, 0x6);
  check (out[0], "[1, 3, 6, 6]",
         PL_VALS (-5, 2.75, 2, 1, 2, 0, 1.75, 1.75, 1.75, 5.25, -3.5, 4.75, 2, 1, 2, -0.75, 2, 1.25,
                  1.75, 1.75, 1.75, 0, 1.75, -3, 2, 2.75, -5, 2.75, 2, 0.75, 0.25, -4.5, 3.25, 4.5, 1,
                  -0.25, -6, 1.5, 0.75, 1, 2.25, 0.25, 0, -5, 1.25, 2, -4.5, 3.75, 0.25, 0, 1.75,
                  -2.25, -0.25, -1, 0.25, 3.75, 1.5, 3.75, -0.75, 2.75, 1.25, 2, -6, 1.5, 0.75, -0.5,
                  -0.5, -5.25, 2.25, -5, -0.25, 1.25, 1.25, 0.25, -0.5, 1, -5.75, 0.5, -1.75, -6.25,
                  0.75, 1.5, -5.5, 2.75, 1.25, -1, -4, -3.75, 3, -3.25, -1.25, 3, 1.25, 2, -3.25,
                  0.25, -2.25, 1.25, 1.25, 0.25, -0.5, -1.75, -1.25, -6, 1.25, -6.25, -1.5, 0));
  pl_interp_free_outputs (out, 1);
}

static void
test_convtranspose_grouped (void)
{
  /* 1-D, 4 channels in 2 groups of 2, one output channel per group,
   * stride 3, dilation 2: 3 * (3 - 1) + (3 - 1) * 2 + 1 = 11. */
  g_autoptr (PlTensor) x = pat (3, PL_DIMS (1, 4, 3), 3, 7);
  g_autoptr (PlTensor) w = pat (3, PL_DIMS (4, 1, 3), 5, 11);
  PlTensor *in[] = { x, w };
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("ConvTranspose", 2, in, 0x2, 1, &node);
  PlTensor **out;

  pl_node_set_attr_int (node, "group", 2);
  SET_INTS (node, "strides", 3);
  SET_INTS (node, "dilations", 2);
  out = pl_test_run (g, in, 0x2);
  check (out[0], "[1, 2, 11]",
         PL_VALS (4, 0, -1, -0.5, -3.25, 2, -3.25, -1, -2, 0, 4.75,
                  -2.25, 0, 0, -1.25, -3.25, 2, -2, -0.25, 0.5, 0, -2.5));
  pl_interp_free_outputs (out, 1);
}

static void
test_convtranspose_output_shape (void)
{
  /* ONNX's example: output_shape [10, 8] exceeds the full 9 x 7 result,
   * which is padded with zeros at the end; auto_pad SAME_UPPER gives
   * in * stride = 6 with the odd pad at the end. */
  g_autoptr (PlTensor) x = f32 (4, PL_DIMS (1, 1, 3, 3), PL_VALS (0, 1, 2, 3, 4, 5, 6, 7, 8));
  g_autoptr (PlTensor) w = f32 (4, PL_DIMS (1, 1, 3, 3), PL_VALS (1, 1, 1, 1, 1, 1, 1, 1, 1));
  PlTensor *in[] = { x, w };
  PlNode *n1, *n2;
  g_autoptr (PlGraph) g1 = pl_test_node_graph ("ConvTranspose", 2, in, 0x2, 1, &n1);
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("ConvTranspose", 2, in, 0x2, 1, &n2);
  PlTensor **o1, **o2;

  SET_INTS (n1, "strides", 3, 2);
  SET_INTS (n1, "output_shape", 10, 8);
  o1 = pl_test_run (g1, in, 0x2);
  check (o1[0], "[1, 1, 10, 8]",
         PL_VALS (0, 0, 1, 1, 3, 2, 2, 0, 0, 0, 1, 1, 3, 2, 2, 0, 0, 0, 1, 1, 3, 2, 2, 0,
                  3, 3, 7, 4, 9, 5, 5, 0, 3, 3, 7, 4, 9, 5, 5, 0, 3, 3, 7, 4, 9, 5, 5, 0,
                  6, 6, 13, 7, 15, 8, 8, 0, 6, 6, 13, 7, 15, 8, 8, 0, 6, 6, 13, 7, 15, 8, 8, 0,
                  0, 0, 0, 0, 0, 0, 0, 0));
  pl_node_set_attr_string (n2, "auto_pad", "SAME_UPPER");
  SET_INTS (n2, "strides", 2, 2);
  o2 = pl_test_run (g2, in, 0x2);
  check (o2[0], "[1, 1, 6, 6]",
         PL_VALS (0, 0, 1, 1, 3, 2, 0, 0, 1, 1, 3, 2, 3, 3, 8, 5, 12, 7,
                  3, 3, 7, 4, 9, 5, 9, 9, 20, 11, 24, 13, 6, 6, 13, 7, 15, 8));
  pl_interp_free_outputs (o1, 1);
  pl_interp_free_outputs (o2, 1);
}

static void
test_convtranspose_errors (void)
{
  /* ConvTranspose's weight is [C, M/group, k...]: dim 0 must match C. */
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 4, PL_DIMS (1, 3, 5, 5), NULL);
  g_autoptr (PlTensor) w = pl_test_tensor (PL_DTYPE_F32, 4, PL_DIMS (2, 3, 3, 3), NULL);
  PlTensor *in[] = { x, w };
  g_autoptr (PlGraph) g = pl_test_node_graph ("ConvTranspose", 2, in, 0x2, 1, NULL);

  pl_test_expect_infer_error (g, "[1, 3, 5, 5] and [2, 3, 3, 3]");
}

/* --- Einsum ---------------------------------------------------------------------- */

/* Runs Einsum(equation) on the inputs and checks the result. */
static void
einsum_case (const char *equation, int n, PlTensor **in, const char *shape, const double *want)
{
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Einsum", n, in, 0, 1, &node);
  PlTensor **out;

  pl_node_set_attr_string (node, "equation", equation);
  out = pl_test_run (g, in, 0);
  check (out[0], shape, want);
  pl_interp_free_outputs (out, 1);
}

static void
test_einsum (void)
{
  g_autoptr (PlTensor) a = pat (2, PL_DIMS (2, 3), 7, 11);
  g_autoptr (PlTensor) b = pat (2, PL_DIMS (3, 4), 5, 13);
  g_autoptr (PlTensor) c = pat (2, PL_DIMS (4, 2), 3, 7);
  g_autoptr (PlTensor) sq = f32 (2, PL_DIMS (3, 3), PL_VALS (1, 2, 3, 4, 5, 6, 7, 8, 10));
  g_autoptr (PlTensor) v = f32 (1, PL_DIMS (3), PL_VALS (1, 2, 3));
  g_autoptr (PlTensor) u = f32 (1, PL_DIMS (2), PL_VALS (10, 20));
  g_autoptr (PlTensor) p = pat (3, PL_DIMS (2, 2, 3), 7, 11);
  g_autoptr (PlTensor) q = pat (3, PL_DIMS (2, 3, 2), 5, 13);
  g_autoptr (PlTensor) d = pat (3, PL_DIMS (2, 3, 3), 5, 7);
  g_autoptr (PlTensor) ab = pat (4, PL_DIMS (2, 1, 2, 3), 7, 11);
  g_autoptr (PlTensor) bb = pat (3, PL_DIMS (3, 3, 2), 5, 13);
  const double *ab_bb = PL_VALS (9, -3.75, -7.25, -6.75, -2.5, -2.25, -7.5, 6, -1, 9, 5.25, -7.25,
                                 -7, -7, -6.75, -7.25, -7, 6, -6.5, 6, 6, -7, 6.75, -6.75);

  /* matmul, explicit and implicit (output: letters used once, sorted) */
  einsum_case ("ij,jk->ik", 2, (PlTensor *[]) { a, b }, "[2, 4]",
               PL_VALS (10.5, 4.25, -8.5, 8, -3.5, 0.25, 0.75, -2));
  einsum_case ("ij,jk", 2, (PlTensor *[]) { a, b }, "[2, 4]",
               PL_VALS (10.5, 4.25, -8.5, 8, -3.5, 0.25, 0.75, -2));
  /* transposition, explicit and implicit ("ji" sorts to "ij" = a transpose) */
  einsum_case ("ij->ji", 1, (PlTensor *[]) { a }, "[3, 2]", PL_VALS (-2.5, 2.5, 1, 0.5, -1, -1.5));
  einsum_case ("ji", 1, (PlTensor *[]) { a }, "[3, 2]", PL_VALS (-2.5, 2.5, 1, 0.5, -1, -1.5));
  /* trace, diagonal, full sum, inner and outer products */
  einsum_case ("ii", 1, (PlTensor *[]) { sq }, "[]", PL_VALS (16));
  einsum_case ("ii->i", 1, (PlTensor *[]) { sq }, "[3]", PL_VALS (1, 5, 10));
  einsum_case ("ij->", 1, (PlTensor *[]) { a }, "[]", PL_VALS (-1));
  einsum_case ("ij->i", 1, (PlTensor *[]) { sq }, "[3]", PL_VALS (6, 15, 25));
  einsum_case ("i,i", 2, (PlTensor *[]) { v, v }, "[]", PL_VALS (14));
  einsum_case (" i , j -> j i ", 2, (PlTensor *[]) { v, u }, "[2, 3]", PL_VALS (10, 20, 30, 20, 40, 60));
  /* three operands */
  einsum_case ("ij,jk,kl->il", 3, (PlTensor *[]) { a, b, c }, "[2, 2]",
               PL_VALS (-13.875, -5.625, 5.375, 2.125));
  /* batches, named and through a broadcasting ellipsis */
  einsum_case ("bij,bjk->bik", 2, (PlTensor *[]) { p, q }, "[2, 2, 2]",
               PL_VALS (9, -3.75, -7.25, -6.75, -7, 6, -6.5, 6));
  einsum_case ("...ij,...jk->...ik", 2, (PlTensor *[]) { ab, bb }, "[2, 3, 2, 2]", ab_bb);
  einsum_case ("...ij,...jk", 2, (PlTensor *[]) { ab, bb }, "[2, 3, 2, 2]", ab_bb);
  einsum_case ("...ii->...i", 1, (PlTensor *[]) { d }, "[2, 3]", PL_VALS (-1.5, 1.5, 1, 0, -0.5, -1));
}

static void
test_einsum_int (void)
{
  g_autoptr (PlTensor) v = pl_test_tensor (PL_DTYPE_I64, 1, PL_DIMS (2), PL_VALS (1099511627776.0, 3));
  g_autoptr (PlTensor) u = pl_test_tensor (PL_DTYPE_I64, 1, PL_DIMS (2), PL_VALS (1048576, 5));
  PlTensor *in[] = { v, u };
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Einsum", 2, in, 0, 1, &node);
  PlTensor **out;

  pl_node_set_attr_string (node, "equation", "i,i->");
  out = pl_test_run (g, in, 0);
  g_assert_cmpint (pl_tensor_get_i64 (out[0], 0), ==, (G_GINT64_CONSTANT (1) << 60) + 15);
  pl_interp_free_outputs (out, 1);
}

static void
test_einsum_errors (void)
{
  g_autoptr (PlTensor) a = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 3), NULL);
  g_autoptr (PlTensor) b = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (4, 5), NULL);
  g_autoptr (PlTensor) c = pl_test_tensor (PL_DTYPE_F32, 3, PL_DIMS (2, 2, 3), NULL);
  PlTensor *in[] = { a, b }, *in_c[] = { c };
  struct { const char *eq; int n; PlTensor **in; const char *msg; } cases[] = {
    { "ij,jk->ik", 2, in, "subscript 'j' has sizes 3 and 4" },
    { "ij,jk->il", 2, in, "appears in no input" },
    { "ij,jk->ii", 2, in, "repeats" },
    { "ij->ij", 2, in, "1 terms for 2 inputs" },
    { "ijk,jk", 2, in, "3 subscripts for an operand of rank 2" },
    { "i.j,jk", 2, in, "'...'" },
    { "i2,jk", 2, in, "letters" },
    { "...ij->ij", 1, in_c, "needs '...'" },
  };

  for (size_t i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      PlNode *node;
      g_autoptr (PlGraph) g = pl_test_node_graph ("Einsum", cases[i].n, cases[i].in, 0, 1, &node);

      pl_node_set_attr_string (node, "equation", cases[i].eq);
      pl_test_expect_infer_error (g, cases[i].msg);
    }
}

/* --- pooling --------------------------------------------------------------------- */

static void
test_maxpool_indices (void)
{
  /* 3x3 windows, stride 2, pads 1, with Indices row-major and column-major. */
  for (int order = 0; order < 2; order++)
    {
      g_autoptr (PlTensor) x = pat (4, PL_DIMS (1, 2, 5, 5), 7, 23);
      PlTensor *in[] = { x };
      PlNode *node;
      g_autoptr (PlGraph) g = pl_test_node_graph ("MaxPool", 1, in, 0, 2, &node);
      PlTensor **out;

      SET_INTS (node, "kernel_shape", 3, 3);
      SET_INTS (node, "strides", 2, 2);
      SET_INTS (node, "pads", 1, 1, 1, 1);
      pl_node_set_attr_int (node, "storage_order", order);
      out = pl_test_run (g, in, 0);
      check (out[0], "[1, 2, 3, 3]",
             PL_VALS (4, 5, 5, 4.5, 5.5, 5.5, 4.5, 4.5, 3.5, 5, 5, 4, 5.5, 5.5, 4.5, 2.5, 3.5, 5));
      g_assert_cmpint (out[1]->dtype, ==, PL_DTYPE_I64);
      if (order == 0)
        check (out[1], "[1, 2, 3, 3]", PL_VALS (6, 3, 3, 16, 13, 13, 16, 16, 19, 26, 26, 29, 36, 36, 39, 45, 42, 49));
      else
        check (out[1], "[1, 2, 3, 3]", PL_VALS (6, 15, 15, 8, 17, 17, 8, 8, 23, 30, 30, 45, 32, 32, 47, 29, 38, 49));
      pl_interp_free_outputs (out, 2);
    }
}

static void
test_maxpool_ceil_dilations (void)
{
  g_autoptr (PlTensor) x16 = pl_test_tensor (PL_DTYPE_F32, 4, PL_DIMS (1, 1, 4, 4), NULL);
  g_autoptr (PlTensor) x5 = pat (3, PL_DIMS (1, 1, 5), 3, 7);
  g_autoptr (PlTensor) xd = pat (4, PL_DIMS (1, 1, 5, 6), 5, 17);
  PlTensor *in16[] = { x16 }, *in5[] = { x5 }, *ind[] = { xd };
  PlNode *n1, *n2, *n3;
  g_autoptr (PlGraph) g1 = pl_test_node_graph ("MaxPool", 1, in16, 0, 1, &n1);
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("MaxPool", 1, in5, 0, 1, &n2);
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("MaxPool", 1, ind, 0, 1, &n3);
  PlTensor **o1, **o2, **o3;

  for (int i = 0; i < 16; i++)
    pl_tensor_set_f64 (x16, i, i + 1);
  /* ONNX's example: 4x4, kernel 3, stride 2, ceil_mode: 2x2 (floor would give 1x1). */
  SET_INTS (n1, "kernel_shape", 3, 3);
  SET_INTS (n1, "strides", 2, 2);
  pl_node_set_attr_int (n1, "ceil_mode", 1);
  o1 = pl_test_run (g1, in16, 0);
  check (o1[0], "[1, 1, 2, 2]", PL_VALS (11, 12, 15, 16));

  /* Length 5, kernel 2, stride 2, pads 1+1, ceil_mode: ceil(5/2) + 1 = 4
   * windows, but the 4th would start in the end pad, so 3. */
  SET_INTS (n2, "kernel_shape", 2);
  SET_INTS (n2, "strides", 2);
  SET_INTS (n2, "pads", 1, 1);
  pl_node_set_attr_int (n2, "ceil_mode", 1);
  o2 = pl_test_run (g2, in5, 0);
  check (o2[0], "[1, 1, 3]", PL_VALS (-1.5, 1.5, 1));

  /* Dilations 2 (a 3x3 footprint), strides [1, 2]. */
  SET_INTS (n3, "kernel_shape", 2, 2);
  SET_INTS (n3, "strides", 1, 2);
  SET_INTS (n3, "dilations", 2, 2);
  o3 = pl_test_run (g3, ind, 0);
  check (o3[0], "[1, 1, 3, 2]", PL_VALS (1, 2, 3.5, 4, 1.5, 2));
  pl_interp_free_outputs (o1, 1);
  pl_interp_free_outputs (o2, 1);
  pl_interp_free_outputs (o3, 1);
}

static void
test_maxpool_uint8 (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_U8, 3, PL_DIMS (1, 1, 6), PL_VALS (3, 250, 7, 1, 0, 9));
  PlTensor *in[] = { x };
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("MaxPool", 1, in, 0, 1, &node);
  PlTensor **out;

  SET_INTS (node, "kernel_shape", 2);
  SET_INTS (node, "strides", 2);
  out = pl_test_run (g, in, 0);
  g_assert_cmpint (out[0]->dtype, ==, PL_DTYPE_U8);
  check (out[0], "[1, 1, 3]", PL_VALS (250, 7, 9));
  pl_interp_free_outputs (out, 1);
}

static void
test_averagepool (void)
{
  const double *want[] = {
    PL_VALS (-0.75, 0.666666667, 1.125, 0.583333333, 0.722222222, 1.5, 0, -0.5, -1),
    PL_VALS (-0.333333333, 0.444444444, 0.5, 0.388888889, 0.722222222, 1, 0, -0.333333333, -0.444444444),
  };

  /* 3x3 windows, stride 2, pads 1: the pads counted or not. */
  for (int include = 0; include < 2; include++)
    {
      g_autoptr (PlTensor) x = pat (4, PL_DIMS (1, 1, 5, 5), 7, 23);
      PlTensor *in[] = { x };
      PlNode *node;
      g_autoptr (PlGraph) g = pl_test_node_graph ("AveragePool", 1, in, 0, 1, &node);
      PlTensor **out;

      SET_INTS (node, "kernel_shape", 3, 3);
      SET_INTS (node, "strides", 2, 2);
      SET_INTS (node, "pads", 1, 1, 1, 1);
      pl_node_set_attr_int (node, "count_include_pad", include);
      out = pl_test_run (g, in, 0);
      check (out[0], "[1, 1, 3, 3]", want[include]);
      pl_interp_free_outputs (out, 1);
    }
}

static void
test_averagepool_ceil (void)
{
  g_autoptr (PlTensor) x16 = pl_test_tensor (PL_DTYPE_F32, 4, PL_DIMS (1, 1, 4, 4), NULL);
  g_autoptr (PlTensor) x = pat (4, PL_DIMS (1, 1, 5, 5), 7, 23);
  PlTensor *in16[] = { x16 }, *in[] = { x };
  PlNode *n1, *n2;
  g_autoptr (PlGraph) g1 = pl_test_node_graph ("AveragePool", 1, in16, 0, 1, &n1);
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("AveragePool", 1, in, 0, 1, &n2);
  PlTensor **o1, **o2;

  for (int i = 0; i < 16; i++)
    pl_tensor_set_f64 (x16, i, i + 1);
  /* ONNX's example: the partial windows average what they cover. */
  SET_INTS (n1, "kernel_shape", 3, 3);
  SET_INTS (n1, "strides", 2, 2);
  pl_node_set_attr_int (n1, "ceil_mode", 1);
  o1 = pl_test_run (g1, in16, 0);
  check (o1[0], "[1, 1, 2, 2]", PL_VALS (6, 7.5, 12, 13.5));

  /* End pads 1 with count_include_pad: the last window covers one input
   * row, one pad row, and one row past the pad that is not counted. */
  SET_INTS (n2, "kernel_shape", 3, 3);
  SET_INTS (n2, "strides", 2, 2);
  SET_INTS (n2, "pads", 0, 0, 1, 1);
  pl_node_set_attr_int (n2, "ceil_mode", 1);
  pl_node_set_attr_int (n2, "count_include_pad", 1);
  o2 = pl_test_run (g2, in, 0);
  check (o2[0], "[1, 1, 3, 3]",
         PL_VALS (-1.11111111, 0.777777778, -0.416666667, -0.611111111, 0, -0.166666667,
                  -0.5, -0.833333333, -0.5));
  pl_interp_free_outputs (o1, 1);
  pl_interp_free_outputs (o2, 1);
}

static void
test_lppool (void)
{
  g_autoptr (PlTensor) x = pat (3, PL_DIMS (1, 2, 5), 3, 7);
  PlTensor *in[] = { x };
  PlNode *n1, *n2;
  g_autoptr (PlGraph) g1 = pl_test_node_graph ("LpPool", 1, in, 0, 1, &n1);
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("LpPool", 1, in, 0, 1, &n2);
  PlTensor **o1, **o2;

  /* p = 2 (the default): sqrt of the sum of squares; the end pad adds 0. */
  SET_INTS (n1, "kernel_shape", 2);
  SET_INTS (n1, "strides", 2);
  SET_INTS (n1, "pads", 0, 1);
  o1 = pl_test_run (g1, in, 0);
  check (o1[0], "[1, 2, 3]", PL_VALS (1.5, 1.58113883, 1, 1.11803399, 1.5, 1.5));

  /* p = 1: the sum of absolute values. */
  SET_INTS (n2, "kernel_shape", 3);
  SET_INTS (n2, "pads", 1, 1);
  pl_node_set_attr_int (n2, "p", 1);
  o2 = pl_test_run (g2, in, 0);
  check (o2[0], "[1, 2, 5]", PL_VALS (1.5, 3, 2, 3, 1.5, 1.5, 3, 2, 3, 1.5));
  pl_interp_free_outputs (o1, 1);
  pl_interp_free_outputs (o2, 1);
}

static void
test_global_pool (void)
{
  g_autoptr (PlTensor) x = f32 (4, PL_DIMS (2, 2, 2, 2),
                                PL_VALS (1, 2, 3, 4, -1, -2, -3, -8, 0, 0, 5, 1, 2, 2, 2, 3));
  PlTensor *in[] = { x };
  g_autoptr (PlGraph) ga = pl_test_node_graph ("GlobalAveragePool", 1, in, 0, 1, NULL);
  g_autoptr (PlGraph) gm = pl_test_node_graph ("GlobalMaxPool", 1, in, 0, 1, NULL);
  PlTensor **oa = pl_test_run (ga, in, 0), **om = pl_test_run (gm, in, 0);

  check (oa[0], "[2, 2, 1, 1]", PL_VALS (2.5, -3.5, 1.5, 2.25));
  check (om[0], "[2, 2, 1, 1]", PL_VALS (4, -1, 5, 3));
  pl_interp_free_outputs (oa, 1);
  pl_interp_free_outputs (om, 1);
}

static void
test_pool_shapes (void)
{
  g_autoptr (PlGraph) g = pl_graph_new ("t");
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 4, PL_DIMS (1, 1, 2, 2), NULL);
  PlTensor *in[] = { x };
  PlNode *node, *nb, *nk;
  g_autoptr (PlGraph) big = pl_test_node_graph ("MaxPool", 1, in, 0, 1, &nb);
  g_autoptr (PlGraph) nokernel = pl_test_node_graph ("AveragePool", 1, in, 0, 1, &nk);
  g_autofree char *s = NULL, *si = NULL;
  PlValue *v;

  /* A symbolic batch passes through; so does the Indices output's shape. */
  v = sym_input (g, "x", 4, PL_DIMS (-1, 3, 32, 32));
  node = add_node (g, "MaxPool", 1, &v, 2);
  SET_INTS (node, "kernel_shape", 2, 2);
  SET_INTS (node, "strides", 2, 2);
  s = inferred_shape (g, 0);
  si = pl_shape_to_string (&node->outputs[1]->shape);
  g_assert_cmpstr (s, ==, "[N, 3, 16, 16]");
  g_assert_cmpstr (si, ==, "[N, 3, 16, 16]");
  g_assert_cmpint (node->outputs[1]->dtype, ==, PL_DTYPE_I64);

  SET_INTS (nb, "kernel_shape", 3, 3);
  pl_test_expect_infer_error (big, "does not fit");
  pl_test_expect_infer_error (nokernel, "kernel_shape");
}

/* --- losses ---------------------------------------------------------------------- */

static void
test_nll_loss (void)
{
  /* input [3,4,2], weights [4], ignore_index -1 (one target ignored). */
  const char *reductions[] = { "none", "sum", "mean" };
  const char *shapes[] = { "[3, 2]", "[]", "[]" };
  const double *want[] = { PL_VALS (1.25, 0, 0.5, 0, -3, 1), PL_VALS (-0.25), PL_VALS (-0.0263157897) };

  for (int r = 0; r < 3; r++)
    {
      g_autoptr (PlTensor) x = pat (3, PL_DIMS (3, 4, 2), 7, 11);
      g_autoptr (PlTensor) t = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (3, 2), PL_VALS (0, 3, 1, -1, 2, 2));
      g_autoptr (PlTensor) w = f32 (1, PL_DIMS (4), PL_VALS (0.5, 1, 2, 4));
      PlTensor *in[] = { x, t, w };
      PlNode *node;
      g_autoptr (PlGraph) g = pl_test_node_graph ("NegativeLogLikelihoodLoss", 3, in, 0x4, 1, &node);
      PlTensor **out;

      pl_node_set_attr_string (node, "reduction", reductions[r]);
      pl_node_set_attr_int (node, "ignore_index", -1);
      out = pl_test_run (g, in, 0x4);
      check (out[0], shapes[r], want[r]);
      pl_interp_free_outputs (out, 1);
    }
}

static void
test_nll_loss_default (void)
{
  /* No weights, default reduction mean, int32 targets. */
  g_autoptr (PlTensor) x = pat (3, PL_DIMS (3, 4, 2), 7, 11);
  g_autoptr (PlTensor) t = pl_test_tensor (PL_DTYPE_I32, 2, PL_DIMS (3, 2), PL_VALS (0, 3, 1, 0, 2, 2));
  PlTensor *in[] = { x, t };
  g_autoptr (PlGraph) g = pl_test_node_graph ("NegativeLogLikelihoodLoss", 2, in, 0, 1, NULL);
  PlTensor **out = pl_test_run (g, in, 0);

  check (out[0], "[]", PL_VALS (0.0833333358));
  pl_interp_free_outputs (out, 1);
}

static void
test_sce_loss (void)
{
  /* scores [3,5], labels [1,2,4] with 2 ignored: mean over the other two,
   * and the log_prob output. */
  g_autoptr (PlTensor) s = pat (2, PL_DIMS (3, 5), 7, 11);
  g_autoptr (PlTensor) l = pl_test_tensor (PL_DTYPE_I64, 1, PL_DIMS (3), PL_VALS (1, 2, 4));
  PlTensor *in[] = { s, l };
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("SoftmaxCrossEntropyLoss", 2, in, 0, 2, &node);
  PlTensor **out;

  pl_node_set_attr_int (node, "ignore_index", 2);
  out = pl_test_run (g, in, 0);
  check (out[0], "[]", PL_VALS (1.05154812));
  check (out[1], "[3, 5]",
         PL_VALS (-5.33318167, -1.83318167, -3.83318167, -0.333181667, -2.33318167,
                  -4.08242731, -0.58242731, -2.58242731, -4.58242731, -1.08242731,
                  -3.26991458, -5.26991458, -1.76991458, -3.76991458, -0.26991458));
  pl_interp_free_outputs (out, 2);
}

static void
test_sce_loss_weights (void)
{
  /* scores [2,3,2] (N, C, d1), per-class weights, no reduction. */
  g_autoptr (PlTensor) s = pat (3, PL_DIMS (2, 3, 2), 5, 7);
  g_autoptr (PlTensor) l = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (2, 2), PL_VALS (0, 2, 1, 1));
  g_autoptr (PlTensor) w = f32 (1, PL_DIMS (3), PL_VALS (1, 2, 0.5));
  PlTensor *in[] = { s, l, w };
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("SoftmaxCrossEntropyLoss", 3, in, 0, 1, &node);
  PlTensor **out;

  pl_node_set_attr_string (node, "reduction", "none");
  out = pl_test_run (g, in, 0);
  check (out[0], "[2, 2]", PL_VALS (3.24131131, 0.527478456, 0.61271143, 3.48262262));
  pl_interp_free_outputs (out, 1);
}

static void
test_loss_errors (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 3, PL_DIMS (3, 4, 2), NULL);
  g_autoptr (PlTensor) t = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (3, 5), NULL);
  g_autoptr (PlTensor) w = pl_test_tensor (PL_DTYPE_F32, 1, PL_DIMS (5), NULL);
  g_autoptr (PlTensor) t_ok = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (3, 2), PL_VALS (0, 1, 2, 4, 0, 0));
  PlTensor *in[] = { x, t }, *in_w[] = { x, t_ok, w }, *in_ok[] = { x, t_ok };
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("NegativeLogLikelihoodLoss", 2, in, 0, 1, NULL);
  g_autoptr (PlGraph) gw = pl_test_node_graph ("SoftmaxCrossEntropyLoss", 3, in_w, 0, 1, NULL);
  g_autoptr (PlGraph) gr = pl_test_node_graph ("NegativeLogLikelihoodLoss", 2, in_ok, 0, 1, NULL);
  g_autoptr (PlGraph) gx = pl_test_node_graph ("NegativeLogLikelihoodLoss", 2, in_ok, 0, 1, &node);

  pl_test_expect_infer_error (g, "[3, 4, 2] and [3, 5]");
  pl_test_expect_infer_error (gw, "[3, 4, 2] and [5]");
  /* Target 4 is not a class of 4 (and not ignored). */
  pl_test_expect_run_error (gr, in_ok, 0, "target 4 is out of range [0, 4)");
  pl_node_set_attr_string (node, "reduction", "average");
  pl_test_expect_infer_error (gx, "reduction 'average'");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_ops_init ();

  g_test_add_func ("/Passlab/OpsNN/matmul-2d", test_matmul_2d);
  g_test_add_func ("/Passlab/OpsNN/matmul-1d", test_matmul_1d);
  g_test_add_func ("/Passlab/OpsNN/matmul-batch-broadcast", test_matmul_batch_broadcast);
  g_test_add_func ("/Passlab/OpsNN/matmul-int64", test_matmul_int64);
  g_test_add_func ("/Passlab/OpsNN/matmul-shapes", test_matmul_shapes);
  g_test_add_func ("/Passlab/OpsNN/gemm", test_gemm);
  g_test_add_func ("/Passlab/OpsNN/gemm-no-c", test_gemm_no_c);
  g_test_add_func ("/Passlab/OpsNN/gemm-errors", test_gemm_errors);
  g_test_add_func ("/Passlab/OpsNN/conv-basic", test_conv_basic);
  g_test_add_func ("/Passlab/OpsNN/conv-strided-padded", test_conv_strided_padded);
  g_test_add_func ("/Passlab/OpsNN/conv-grouped", test_conv_grouped);
  g_test_add_func ("/Passlab/OpsNN/conv-auto-pad", test_conv_auto_pad);
  g_test_add_func ("/Passlab/OpsNN/conv-3d", test_conv_3d);
  g_test_add_func ("/Passlab/OpsNN/conv-shapes", test_conv_shapes);
  g_test_add_func ("/Passlab/OpsNN/conv-errors", test_conv_errors);
  g_test_add_func ("/Passlab/OpsNN/conv-resnet-block", test_conv_resnet_block);
  g_test_add_func ("/Passlab/OpsNN/convtranspose-output-padding", test_convtranspose_output_padding);
  g_test_add_func ("/Passlab/OpsNN/convtranspose-grouped", test_convtranspose_grouped);
  g_test_add_func ("/Passlab/OpsNN/convtranspose-output-shape", test_convtranspose_output_shape);
  g_test_add_func ("/Passlab/OpsNN/convtranspose-errors", test_convtranspose_errors);
  g_test_add_func ("/Passlab/OpsNN/einsum", test_einsum);
  g_test_add_func ("/Passlab/OpsNN/einsum-int", test_einsum_int);
  g_test_add_func ("/Passlab/OpsNN/einsum-errors", test_einsum_errors);
  g_test_add_func ("/Passlab/OpsNN/maxpool-indices", test_maxpool_indices);
  g_test_add_func ("/Passlab/OpsNN/maxpool-ceil-dilations", test_maxpool_ceil_dilations);
  g_test_add_func ("/Passlab/OpsNN/maxpool-uint8", test_maxpool_uint8);
  g_test_add_func ("/Passlab/OpsNN/averagepool", test_averagepool);
  g_test_add_func ("/Passlab/OpsNN/averagepool-ceil", test_averagepool_ceil);
  g_test_add_func ("/Passlab/OpsNN/lppool", test_lppool);
  g_test_add_func ("/Passlab/OpsNN/global-pool", test_global_pool);
  g_test_add_func ("/Passlab/OpsNN/pool-shapes", test_pool_shapes);
  g_test_add_func ("/Passlab/OpsNN/nll-loss", test_nll_loss);
  g_test_add_func ("/Passlab/OpsNN/nll-loss-default", test_nll_loss_default);
  g_test_add_func ("/Passlab/OpsNN/sce-loss", test_sce_loss);
  g_test_add_func ("/Passlab/OpsNN/sce-loss-weights", test_sce_loss_weights);
  g_test_add_func ("/Passlab/OpsNN/loss-errors", test_loss_errors);
  return g_test_run ();
}
