/* cost.c — static per-graph statistics: kernels, bytes moved, reshape bytes,
 * FLOPs and peak memory. Deliberately simple and explainable: every figure is
 * a sum over top-level nodes of something a person can check by hand. */
#define G_LOG_DOMAIN "passlab"
#include "cost.h"

#include "schedule.h"

bool
pl_node_is_metadata_only (const PlNode *node)
{
  switch (node->op)
    {
    case PL_OP_Reshape:
    case PL_OP_Squeeze:
    case PL_OP_Unsqueeze:
    case PL_OP_Flatten:
    case PL_OP_Identity:
    case PL_OP_Shape:
    case PL_OP_Size:
    case PL_OP_Constant:
      return true;
    default:
      return false;
    }
}

/* Products and sums of counts, stopping at G_MAXINT64: with large symbolic
 * sizes (--sym-size) a figure past it means "more than can be counted",
 * where plain arithmetic would overflow (undefined behaviour). */
static int64_t
sat_mul (int64_t a, int64_t b)
{
  int64_t r;
  return __builtin_mul_overflow (a, b, &r) ? G_MAXINT64 : r;
}

static int64_t
sat_add (int64_t a, int64_t b)
{
  int64_t r;
  return __builtin_add_overflow (a, b, &r) ? G_MAXINT64 : r;
}

static int64_t
value_elems (const PlValue *v, int64_t sym_size, bool *assumed)
{
  int64_t n = 1;
  if (v->shape.rank < 0)
    {
      *assumed = true;
      return sym_size;
    }
  for (int i = 0; i < v->shape.rank; i++)
    {
      int64_t d = v->shape.dims[i].size;
      if (d < 0)
        {
          d = sym_size;
          *assumed = true;
        }
      if (!pl_mul_overflow (n, d, &n))
        return PL_MAX_NUMEL;
    }
  return n;
}

/* FLOPs of one node: 2 per multiply-accumulate for the compute-intensive
 * ops, one per output element for everything else that computes. */
int64_t
pl_node_flops (const PlNode *node, int64_t sym_size, bool *assumed)
{
  /* A LayoutTransform only moves data: its cost is its bytes moved (read
   * and written once, counted by pl_graph_stats), no arithmetic. */
  if (pl_node_is_metadata_only (node) || node->op == PL_OP_LayoutTransform || node->n_outputs == 0 ||
      !node->outputs[0])
    return 0;
  int64_t out = value_elems (node->outputs[0], sym_size, assumed);
  const PlValue *a = node->n_inputs > 0 ? node->inputs[0] : NULL;
  const PlValue *b = node->n_inputs > 1 ? node->inputs[1] : NULL;

  switch (node->op)
    {
    case PL_OP_MatMul:
    case PL_OP_Gemm:
      if (a && a->shape.rank >= 1)
        {
          /* K is A's last dim (Gemm with transA: its first) */
          int k_axis = node->op == PL_OP_Gemm && pl_node_attr_int (node, "transA", 0) ? 0 : a->shape.rank - 1;
          int64_t k = a->shape.dims[k_axis].size >= 0 ? a->shape.dims[k_axis].size : sym_size;
          return sat_mul (sat_mul (2, out), k);
        }
      return 2 * out;
    case PL_OP_Conv:
      if (b && b->shape.rank >= 2)
        {
          /* per output element: C/group * kernel spatial MACs */
          int64_t macs = 1;
          for (int i = 1; i < b->shape.rank; i++)
            macs = sat_mul (macs, b->shape.dims[i].size >= 0 ? b->shape.dims[i].size : sym_size);
          return sat_mul (sat_mul (2, out), macs);
        }
      return 2 * out;
    case PL_OP_ConvTranspose:
      if (a && b && b->shape.rank >= 2)
        {
          int64_t in = value_elems (a, sym_size, assumed), macs = 1;
          for (int i = 1; i < b->shape.rank; i++)
            macs = sat_mul (macs, b->shape.dims[i].size >= 0 ? b->shape.dims[i].size : sym_size);
          return sat_mul (sat_mul (2, in), macs);
        }
      return 2 * out;
    default:
      return out;
    }
}

int64_t
pl_node_bytes (const PlNode *node, int64_t sym_size, bool *assumed)
{
  bool unused = false;
  if (!assumed)
    assumed = &unused;
  int64_t bytes = 0;
  for (int i = 0; i < node->n_inputs; i++)
    if (node->inputs[i])
      bytes = sat_add (bytes, sat_mul (value_elems (node->inputs[i], sym_size, assumed),
                                       (int64_t) pl_dtype_size (node->inputs[i]->dtype)));
  for (int i = 0; i < node->n_outputs; i++)
    if (node->outputs[i])
      bytes = sat_add (bytes, sat_mul (value_elems (node->outputs[i], sym_size, assumed),
                                       (int64_t) pl_dtype_size (node->outputs[i]->dtype)));
  return bytes;
}

void
pl_graph_stats (const PlGraph *g, int64_t sym_size, PlGraphStats *stats)
{
  *stats = (PlGraphStats) { .nodes = g->nodes->len };
  bool assumed = false;

  for (guint k = 0; k < g->nodes->len; k++)
    {
      const PlNode *node = g->nodes->pdata[k];
      if (node->op == PL_OP_Reshape || node->op == PL_OP_Flatten)
        for (int i = 0; i < node->n_outputs; i++)
          if (node->outputs[i])
            stats->reshape_bytes = sat_add (stats->reshape_bytes,
                                            value_elems (node->outputs[i], sym_size, &assumed) *
                                            (int64_t) pl_dtype_size (node->outputs[i]->dtype));
      if (pl_node_is_metadata_only (node))
        continue;
      stats->kernels++;
      stats->flops = sat_add (stats->flops, pl_node_flops (node, sym_size, &assumed));
      stats->bytes_moved = sat_add (stats->bytes_moved, pl_node_bytes (node, sym_size, &assumed));
    }

  g_autoptr (PlMemoryProfile) mem = pl_memory_profile (g, sym_size, NULL);
  if (mem)
    {
      stats->peak_bytes = mem->peak_bytes;
      assumed |= mem->assumed_sizes;
    }
  stats->assumed_sizes = assumed;
}
