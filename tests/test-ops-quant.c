/* test-ops-quant.c — QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
 * MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv: rounding (ties
 * to even), saturation, per-axis parameters, zero points, the float32
 * precision of the ONNX reference, shape errors; and the generated C of
 * QuantizeLinear / DequantizeLinear after fusion against the reference,
 * bit for bit. Expected values are worked out by hand in the comments. */
#include <math.h>
#include <string.h>

#include "runtime.h"
#include "test-util.h"

static PlTensor *
tensor (PlDType t, int rank, const int64_t *dims, const double *values)
{
  return pl_test_tensor (t, rank, dims, values);
}

/* Runs a one-node graph of op on inputs (all graph inputs) and returns output k. */
static PlTensor *
run_one (const char *op, int n, PlTensor *const *inputs, int n_out, int k, void (*attrs) (PlNode *))
{
  PlNode *node = NULL;
  g_autoptr (PlGraph) g = pl_test_node_graph (op, n, inputs, 0, n_out, &node);
  if (attrs)
    attrs (node);
  PlTensor **out = pl_test_run (g, inputs, 0);
  PlTensor *r = pl_tensor_ref (out[k]);
  pl_interp_free_outputs (out, n_out);
  return r;
}

static void
axis0 (PlNode *n)
{
  pl_node_set_attr_int (n, "axis", 0);
}

static void
test_quantize (void)
{
  /* ties go to the even integer: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> -0; then + zero point 10;
   * 300 saturates to 255 and -300 to 0; NaN quantizes to the zero point */
  g_autoptr (PlTensor) x = tensor (PL_DTYPE_F32, 1, PL_DIMS (8), PL_VALS (0.5, 1.5, 2.5, -0.5, 300, -300, 7.2, NAN));
  g_autoptr (PlTensor) s = tensor (PL_DTYPE_F32, 0, NULL, PL_VALS (1));
  g_autoptr (PlTensor) zp = tensor (PL_DTYPE_U8, 0, NULL, PL_VALS (10));
  g_autoptr (PlTensor) y = run_one ("QuantizeLinear", 3, (PlTensor *[]) { x, s, zp }, 1, 0, NULL);
  g_assert_cmpint (y->dtype, ==, PL_DTYPE_U8);
  pl_test_assert_values (y, PL_VALS (10, 12, 12, 10, 255, 0, 17, 10));

  /* int8, scale 0.5: x / 0.5 = 2x; -129 saturates to -128 */
  g_autoptr (PlTensor) x8 = tensor (PL_DTYPE_F32, 1, PL_DIMS (4), PL_VALS (1.25, -1.25, 100, -64.5));
  g_autoptr (PlTensor) s8 = tensor (PL_DTYPE_F32, 0, NULL, PL_VALS (0.5));
  g_autoptr (PlTensor) z8 = tensor (PL_DTYPE_I8, 0, NULL, PL_VALS (0));
  g_autoptr (PlTensor) y8 = run_one ("QuantizeLinear", 3, (PlTensor *[]) { x8, s8, z8 }, 1, 0, NULL);
  g_assert_cmpint (y8->dtype, ==, PL_DTYPE_I8);
  pl_test_assert_values (y8, PL_VALS (2, -2, 127, -128));   /* 2.5 -> 2, -2.5 -> -2 */

  /* no zero point: uint8, zero point 0 */
  g_autoptr (PlTensor) yn = run_one ("QuantizeLinear", 2, (PlTensor *[]) { x8, s8 }, 1, 0, NULL);
  g_assert_cmpint (yn->dtype, ==, PL_DTYPE_U8);
  pl_test_assert_values (yn, PL_VALS (2, 0, 200, 0));
}

static void
test_quantize_per_axis (void)
{
  /* x [2, 3] with axis 1: column c has scale s[c] and zero point z[c] */
  g_autoptr (PlTensor) x = tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 3), PL_VALS (1, 2, 3, 4, 5, 6));
  g_autoptr (PlTensor) s = tensor (PL_DTYPE_F32, 1, PL_DIMS (3), PL_VALS (1, 2, 4));
  g_autoptr (PlTensor) z = tensor (PL_DTYPE_U8, 1, PL_DIMS (3), PL_VALS (0, 100, 200));
  g_autoptr (PlTensor) y = run_one ("QuantizeLinear", 3, (PlTensor *[]) { x, s, z }, 1, 0, NULL);
  pl_test_assert_values (y, PL_VALS (1, 101, 201, 4, 102, 202));   /* 3/4 = 0.75 -> 1; 5/2 = 2.5 -> 2 */
  /* axis 0: row r has s[r]; here 3 values against 2 rows is an error */
  PlNode *node = NULL;
  g_autoptr (PlGraph) g = pl_test_node_graph ("QuantizeLinear", 3, (PlTensor *[]) { x, s, z }, 0, 1, &node);
  axis0 (node);
  pl_test_expect_infer_error (g, "y_scale has 3 values but the input's axis 0 has 2");
  /* back to x/y: DequantizeLinear per axis inverts it where nothing saturated */
  g_autoptr (PlTensor) d = run_one ("DequantizeLinear", 3, (PlTensor *[]) { y, s, z }, 1, 0, NULL);
  g_assert_cmpint (d->dtype, ==, PL_DTYPE_F32);
  pl_test_assert_values (d, PL_VALS (1, 2, 4, 4, 4, 8));
}

static void
test_dequantize (void)
{
  /* (x - zp) * scale: int32 input, no zero point */
  g_autoptr (PlTensor) x = tensor (PL_DTYPE_I32, 1, PL_DIMS (3), PL_VALS (-7, 0, 1000001));
  g_autoptr (PlTensor) s = tensor (PL_DTYPE_F32, 0, NULL, PL_VALS (0.5));
  g_autoptr (PlTensor) y = run_one ("DequantizeLinear", 2, (PlTensor *[]) { x, s }, 1, 0, NULL);
  pl_test_assert_values (y, PL_VALS (-3.5, 0, 500000.5));
  /* uint8 with a zero point: 0 - 128 does not wrap */
  g_autoptr (PlTensor) u = tensor (PL_DTYPE_U8, 1, PL_DIMS (3), PL_VALS (0, 128, 255));
  g_autoptr (PlTensor) zu = tensor (PL_DTYPE_U8, 0, NULL, PL_VALS (128));
  g_autoptr (PlTensor) yu = run_one ("DequantizeLinear", 3, (PlTensor *[]) { u, s, zu }, 1, 0, NULL);
  pl_test_assert_values (yu, PL_VALS (-64, 0, 63.5));
  /* a zero point of another type than x is an error */
  g_autoptr (PlTensor) zi = tensor (PL_DTYPE_I8, 0, NULL, PL_VALS (1));
  g_autoptr (PlGraph) g = pl_test_node_graph ("DequantizeLinear", 3, (PlTensor *[]) { u, s, zi }, 0, 1, NULL);
  pl_test_expect_infer_error (g, "zero point) is i8 but input 0 is u8");
}

static void
test_dynamic_quantize (void)
{
  /* range [min (0, -1), max (0, 2.5)] = [-1, 2.5]: scale 3.5 / 255, zero point rint (1 / scale) = 73 */
  g_autoptr (PlTensor) x = tensor (PL_DTYPE_F32, 1, PL_DIMS (4), PL_VALS (-1, 0, 1, 2.5));
  PlNode *node = NULL;
  g_autoptr (PlGraph) g = pl_test_node_graph ("DynamicQuantizeLinear", 1, (PlTensor *[]) { x }, 0, 3, &node);
  PlTensor **out = pl_test_run (g, (PlTensor *[]) { x }, 0);
  float scale = 3.5f / 255.0f;
  g_assert_cmpfloat (((float *) out[1]->data)[0], ==, scale);
  g_assert_cmpint (((guint8 *) out[2]->data)[0], ==, 73);
  pl_test_assert_values (out[0], PL_VALS (0, 73, rint (1.0f / scale) + 73, 255));
  pl_interp_free_outputs (out, 3);
  /* all zeros: scale 0, everything quantizes to 0 */
  g_autoptr (PlTensor) z = tensor (PL_DTYPE_F32, 1, PL_DIMS (2), NULL);
  g_autoptr (PlGraph) g0 = pl_test_node_graph ("DynamicQuantizeLinear", 1, (PlTensor *[]) { z }, 0, 3, NULL);
  out = pl_test_run (g0, (PlTensor *[]) { z }, 0);
  pl_test_assert_values (out[0], PL_VALS (0, 0));
  g_assert_cmpfloat (((float *) out[1]->data)[0], ==, 0);
  pl_interp_free_outputs (out, 3);
}

static void
test_matmul_integer (void)
{
  /* A [2, 2] uint8 with per-row zero points (1, 2), B [2, 2] uint8 with zero point 3:
   * (A - [[1], [2]]) = [[0, 1], [1, 2]], (B - 3) = [[-3, -2], [-1, 0]] */
  g_autoptr (PlTensor) a = tensor (PL_DTYPE_U8, 2, PL_DIMS (2, 2), PL_VALS (1, 2, 3, 4));
  g_autoptr (PlTensor) b = tensor (PL_DTYPE_U8, 2, PL_DIMS (2, 2), PL_VALS (0, 1, 2, 3));
  g_autoptr (PlTensor) az = tensor (PL_DTYPE_U8, 1, PL_DIMS (2), PL_VALS (1, 2));
  g_autoptr (PlTensor) bz = tensor (PL_DTYPE_U8, 0, NULL, PL_VALS (3));
  g_autoptr (PlTensor) y = run_one ("MatMulInteger", 4, (PlTensor *[]) { a, b, az, bz }, 1, 0, NULL);
  g_assert_cmpint (y->dtype, ==, PL_DTYPE_I32);
  pl_test_assert_values (y, PL_VALS (-1, 0, -5, -2));
  /* inner dims that differ: an error naming both shapes */
  g_autoptr (PlTensor) c = tensor (PL_DTYPE_U8, 2, PL_DIMS (3, 2), NULL);
  g_autoptr (PlGraph) g = pl_test_node_graph ("MatMulInteger", 2, (PlTensor *[]) { a, c }, 0, 1, NULL);
  pl_test_expect_infer_error (g, "inner dimensions differ");
}

static void
test_qlinear_matmul (void)
{
  /* (A - 0) @ (B - 0) = [[2, 3]] for A = [[1, 1]], B = [[1, 2], [1, 1]]; times
   * a_scale * b_scale / y_scale = 0.5 * [1, 3] / 1 per column of B: [1, 4.5] -> rint [1, 4] (tie to
   * even), + y_zero_point 100 */
  g_autoptr (PlTensor) a = tensor (PL_DTYPE_U8, 2, PL_DIMS (1, 2), PL_VALS (1, 1));
  g_autoptr (PlTensor) b = tensor (PL_DTYPE_U8, 2, PL_DIMS (2, 2), PL_VALS (1, 2, 1, 1));
  g_autoptr (PlTensor) as = tensor (PL_DTYPE_F32, 0, NULL, PL_VALS (0.5));
  g_autoptr (PlTensor) bs = tensor (PL_DTYPE_F32, 1, PL_DIMS (2), PL_VALS (1, 3));
  g_autoptr (PlTensor) ys = tensor (PL_DTYPE_F32, 0, NULL, PL_VALS (1));
  g_autoptr (PlTensor) zero = tensor (PL_DTYPE_U8, 0, NULL, PL_VALS (0));
  g_autoptr (PlTensor) bzero = tensor (PL_DTYPE_U8, 1, PL_DIMS (2), PL_VALS (0, 0));
  g_autoptr (PlTensor) yz = tensor (PL_DTYPE_U8, 0, NULL, PL_VALS (100));
  g_autoptr (PlTensor) y = run_one ("QLinearMatMul", 8, (PlTensor *[]) { a, as, zero, b, bs, bzero, ys, yz }, 1, 0, NULL);
  g_assert_cmpint (y->dtype, ==, PL_DTYPE_U8);
  pl_test_assert_values (y, PL_VALS (101, 104));
}

static void
conv_attrs (PlNode *n)
{
  pl_node_set_attr_ints (n, "kernel_shape", PL_DIMS (2, 2), 2);
  pl_node_set_attr_ints (n, "pads", PL_DIMS (0, 0, 1, 1), 4);
}

static void
test_conv_integer (void)
{
  /* x [1, 1, 2, 2] = [[3, 4], [5, 6]] - 2, w [2, 1, 2, 2] per output channel zero points (1, 0),
   * end pads 1: outputs [[sum, ..], ..] by hand below */
  g_autoptr (PlTensor) x = tensor (PL_DTYPE_U8, 4, PL_DIMS (1, 1, 2, 2), PL_VALS (3, 4, 5, 6));
  g_autoptr (PlTensor) w = tensor (PL_DTYPE_U8, 4, PL_DIMS (2, 1, 2, 2), PL_VALS (2, 1, 1, 1, 1, 0, 0, 0));
  g_autoptr (PlTensor) xz = tensor (PL_DTYPE_U8, 0, NULL, PL_VALS (2));
  g_autoptr (PlTensor) wz = tensor (PL_DTYPE_U8, 1, PL_DIMS (2), PL_VALS (1, 0));
  g_autoptr (PlTensor) y = run_one ("ConvInteger", 4, (PlTensor *[]) { x, w, xz, wz }, 1, 0, conv_attrs);
  g_assert_cmpint (y->dtype, ==, PL_DTYPE_I32);
  /* x' = [[1, 2], [3, 4]]; channel 0: w' = [[1, 0], [0, 0]] picks x'(i, j); channel 1: w' = [[1, 0], [0, 0]] too */
  pl_test_assert_values (y, PL_VALS (1, 2, 3, 4, 1, 2, 3, 4));
  /* QLinearConv of the same with scales 1, 1, 2 and bias (10, 0): rint ((v + b) / 2) + 0 */
  g_autoptr (PlTensor) one = tensor (PL_DTYPE_F32, 0, NULL, PL_VALS (1));
  g_autoptr (PlTensor) two = tensor (PL_DTYPE_F32, 0, NULL, PL_VALS (2));
  g_autoptr (PlTensor) yz = tensor (PL_DTYPE_U8, 0, NULL, PL_VALS (0));
  g_autoptr (PlTensor) bias = tensor (PL_DTYPE_I32, 1, PL_DIMS (2), PL_VALS (10, 0));
  g_autoptr (PlTensor) q = run_one ("QLinearConv", 9, (PlTensor *[]) { x, one, xz, w, one, wz, two, yz, bias }, 1, 0, conv_attrs);
  pl_test_assert_values (q, PL_VALS (6, 6, 6, 7, 0, 1, 2, 2));   /* 5.5 -> 6, 6.5 -> 6, 1.5 -> 2 */
}

/* QuantizeLinear per axis and DequantizeLinear, fused with their neighbours
 * and compiled for the cpu: the same bits as the reference (the quotient is
 * never a multiply by the scale's reciprocal, so ties round alike). */
static void
test_generated (void)
{
  if (!pl_backend_available (PL_BACKEND_CPU, NULL))
    {
      g_test_skip ("no cpu backend");
      return;
    }
  g_autoptr (PlGraph) g = pl_test_parse (
    "graph q opset 17 {\n"
    "  input x: f32[2, 3, 5, 7]\n"
    "  const s: f32[3] = [0.1, 0.3, 0.05]\n"
    "  const z: i8[3] = [0, -5, 7]\n"
    "  const z3: i8[] = [0]\n"
    "  const s2: f32[] = [0.25]\n"
    "  const s3: f32[] = [0.3]\n"
    "  a = Mul(x, x)\n"
    "  q = QuantizeLinear(a, s, z) {axis=1}\n"
    "  d = DequantizeLinear(q, s, z) {axis=1}\n"
    "  q2 = QuantizeLinear(d, s2)\n"
    "  q3 = QuantizeLinear(x, s3, z3)\n"
    "  output q\n  output d\n  output q2\n  output q3\n}\n");
  g_autoptr (PlGraph) fused = pl_test_passes (g, "simplify,fuse-library,fuse-loops");
  /* x = k / 4: -2.25 / 0.3f is -7.4999995 in float, but -2.25 * (1 / 0.3f) is -7.5, which rounds to -8 */
  int64_t dims[4] = { 2, 3, 5, 7 };
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 4, dims, NULL);
  for (int64_t i = 0; i < x->numel; i++)
    ((float *) x->data)[i] = (float) ((i % 23) - 11) * 0.25f;
  g_autoptr (GError) error = NULL;
  PlTensor **want = pl_interp_run (g, (PlTensor *[]) { x }, NULL, &error);
  g_assert_no_error (error);
  g_autoptr (PlRunReport) r = NULL;
  PlTensor **got = pl_test_run_backend (fused, PL_BACKEND_CPU, (PlTensor *[]) { x }, &r);
  for (int k = 0; k < r->n_kernels; k++)
    g_assert_false (r->kernels[k].fallback);   /* generated, not the reference */
  for (int k = 0; k < 4; k++)
    {
      g_assert_cmpint (got[k]->numel, ==, want[k]->numel);
      g_assert_cmpmem (got[k]->data, got[k]->numel * pl_dtype_size (got[k]->dtype), want[k]->data,
                       want[k]->numel * pl_dtype_size (want[k]->dtype));
    }
  pl_interp_free_outputs (got, 4);
  pl_interp_free_outputs (want, 4);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_ops_init ();
  g_test_add_func ("/Passlab/Quant/quantize", test_quantize);
  g_test_add_func ("/Passlab/Quant/quantize-per-axis", test_quantize_per_axis);
  g_test_add_func ("/Passlab/Quant/dequantize", test_dequantize);
  g_test_add_func ("/Passlab/Quant/dynamic-quantize", test_dynamic_quantize);
  g_test_add_func ("/Passlab/Quant/matmul-integer", test_matmul_integer);
  g_test_add_func ("/Passlab/Quant/qlinear-matmul", test_qlinear_matmul);
  g_test_add_func ("/Passlab/Quant/conv-integer", test_conv_integer);
  g_test_add_func ("/Passlab/Quant/generated", test_generated);
  return g_test_run ();
}
