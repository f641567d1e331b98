/* test-shape-tensor.c — dtypes, shapes, broadcasting and tensors. */
#include "test-util.h"

#include <math.h>
#include <string.h>

static void
test_dtype_names (void)
{
  for (int d = 1; d < PL_DTYPE_COUNT; d++)
    {
      g_assert_cmpint (pl_dtype_from_name (pl_dtype_name (d)), ==, d);
      g_assert_cmpint (pl_dtype_from_onnx (pl_dtype_to_onnx (d)), ==, d);
      g_assert_cmpuint (pl_dtype_size (d), >, 0);
    }
  g_assert_cmpint (pl_dtype_from_name ("f31"), ==, PL_DTYPE_UNDEFINED);
  g_assert_cmpint (pl_dtype_to_onnx (PL_DTYPE_F32), ==, 1);
  g_assert_cmpint (pl_dtype_to_onnx (PL_DTYPE_BF16), ==, 16);
}

static void
test_half_conversions (void)
{
  /* Exactly representable values survive both ways. */
  const float exact[] = { 0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.9604645e-08f, 0.333251953125f };
  for (guint i = 0; i < G_N_ELEMENTS (exact); i++)
    g_assert_cmpfloat (pl_f16_to_f32 (pl_f32_to_f16 (exact[i])), ==, exact[i]);
  g_assert_cmphex (pl_f32_to_f16 (1.0f), ==, 0x3c00);
  g_assert_cmphex (pl_f32_to_f16 (65520.0f), ==, 0x7c00);          /* rounds to inf */
  g_assert_cmphex (pl_f32_to_f16 (1.0f + 1.0f / 2048), ==, 0x3c00); /* tie to even */
  g_assert_true (isnan (pl_f16_to_f32 (pl_f32_to_f16 (NAN))));
  g_assert_cmphex (pl_f32_to_bf16 (1.0f), ==, 0x3f80);
  g_assert_cmpfloat (pl_bf16_to_f32 (pl_f32_to_bf16 (3.140625f)), ==, 3.140625f);
  /* Every f16 bit pattern that is a number converts back to itself. */
  for (guint h = 0; h < 0x10000; h++)
    if (((h >> 10) & 0x1f) != 0x1f)
      g_assert_cmphex (pl_f32_to_f16 (pl_f16_to_f32 ((uint16_t) h)), ==, h);
}

static void
test_shape_broadcast (void)
{
  g_autoptr (GError) error = NULL;
  PlShape a = { .rank = 3, .dims = { pl_dim_symbol ("N"), pl_dim_static (1), pl_dim_static (4) } };
  PlShape b = pl_shape_from_dims (2, PL_DIMS (3, 1));
  PlShape out;
  g_assert_true (pl_shape_broadcast (&a, &b, &out, &error));
  g_autofree char *s = pl_shape_to_string (&out);
  g_assert_cmpstr (s, ==, "[N, 3, 4]");

  PlShape c = pl_shape_from_dims (1, PL_DIMS (5));
  g_assert_false (pl_shape_broadcast (&a, &c, &out, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_SHAPE);
  g_assert_nonnull (strstr (error->message, "do not broadcast"));

  PlShape u = pl_shape_unknown ();
  g_autofree char *us = pl_shape_to_string (&u);
  g_assert_cmpstr (us, ==, "[*]");
  g_assert_cmpint (pl_shape_numel (&a), ==, -1);
  g_assert_cmpint (pl_shape_numel (&b), ==, 3);
}

static void
test_tensor_overflow (void)
{
  g_autoptr (GError) error = NULL;
  PlTensor *t = pl_tensor_new (PL_DTYPE_F32, 3, PL_DIMS (1 << 20, 1 << 20, 1 << 20), &error);
  g_assert_null (t);
  g_assert_error (error, PL_ERROR, PL_ERROR_OVERFLOW);
  g_clear_error (&error);
  t = pl_tensor_new (PL_DTYPE_F32, 1, PL_DIMS (-3), &error);
  g_assert_null (t);
  g_assert_error (error, PL_ERROR, PL_ERROR_OVERFLOW);
}

static void
test_tensor_cast_and_access (void)
{
  g_autoptr (PlTensor) f = pl_test_tensor (PL_DTYPE_F32, 1, PL_DIMS (4), PL_VALS (1.7, -1.7, 300, 0));
  g_autoptr (PlTensor) i8 = pl_tensor_cast (f, PL_DTYPE_I8);
  g_assert_cmpint (pl_tensor_get_i64 (i8, 0), ==, 1);   /* truncation toward zero */
  g_assert_cmpint (pl_tensor_get_i64 (i8, 1), ==, -1);
  g_autoptr (PlTensor) b = pl_tensor_cast (f, PL_DTYPE_BOOL);
  g_assert_cmpint (pl_tensor_get_i64 (b, 0), ==, 1);
  g_assert_cmpint (pl_tensor_get_i64 (b, 3), ==, 0);
  g_autoptr (PlTensor) i64 = pl_test_tensor (PL_DTYPE_I64, 1, PL_DIMS (1), NULL);
  pl_tensor_set_i64 (i64, 0, INT64_MAX);
  g_assert_cmpint (pl_tensor_get_i64 (i64, 0), ==, INT64_MAX);   /* no trip through double */

  double worst;
  g_autoptr (PlTensor) g = pl_tensor_copy (f);
  g_assert_true (pl_tensor_allclose (f, g, 1e-3, 1e-7, &worst));
  pl_tensor_set_f64 (g, 2, 301);
  g_assert_false (pl_tensor_allclose (f, g, 1e-3, 1e-7, &worst));
  g_assert_cmpfloat (worst, >, 1.0);
  g_assert_cmpfloat_with_epsilon (pl_tensor_max_rel_error (g, f, 1e-6), 1.0 / 300, 1e-9);

  g_autofree char *s = pl_tensor_summary (f, 2);
  g_assert_cmpstr (s, ==, "f32[4] min=-1.7 max=300 mean=75 [1.7, -1.7, ...]");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_ops_init ();
  g_test_add_func ("/Passlab/Shape/dtype-names", test_dtype_names);
  g_test_add_func ("/Passlab/Shape/half-conversions", test_half_conversions);
  g_test_add_func ("/Passlab/Shape/broadcast", test_shape_broadcast);
  g_test_add_func ("/Passlab/Tensor/overflow", test_tensor_overflow);
  g_test_add_func ("/Passlab/Tensor/cast-and-access", test_tensor_cast_and_access);
  return g_test_run ();
}
