/* test-ops-linalg.c — Det and Unique on the reference: small cases worked
 * out by hand in the comments (determinants that need a row exchange, a
 * singular matrix, a batch; the distinct elements of a vector sorted and
 * in order of appearance, the distinct columns of a matrix), and bad
 * shapes that must fail with a clear error naming the node. */
#include <math.h>
#include <string.h>

#include "test-util.h"

/* --- Det --------------------------------------------------------------------------- */

/* Det of one tensor of the given shape and values. */
static PlTensor *
det (PlDType dtype, int rank, const int64_t *dims, const double *values)
{
  g_autoptr (PlTensor) x = pl_test_tensor (dtype, rank, dims, values);
  g_autoptr (PlGraph) g = pl_test_node_graph ("Det", 1, &x, 0, 1, NULL);
  PlTensor **out = pl_test_run (g, &x, 0);
  PlTensor *r = pl_tensor_ref (out[0]);
  pl_interp_free_outputs (out, 1);
  g_assert_cmpint (r->dtype, ==, dtype);
  return r;
}

static void
test_det (void)
{
  /* 1 * 4 - 2 * 3 = -2 */
  g_autoptr (PlTensor) a = det (PL_DTYPE_F32, 2, PL_DIMS (2, 2), PL_VALS (1, 2, 3, 4));
  g_assert_cmpint (a->rank, ==, 0);
  pl_test_assert_values (a, PL_VALS (-2));

  /* a zero in the corner: the first column's pivot is row 2. By cofactors
   * along row 0: 0 * (1*3 - 0*0) - 2 * (1*3 - 0*2) + 1 * (1*0 - 1*2) = -8 */
  g_autoptr (PlTensor) b = det (PL_DTYPE_F64, 2, PL_DIMS (3, 3), PL_VALS (0, 2, 1, 1, 1, 0, 2, 0, 3));
  pl_test_assert_values (b, PL_VALS (-8));

  /* row 1 is twice row 0: after the first elimination row 0 is all zeros,
   * and the third pivot is exactly 0 */
  g_autoptr (PlTensor) c = det (PL_DTYPE_F32, 2, PL_DIMS (3, 3), PL_VALS (1, 2, 3, 2, 4, 6, 1, 1, 1));
  g_assert_cmpfloat (pl_tensor_get_f64 (c, 0), ==, 0);

  /* a batch [2, 2, 2, 2]: the identity, a swap (-1), diag(2, 3) (6) and a
   * rotation by 90 degrees (0*0 - (-1)*1 = 1) */
  g_autoptr (PlTensor) d = det (PL_DTYPE_F32, 4, PL_DIMS (2, 2, 2, 2),
                                PL_VALS (1, 0, 0, 1, 0, 1, 1, 0, 2, 0, 0, 3, 0, -1, 1, 0));
  g_assert_cmpint (d->rank, ==, 2);
  g_assert_cmpint (d->dims[0], ==, 2);
  g_assert_cmpint (d->dims[1], ==, 2);
  pl_test_assert_values (d, PL_VALS (1, -1, 6, 1));
}

static void
test_det_errors (void)
{
  /* the node is named in the message: "node 'node' (Det): ..." */
  g_autoptr (PlTensor) rect = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 3), NULL);
  g_autoptr (PlGraph) a = pl_test_node_graph ("Det", 1, &rect, 0, 1, NULL);
  pl_test_expect_infer_error (a, "'node' (Det): the input must be square matrices [..., M, M], not [2, 3]");

  g_autoptr (PlTensor) vec = pl_test_tensor (PL_DTYPE_F32, 1, PL_DIMS (4), NULL);
  g_autoptr (PlGraph) b = pl_test_node_graph ("Det", 1, &vec, 0, 1, NULL);
  pl_test_expect_infer_error (b, "must be square matrices [..., M, M], not [4]");

  g_autoptr (PlTensor) ints = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (2, 2), NULL);
  g_autoptr (PlGraph) c = pl_test_node_graph ("Det", 1, &ints, 0, 1, NULL);
  pl_test_expect_infer_error (c, "input 0 has unsupported dtype i64");
}

/* --- Unique ------------------------------------------------------------------------ */

typedef struct {
  int     sorted;   /* -1: attribute absent (sorted) */
  bool    has_axis;
  int64_t axis;
} UniqueAttrs;

/* Unique of x: its four outputs into out[4]; checks what inference knew. */
static void
unique (PlTensor *x, UniqueAttrs ua, PlTensor **out)
{
  PlNode *node = NULL;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Unique", 1, &x, 0, 4, &node);
  if (ua.sorted >= 0)
    pl_node_set_attr_int (node, "sorted", ua.sorted);
  if (ua.has_axis)
    pl_node_set_attr_int (node, "axis", ua.axis);
  PlTensor **res = pl_test_run (g, &x, 0);

  /* the count of distinct entries depends on the data */
  const PlShape *y = &node->outputs[0]->shape;
  g_assert_cmpint (y->rank, ==, ua.has_axis ? x->rank : 1);
  for (int k = 0; k < y->rank; k++)
    g_assert_true (pl_dim_is_static (y->dims[k]) == (ua.has_axis && k != (ua.axis + x->rank) % x->rank));
  g_assert_false (pl_dim_is_static (node->outputs[1]->shape.dims[0]));
  g_assert_true (pl_dim_is_static (node->outputs[2]->shape.dims[0]));
  g_assert_false (pl_dim_is_static (node->outputs[3]->shape.dims[0]));
  for (int i = 0; i < 4; i++)
    out[i] = pl_tensor_ref (res[i]);
  pl_interp_free_outputs (res, 4);
}

/* Asserts the index outputs (indices, inverse_indices, counts) and frees
 * all four outputs. */
static void
assert_indices (PlTensor **out, const double *indices, const double *inverse, const double *counts)
{
  const double *want[] = { indices, inverse, counts };
  for (int i = 1; i < 4; i++)
    {
      g_assert_cmpint (out[i]->dtype, ==, PL_DTYPE_I64);
      pl_test_assert_values (out[i], want[i - 1]);
    }
  for (int i = 0; i < 4; i++)
    pl_tensor_unref (out[i]);
}

/* The same after asserting y's values. */
static void
assert_unique (PlTensor **out, const double *y, const double *indices, const double *inverse, const double *counts)
{
  pl_test_assert_values (out[0], y);
  assert_indices (out, indices, inverse, counts);
}

static void
test_unique_vector (void)
{
  /* [2, 1, 1, 3, 4, 3]: sorted, 1 first occurs at 1 and twice, 2 at 0, 3 at
   * 3 and twice, 4 at 4; element i maps to its value's place */
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 1, PL_DIMS (6), PL_VALS (2, 1, 1, 3, 4, 3));
  PlTensor *out[4];
  unique (x, (UniqueAttrs) { -1 }, out);
  g_assert_cmpint (out[0]->numel, ==, 4);
  assert_unique (out, PL_VALS (1, 2, 3, 4), PL_VALS (1, 0, 3, 4), PL_VALS (1, 0, 0, 2, 3, 2), PL_VALS (2, 1, 2, 1));

  /* not sorted: in order of first occurrence, 2 1 3 4 */
  unique (x, (UniqueAttrs) { 0 }, out);
  assert_unique (out, PL_VALS (2, 1, 3, 4), PL_VALS (0, 1, 3, 4), PL_VALS (0, 1, 1, 2, 3, 2), PL_VALS (1, 2, 2, 1));

  /* int64 beyond double's exact range: 2^53 and 2^53 + 1 stay distinct;
   * a matrix without axis is flattened */
  const int64_t big = INT64_C (1) << 53;
  g_autoptr (PlTensor) ints = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (2, 2), NULL);
  int64_t iv[] = { big + 1, big, big + 1, -5 };
  memcpy (ints->data, iv, sizeof iv);
  unique (ints, (UniqueAttrs) { 1 }, out);
  g_assert_cmpint (out[0]->numel, ==, 3);
  g_assert_cmpint (pl_tensor_get_i64 (out[0], 0), ==, -5);
  g_assert_cmpint (pl_tensor_get_i64 (out[0], 1), ==, big);
  g_assert_cmpint (pl_tensor_get_i64 (out[0], 2), ==, big + 1);
  assert_indices (out, PL_VALS (3, 1, 0), PL_VALS (2, 1, 2, 0), PL_VALS (1, 1, 2));
}

static void
test_unique_axis (void)
{
  /* the columns of [[1, 0, 1, 0], [2, 3, 2, 5]]: (1,2) at 0 and 2, (0,3)
   * at 1, (0,5) at 3. Sorted lexicographically: (0,3) (0,5) (1,2). */
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 4), PL_VALS (1, 0, 1, 0, 2, 3, 2, 5));
  PlTensor *out[4];
  unique (x, (UniqueAttrs) { 1, true, 1 }, out);
  g_assert_cmpint (out[0]->dims[0], ==, 2);
  g_assert_cmpint (out[0]->dims[1], ==, 3);
  assert_unique (out, PL_VALS (0, 0, 1, 3, 5, 2), PL_VALS (1, 3, 0), PL_VALS (2, 0, 2, 1), PL_VALS (1, 1, 2));

  /* not sorted, axis -1 (the same): (1,2) (0,3) (0,5) */
  unique (x, (UniqueAttrs) { 0, true, -1 }, out);
  assert_unique (out, PL_VALS (1, 0, 0, 2, 3, 5), PL_VALS (0, 1, 3), PL_VALS (0, 1, 0, 2), PL_VALS (2, 1, 1));

  /* the rows of the transpose, axis 0: the same entries as rows */
  g_autoptr (PlTensor) t = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (4, 2), PL_VALS (1, 2, 0, 3, 1, 2, 0, 5));
  unique (t, (UniqueAttrs) { -1, true, 0 }, out);
  assert_unique (out, PL_VALS (0, 3, 0, 5, 1, 2), PL_VALS (1, 3, 0), PL_VALS (2, 0, 2, 1), PL_VALS (1, 1, 2));
}

static void
test_unique_errors (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 2), NULL);
  PlNode *node = NULL;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Unique", 1, &x, 0, 4, &node);
  pl_node_set_attr_int (node, "axis", 2);
  pl_test_expect_infer_error (g, "'node' (Unique): axis 2 out of range for rank 2");

  g_autoptr (PlGraph) h = pl_test_node_graph ("Unique", 1, &x, 0, 5, NULL);
  pl_test_expect_infer_error (h, "5 outputs");
}

/* Empty tensors: a batch of no matrices, a 0 x 0 matrix (the empty
 * product: 1, as numpy), the unique elements of nothing. */
static void
test_empty (void)
{
  g_autoptr (PlTensor) a = det (PL_DTYPE_F32, 3, PL_DIMS (0, 3, 3), NULL);
  g_assert_cmpint (a->rank, ==, 1);
  g_assert_cmpint (a->numel, ==, 0);
  g_autoptr (PlTensor) b = det (PL_DTYPE_F32, 2, PL_DIMS (0, 0), NULL);
  pl_test_assert_values (b, PL_VALS (1));

  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 1, PL_DIMS (0), NULL);
  PlTensor *out[4];
  unique (x, (UniqueAttrs) { 0 }, out);
  for (int i = 0; i < 4; i++)
    {
      g_assert_cmpint (out[i]->rank, ==, 1);
      g_assert_cmpint (out[i]->numel, ==, 0);
      pl_tensor_unref (out[i]);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_ops_init ();
  g_test_add_func ("/Passlab/Linalg/det", test_det);
  g_test_add_func ("/Passlab/Linalg/det-errors", test_det_errors);
  g_test_add_func ("/Passlab/Linalg/unique-vector", test_unique_vector);
  g_test_add_func ("/Passlab/Linalg/unique-axis", test_unique_axis);
  g_test_add_func ("/Passlab/Linalg/unique-errors", test_unique_errors);
  g_test_add_func ("/Passlab/Linalg/empty", test_empty);
  return g_test_run ();
}
