/* ops-index.c — ops that read or write data at computed positions: Gather,
 * GatherElements, GatherND, ScatterElements, ScatterND, Compress, NonZero,
 * OneHot. Registered through pl_ops_register_shape (ops-shape.c).
 *
 * Indices are data: an index outside [-dim, dim) is a run-time error
 * (PL_ERROR_EXEC) checked before any read or write. Gathers and plain
 * scatters copy raw elements; scatter reductions compute in double (int64
 * for integers).
 */
#define G_LOG_DOMAIN "passlab"

#include <math.h>
#include <string.h>

#include "ops-shape-private.h"

static const PlDType index_dtypes[] = { PL_DTYPE_I64, PL_DTYPE_I32, PL_DTYPE_UNDEFINED };

/* Maps an index in [-dim, dim) to [0, dim); anything else is an error
 * (code: PL_ERROR_EXEC at run time, PL_ERROR_SHAPE for constants). */
static bool
check_index (int64_t i, int64_t dim, int64_t *out, PlErrorCode code, GError **error)
{
  if (i < -dim || i >= dim)
    {
      g_set_error (error, PL_ERROR, code, "index %" G_GINT64_FORMAT
                   " out of range for an axis of size %" G_GINT64_FORMAT, i, dim);
      return false;
    }
  *out = i < 0 ? i + dim : i;
  return true;
}

static bool
fix_index (int64_t i, int64_t dim, int64_t *out, GError **error)
{
  return check_index (i, dim, out, PL_ERROR_EXEC, error);
}

static int64_t
prod (const int64_t *dims, int from, int to)
{
  return from < to ? pl_dims_product (to - from, dims + from) : 1;
}

/* Two dims that must agree: fails only when both are static and differ. */
static bool
dims_agree (PlDim a, PlDim b)
{
  return !pl_dim_is_static (a) || !pl_dim_is_static (b) || a.size == b.size;
}

/* Element i of src copied over element j of dst (same dtype). */
static inline void
copy_elem (PlTensor *dst, int64_t j, const PlTensor *src, int64_t i)
{
  size_t esize = pl_dtype_size (dst->dtype);
  memcpy ((char *) dst->data + j * esize, (const char *) src->data + i * esize, esize);
}

/* --- Gather --------------------------------------------------------------- */

static bool
gather_shape (const PlNode *node, const PlShape *data, const PlShape *idx, PlShape *out,
              int *axis, GError **error)
{
  int a;
  if (data->rank == PL_RANK_UNKNOWN || idx->rank == PL_RANK_UNKNOWN)
    {
      *out = pl_shape_unknown ();
      return true;
    }
  if (!pl_normalize_axis (pl_node_attr_int (node, "axis", 0), data->rank, &a, error)
      || !pl_check_out_rank (data->rank - 1 + idx->rank, error))
    return false;
  out->rank = 0;
  for (int k = 0; k < a; k++)
    out->dims[out->rank++] = data->dims[k];
  for (int k = 0; k < idx->rank; k++)
    out->dims[out->rank++] = idx->dims[k];
  for (int k = a + 1; k < data->rank; k++)
    out->dims[out->rank++] = data->dims[k];
  if (axis != NULL)
    *axis = a;
  return true;
}

static bool
infer_gather (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0), *idx = pl_input (node, 1);
  PlTensor *c = pl_input_constant (node, 1);
  PlShape out;
  int a;

  if (!pl_require_dtype (node, 1, index_dtypes, error)
      || !gather_shape (node, &x->shape, &idx->shape, &out, &a, error))
    return false;
  /* constant indices are checked now: a bad one is a bad graph */
  if (c != NULL && out.rank != PL_RANK_UNKNOWN && pl_dim_is_static (x->shape.dims[a]))
    for (int64_t i = 0; i < c->numel; i++)
      {
        int64_t v;
        if (!check_index (pl_tensor_get_i64 (c, i), x->shape.dims[a].size, &v, PL_ERROR_SHAPE,
                          error))
          return false;
      }
  pl_set_output (node, 0, x->dtype, &out);
  return true;
}

static bool
eval_gather (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  PlShape xs = pl_tensor_shape (x), is = pl_tensor_shape (inputs[1]), out;
  int a, n;
  g_autofree int64_t *idx = pl_tensor_to_ints (inputs[1], &n);
  int64_t outer, inner, dim;
  size_t block;

  if (!gather_shape (node, &xs, &is, &out, &a, error))
    return pl_exec_error (error);
  dim = x->dims[a];
  for (int i = 0; i < n; i++)
    if (!fix_index (idx[i], dim, &idx[i], error))
      return false;
  outputs[0] = pl_tensor_new_shape (x->dtype, &out, error);
  if (outputs[0] == NULL)
    return false;
  outer = prod (x->dims, 0, a);
  inner = prod (x->dims, a + 1, x->rank);
  block = (size_t) inner * pl_dtype_size (x->dtype);
  for (int64_t o = 0; o < outer; o++)
    for (int i = 0; i < n; i++)
      memcpy ((char *) outputs[0]->data + (o * n + i) * block,
              (const char *) x->data + (o * dim + idx[i]) * block, block);
  return true;
}

/* --- GatherElements, ScatterElements ---------------------------------------- */

/* Checks data/indices(/updates) shapes of the *Elements ops; *axis normalized. */
static bool
elements_check (const PlNode *node, const PlShape *data, const PlShape *idx,
                const PlShape *upd, int *axis, GError **error)
{
  if (data->rank == PL_RANK_UNKNOWN || idx->rank == PL_RANK_UNKNOWN)
    return true;
  if (data->rank != idx->rank)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "indices have rank %d, data rank %d",
                   idx->rank, data->rank);
      return false;
    }
  if (!pl_normalize_axis (pl_node_attr_int (node, "axis", 0), data->rank, axis, error))
    return false;
  for (int k = 0; k < data->rank; k++)
    if (k != *axis && pl_dim_is_static (data->dims[k]) && pl_dim_is_static (idx->dims[k])
        && idx->dims[k].size > data->dims[k].size)
      {
        g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "indices dim %d (%" G_GINT64_FORMAT
                     ") exceeds the data's (%" G_GINT64_FORMAT ")", k, idx->dims[k].size,
                     data->dims[k].size);
        return false;
      }
  if (upd != NULL && upd->rank != PL_RANK_UNKNOWN)
    {
      bool same = upd->rank == idx->rank;
      for (int k = 0; same && k < idx->rank; k++)
        same = dims_agree (upd->dims[k], idx->dims[k]);
      if (!same)
        {
          g_autofree char *a = pl_shape_to_string (upd);
          g_autofree char *b = pl_shape_to_string (idx);
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "updates %s and indices %s differ", a, b);
          return false;
        }
    }
  return true;
}

/* Data offsets of every element of indices (shape of `idx`), with the axis
 * coordinate replaced by the index value. */
static int64_t *
elements_offsets (const PlTensor *data, const PlTensor *idx, int axis, GError **error)
{
  int n;
  g_autofree int64_t *v = pl_tensor_to_ints (idx, &n);
  int64_t strides[PL_MAX_RANK], pos[PL_MAX_RANK] = { 0 };
  int64_t *off = g_new (int64_t, MAX (n, 1));

  pl_strides (data->rank, data->dims, strides);
  for (int64_t i = 0; i < n; i++)
    {
      int64_t o = 0, j;
      if (!fix_index (v[i], data->dims[axis], &j, error))
        {
          g_free (off);
          return NULL;
        }
      for (int k = 0; k < data->rank; k++)
        o += (k == axis ? j : pos[k]) * strides[k];
      off[i] = o;
      for (int k = idx->rank - 1; k >= 0; k--)
        {
          if (++pos[k] < idx->dims[k])
            break;
          pos[k] = 0;
        }
    }
  return off;
}

static bool
infer_gather_elements (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0), *idx = pl_input (node, 1);
  int a;
  if (!pl_require_dtype (node, 1, index_dtypes, error)
      || !elements_check (node, &x->shape, &idx->shape, NULL, &a, error))
    return false;
  pl_set_output (node, 0, x->dtype, &idx->shape);
  return true;
}

static bool
eval_gather_elements (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs,
                      GError **error)
{
  const PlTensor *x = inputs[0], *idx = inputs[1];
  PlShape xs = pl_tensor_shape (x), is = pl_tensor_shape (idx);
  g_autofree int64_t *off = NULL;
  int a = 0;

  if (!elements_check (node, &xs, &is, NULL, &a, error))
    return pl_exec_error (error);
  if ((off = elements_offsets (x, idx, a, error)) == NULL)
    return false;
  outputs[0] = pl_out_new (x->dtype, idx->rank, idx->dims, error);
  if (outputs[0] == NULL)
    return false;
  for (int64_t i = 0; i < idx->numel; i++)
    copy_elem (outputs[0], i, x, off[i]);
  return true;
}

typedef enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN } Reduction;

static bool
read_reduction (const PlNode *node, Reduction *r, GError **error)
{
  static const char *const names[] = { "none", "add", "mul", "max", "min" };
  const char *s = pl_node_attr_string (node, "reduction", "none");
  for (int i = 0; i < (int) G_N_ELEMENTS (names); i++)
    if (strcmp (s, names[i]) == 0)
      {
        *r = (Reduction) i;
        return true;
      }
  g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "reduction '%s'", s);
  return false;
}

/* out[j] = reduce (out[j], upd[i]). */
static void
scatter_apply (PlTensor *out, int64_t j, const PlTensor *upd, int64_t i, Reduction r)
{
  if (r == RED_NONE)
    copy_elem (out, j, upd, i);
  else if (pl_dtype_is_float (out->dtype))
    {
      double a = pl_tensor_get_f64 (out, j), b = pl_tensor_get_f64 (upd, i);
      pl_tensor_set_f64 (out, j, r == RED_ADD ? a + b : r == RED_MUL ? a * b
                         : r == RED_MAX ? fmax (a, b) : fmin (a, b));
    }
  else
    {
      int64_t a = pl_tensor_get_i64 (out, j), b = pl_tensor_get_i64 (upd, i);
      pl_tensor_set_i64 (out, j, r == RED_ADD ? (int64_t) ((uint64_t) a + (uint64_t) b)
                         : r == RED_MUL ? (int64_t) ((uint64_t) a * (uint64_t) b)
                         : r == RED_MAX ? MAX (a, b) : MIN (a, b));
    }
}

/* Scatter*'s common checks: updates' dtype, the reduction. */
static bool
scatter_check (const PlNode *node, PlDType data, PlDType upd, Reduction *r, GError **error)
{
  if (data != upd && data != PL_DTYPE_UNDEFINED && upd != PL_DTYPE_UNDEFINED)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "updates are %s, data %s",
                   pl_dtype_name (upd), pl_dtype_name (data));
      return false;
    }
  return read_reduction (node, r, error);
}

static bool
infer_scatter_elements (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0), *idx = pl_input (node, 1), *upd = pl_input (node, 2);
  Reduction r;
  int a;
  if (!pl_require_dtype (node, 1, index_dtypes, error)
      || !scatter_check (node, x->dtype, upd->dtype, &r, error)
      || !elements_check (node, &x->shape, &idx->shape, &upd->shape, &a, error))
    return false;
  pl_set_output (node, 0, x->dtype, &x->shape);
  return true;
}

static bool
eval_scatter_elements (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs,
                       GError **error)
{
  const PlTensor *x = inputs[0], *idx = inputs[1], *upd = inputs[2];
  PlShape xs = pl_tensor_shape (x), is = pl_tensor_shape (idx), us = pl_tensor_shape (upd);
  g_autofree int64_t *off = NULL;
  Reduction r;
  int a = 0;

  if (!scatter_check (node, x->dtype, upd->dtype, &r, error)
      || !elements_check (node, &xs, &is, &us, &a, error))
    return pl_exec_error (error);
  if ((off = elements_offsets (x, idx, a, error)) == NULL)
    return false;
  outputs[0] = pl_tensor_copy (x);
  for (int64_t i = 0; i < idx->numel; i++)
    scatter_apply (outputs[0], off[i], upd, i, r);
  return true;
}

/* --- GatherND, ScatterND ---------------------------------------------------- */

/* GatherND's output shape: indices[:-1] + data[b + m:], m = indices[-1]. */
static bool
gather_nd_shape (const PlShape *data, const PlShape *idx, int64_t b, PlShape *out,
                 GError **error)
{
  int r = data->rank, q = idx->rank;
  int64_t m;

  *out = pl_shape_unknown ();
  if (r == PL_RANK_UNKNOWN || q == PL_RANK_UNKNOWN)
    return true;
  if (b < 0 || b >= MIN (r, q))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "batch_dims %" G_GINT64_FORMAT
                   " must be below both ranks (%d, %d)", b, r, q);
      return false;
    }
  for (int k = 0; k < b; k++)
    if (!dims_agree (data->dims[k], idx->dims[k]))
      {
        g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "batch dim %d differs between data and "
                     "indices", k);
        return false;
      }
  if (!pl_dim_is_static (idx->dims[q - 1]))
    return true;
  m = idx->dims[q - 1].size;
  if (m < 1 || m > r - b)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "the last indices dim (%" G_GINT64_FORMAT
                   ") must be in [1, %" G_GINT64_FORMAT "]", m, r - b);
      return false;
    }
  if (!pl_check_out_rank ((int) (q - 1 + r - b - m), error))
    return false;
  out->rank = 0;
  for (int k = 0; k < q - 1; k++)
    out->dims[out->rank++] = idx->dims[k];
  for (int k = (int) (b + m); k < r; k++)
    out->dims[out->rank++] = data->dims[k];
  return true;
}

/* Data offsets (in elements) of the slices that indices' tuples select:
 * one per tuple, batch-major. The data's batch dims are the first b. */
static int64_t *
nd_offsets (const PlTensor *data, const PlTensor *idx, int b, int64_t *n_tuples,
            GError **error)
{
  int n, m = (int) idx->dims[idx->rank - 1];
  g_autofree int64_t *v = pl_tensor_to_ints (idx, &n);
  int64_t strides[PL_MAX_RANK], batch_stride, per_batch, count;
  int64_t *off;

  pl_strides (data->rank, data->dims, strides);
  batch_stride = b > 0 ? strides[b - 1] : 0;
  count = m > 0 ? n / m : 0;
  per_batch = count / MAX (prod (idx->dims, 0, b), 1);
  off = g_new (int64_t, MAX (count, 1));
  for (int64_t t = 0; t < count; t++)
    {
      int64_t o = per_batch > 0 ? t / per_batch * batch_stride : 0;
      for (int j = 0; j < m; j++)
        {
          int64_t i;
          if (!fix_index (v[t * m + j], data->dims[b + j], &i, error))
            {
              g_free (off);
              return NULL;
            }
          o += i * strides[b + j];
        }
      off[t] = o;
    }
  *n_tuples = count;
  return off;
}

static bool
infer_gather_nd (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0), *idx = pl_input (node, 1);
  PlShape out;
  if (!pl_require_dtype (node, 1, index_dtypes, error)
      || !gather_nd_shape (&x->shape, &idx->shape, pl_node_attr_int (node, "batch_dims", 0),
                           &out, error))
    return false;
  pl_set_output (node, 0, x->dtype, &out);
  return true;
}

static bool
eval_gather_nd (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs,
                GError **error)
{
  const PlTensor *x = inputs[0], *idx = inputs[1];
  PlShape xs = pl_tensor_shape (x), is = pl_tensor_shape (idx), out;
  int64_t b = pl_node_attr_int (node, "batch_dims", 0), count, slice;
  g_autofree int64_t *off = NULL;
  size_t esize = pl_dtype_size (x->dtype);

  if (!gather_nd_shape (&xs, &is, b, &out, error))
    return pl_exec_error (error);
  if ((off = nd_offsets (x, idx, (int) b, &count, error)) == NULL)
    return false;
  outputs[0] = pl_tensor_new_shape (x->dtype, &out, error);
  if (outputs[0] == NULL)
    return false;
  slice = prod (x->dims, (int) b + (int) idx->dims[idx->rank - 1], x->rank);
  for (int64_t t = 0; t < count; t++)
    memcpy ((char *) outputs[0]->data + t * slice * esize,
            (const char *) x->data + off[t] * esize, slice * esize);
  return true;
}

/* ScatterND: updates must have shape indices[:-1] + data[m:]. */
static bool
scatter_nd_check (const PlShape *data, const PlShape *idx, const PlShape *upd, GError **error)
{
  PlShape want;
  bool same;
  if (!gather_nd_shape (data, idx, 0, &want, error))
    return false;
  if (want.rank == PL_RANK_UNKNOWN || upd->rank == PL_RANK_UNKNOWN)
    return true;
  same = want.rank == upd->rank;
  for (int k = 0; same && k < want.rank; k++)
    same = dims_agree (want.dims[k], upd->dims[k]);
  if (!same)
    {
      g_autofree char *a = pl_shape_to_string (upd);
      g_autofree char *w = pl_shape_to_string (&want);
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "updates %s should have shape %s", a, w);
      return false;
    }
  return true;
}

static bool
infer_scatter_nd (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0), *idx = pl_input (node, 1), *upd = pl_input (node, 2);
  Reduction r;
  if (!pl_require_dtype (node, 1, index_dtypes, error)
      || !scatter_check (node, x->dtype, upd->dtype, &r, error)
      || !scatter_nd_check (&x->shape, &idx->shape, &upd->shape, error))
    return false;
  pl_set_output (node, 0, x->dtype, &x->shape);
  return true;
}

static bool
eval_scatter_nd (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs,
                 GError **error)
{
  const PlTensor *x = inputs[0], *idx = inputs[1], *upd = inputs[2];
  PlShape xs = pl_tensor_shape (x), is = pl_tensor_shape (idx), us = pl_tensor_shape (upd);
  g_autofree int64_t *off = NULL;
  int64_t count, slice;
  Reduction r;

  if (!scatter_check (node, x->dtype, upd->dtype, &r, error)
      || !scatter_nd_check (&xs, &is, &us, error))
    return pl_exec_error (error);
  if ((off = nd_offsets (x, idx, 0, &count, error)) == NULL)
    return false;
  outputs[0] = pl_tensor_copy (x);
  slice = prod (x->dims, (int) idx->dims[idx->rank - 1], x->rank);
  for (int64_t t = 0; t < count; t++)
    for (int64_t s = 0; s < slice; s++)
      scatter_apply (outputs[0], off[t] + s, upd, t * slice + s, r);
  return true;
}

/* --- Compress, NonZero, OneHot -------------------------------------------- */

/* Compress keeps the slices along axis (or the elements of the flattened
 * input) whose condition entry is true; a shorter condition drops the rest. */
static bool
infer_compress (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0);
  PlTensor *cond = pl_input_constant (node, 1);
  PlShape out = pl_shape_unknown ();
  int a = 0;
  bool has_axis = pl_node_attr (node, "axis") != NULL;

  if (has_axis && x->shape.rank != PL_RANK_UNKNOWN)
    {
      if (!pl_normalize_axis (pl_node_attr_int (node, "axis", 0), x->shape.rank, &a, error))
        return false;
      out = x->shape;
    }
  else if (!has_axis)
    out.rank = 1;
  if (out.rank != PL_RANK_UNKNOWN)
    {
      out.dims[a] = pl_dim_unknown ();
      if (cond != NULL)
        {
          int64_t count = 0;
          for (int64_t i = 0; i < cond->numel; i++)
            count += pl_tensor_get_f64 (cond, i) != 0;
          out.dims[a] = pl_dim_static (count);
        }
    }
  pl_set_output (node, 0, x->dtype, &out);
  return true;
}

static bool
eval_compress (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs,
               GError **error)
{
  const PlTensor *x = inputs[0], *cond = inputs[1];
  bool has_axis = pl_node_attr (node, "axis") != NULL;
  int a = 0;
  int64_t dims[PL_MAX_RANK], dim, outer, inner, count = 0, j = 0;
  size_t esize = pl_dtype_size (x->dtype);
  char *d;

  if (has_axis && !pl_normalize_axis (pl_node_attr_int (node, "axis", 0), x->rank, &a, error))
    return pl_exec_error (error);
  dim = has_axis ? x->dims[a] : x->numel;
  outer = has_axis ? prod (x->dims, 0, a) : 1;
  inner = has_axis ? prod (x->dims, a + 1, x->rank) : 1;
  for (int64_t i = 0; i < cond->numel; i++)
    if (pl_tensor_get_f64 (cond, i) != 0)
      {
        if (i >= dim)
          {
            g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "condition entry %" G_GINT64_FORMAT
                         " is true past the axis size %" G_GINT64_FORMAT, i, dim);
            return false;
          }
        count++;
      }
  memcpy (dims, x->dims, sizeof dims);
  dims[a] = count;
  outputs[0] = pl_out_new (x->dtype, has_axis ? x->rank : 1, dims, error);
  if (outputs[0] == NULL)
    return false;
  d = outputs[0]->data;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < MIN (cond->numel, dim); i++)
      if (pl_tensor_get_f64 (cond, i) != 0)
        {
          memcpy (d + j * inner * esize, (const char *) x->data + (o * dim + i) * inner * esize,
                  inner * esize);
          j++;
        }
  return true;
}

static bool
infer_nonzero (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0);
  PlTensor *c = pl_input_constant (node, 0);
  PlShape out = { .rank = 2, .dims = { pl_dim_unknown (), pl_dim_unknown () } };

  (void) error;
  if (x->shape.rank != PL_RANK_UNKNOWN)
    out.dims[0] = pl_dim_static (MAX (x->shape.rank, 1));
  if (c != NULL)
    {
      int64_t count = 0;
      for (int64_t i = 0; i < c->numel; i++)
        count += pl_tensor_get_f64 (c, i) != 0;
      out.dims[1] = pl_dim_static (count);
    }
  pl_set_output (node, 0, PL_DTYPE_I64, &out);
  return true;
}

static bool
eval_nonzero (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  int rows = MAX (x->rank, 1);
  int64_t count = 0, j = 0, pos[PL_MAX_RANK] = { 0 };
  int64_t *o;

  (void) node;
  for (int64_t i = 0; i < x->numel; i++)
    count += pl_tensor_get_f64 (x, i) != 0;
  outputs[0] = pl_out_new (PL_DTYPE_I64, 2, (int64_t[]) { rows, count }, error);
  if (outputs[0] == NULL)
    return false;
  o = outputs[0]->data;
  for (int64_t i = 0; i < x->numel; i++)
    {
      if (pl_tensor_get_f64 (x, i) != 0)
        {
          for (int k = 0; k < x->rank; k++)
            o[k * count + j] = pos[k];
          j++;
        }
      for (int k = x->rank - 1; k >= 0; k--)
        {
          if (++pos[k] < x->dims[k])
            break;
          pos[k] = 0;
        }
    }
  return true;
}

static bool
onehot_depth (const PlTensor *depth, int64_t *out, GError **error)
{
  double d = depth->numel == 1 ? pl_tensor_get_f64 (depth, 0) : -1;
  if (!(d >= 1 && d <= (double) PL_MAX_NUMEL))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, depth->numel == 1
                   ? "depth %g must be positive" : "depth must have one element", d);
      return false;
    }
  *out = (int64_t) d;
  return true;
}

static bool
onehot_shape (const PlNode *node, const PlShape *idx, PlDim depth, PlShape *out, int *axis,
              GError **error)
{
  int a;
  *out = pl_shape_unknown ();
  if (idx->rank == PL_RANK_UNKNOWN)
    return true;
  if (!pl_check_out_rank (idx->rank + 1, error)
      || !pl_normalize_axis (pl_node_attr_int (node, "axis", -1), idx->rank + 1, &a, error))
    return false;
  out->rank = 0;
  for (int k = 0; k <= idx->rank; k++)
    out->dims[out->rank++] = k == a ? depth : idx->dims[k < a ? k : k - 1];
  *axis = a;
  return true;
}

static bool
infer_onehot (PlNode *node, GError **error)
{
  PlValue *idx = pl_input (node, 0), *values = pl_input (node, 2);
  PlTensor *depth = pl_input_constant (node, 1);
  PlDim d = pl_dim_unknown ();
  PlShape out;
  int64_t n;
  int a;

  if (depth != NULL)
    {
      if (!onehot_depth (depth, &n, error))
        return false;
      d = pl_dim_static (n);
    }
  if (values->shape.rank != PL_RANK_UNKNOWN && pl_shape_numel (&values->shape) != 2
      && pl_shape_is_static (&values->shape))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "values must have 2 elements (off, on)");
      return false;
    }
  if (!onehot_shape (node, &idx->shape, d, &out, &a, error))
    return false;
  pl_set_output (node, 0, values->dtype, &out);
  return true;
}

static bool
eval_onehot (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *idx = inputs[0], *values = inputs[2];
  PlShape is = pl_tensor_shape (idx), out;
  int64_t depth, outer, inner;
  int a;

  if (!onehot_depth (inputs[1], &depth, error)
      || !onehot_shape (node, &is, pl_dim_static (depth), &out, &a, error))
    return pl_exec_error (error);
  if (values->numel != 2)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "values must have 2 elements (off, on)");
      return false;
    }
  outputs[0] = pl_tensor_new_shape (values->dtype, &out, error);
  if (outputs[0] == NULL)
    return false;
  for (int64_t i = 0; i < outputs[0]->numel; i++)
    copy_elem (outputs[0], i, values, 0);
  outer = prod (idx->dims, 0, a);
  inner = prod (idx->dims, a, idx->rank);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++)
      {
        /* float indices truncate toward zero, as a cast to int does */
        double v = pl_tensor_get_f64 (idx, o * inner + i);
        int64_t k;
        if (isnan (v))
          continue;
        k = (int64_t) CLAMP (v, -(double) depth - 1, (double) depth);
        if (k < 0)
          k += depth;
        if (k >= 0 && k < depth)
          copy_elem (outputs[0], (o * depth + k) * inner + i, values, 1);
      }
  return true;
}

/* --- registration --------------------------------------------------------- */

void
pl_ops_register_index (void)
{
  static const PlOpEntry entries[] = {
    { PL_OP_Gather, 2, 2, 1, 1, infer_gather, eval_gather },
    { PL_OP_GatherElements, 2, 2, 1, 1, infer_gather_elements, eval_gather_elements },
    { PL_OP_GatherND, 2, 2, 1, 1, infer_gather_nd, eval_gather_nd },
    { PL_OP_ScatterElements, 3, 3, 1, 1, infer_scatter_elements, eval_scatter_elements },
    /* Scatter (deprecated since opset 11) is ScatterElements without reduction */
    { PL_OP_Scatter, 3, 3, 1, 1, infer_scatter_elements, eval_scatter_elements },
    { PL_OP_ScatterND, 3, 3, 1, 1, infer_scatter_nd, eval_scatter_nd },
    { PL_OP_Compress, 2, 2, 1, 1, infer_compress, eval_compress },
    { PL_OP_NonZero, 1, 1, 1, 1, infer_nonzero, eval_nonzero },
    { PL_OP_OneHot, 3, 3, 1, 1, infer_onehot, eval_onehot },
  };
  pl_ops_register (entries, G_N_ELEMENTS (entries));
}
