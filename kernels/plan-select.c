/* plan-select.c — the ops whose element comes from one of several places
 * picked by its coordinates: Concat (which input), Pad (the input or, in
 * constant mode, the pad value) and Trilu (the input or zero); and
 * Gather and GatherElements, whose element the indices' value picks along
 * its axis; ReverseSequence, whose time index the lengths' value picks;
 * OneHot, on where the coordinate equals the index. The
 * coordinates' values are loads of slot PL_SLOT_INDEX, compared as i64;
 * every candidate is computed and a select keeps one (the generators emit
 * straight-line code), so every read must be in bounds wherever it is not
 * the one picked: the reads are clamped into their axis (pl_idx_clamp).
 * A read that is not picked then lands on the edge element nearest to it,
 * the same one for a whole run of points, so it costs a cache hit rather
 * than memory traffic (wrapped mod the axis, each read a distinct element:
 * a Concat of k inputs moved k times its output).
 */
#define G_LOG_DOMAIN "passlab"
#include "kernel-plan-private.h"

#include "ops-util.h"

#include <string.h>

/* x < bound (bound an i64 constant), as a bool instruction. */
static int
below (PlLower *L, int x, int64_t bound)
{
  return pl_lower_binary (L, PL_SOP_LT, x, pl_lower_const (L, PL_DTYPE_I64, (double) bound));
}

/* Concat: output coordinate c along the axis comes from input i where
 * off_i <= c < off_i+1, picked by a chain of selects on c's value. Every
 * input is read at every point, at c - off_i clamped into its axis: exact
 * where input i is the one picked, its first or last slice elsewhere (the
 * same slice over and over: in cache). */
int
pl_lower_concat (PlLower *L, const PlNode *node, const PlValue *v, const PlIdx *const *idx)
{
  int rank = v->shape.rank, a;
  if (!pl_normalize_axis (pl_node_attr_int (node, "axis", 0), rank, &a, NULL))
    return pl_lower_fail (L, "%s: bad axis", node->name);
  int c = pl_lower_index_value (L, idx[a]);
  int result = -1;
  int64_t off = 0;
  for (int i = 0; i < node->n_inputs; i++)
    {
      PlValue *in = node->inputs[i];
      int64_t id[PL_MAX_RANK];
      if (!in || in->shape.rank != rank || !pl_shape_get_dims (&in->shape, id))
        return pl_lower_fail (L, "%s without static shapes", node->name);
      int64_t n = id[a];
      if (n == 0)
        continue;
      const PlIdx *ii[PL_MAX_RANK];
      memcpy (ii, idx, sizeof (ii[0]) * rank);
      ii[a] = pl_idx_clamp (L->arena, idx[a], off, n);
      int x = pl_lower_value (L, in, ii);
      /* inputs before this one were picked below off: keep them there */
      result = result < 0 ? x
               : pl_lower_select (L, below (L, c, off), result, x);
      off += n;
    }
  return result < 0 ? pl_lower_fail (L, "%s: every input is empty", node->name) : result;
}

/* Pad, constant mode: the input where every coordinate lies inside it (c_k -
 * begin_k in [0, n_k)), else the pad value. A negative begin crops: a plain
 * offset, no test (and no clamp, unless the axis is padded at its end).
 * The other modes read the input at every point, through the index
 * function of the mode: edge clamps, wrap takes the coordinate mod n_k,
 * reflect mirrors (pl_idx_reflect); no select. */
int
pl_lower_pad (PlLower *L, const PlNode *node, const PlValue *v, const PlIdx *const *idx)
{
  int rank = v->shape.rank;
  int64_t begin[PL_MAX_RANK], end[PL_MAX_RANK], id[PL_MAX_RANK];
  PlValue *in = node->inputs[0];
  double fill = 0;
  PlPadMode mode;
  if (!pl_pad_static (node, begin, end, &fill, &mode) || !pl_shape_get_dims (&in->shape, id))
    return pl_lower_fail (L, "%s: not a Pad with constant pads and value", node->name);
  const PlIdx *ii[PL_MAX_RANK];
  int inside = -1;
  for (int k = 0; k < rank; k++)
    {
      if (id[k] == 0)
        return pl_lower_fail (L, "%s: an empty axis", node->name);
      if (mode == PL_PAD_REFLECT)
        ii[k] = pl_idx_reflect (L->arena, idx[k], begin[k], id[k]);
      else if (mode == PL_PAD_WRAP)
        {
          /* (c - begin) mod n, made non-negative by whole periods */
          int64_t up = begin[k] > 0 ? (begin[k] + id[k] - 1) / id[k] * id[k] - begin[k] : -begin[k];
          ii[k] = pl_idx_mod (L->arena, pl_idx_add (L->arena, idx[k], pl_idx_const (L->arena, up)), id[k]);
        }
      else   /* edge; constant: cropped only, a plain offset */
        ii[k] = pl_idx_clamp (L->arena, idx[k], begin[k], id[k]);
      if (mode != PL_PAD_CONSTANT)
        continue;
      int c = begin[k] > 0 || end[k] > 0 ? pl_lower_index_value (L, idx[k]) : -1;
      if (begin[k] > 0)
        {
          int t = pl_lower_binary (L, PL_SOP_GE, c, pl_lower_const (L, PL_DTYPE_I64, (double) begin[k]));
          inside = inside < 0 ? t : pl_lower_binary (L, PL_SOP_AND, inside, t);
        }
      if (end[k] > 0)     /* else every c < begin + n */
        {
          int t = below (L, c, begin[k] + id[k]);
          inside = inside < 0 ? t : pl_lower_binary (L, PL_SOP_AND, inside, t);
        }
    }
  int x = pl_lower_value (L, in, ii);
  return inside < 0 ? x : pl_lower_select (L, inside, x, pl_lower_const (L, v->dtype, fill));
}

/* Trilu: the input where col - row >= k (upper) or <= k (lower) in the last
 * two dims, else zero. */
int
pl_lower_trilu (PlLower *L, const PlNode *node, const PlValue *v, const PlIdx *const *idx)
{
  int rank = v->shape.rank;
  int64_t k = 0;
  PlValue *kv = node->n_inputs > 1 ? node->inputs[1] : NULL;
  if (kv)
    {
      PlTensor *t = pl_value_constant (kv);
      if (!t || t->numel != 1)
        return pl_lower_fail (L, "%s: k is not a constant", node->name);
      k = pl_tensor_get_i64 (t, 0);
    }
  if (rank < 2)
    return pl_lower_fail (L, "%s: rank %d", node->name, rank);
  int diff = pl_lower_binary (L, PL_SOP_SUB, pl_lower_index_value (L, idx[rank - 1]),
                              pl_lower_index_value (L, idx[rank - 2]));
  int kc = pl_lower_const (L, PL_DTYPE_I64, (double) k);
  int keep = pl_lower_binary (L, pl_node_attr_int (node, "upper", 1) ? PL_SOP_GE : PL_SOP_LE, diff, kc);
  return pl_lower_select (L, keep, pl_lower_value (L, node->inputs[0], idx), pl_lower_const (L, v->dtype, 0));
}

/* An index value k (i64 or i32) into an axis of n as i64, a negative one
 * counted from the end. */
static int
from_end (PlLower *L, int k, PlDType dtype, int64_t n)
{
  if (dtype != PL_DTYPE_I64)
    k = pl_lower_cast (L, k, PL_DTYPE_I64);
  return pl_lower_select (L, pl_lower_binary (L, PL_SOP_LT, k, pl_lower_const (L, PL_DTYPE_I64, 0)),
                          pl_lower_binary (L, PL_SOP_ADD, k, pl_lower_const (L, PL_DTYPE_I64, (double) n)), k);
}

/* Gather's and GatherElements' common part: static shapes, data read from
 * memory in the default layout, integer indices, the axis (*a), data's
 * dims and the axis' element stride. False (failed) otherwise. */
static bool
gather_operands (PlLower *L, const PlNode *node, int *a, int64_t *dd, int64_t *stride)
{
  PlValue *data = node->inputs[0], *ind = node->n_inputs > 1 ? node->inputs[1] : NULL;
  if (!ind || !pl_shape_get_dims (&data->shape, dd) || !pl_shape_is_static (&ind->shape))
    return pl_lower_fail (L, "%s without static shapes", node->name) >= 0;
  if (!pl_lower_gathers_from (L, node, data, "its data"))
    return false;
  if (ind->dtype != PL_DTYPE_I64 && ind->dtype != PL_DTYPE_I32)
    return pl_lower_fail (L, "%s: %s indices", node->name, pl_dtype_name (ind->dtype)) >= 0;
  int r = data->shape.rank;
  if (!pl_normalize_axis (pl_node_attr_int (node, "axis", 0), r, a, NULL))
    return pl_lower_fail (L, "%s: bad axis", node->name) >= 0;
  *stride = 1;
  for (int k = *a + 1; k < r; k++)
    *stride *= dd[k];
  return true;
}

/* An index value k (i64 or i32) into an axis of n: as i64, negative counted
 * from the end. One outside [-n, n), which the reference refuses, sets the
 * kernel's status word (PL_SOP_CHECK: the run then fails, as the
 * reference's would) and reads element 0, so the read stays inside. */
static int
normalized_index (PlLower *L, const PlNode *node, int axis, int raw, PlDType dtype, int64_t n)
{
  int k = from_end (L, raw, dtype, n);
  int bad = pl_lower_binary (L, PL_SOP_OR, pl_lower_binary (L, PL_SOP_LT, k, pl_lower_const (L, PL_DTYPE_I64, 0)),
                             pl_lower_binary (L, PL_SOP_GE, k, pl_lower_const (L, PL_DTYPE_I64, (double) n)));
  if (dtype != PL_DTYPE_I64)
    raw = pl_lower_cast (L, raw, PL_DTYPE_I64);
  g_autofree char *what = g_strdup_printf ("index %%I of %s '%s' (axis %d of size %" G_GINT64_FORMAT ") is out of range",
                                           pl_op_name (node->op), node->name, axis, n);
  return pl_lower_select (L, pl_lower_check (L, bad, raw, what), pl_lower_const (L, PL_DTYPE_I64, 0), k);
}

bool
pl_lower_gathers_from (PlLower *L, const PlNode *node, const PlValue *v, const char *what)
{
  if ((v->producer && g_hash_table_contains (L->members, v->producer)) || v->layout != PL_LAYOUT_NCHW)
    return pl_lower_fail (L, "%s: %s is computed in the same kernel or in another layout", node->name, what) >= 0;
  return true;
}

int
pl_lower_checked_range (PlLower *L, int k, int64_t last, const char *message)
{
  int bad = pl_lower_binary (L, PL_SOP_OR, pl_lower_binary (L, PL_SOP_LT, k, pl_lower_const (L, PL_DTYPE_I64, 0)),
                             pl_lower_binary (L, PL_SOP_GT, k, pl_lower_const (L, PL_DTYPE_I64, (double) last)));
  return pl_lower_select (L, pl_lower_check (L, bad, k, message), pl_lower_const (L, PL_DTYPE_I64, 0), k);
}

/* Gather: output coordinates (before, j..., after) read data at (before,
 * indices[j...], after), the index a loaded value: data must be in memory
 * (an input of the kernel, in the default layout) and the load adds the
 * index times the axis' stride. A negative index counts from the end; one
 * out of range, which the reference refuses, fails the run
 * (normalized_index), and the kernel never reads outside data. */
int
pl_lower_gather (PlLower *L, const PlNode *node, const PlValue *v, const PlIdx *const *idx)
{
  PlValue *data = node->inputs[0], *ind = node->inputs[1];
  int64_t dd[PL_MAX_RANK], stride;
  int a;
  if (!gather_operands (L, node, &a, dd, &stride))
    return -1;
  int r = data->shape.rank, q = ind->shape.rank;
  if (v->shape.rank != r - 1 + q)
    return pl_lower_fail (L, "%s: bad output rank", node->name);
  int k = normalized_index (L, node, a, pl_lower_value (L, ind, idx + a), ind->dtype, dd[a]);
  const PlIdx *di[PL_MAX_RANK];
  for (int j = 0; j < r; j++)
    di[j] = j < a ? idx[j] : j == a ? pl_idx_const (L->arena, 0) : idx[j - 1 + q];
  return pl_lower_gather_load (L, pl_lower_slot (L, data), data->dtype, pl_lower_offset (L, data, di), k, stride);
}

/* GatherElements: output element (.., i_a, ..) is data's (.., k, ..) along
 * the axis, k = indices at the same coordinates, checked like Gather's. */
int
pl_lower_gather_elements (PlLower *L, const PlNode *node, const PlValue *v G_GNUC_UNUSED, const PlIdx *const *idx)
{
  PlValue *data = node->inputs[0], *ind = node->inputs[1];
  int64_t dd[PL_MAX_RANK], stride;
  int a;
  if (!gather_operands (L, node, &a, dd, &stride))
    return -1;
  int r = data->shape.rank;
  if (ind->shape.rank != r)
    return pl_lower_fail (L, "%s: indices of rank %d for data of rank %d", node->name, ind->shape.rank, r);
  int k = normalized_index (L, node, a, pl_lower_value (L, ind, idx), ind->dtype, dd[a]);
  const PlIdx *di[PL_MAX_RANK];
  for (int j = 0; j < r; j++)
    di[j] = j == a ? pl_idx_const (L->arena, 0) : idx[j];
  return pl_lower_gather_load (L, pl_lower_slot (L, data), data->dtype, pl_lower_offset (L, data, di), k, stride);
}

/* ReverseSequence: output (.., t, .., b, ..) reads X at time len - 1 - t
 * where t < len = sequence_lens[b], else at t: a gather along the time
 * axis, X in memory. A length outside [0, T], which the reference refuses,
 * fails the run (and reads time 0). */
int
pl_lower_reverse_sequence (PlLower *L, const PlNode *node, const PlValue *v, const PlIdx *const *idx)
{
  PlValue *x = node->inputs[0], *lens = node->inputs[1];
  int64_t xd[PL_MAX_RANK];
  int r = x->shape.rank;
  int64_t ta = pl_node_attr_int (node, "time_axis", 0), ba = pl_node_attr_int (node, "batch_axis", 1);
  if (!pl_shape_get_dims (&x->shape, xd) || !pl_shape_is_static (&lens->shape) || r < 2 || ta < 0 || ta > 1
      || ba < 0 || ba > 1 || ta == ba)
    return pl_lower_fail (L, "%s without static shapes or with bad axes", node->name);
  if (!pl_lower_gathers_from (L, node, x, "its data"))
    return -1;
  if (lens->dtype != PL_DTYPE_I64 && lens->dtype != PL_DTYPE_I32)
    return pl_lower_fail (L, "%s: %s sequence lengths", node->name, pl_dtype_name (lens->dtype));
  const PlDType i = PL_DTYPE_I64;
  int64_t stride = 1;
  for (int k = (int) ta + 1; k < r; k++)
    stride *= xd[k];
  const PlIdx *li[1] = { idx[ba] };
  int len = pl_lower_value (L, lens, li);
  if (len < 0)
    return -1;
  if (lens->dtype != i)
    len = pl_lower_cast (L, len, i);
  g_autofree char *what = g_strdup_printf ("sequence length %%I of ReverseSequence '%s' is outside [0, %" G_GINT64_FORMAT
                                           "]", node->name, xd[ta]);
  len = pl_lower_checked_range (L, len, xd[ta], what);
  int t = pl_lower_index_value (L, idx[ta]);
  int back = pl_lower_binary (L, PL_SOP_SUB, pl_lower_binary (L, PL_SOP_SUB, len, pl_lower_const (L, i, 1)), t);
  int k = pl_lower_select (L, pl_lower_binary (L, PL_SOP_LT, t, len), back, t);
  const PlIdx *di[PL_MAX_RANK];
  for (int j = 0; j < r; j++)
    di[j] = j == ta ? pl_idx_const (L->arena, 0) : idx[j];
  return pl_lower_gather_load (L, pl_lower_slot (L, x), x->dtype, pl_lower_offset (L, x, di), k, stride);
}

/* OneHot: the on value where the coordinate along the new axis equals the
 * index at the others (negative counted from depth), else the off value;
 * an index outside [-depth, depth) equals no coordinate: all off. Integer
 * indices, constant depth and values. */
int
pl_lower_onehot (PlLower *L, const PlNode *node, const PlValue *v, const PlIdx *const *idx)
{
  PlValue *ind = node->inputs[0];
  PlTensor *dt = node->inputs[1] ? pl_value_constant (node->inputs[1]) : NULL;
  PlTensor *vt = node->inputs[2] ? pl_value_constant (node->inputs[2]) : NULL;
  if ((ind->dtype != PL_DTYPE_I64 && ind->dtype != PL_DTYPE_I32) || !dt || dt->numel != 1 || !vt || vt->numel != 2)
    return pl_lower_fail (L, "%s: not integer indices with a constant depth and values", node->name);
  int r = v->shape.rank, a;
  if (!pl_normalize_axis (pl_node_attr_int (node, "axis", -1), r, &a, NULL))
    return pl_lower_fail (L, "%s: bad axis", node->name);
  int64_t depth = v->shape.dims[a].size;
  const PlIdx *ii[PL_MAX_RANK];
  for (int j = 0, k = 0; j < r; j++)
    if (j != a)
      ii[k++] = idx[j];
  int k = from_end (L, pl_lower_value (L, ind, ii), ind->dtype, depth);
  int hit = pl_lower_binary (L, PL_SOP_EQ, k, pl_lower_index_value (L, idx[a]));
  return pl_lower_select (L, hit, pl_lower_const (L, v->dtype, pl_tensor_get_f64 (vt, 1)),
                          pl_lower_const (L, v->dtype, pl_tensor_get_f64 (vt, 0)));
}

/* GatherND: output element (j..., s...), j the indices' outer coordinates
 * (the first batch_dims of them shared with the data) and s the slice's,
 * reads data at (j[:b], the m index values at j, s): the load adds the sum
 * of each index value (checked like Gather's) times its axis' stride. */
int
pl_lower_gather_nd (PlLower *L, const PlNode *node, const PlValue *v, const PlIdx *const *idx)
{
  PlValue *data = node->inputs[0], *ind = node->inputs[1];
  int64_t dd[PL_MAX_RANK], id[PL_MAX_RANK], stride[PL_MAX_RANK], unused;
  int a;
  if (!gather_operands (L, node, &a, dd, &unused) || !pl_shape_get_dims (&ind->shape, id))
    return -1;
  int r = data->shape.rank, q = ind->shape.rank, b = (int) pl_node_attr_int (node, "batch_dims", 0);
  int m = (int) id[q - 1];
  if (b < 0 || m < 1 || b + m > r || v->shape.rank != q - 1 + r - b - m)
    return pl_lower_fail (L, "%s: bad batch_dims or index tuples", node->name);
  pl_strides (r, dd, stride);
  int at = -1;
  const PlIdx *ii[PL_MAX_RANK];
  for (int j = 0; j < q - 1; j++)
    ii[j] = idx[j];
  for (int k = 0; k < m; k++)
    {
      ii[q - 1] = pl_idx_const (L->arena, k);
      int kk = normalized_index (L, node, b + k, pl_lower_value (L, ind, ii), ind->dtype, dd[b + k]);
      int term = pl_lower_binary (L, PL_SOP_MUL, kk, pl_lower_const (L, PL_DTYPE_I64, (double) stride[b + k]));
      at = at < 0 ? term : pl_lower_binary (L, PL_SOP_ADD, at, term);
    }
  const PlIdx *di[PL_MAX_RANK];
  for (int j = 0; j < r; j++)
    di[j] = j < b ? idx[j] : j < b + m ? pl_idx_const (L->arena, 0) : idx[q - 1 + j - b - m];
  return pl_lower_gather_load (L, pl_lower_slot (L, data), data->dtype, pl_lower_offset (L, data, di), at, 1);
}
