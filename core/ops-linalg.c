/* ops-linalg.c — Det and Unique: their shape inference and reference
 * evaluation (ONNX semantics up to opset 17). No backend generates them:
 * they are COMPUTE ops the backends run through the reference fallback.
 *
 * Det is the determinant of each matrix in the last two dims, by LU
 * decomposition with partial pivoting in double (as numpy.linalg.det,
 * which the conformance data come from): the product of the pivots, its
 * sign flipped once per row exchange; a zero pivot column means a singular
 * matrix and a determinant of 0.
 *
 * Unique follows onnx/reference/ops/op_unique.py, which is numpy.unique
 * with return_index, return_inverse and return_counts: the distinct
 * elements (without axis, of the flattened input) or distinct slices along
 * axis, compared element by element in row-major order. sorted=1 gives them
 * in ascending (lexicographic) order, sorted=0 in the order of their first
 * occurrence; indices holds each one's first occurrence, inverse_indices
 * maps every input element or slice to its entry, counts how often each
 * occurs. (The Python reference takes the unsorted slices with np.take
 * along axis 0 whatever the axis; we take them along the axis, as the spec
 * describes.) NaNs compare equal to each other and after every number, as
 * numpy.unique's equal_nan does. The count of distinct entries depends on
 * the data: the first dim of Y (along axis with one), of indices and of
 * counts are unknown to inference, as NonZero's are.
 */
#define G_LOG_DOMAIN "passlab"

#include <math.h>
#include <string.h>

#include "ops-nn-private.h"
#include "ops-shape-private.h"

static const PlDType float_types[] = { PL_DTYPE_F32, PL_DTYPE_F16, PL_DTYPE_BF16, PL_DTYPE_F64, PL_DTYPE_UNDEFINED };

/* --- Det --------------------------------------------------------------------------- */

/* x [..., M, M] -> [...]; fails for a rank below 2 or a matrix that is
 * not square (where both dims are known). */
static bool
det_shape (const PlShape *x, PlShape *out, GError **error)
{
  if (x->rank == PL_RANK_UNKNOWN)
    {
      *out = pl_shape_unknown ();
      return true;
    }
  bool square = x->rank >= 2;
  if (square)
    {
      PlDim rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
      square = !pl_dim_is_static (rows) || !pl_dim_is_static (cols) || rows.size == cols.size;
    }
  if (!square)
    {
      g_autofree char *s = pl_shape_to_string (x);
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "the input must be square matrices [..., M, M], not %s", s);
      return false;
    }
  *out = *x;
  out->rank -= 2;
  return true;
}

static bool
det_infer (PlNode *node, GError **error)
{
  PlShape out;

  if (!pl_require_dtype (node, 0, float_types, error) || !det_shape (&pl_input (node, 0)->shape, &out, error))
    return false;
  pl_set_output (node, 0, pl_input (node, 0)->dtype, &out);
  return true;
}

/* The determinant of the n x n matrix a (row-major), which it overwrites
 * with its LU factors. */
static double
lu_det (double *a, int64_t n)
{
  double det = 1;
  for (int64_t k = 0; k < n; k++)
    {
      int64_t p = k;
      for (int64_t i = k + 1; i < n; i++)
        if (fabs (a[i * n + k]) > fabs (a[p * n + k]))
          p = i;
      if (a[p * n + k] == 0)
        return 0;   /* no pivot in this column: singular */
      if (p != k)
        {
          for (int64_t j = 0; j < n; j++)
            {
              double t = a[k * n + j];
              a[k * n + j] = a[p * n + j];
              a[p * n + j] = t;
            }
          det = -det;
        }
      double pivot = a[k * n + k];
      det *= pivot;
      for (int64_t i = k + 1; i < n; i++)
        {
          double f = a[i * n + k] / pivot;
          for (int64_t j = k + 1; j < n; j++)
            a[i * n + j] -= f * a[k * n + j];
        }
    }
  return det;
}

static bool
det_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  PlShape sx = pl_tensor_shape (x), so;
  if (!det_shape (&sx, &so, error))
    return pl_exec_error (error);
  PlTensor *y = outputs[0] = pl_tensor_new_shape (x->dtype, &so, error);
  if (!y)
    return false;
  const int64_t n = x->dims[x->rank - 1];
  g_autofree double *xv = pl_nn_load_f64 (x);
  g_autofree double *yv = g_new (double, MAX (y->numel, 1));
  for (int64_t b = 0; b < y->numel; b++)
    yv[b] = lu_det (xv + b * n * n, n);
  pl_nn_store_f64 (y, yv);
  return true;
}

/* --- Unique ------------------------------------------------------------------------ */

/* Y is X's shape with the axis dim unknown (without axis: one unknown
 * dim); inverse_indices has one entry per element (per slice). */
static bool
unique_infer (PlNode *node, GError **error)
{
  const PlValue *x = pl_input (node, 0);
  const bool has_axis = pl_node_attr (node, "axis") != NULL;
  PlShape y = { .rank = 1, .dims = { pl_dim_unknown () } }, per = y;
  PlShape inverse = { .rank = 1, .dims = { pl_dim_unknown () } };
  int a = 0;

  if (has_axis)
    {
      if (!pl_require_rank (node, 0, error)
          || !pl_normalize_axis (pl_node_attr_int (node, "axis", 0), x->shape.rank, &a, error))
        return false;
      y = x->shape;
      y.dims[a] = pl_dim_unknown ();
      inverse.dims[0] = x->shape.dims[a];
    }
  else if (pl_shape_is_static (&x->shape))
    inverse.dims[0] = pl_dim_static (pl_shape_numel (&x->shape));
  pl_set_output (node, 0, x->dtype, &y);
  pl_set_output (node, 1, PL_DTYPE_I64, &per);
  pl_set_output (node, 2, PL_DTYPE_I64, &inverse);
  pl_set_output (node, 3, PL_DTYPE_I64, &per);
  return true;
}

/* The input as n slices of `len` elements: slice s's element k lies at
 * (k / inner) * n * inner + s * inner + k % inner. Values are compared as
 * doubles (floats) or int64 (integers, exact). */
typedef struct {
  const double  *f;
  const int64_t *i;
  int64_t        n, inner, len;
} Slices;

static int64_t
slice_at (const Slices *s, int64_t slice, int64_t k)
{
  return (k / s->inner) * s->n * s->inner + slice * s->inner + k % s->inner;
}

/* Orders two values; NaNs equal to each other and after every number. */
static int
compare_values (const Slices *s, int64_t p, int64_t q)
{
  if (s->i)
    return (s->i[p] > s->i[q]) - (s->i[p] < s->i[q]);
  double a = s->f[p], b = s->f[q];
  if (isnan (a) || isnan (b))
    return isnan (a) - isnan (b);
  return (a > b) - (a < b);
}

/* Lexicographic order of two slices. */
static int
compare_slices (const Slices *s, int64_t a, int64_t b)
{
  for (int64_t k = 0; k < s->len; k++)
    {
      int c = compare_values (s, slice_at (s, a, k), slice_at (s, b, k));
      if (c != 0)
        return c;
    }
  return 0;
}

/* Sorts slice numbers; equal slices stay in their input order. */
static gint
by_slice (gconstpointer pa, gconstpointer pb, gpointer data)
{
  int64_t a = *(const int64_t *) pa, b = *(const int64_t *) pb;
  int c = compare_slices (data, a, b);
  return c != 0 ? c : (a > b) - (a < b);
}

static gint
by_first_index (gconstpointer pa, gconstpointer pb, gpointer data)
{
  const int64_t *first = data;
  int64_t a = first[*(const int64_t *) pa], b = first[*(const int64_t *) pb];
  return (a > b) - (a < b);
}

/* What Unique finds: n_unique entries, for each its first slice and count
 * (in output order), and for every slice its entry. */
typedef struct {
  int64_t  n_unique;
  int64_t *first, *count, *inverse;
} UniqueResult;

static void
unique_result_clear (UniqueResult *r)
{
  g_free (r->first);
  g_free (r->count);
  g_free (r->inverse);
}

/* Groups the equal slices: sorted, then (unless `sorted`) in the order of
 * their first occurrence. */
static void
unique_find (const Slices *s, bool sorted, UniqueResult *r)
{
  const int64_t n = s->n;
  g_autofree int64_t *order = g_new (int64_t, MAX (n, 1)), *group_of = g_new (int64_t, MAX (n, 1));
  g_autofree int64_t *rank = g_new (int64_t, MAX (n, 1));

  for (int64_t i = 0; i < n; i++)
    order[i] = i;
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS /* g_sort_array is newer than Debian 12's GLib */
  g_qsort_with_data (order, (gint) n, sizeof *order, by_slice, (gpointer) s);
  G_GNUC_END_IGNORE_DEPRECATIONS
  r->first = g_new (int64_t, MAX (n, 1));
  r->count = g_new0 (int64_t, MAX (n, 1));
  r->inverse = g_new (int64_t, MAX (n, 1));
  r->n_unique = 0;
  for (int64_t i = 0; i < n; i++)
    {
      /* the first of a run of equal slices has the lowest index */
      if (i == 0 || compare_slices (s, order[i - 1], order[i]) != 0)
        r->first[r->n_unique++] = order[i];
      group_of[order[i]] = r->n_unique - 1;
      r->count[r->n_unique - 1]++;
    }
  for (int64_t g = 0; g < r->n_unique; g++)
    rank[g] = g;
  if (!sorted)
    {
      g_autofree int64_t *first = g_memdup2 (r->first, MAX (r->n_unique, 1) * sizeof (int64_t));
      g_autofree int64_t *count = g_memdup2 (r->count, MAX (r->n_unique, 1) * sizeof (int64_t));
      g_autofree int64_t *by_first = g_new (int64_t, MAX (r->n_unique, 1));
      for (int64_t g = 0; g < r->n_unique; g++)
        by_first[g] = g;
      G_GNUC_BEGIN_IGNORE_DEPRECATIONS
      g_qsort_with_data (by_first, (gint) r->n_unique, sizeof *by_first, by_first_index, first);
      G_GNUC_END_IGNORE_DEPRECATIONS
      for (int64_t k = 0; k < r->n_unique; k++)
        {
          r->first[k] = first[by_first[k]];
          r->count[k] = count[by_first[k]];
          rank[by_first[k]] = k;
        }
    }
  for (int64_t i = 0; i < n; i++)
    r->inverse[i] = rank[group_of[i]];
}

/* A 1-D int64 output of n values, when the node has that output. */
static bool
unique_store_ints (const PlNode *node, int i, const int64_t *v, int64_t n, PlTensor **outputs, GError **error)
{
  if (i >= node->n_outputs)
    return true;
  outputs[i] = pl_out_new (PL_DTYPE_I64, 1, &n, error);
  if (!outputs[i])
    return false;
  if (n > 0)
    memcpy (outputs[i]->data, v, n * sizeof (int64_t));
  return true;
}

static bool
unique_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  const bool has_axis = pl_node_attr (node, "axis") != NULL;
  int a = 0;
  if (has_axis && !pl_normalize_axis (pl_node_attr_int (node, "axis", 0), x->rank, &a, error))
    return pl_exec_error (error);
  if (x->numel > G_MAXINT)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "%" G_GINT64_FORMAT " elements are too many to sort", x->numel);
      return false;
    }
  g_autofree double *f = NULL;
  g_autofree int64_t *ints = NULL;
  if (pl_dtype_is_float (x->dtype))
    f = pl_nn_load_f64 (x);
  else
    {
      ints = g_new (int64_t, MAX (x->numel, 1));
      for (int64_t i = 0; i < x->numel; i++)
        ints[i] = pl_tensor_get_i64 (x, i);
    }
  Slices s = { f, ints, x->numel, 1, 1 };
  if (has_axis)
    {
      s.n = x->dims[a];
      s.inner = 1;
      for (int k = a + 1; k < x->rank; k++)
        s.inner *= x->dims[k];
      s.len = s.n > 0 ? x->numel / s.n : 0;
    }

  UniqueResult r;
  unique_find (&s, pl_node_attr_int (node, "sorted", 1) != 0, &r);
  int64_t dims[PL_MAX_RANK] = { r.n_unique };
  if (has_axis)
    {
      memcpy (dims, x->dims, sizeof dims);
      dims[a] = r.n_unique;
    }
  PlTensor *y = outputs[0] = pl_out_new (x->dtype, has_axis ? x->rank : 1, dims, error);
  bool ok = y != NULL;
  if (ok)
    {
      const size_t esize = pl_dtype_size (x->dtype);
      const Slices ys = { NULL, NULL, r.n_unique, s.inner, s.len };   /* y's layout: n_unique slices */
      for (int64_t u = 0; u < r.n_unique; u++)
        for (int64_t k = 0; k < s.len; k++)
          memcpy ((char *) y->data + slice_at (&ys, u, k) * esize,
                  (const char *) x->data + slice_at (&s, r.first[u], k) * esize, esize);
    }
  ok = ok && unique_store_ints (node, 1, r.first, r.n_unique, outputs, error)
       && unique_store_ints (node, 2, r.inverse, s.n, outputs, error)
       && unique_store_ints (node, 3, r.count, r.n_unique, outputs, error);
  unique_result_clear (&r);
  return ok;
}

void
pl_ops_register_linalg (void)
{
  static const PlOpEntry entries[] = {
    { PL_OP_Det, 1, 1, 1, 1, det_infer, det_eval },
    { PL_OP_Unique, 1, 1, 1, 4, unique_infer, unique_eval },
  };
  pl_ops_register (entries, G_N_ELEMENTS (entries));
}
