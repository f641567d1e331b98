/* ops-memory.c — passlab's own memory ops, which the swap pass inserts
 * (seed 004, IBM Large Model Support; DESIGN.md §1.5):
 *
 *   SwapOut(x)         -> y   copy a device tensor to host memory
 *   SwapIn(y)          -> x   copy it back to the device
 *   CompressFp16(x)    -> h   f32 -> f16 on the device, round to nearest even
 *   DecompressFp16(h)  -> x   f16 -> f32 on the device (exact)
 *   LayoutTransform(x) {to="NHWC"} -> y   the same logical tensor stored in
 *                                          another physical layout (layout.h)
 *
 * Where values live: the output of a SwapOut is a *host* value and is the
 * only kind there is (pl_value_on_host, schedule.h). The memory profile does
 * not count host values as device memory and reports them separately; every
 * other value, SwapIn's and the compress pair's outputs included, is device
 * memory. A runtime executes SwapOut / SwapIn as copies on copy streams.
 *
 * The reference implementations are what the data goes through: the swaps
 * are identities (tensors are immutable once shared, so the output is the
 * input itself, as Identity's is), the compress pair converts element by
 * element. Swapping is exact; compressing loses what f16 cannot hold
 * (relative error <= 2^-11 in the normal range, overflow past 65504).
 */
#define G_LOG_DOMAIN "passlab"
#include "ops-util.h"

/* SwapOut / SwapIn: same dtype and shape as the input, any dtype. */
static bool
infer_copy (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0);
  if (x == NULL)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "input 0 is required");
      return false;
    }
  pl_set_output (node, 0, x->dtype, &x->shape);
  return true;
}

static bool
eval_copy (const PlNode *node G_GNUC_UNUSED, PlTensor *const *inputs, PlTensor **outputs,
           GError **error G_GNUC_UNUSED)
{
  outputs[0] = pl_tensor_ref (inputs[0]);
  return true;
}

static bool
infer_convert (PlNode *node, PlDType from, PlDType to, GError **error)
{
  const PlDType allowed[] = { from, PL_DTYPE_UNDEFINED };
  if (!infer_copy (node, error) || !pl_require_dtype (node, 0, allowed, error))
    return false;
  pl_set_output (node, 0, to, &pl_input (node, 0)->shape);
  return true;
}

static bool
infer_compress (PlNode *node, GError **error)
{
  return infer_convert (node, PL_DTYPE_F32, PL_DTYPE_F16, error);
}

static bool
infer_decompress (PlNode *node, GError **error)
{
  return infer_convert (node, PL_DTYPE_F16, PL_DTYPE_F32, error);
}

/* The evaluators check the dtype again: the interpreter may be handed a
 * tensor whose declared type was unknown at inference time. */
static bool
check_dtype (const PlTensor *t, PlDType want, GError **error)
{
  if (t->dtype == want)
    return true;
  g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "input is %s, expected %s", pl_dtype_name (t->dtype),
               pl_dtype_name (want));
  return false;
}

static bool
eval_compress (const PlNode *node G_GNUC_UNUSED, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  if (!check_dtype (x, PL_DTYPE_F32, error))
    return false;
  PlTensor *h = pl_out_new (PL_DTYPE_F16, x->rank, x->dims, error);
  if (h == NULL)
    return false;
  const float *src = x->data;
  uint16_t *dst = h->data;
  for (int64_t i = 0; i < x->numel; i++)
    dst[i] = pl_f32_to_f16 (src[i]);
  outputs[0] = h;
  return true;
}

static bool
eval_decompress (const PlNode *node G_GNUC_UNUSED, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *h = inputs[0];
  if (!check_dtype (h, PL_DTYPE_F16, error))
    return false;
  PlTensor *x = pl_out_new (PL_DTYPE_F32, h->rank, h->dims, error);
  if (x == NULL)
    return false;
  const uint16_t *src = h->data;
  float *dst = x->data;
  for (int64_t i = 0; i < h->numel; i++)
    dst[i] = pl_f16_to_f32 (src[i]);
  outputs[0] = x;
  return true;
}

/* LayoutTransform: the output is the input in layout `to`; logically an
 * identity, so the reference passes the tensor through. */
static bool
infer_layout_transform (PlNode *node, GError **error)
{
  PlValue *x = pl_input (node, 0);
  const char *to = pl_node_attr_string (node, "to", NULL);
  PlLayout layout;
  if (x == NULL)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "input 0 is required");
      return false;
    }
  if (!pl_layout_parse (to, &layout))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE,
                   "attribute 'to' must be one of NCHW, NHWC, CHWN (got %s%s%s)",
                   to ? "'" : "", to ? to : "nothing", to ? "'" : "");
      return false;
    }
  if (x->shape.rank >= 0 && !pl_layout_valid_for_rank (layout, x->shape.rank))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "layout %s needs a 4-d tensor, '%s' has rank %d",
                   to, x->name, x->shape.rank);
      return false;
    }
  pl_set_output (node, 0, x->dtype, &x->shape);
  if (node->outputs[0])
    node->outputs[0]->layout = layout;
  return true;
}

void
pl_ops_register_memory (void)
{
  static const PlOpEntry entries[] = {
    { PL_OP_SwapOut, 1, 1, 1, 1, infer_copy, eval_copy },
    { PL_OP_SwapIn, 1, 1, 1, 1, infer_copy, eval_copy },
    { PL_OP_CompressFp16, 1, 1, 1, 1, infer_compress, eval_compress },
    { PL_OP_DecompressFp16, 1, 1, 1, 1, infer_decompress, eval_decompress },
    { PL_OP_LayoutTransform, 1, 1, 1, 1, infer_layout_transform, eval_copy },
  };
  pl_ops_register (entries, G_N_ELEMENTS (entries));
}
