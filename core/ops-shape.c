/* ops-shape.c — ops that reshape or reorder data, or compute shapes:
 * Reshape, Transpose, Squeeze, Unsqueeze, Flatten, DepthToSpace,
 * SpaceToDepth, and the generators Shape, Size, Constant, ConstantOfShape,
 * Range, EyeLike; plus the helpers the other shape-family files share (see
 * ops-shape-private.h). pl_ops_register_shape also registers those files:
 * ops-slice.c (Concat, Split, Slice, Pad, Tile, Expand, ReverseSequence),
 * ops-index.c (gather/scatter, Compress, NonZero, OneHot), ops-resize.c.
 *
 * Each op's output shape is computed by one function on PlShape that both
 * shape inference (with symbolic or unknown dims) and evaluation (with the
 * tensors' static dims) call, so the two cannot disagree. Data moves as raw
 * elements (memcpy of the element size), which is exact for every dtype.
 *
 * Semantics follow ONNX up to opset 17; older forms (attributes that later
 * became inputs) are chosen by the graph's opset.
 */
#define G_LOG_DOMAIN "passlab"

#include <math.h>
#include <string.h>

#include "ops-shape-private.h"

/* --- shared helpers ------------------------------------------------------ */

bool
pl_check_out_rank (int rank, GError **error)
{
  if (rank > PL_MAX_RANK)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE,
                   "output rank %d exceeds the maximum %d", rank, PL_MAX_RANK);
      return false;
    }
  return true;
}

PlShape
pl_rank_shape (int rank)
{
  PlShape s = pl_shape_unknown ();
  if (rank >= 0 && rank <= PL_MAX_RANK)
    {
      s.rank = rank;
      for (int i = 0; i < rank; i++)
        s.dims[i] = pl_dim_unknown ();
    }
  return s;
}

int
pl_input_length (const PlNode *node, int i)
{
  PlValue *v = pl_input (node, i);
  if (v == NULL || v->shape.rank != 1 || !pl_dim_is_static (v->shape.dims[0]))
    return -1;
  return v->shape.dims[0].size > INT_MAX ? -1 : (int) v->shape.dims[0].size;
}

int
pl_ints_attr_or_input (const PlNode *node, PlTensor *const *inputs, const char *name,
                       int input, int since, int64_t **v, int *n)
{
  const int64_t *a;
  bool use_input = pl_node_opset (node) >= since && input < node->n_inputs
                   && node->inputs[input] != NULL;

  *v = NULL;
  *n = 0;
  if (!use_input)
    {
      if (!pl_node_attr_ints (node, name, &a, n))
        return 0;
      *v = g_memdup2 (a, (gsize) *n * sizeof *a);
      return 1;
    }
  if (inputs != NULL)
    {
      if (inputs[input] == NULL)
        return 0;
      *v = pl_tensor_to_ints (inputs[input], n);
      return 1;
    }
  return pl_input_const_ints (node, input, v, n) ? 1 : -1;
}

bool
pl_axes_to_flags (const int64_t *axes, int n, int rank, bool *flags, GError **error)
{
  memset (flags, 0, sizeof (bool) * PL_MAX_RANK);
  for (int i = 0; i < n; i++)
    {
      int a;
      if (!pl_normalize_axis (axes[i], rank, &a, error))
        return false;
      if (flags[a])
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "axis %" G_GINT64_FORMAT
                       " is repeated", axes[i]);
          return false;
        }
      flags[a] = true;
    }
  return true;
}

bool
pl_exec_error (GError **error)
{
  if (error != NULL && *error != NULL && (*error)->domain == PL_ERROR
      && (*error)->code == PL_ERROR_SHAPE)
    (*error)->code = PL_ERROR_EXEC;
  return false;
}

void
pl_scalar_bytes (PlDType dtype, const PlTensor *v, double dflt, void *buf)
{
  PlTensor tmp = { .ref_count = 1, .dtype = dtype, .rank = 0, .numel = 1, .data = buf };

  memset (buf, 0, 8);
  if (v != NULL && v->numel > 0 && !pl_dtype_is_float (v->dtype) && !pl_dtype_is_float (dtype))
    pl_tensor_set_i64 (&tmp, 0, pl_tensor_get_i64 (v, 0));
  else
    pl_tensor_set_f64 (&tmp, 0, v != NULL && v->numel > 0 ? pl_tensor_get_f64 (v, 0) : dflt);
}

/* dst[i] = src[offset + Σ idx[k] * strides[k]] over the dense iteration
 * space dims (row-major), elements of esize bytes. Copies whole rows when
 * the innermost stride is 1. */
void
pl_strided_copy (void *dst, const void *src, size_t esize, int rank, const int64_t *dims,
              const int64_t *strides, int64_t offset)
{
  int64_t idx[PL_VIEW_MAX_RANK] = { 0 };
  int64_t n = pl_dims_product (rank, dims), row = 1;
  int outer_rank = rank;
  char *d = dst;
  const char *s = src;

  if (n == 0)
    return;
  if (rank > 0 && strides[rank - 1] == 1)
    {
      row = dims[rank - 1];
      outer_rank = rank - 1;
    }
  for (int64_t i = 0; i < n; i += row)
    {
      memcpy (d + i * esize, s + offset * esize, row * esize);
      for (int k = outer_rank - 1; k >= 0; k--)
        {
          offset += strides[k];
          if (++idx[k] < dims[k])
            break;
          offset -= strides[k] * dims[k];
          idx[k] = 0;
        }
    }
}

void
pl_gather_axis_maps (PlTensor *dst, const PlTensor *src, int64_t *const *maps, const void *fill)
{
  size_t esize = pl_dtype_size (dst->dtype);
  int rank = dst->rank;
  int64_t idx[PL_MAX_RANK] = { 0 };
  int64_t strides[PL_MAX_RANK];
  static const guint8 zeros[16];
  char *d = dst->data;
  const char *s = src->data;

  pl_strides (src->rank, src->dims, strides);
  for (int64_t i = 0; i < dst->numel; i++)
    {
      int64_t off = 0;
      bool outside = false;
      for (int k = 0; k < rank; k++)
        {
          int64_t m = maps[k][idx[k]];
          outside |= m < 0;
          off += m * strides[k];
        }
      memcpy (d + i * esize, outside ? (fill ? fill : zeros) : s + off * esize, esize);
      for (int k = rank - 1; k >= 0; k--)
        {
          if (++idx[k] < dst->dims[k])
            break;
          idx[k] = 0;
        }
    }
}

/* A dense copy of t's data with a new shape (same element count). */
static PlTensor *
copy_reshaped (const PlTensor *t, const PlShape *shape, GError **error)
{
  PlTensor *out = pl_tensor_new_shape (t->dtype, shape, error);
  if (out == NULL)
    return NULL;
  if (out->numel != t->numel)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "element count changed from %"
                   G_GINT64_FORMAT " to %" G_GINT64_FORMAT, t->numel, out->numel);
      pl_tensor_unref (out);
      return NULL;
    }
  memcpy (out->data, t->data, pl_tensor_nbytes (t));
  return out;
}

/* Product of dims [from, to) of a shape: a static size, the dim itself when
 * the range is that one dim, else unknown. */
static PlDim
dims_product (const PlShape *s, int from, int to)
{
  int64_t p = 1;
  if (to - from == 1)
    return s->dims[from];
  for (int k = from; k < to; k++)
    if (!pl_dim_is_static (s->dims[k]) || !pl_mul_overflow (p, s->dims[k].size, &p))
      return pl_dim_unknown ();
  return pl_dim_static (p);
}

/* The common infer for ops whose output shape comes from one function of the
 * input shape: unknown rank in, unknown rank out. */
typedef bool (*ShapeFunc) (const PlNode *node, const PlShape *in, PlShape *out, GError **error);

static bool
infer_with (PlNode *node, ShapeFunc f, GError **error)
{
  PlValue *x = pl_input (node, 0);
  PlShape out = pl_shape_unknown ();
  if (x->shape.rank != PL_RANK_UNKNOWN && !f (node, &x->shape, &out, error))
    return false;
  pl_set_output (node, 0, x->dtype, &out);
  return true;
}

static bool
eval_with (const PlNode *node, ShapeFunc f, PlTensor *const *inputs, PlTensor **outputs,
           GError **error)
{
  PlShape in = pl_tensor_shape (inputs[0]), out;
  if (!f (node, &in, &out, error))
    return pl_exec_error (error);
  outputs[0] = copy_reshaped (inputs[0], &out, error);
  return outputs[0] != NULL;
}

/* --- Reshape -------------------------------------------------------------- */

/* Resolves -1 when the input's non-static dims all reappear (same symbol)
 * among the output's other dims: [N, 3, 4] -> [0, -1] gives [N, 12]. */
static void
reshape_infer_minus_one (const PlShape *in, PlShape *out, int at, GError **error)
{
  bool used[PL_MAX_RANK] = { false };
  int64_t in_p = 1, out_p = 1;

  for (int i = 0; i < in->rank; i++)
    {
      PlDim d = in->dims[i];
      bool matched = false;
      if (pl_dim_is_static (d))
        {
          if (!pl_mul_overflow (in_p, d.size, &in_p))
            return;
          continue;
        }
      for (int j = 0; j < out->rank && !matched && d.sym != NULL; j++)
        if (j != at && !used[j] && pl_dim_equal (d, out->dims[j]))
          used[j] = matched = true;
      if (!matched)
        return;
    }
  for (int j = 0; j < out->rank; j++)
    {
      if (j == at || used[j])
        continue;
      if (!pl_dim_is_static (out->dims[j]) || !pl_mul_overflow (out_p, out->dims[j].size, &out_p))
        return;
    }
  if (out_p == 0 || in_p % out_p != 0)
    {
      g_autofree char *s = pl_shape_to_string (in);
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "cannot reshape %s: the other dims "
                   "(%" G_GINT64_FORMAT " elements) do not divide its %" G_GINT64_FORMAT
                   " elements", s, out_p, in_p);
      return;
    }
  out->dims[at] = pl_dim_static (in_p / out_p);
}

static bool
reshape_shape (const PlShape *in, const int64_t *target, int n, bool allowzero,
               PlShape *out, GError **error)
{
  int at = -1;
  bool has_zero = false;
  GError *local = NULL;

  if (!pl_check_out_rank (n, error))
    return false;
  *out = pl_rank_shape (n);
  for (int i = 0; i < n; i++)
    {
      int64_t t = target[i];
      if (t < -1 || (t == -1 && at >= 0))
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, t < -1
                       ? "invalid target dim %" G_GINT64_FORMAT
                       : "target shape has more than one -1 (%" G_GINT64_FORMAT ")", t);
          return false;
        }
      if (t == -1)
        at = i;
      else if (t == 0 && !allowzero)
        {
          if (in->rank != PL_RANK_UNKNOWN && i >= in->rank)
            {
              g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "target dim %d is 0 (copy) but "
                           "the input has rank %d", i, in->rank);
              return false;
            }
          if (in->rank != PL_RANK_UNKNOWN)
            out->dims[i] = in->dims[i];
        }
      else
        {
          has_zero |= t == 0;
          out->dims[i] = pl_dim_static (t);
        }
    }
  if (has_zero && at >= 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "allowzero target has both 0 and -1");
      return false;
    }
  if (in->rank == PL_RANK_UNKNOWN)
    return true;
  if (at >= 0)
    {
      reshape_infer_minus_one (in, out, at, &local);
      if (local != NULL)
        {
          g_propagate_error (error, local);
          return false;
        }
    }
  else if (pl_shape_is_static (in) && pl_shape_is_static (out)
           && pl_shape_numel (in) != pl_shape_numel (out))
    {
      g_autofree char *a = pl_shape_to_string (in);
      g_autofree char *b = pl_shape_to_string (out);
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "cannot reshape %s (%" G_GINT64_FORMAT
                   " elements) into %s (%" G_GINT64_FORMAT " elements)",
                   a, pl_shape_numel (in), b, pl_shape_numel (out));
      return false;
    }
  return true;
}

static bool
infer_reshape (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0);
  g_autofree int64_t *target = NULL;
  int n, found;
  PlShape out;

  found = pl_ints_attr_or_input (node, NULL, "shape", 1, 5, &target, &n);
  if (found == 1)
    {
      if (!reshape_shape (&x->shape, target, n, pl_node_attr_int (node, "allowzero", 0) != 0,
                          &out, error))
        return false;
    }
  else if (found == 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "missing the target shape");
      return false;
    }
  else
    out = pl_rank_shape (pl_input_length (node, 1));
  pl_set_output (node, 0, x->dtype, &out);
  return true;
}

static bool
eval_reshape (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  g_autofree int64_t *target = NULL;
  int n;
  PlShape in = pl_tensor_shape (inputs[0]), out;

  if (pl_ints_attr_or_input (node, inputs, "shape", 1, 5, &target, &n) != 1)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "missing the target shape");
      return false;
    }
  if (!reshape_shape (&in, target, n, pl_node_attr_int (node, "allowzero", 0) != 0, &out, error))
    return pl_exec_error (error);
  outputs[0] = copy_reshaped (inputs[0], &out, error);
  return outputs[0] != NULL;
}

/* --- Transpose ------------------------------------------------------------ */

/* perm from the attribute (default: reversed axes), checked to be a permutation. */
static bool
transpose_perm (const PlNode *node, int rank, int *perm, GError **error)
{
  const int64_t *p;
  int n;
  bool seen[PL_MAX_RANK] = { false };

  if (!pl_node_attr_ints (node, "perm", &p, &n))
    {
      for (int i = 0; i < rank; i++)
        perm[i] = rank - 1 - i;
      return true;
    }
  if (n != rank)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "perm has %d entries for rank %d", n, rank);
      return false;
    }
  for (int i = 0; i < n; i++)
    {
      if (p[i] < 0 || p[i] >= rank || seen[p[i]])
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "perm is not a permutation of 0..%d",
                       rank - 1);
          return false;
        }
      seen[p[i]] = true;
      perm[i] = (int) p[i];
    }
  return true;
}

static bool
infer_transpose (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0);
  int perm[PL_MAX_RANK];
  PlShape out = x->shape;

  if (x->shape.rank == PL_RANK_UNKNOWN)
    {
      const int64_t *p;
      int n;
      if (pl_node_attr_ints (node, "perm", &p, &n))
        out = pl_rank_shape (n);
    }
  else
    {
      if (!transpose_perm (node, x->shape.rank, perm, error))
        return false;
      for (int i = 0; i < x->shape.rank; i++)
        out.dims[i] = x->shape.dims[perm[i]];
    }
  pl_set_output (node, 0, x->dtype, &out);
  return true;
}

static bool
eval_transpose (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  int perm[PL_MAX_RANK];
  int64_t dims[PL_MAX_RANK], in_strides[PL_MAX_RANK], strides[PL_MAX_RANK];

  if (!transpose_perm (node, x->rank, perm, error))
    return pl_exec_error (error);
  pl_strides (x->rank, x->dims, in_strides);
  for (int i = 0; i < x->rank; i++)
    {
      dims[i] = x->dims[perm[i]];
      strides[i] = in_strides[perm[i]];
    }
  outputs[0] = pl_out_new (x->dtype, x->rank, dims, error);
  if (outputs[0] == NULL)
    return false;
  pl_strided_copy (outputs[0]->data, x->data, pl_dtype_size (x->dtype), x->rank, dims, strides, 0);
  return true;
}

/* --- Squeeze, Unsqueeze, Flatten ------------------------------------------ */

/* Axes before opset 13 are an attribute, from 13 an input. n_axes -1: absent. */
static bool
squeeze_shape_axes (const PlShape *in, const int64_t *axes, int n_axes, PlShape *out,
                    GError **error)
{
  bool drop[PL_MAX_RANK];

  if (n_axes < 0)
    {
      memset (drop, 0, sizeof drop);
      for (int k = 0; k < in->rank; k++)
        {
          if (!pl_dim_is_static (in->dims[k]))
            {
              *out = pl_shape_unknown (); /* which dims are 1 is not known */
              return true;
            }
          drop[k] = in->dims[k].size == 1;
        }
    }
  else if (!pl_axes_to_flags (axes, n_axes, in->rank, drop, error))
    return false;
  out->rank = 0;
  for (int k = 0; k < in->rank; k++)
    {
      if (!drop[k])
        out->dims[out->rank++] = in->dims[k];
      else if (pl_dim_is_static (in->dims[k]) && in->dims[k].size != 1)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "cannot squeeze axis %d of size %"
                       G_GINT64_FORMAT, k, in->dims[k].size);
          return false;
        }
    }
  return true;
}

static bool
unsqueeze_shape_axes (const PlShape *in, const int64_t *axes, int n_axes, PlShape *out,
                      GError **error)
{
  int rank = in->rank + n_axes, next = 0;
  bool add[PL_MAX_RANK];

  if (!pl_check_out_rank (rank, error) || !pl_axes_to_flags (axes, n_axes, rank, add, error))
    return false;
  out->rank = rank;
  for (int k = 0; k < rank; k++)
    out->dims[k] = add[k] ? pl_dim_static (1) : in->dims[next++];
  return true;
}

/* Shared by Squeeze (squeeze = true) and Unsqueeze. */
static bool
infer_squeeze_like (PlNode *node, bool squeeze, GError **error)
{
  PlValue *x = pl_input (node, 0);
  g_autofree int64_t *axes = NULL;
  int n, found = pl_ints_attr_or_input (node, NULL, "axes", 1, 13, &axes, &n);
  PlShape out = pl_shape_unknown ();

  if (!squeeze && found == 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "missing axes");
      return false;
    }
  if (x->shape.rank != PL_RANK_UNKNOWN)
    {
      if (found == -1)
        {
          int k = pl_input_length (node, 1);
          if (k >= 0)
            {
              if (!pl_check_out_rank (x->shape.rank + (squeeze ? -k : k), error))
                return false;
              out = pl_rank_shape (x->shape.rank + (squeeze ? -k : k));
            }
        }
      else if (squeeze ? !squeeze_shape_axes (&x->shape, axes, found ? n : -1, &out, error)
                       : !unsqueeze_shape_axes (&x->shape, axes, n, &out, error))
        return false;
    }
  pl_set_output (node, 0, x->dtype, &out);
  return true;
}

static bool
eval_squeeze_like (const PlNode *node, bool squeeze, PlTensor *const *inputs,
                   PlTensor **outputs, GError **error)
{
  g_autofree int64_t *axes = NULL;
  int n, found = pl_ints_attr_or_input (node, inputs, "axes", 1, 13, &axes, &n);
  PlShape in = pl_tensor_shape (inputs[0]), out;

  if (squeeze ? !squeeze_shape_axes (&in, axes, found ? n : -1, &out, error)
              : !unsqueeze_shape_axes (&in, axes, n, &out, error))
    return pl_exec_error (error);
  outputs[0] = copy_reshaped (inputs[0], &out, error);
  return outputs[0] != NULL;
}

static bool
infer_squeeze (PlNode *node, GError **error)
{
  return infer_squeeze_like (node, true, error);
}

static bool
eval_squeeze (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  return eval_squeeze_like (node, true, inputs, outputs, error);
}

static bool
infer_unsqueeze (PlNode *node, GError **error)
{
  return infer_squeeze_like (node, false, error);
}

static bool
eval_unsqueeze (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  return eval_squeeze_like (node, false, inputs, outputs, error);
}

static bool
flatten_shape (const PlNode *node, const PlShape *in, PlShape *out, GError **error)
{
  int64_t axis = pl_node_attr_int (node, "axis", 1);
  int a;

  /* axis may equal rank here: [-r, r] */
  if (axis < -in->rank || axis > in->rank)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "axis %" G_GINT64_FORMAT
                   " out of range for rank %d", axis, in->rank);
      return false;
    }
  a = (int) (axis < 0 ? axis + in->rank : axis);
  out->rank = 2;
  out->dims[0] = a == 0 ? pl_dim_static (1) : dims_product (in, 0, a);
  out->dims[1] = a == in->rank ? pl_dim_static (1) : dims_product (in, a, in->rank);
  return true;
}

static bool
infer_flatten (PlNode *node, GError **error)
{
  return infer_with (node, flatten_shape, error);
}

static bool
eval_flatten (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  return eval_with (node, flatten_shape, inputs, outputs, error);
}

/* --- DepthToSpace, SpaceToDepth ------------------------------------------- */

/* Both are a reshape to 6-D, a transpose and a reshape back; they are done
 * as one strided read over the transposed 6-D view. */
static bool
space_depth_shape (const PlNode *node, const PlShape *in, PlShape *out, GError **error)
{
  bool to_space = node->op == PL_OP_DepthToSpace;
  int64_t b = pl_node_attr_int (node, "blocksize", 0), bb;
  const char *mode = pl_node_attr_string (node, "mode", "DCR");

  if (to_space && strcmp (mode, "DCR") != 0 && strcmp (mode, "CRD") != 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "DepthToSpace mode '%s'", mode);
      return false;
    }
  if (in->rank != 4 || b <= 0 || !pl_mul_overflow (b, b, &bb))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, in->rank != 4 ? "input must have rank 4"
                   : "invalid blocksize %" G_GINT64_FORMAT, b);
      return false;
    }
  *out = *in;
  for (int k = 1; k < 4; k++)
    {
      PlDim d = in->dims[k];
      int64_t f = k == 1 ? bb : b, p;
      if (!pl_dim_is_static (d))
        out->dims[k] = pl_dim_unknown ();
      else if (to_space == (k == 1) && d.size % f != 0)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "dim %d (%" G_GINT64_FORMAT
                       ") is not a multiple of %" G_GINT64_FORMAT, k, d.size, f);
          return false;
        }
      else if (to_space == (k == 1))
        out->dims[k] = pl_dim_static (d.size / f);
      else if (!pl_mul_overflow (d.size, f, &p))
        {
          g_set_error (error, PL_ERROR, PL_ERROR_OVERFLOW, "output size overflows");
          return false;
        }
      else
        out->dims[k] = pl_dim_static (p);
    }
  return true;
}

static bool
infer_space_depth (PlNode *node, GError **error)
{
  return infer_with (node, space_depth_shape, error);
}

static bool
eval_space_depth (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs,
                  GError **error)
{
  const PlTensor *x = inputs[0];
  PlShape in = pl_tensor_shape (x), out;
  int64_t b = pl_node_attr_int (node, "blocksize", 0);
  int64_t N, C, H, W, HW;
  int64_t dims[6], strides[6];
  const char *mode = pl_node_attr_string (node, "mode", "DCR");

  if (!space_depth_shape (node, &in, &out, error))
    return pl_exec_error (error);
  outputs[0] = pl_tensor_new_shape (x->dtype, &out, error);
  if (outputs[0] == NULL)
    return false;
  N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], HW = H * W;
  if (node->op == PL_OP_SpaceToDepth)
    {
      /* view [N, C, H/b, b, W/b, b], read in order [N, b, b, C, H/b, W/b] */
      int64_t d[6] = { N, b, b, C, H / b, W / b };
      int64_t s[6] = { C * HW, W, 1, HW, b * W, b };
      memcpy (dims, d, sizeof d);
      memcpy (strides, s, sizeof s);
    }
  else if (strcmp (mode, "CRD") == 0)
    {
      /* view [N, C', b, b, H, W], read in order [N, C', H, b, W, b] */
      int64_t cc = C / (b * b);
      int64_t d[6] = { N, cc, H, b, W, b };
      int64_t s[6] = { C * HW, b * b * HW, W, b * HW, 1, HW };
      memcpy (dims, d, sizeof d);
      memcpy (strides, s, sizeof s);
    }
  else
    {
      /* view [N, b, b, C', H, W], read in order [N, C', H, b, W, b] */
      int64_t cc = C / (b * b);
      int64_t d[6] = { N, cc, H, b, W, b };
      int64_t s[6] = { C * HW, HW, W, b * cc * HW, 1, cc * HW };
      memcpy (dims, d, sizeof d);
      memcpy (strides, s, sizeof s);
    }
  pl_strided_copy (outputs[0]->data, x->data, pl_dtype_size (x->dtype), 6, dims, strides, 0);
  return true;
}

/* --- Shape, Size ---------------------------------------------------------- */

/* Shape's [start, end) range over the dims (opset 15), clamped. */
static void
shape_range (const PlNode *node, int rank, int *start, int *end)
{
  int64_t s = pl_node_attr_int (node, "start", 0), e = pl_node_attr_int (node, "end", rank);
  if (s < 0)
    s += rank;
  if (e < 0)
    e += rank;
  *start = (int) CLAMP (s, 0, rank);
  *end = (int) MAX (CLAMP (e, 0, rank), *start);
}

static bool
infer_shape (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0);
  PlShape out = pl_rank_shape (1);
  int s, e;

  (void) error;
  if (x->shape.rank != PL_RANK_UNKNOWN)
    {
      shape_range (node, x->shape.rank, &s, &e);
      out.dims[0] = pl_dim_static (e - s);
    }
  pl_set_output (node, 0, PL_DTYPE_I64, &out);
  return true;
}

static bool
eval_shape (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  int s, e;
  shape_range (node, inputs[0]->rank, &s, &e);
  outputs[0] = pl_out_new (PL_DTYPE_I64, 1, (int64_t[]) { e - s }, error);
  if (outputs[0] == NULL)
    return false;
  memcpy (outputs[0]->data, inputs[0]->dims + s, sizeof (int64_t) * (e - s));
  return true;
}

static bool
infer_size (PlNode *node, GError **error)
{
  PlShape s = pl_shape_scalar ();
  (void) error;
  pl_set_output (node, 0, PL_DTYPE_I64, &s);
  return true;
}

static bool
eval_size (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  (void) node;
  (void) error;
  outputs[0] = pl_tensor_new_scalar (PL_DTYPE_I64, 0);
  *(int64_t *) outputs[0]->data = inputs[0]->numel;
  return true;
}

/* --- Constant, ConstantOfShape, Range, EyeLike ----------------------------- */

/* The tensor a Constant node stands for (a new reference). */
static PlTensor *
constant_value (const PlNode *node, GError **error)
{
  const PlAttr *a;
  const int64_t *iv;
  const float *fv;
  int n;
  PlTensor *t;

  if ((a = pl_node_attr (node, "value")) != NULL && a->type == PL_ATTR_TENSOR)
    return pl_tensor_ref (a->t);
  if ((a = pl_node_attr (node, "value_float")) != NULL)
    return pl_tensor_new_scalar (PL_DTYPE_F32, pl_node_attr_float (node, "value_float", 0));
  if ((a = pl_node_attr (node, "value_int")) != NULL)
    {
      t = pl_tensor_new_scalar (PL_DTYPE_I64, 0);
      *(int64_t *) t->data = pl_node_attr_int (node, "value_int", 0);
      return t;
    }
  if (pl_node_attr_floats (node, "value_floats", &fv, &n))
    {
      if ((t = pl_tensor_new (PL_DTYPE_F32, 1, (int64_t[]) { n }, error)) != NULL)
        memcpy (t->data, fv, sizeof (float) * n);
      return t;
    }
  if (pl_node_attr_ints (node, "value_ints", &iv, &n))
    {
      if ((t = pl_tensor_new (PL_DTYPE_I64, 1, (int64_t[]) { n }, error)) != NULL)
        memcpy (t->data, iv, sizeof (int64_t) * n);
      return t;
    }
  if (pl_node_attr (node, "value_string") || pl_node_attr (node, "value_strings")
      || pl_node_attr (node, "sparse_value"))
    g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "string and sparse constants are not supported");
  else
    g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "no value attribute");
  return NULL;
}

static bool
infer_constant (PlNode *node, GError **error)
{
  g_autoptr (PlTensor) t = constant_value (node, error);
  PlShape s;
  if (t == NULL)
    return false;
  s = pl_tensor_shape (t);
  pl_set_output (node, 0, t->dtype, &s);
  return true;
}

static bool
eval_constant (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  (void) inputs;
  outputs[0] = constant_value (node, error);
  return outputs[0] != NULL;
}

/* ConstantOfShape's fill value: the `value` attribute (one element), default f32 0. */
static const PlTensor *
fill_value (const PlNode *node, GError **error)
{
  const PlAttr *a = pl_node_attr (node, "value");
  if (a == NULL)
    return NULL;
  if (a->type != PL_ATTR_TENSOR || a->t->numel != 1)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "value must be a one-element tensor");
      return NULL;
    }
  return a->t;
}

static bool
shape_from_ints (const int64_t *dims, int n, PlShape *out, GError **error)
{
  if (!pl_check_out_rank (n, error))
    return false;
  for (int i = 0; i < n; i++)
    if (dims[i] < 0)
      {
        g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "negative dim %" G_GINT64_FORMAT, dims[i]);
        return false;
      }
  *out = pl_shape_from_dims (n, dims);
  return true;
}

static bool
infer_constant_of_shape (PlNode *node, GError **error)
{
  GError *local = NULL;
  const PlTensor *v = fill_value (node, &local);
  g_autofree int64_t *dims = NULL;
  int n;
  PlShape out = pl_rank_shape (pl_input_length (node, 0));

  if (local != NULL)
    {
      g_propagate_error (error, local);
      return false;
    }
  if (pl_input_const_ints (node, 0, &dims, &n) && !shape_from_ints (dims, n, &out, error))
    return false;
  pl_set_output (node, 0, v != NULL ? v->dtype : PL_DTYPE_F32, &out);
  return true;
}

static bool
eval_constant_of_shape (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs,
                        GError **error)
{
  GError *local = NULL;
  const PlTensor *v = fill_value (node, &local);
  int n;
  g_autofree int64_t *dims = pl_tensor_to_ints (inputs[0], &n);
  PlShape out;
  size_t esize;

  if (local != NULL)
    {
      g_propagate_error (error, local);
      return false;
    }
  if (!shape_from_ints (dims, n, &out, error))
    return pl_exec_error (error);
  outputs[0] = pl_tensor_new_shape (v != NULL ? v->dtype : PL_DTYPE_F32, &out, error);
  if (outputs[0] == NULL)
    return false;
  esize = pl_dtype_size (outputs[0]->dtype);
  for (int64_t i = 0; v != NULL && i < outputs[0]->numel; i++)
    memcpy ((char *) outputs[0]->data + i * esize, v->data, esize);
  return true;
}

/* Range's element count, max(ceil((limit - start) / delta), 0); integers exactly. */
static bool
range_count (const PlTensor *start, const PlTensor *limit, const PlTensor *delta,
             int64_t *count, GError **error)
{
  double n;
  if (start->numel != 1 || limit->numel != 1 || delta->numel != 1)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "start, limit and delta must be scalars");
      return false;
    }
  if (!pl_dtype_is_float (start->dtype))
    {
      int64_t s = pl_tensor_get_i64 (start, 0), l = pl_tensor_get_i64 (limit, 0);
      int64_t d = pl_tensor_get_i64 (delta, 0);
      if (d == 0)
        goto zero;
      /* through double first to catch counts that would overflow */
      n = ceil (((double) l - (double) s) / (double) d);
      if (n > 0 && n < (double) PL_MAX_NUMEL)
        {
          *count = d > 0 ? (l > s ? (l - s - 1) / d + 1 : 0) : (s > l ? (l - s + 1) / d + 1 : 0);
          return true;
        }
    }
  else
    {
      double d = pl_tensor_get_f64 (delta, 0);
      if (d == 0)
        goto zero;
      n = ceil ((pl_tensor_get_f64 (limit, 0) - pl_tensor_get_f64 (start, 0)) / d);
    }
  if (isnan (n) || n >= (double) PL_MAX_NUMEL)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_OVERFLOW, "range has too many elements");
      return false;
    }
  *count = n > 0 ? (int64_t) n : 0;
  return true;
zero:
  g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "delta is 0");
  return false;
}

static bool
infer_range (PlNode *node, GError **error)
{
  PlTensor *s = pl_input_constant (node, 0), *l = pl_input_constant (node, 1);
  PlTensor *d = pl_input_constant (node, 2);
  PlShape out = pl_rank_shape (1);
  int64_t n;

  if (s != NULL && l != NULL && d != NULL)
    {
      if (!range_count (s, l, d, &n, error))
        return false;
      out.dims[0] = pl_dim_static (n);
    }
  pl_set_output (node, 0, pl_input (node, 0)->dtype, &out);
  return true;
}

static bool
eval_range (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *s = inputs[0], *d = inputs[2];
  int64_t n;

  (void) node;
  if (!range_count (s, inputs[1], d, &n, error))
    return pl_exec_error (error);
  outputs[0] = pl_out_new (s->dtype, 1, &n, error);
  if (outputs[0] == NULL)
    return false;
  for (int64_t i = 0; i < n; i++)
    if (pl_dtype_is_float (s->dtype))
      pl_tensor_set_f64 (outputs[0], i, pl_tensor_get_f64 (s, 0) + i * pl_tensor_get_f64 (d, 0));
    else
      pl_tensor_set_i64 (outputs[0], i, pl_tensor_get_i64 (s, 0) + i * pl_tensor_get_i64 (d, 0));
  return true;
}

static bool
eyelike_dtype (const PlNode *node, PlDType in, PlDType *out, GError **error)
{
  const PlAttr *a = pl_node_attr (node, "dtype");
  *out = in;
  if (a == NULL)
    return true;
  *out = pl_dtype_from_onnx ((int) pl_node_attr_int (node, "dtype", 0));
  if (*out == PL_DTYPE_UNDEFINED)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "dtype %" G_GINT64_FORMAT,
                   pl_node_attr_int (node, "dtype", 0));
      return false;
    }
  return true;
}

static bool
infer_eyelike (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0);
  PlDType dtype;

  if (!eyelike_dtype (node, x->dtype, &dtype, error))
    return false;
  if (x->shape.rank != PL_RANK_UNKNOWN && x->shape.rank != 2)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "input must have rank 2, not %d",
                   x->shape.rank);
      return false;
    }
  pl_set_output (node, 0, dtype, x->shape.rank == 2 ? &x->shape : &(PlShape) { .rank = 2,
                 .dims = { pl_dim_unknown (), pl_dim_unknown () } });
  return true;
}

static bool
eval_eyelike (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  int64_t k = pl_node_attr_int (node, "k", 0);
  PlDType dtype;

  if (!eyelike_dtype (node, x->dtype, &dtype, error))
    return false;
  if (x->rank != 2)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "input must have rank 2, not %d", x->rank);
      return false;
    }
  outputs[0] = pl_out_new (dtype, 2, x->dims, error);
  if (outputs[0] == NULL)
    return false;
  for (int64_t i = 0; i < x->dims[0]; i++)
    if (k > -x->dims[0] && k < x->dims[1] && i + k >= 0 && i + k < x->dims[1])
      pl_tensor_set_f64 (outputs[0], i * x->dims[1] + i + k, 1.0);
  return true;
}

/* --- registration --------------------------------------------------------- */

void
pl_ops_register_shape (void)
{
  static const PlOpEntry entries[] = {
    { PL_OP_Reshape, 1, 2, 1, 1, infer_reshape, eval_reshape },
    { PL_OP_Transpose, 1, 1, 1, 1, infer_transpose, eval_transpose },
    { PL_OP_Squeeze, 1, 2, 1, 1, infer_squeeze, eval_squeeze },
    { PL_OP_Unsqueeze, 1, 2, 1, 1, infer_unsqueeze, eval_unsqueeze },
    { PL_OP_Flatten, 1, 1, 1, 1, infer_flatten, eval_flatten },
    { PL_OP_DepthToSpace, 1, 1, 1, 1, infer_space_depth, eval_space_depth },
    { PL_OP_SpaceToDepth, 1, 1, 1, 1, infer_space_depth, eval_space_depth },
    { PL_OP_Shape, 1, 1, 1, 1, infer_shape, eval_shape },
    { PL_OP_Size, 1, 1, 1, 1, infer_size, eval_size },
    { PL_OP_Constant, 0, 0, 1, 1, infer_constant, eval_constant },
    { PL_OP_ConstantOfShape, 1, 1, 1, 1, infer_constant_of_shape, eval_constant_of_shape },
    { PL_OP_Range, 3, 3, 1, 1, infer_range, eval_range },
    { PL_OP_EyeLike, 1, 1, 1, 1, infer_eyelike, eval_eyelike },
  };
  pl_ops_register (entries, G_N_ELEMENTS (entries));
  pl_ops_register_slice ();
  pl_ops_register_index ();
  pl_ops_register_resize ();
}
