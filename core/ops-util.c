/* ops-util.c — helpers shared by the op family files. */
#define G_LOG_DOMAIN "passlab"
#include "ops-util.h"

void
pl_set_output (PlNode *node, int i, PlDType dtype, const PlShape *shape)
{
  if (i < node->n_outputs && node->outputs[i])
    {
      node->outputs[i]->dtype = dtype;
      node->outputs[i]->shape = shape ? *shape : pl_shape_unknown ();
    }
}

PlValue *
pl_input (const PlNode *node, int i)
{
  return i >= 0 && i < node->n_inputs ? node->inputs[i] : NULL;
}

PlTensor *
pl_input_constant (const PlNode *node, int i)
{
  return pl_value_constant (pl_input (node, i));
}

int64_t *
pl_tensor_to_ints (const PlTensor *t, int *n)
{
  int64_t *v = g_new (int64_t, MAX (t->numel, 1));
  for (int64_t i = 0; i < t->numel; i++)
    v[i] = pl_tensor_get_i64 (t, i);
  *n = (int) t->numel;
  return v;
}

bool
pl_input_const_ints (const PlNode *node, int i, int64_t **v, int *n)
{
  PlTensor *t = pl_input_constant (node, i);
  *v = NULL;
  *n = 0;
  if (t)
    {
      if (!pl_dtype_is_int (t->dtype) || t->numel > (1 << 24))
        return false;
      *v = pl_tensor_to_ints (t, n);
      return true;
    }
  /* Constant nodes may also carry value_int / value_ints. */
  PlValue *val = pl_input (node, i);
  if (val && val->producer && val->producer->op == PL_OP_Constant)
    {
      const PlAttr *a = pl_node_attr (val->producer, "value_ints");
      if (a && a->type == PL_ATTR_INTS)
        {
          *v = g_memdup2 (a->ints.v, sizeof (int64_t) * MAX (a->ints.n, 1));
          *n = a->ints.n;
          return true;
        }
      a = pl_node_attr (val->producer, "value_int");
      if (a && a->type == PL_ATTR_INT)
        {
          *v = g_new (int64_t, 1);
          (*v)[0] = a->i;
          *n = 1;
          return true;
        }
    }
  return false;
}

bool
pl_normalize_axis (int64_t axis, int rank, int *out, GError **error)
{
  if (axis < -rank || axis >= rank)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "axis %" G_GINT64_FORMAT " out of range for rank %d",
                   axis, rank);
      return false;
    }
  *out = (int) (axis < 0 ? axis + rank : axis);
  return true;
}

bool
pl_require_rank (const PlNode *node, int input, GError **error)
{
  PlValue *v = pl_input (node, input);
  if (!v || v->shape.rank < 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "input %d must have a known rank", input);
      return false;
    }
  return true;
}

bool
pl_require_dtype (const PlNode *node, int input, const PlDType *allowed, GError **error)
{
  PlValue *v = pl_input (node, input);
  if (!v)
    return true;
  for (const PlDType *d = allowed; *d != PL_DTYPE_UNDEFINED; d++)
    if (v->dtype == *d)
      return true;
  g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "input %d has unsupported dtype %s", input,
               pl_dtype_name (v->dtype));
  return false;
}

void
pl_strides (int rank, const int64_t *dims, int64_t *strides)
{
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--)
    {
      strides[i] = s;
      s *= dims[i];
    }
}

void
pl_split_at_axis (int rank, const int64_t *dims, int axis, int64_t *outer, int64_t *n, int64_t *inner)
{
  *outer = *inner = 1;
  for (int d = 0; d < axis; d++)
    *outer *= dims[d];
  *n = dims[axis];
  for (int d = axis + 1; d < rank; d++)
    *inner *= dims[d];
}

void
pl_broadcast_strides (int in_rank, const int64_t *in_dims, int out_rank, const int64_t *out_dims,
                      int64_t *strides)
{
  int64_t s = 1;
  for (int i = out_rank - 1; i >= 0; i--)
    {
      int j = in_rank - out_rank + i;
      if (j < 0 || in_dims[j] == 1)
        strides[i] = 0;
      else
        {
          strides[i] = s;
          s *= in_dims[j];
        }
    }
  (void) out_dims;  /* the output dims only fix the rank alignment */
}

int64_t
pl_offset_of (int64_t linear, int rank, const int64_t *dims, const int64_t *strides)
{
  int64_t off = 0;
  for (int i = rank - 1; i >= 0; i--)
    {
      int64_t d = dims[i] ? dims[i] : 1;
      off += (linear % d) * strides[i];
      linear /= d;
    }
  return off;
}

bool
pl_broadcast_dims (int ra, const int64_t *a, int rb, const int64_t *b, int *rank, int64_t *out,
                   GError **error)
{
  PlShape sa = pl_shape_from_dims (ra, a), sb = pl_shape_from_dims (rb, b), so;
  if (!pl_shape_broadcast (&sa, &sb, &so, error))
    return false;
  *rank = so.rank;
  for (int i = 0; i < so.rank; i++)
    out[i] = so.dims[i].size;
  return true;
}

PlTensor *
pl_out_new (PlDType dtype, int rank, const int64_t *dims, GError **error)
{
  return pl_tensor_new (dtype, rank, dims, error);
}
