/* fuse-loops.c — the "fuse-loops" pass: loop and input fusion (seed 001,
 * XLA's instruction fusion; DESIGN.md §1.2).
 *
 * Fusible are elementwise and broadcast ops (their data functions), the view
 * and layout ops Reshape, Transpose, Squeeze, Unsqueeze, Flatten, Expand,
 * Tile, DepthToSpace and SpaceToDepth whose shape/axes operands are constants, Slice with constant parameters,
 * nearest and linear Resize, Pad (any mode) with constant pads, and Concat
 * of static shapes (they fold in as index functions; constant Pad and
 * Concat as selects, kernels/plan-select.c), Gather and GatherElements
 * whose data is not computed in the group (a load at the indices' value),
 * and — with
 * input_fusion — reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/
 * LogSum/LogSumExp/SumSquare, ArgMax/ArgMin and Softmax/LogSoftmax/Hardmax.
 * Compute-intensive ops, fusion nodes and everything else stay as they are.
 *
 * Groups grow on a PlFusionPlan (fusion.h), greedily:
 *  1. producer → consumer: consumers in reverse topological order pull in
 *     their fusible producers (a producer read elsewhere too becomes one more
 *     output of the group);
 *  2. multi-output siblings: fusible readers of one non-constant value with
 *     the same output shape join one group, which then reads it once.
 * A merge happens only when the group stays well formed:
 *  - at most max_ops nodes, and no cycle among the groups;
 *  - a loop group's outputs all have one shape (one loop nest);
 *  - reductions end a group: its reductions reduce the same axes of inputs of
 *    the same shape (the same rows), and an op that reads a reduction's
 *    result inside the group must lead to a later reduction in it — so
 *    layer norm's mean may sit inside the variance's input fusion, but the
 *    normalization after the variance is a loop fusion of its own. An input
 *    group's outputs are its reductions' results and values of the rows'
 *    shape.
 * Groups of one node are left alone (nothing to gain); the rest become
 * Fusion nodes of kind "loop" or "input" in one batch.
 */
#define G_LOG_DOMAIN "passlab"
#include "builtin-passes.h"
#include "cost.h"
#include "fusion.h"
#include "ops-util.h"
#include "rewrite.h"

#include <string.h>

/* Report lines beyond this many are summarized. */
#define MAX_REPORT_LINES 200

typedef enum {
  FUSE_NONE,
  FUSE_ELEMENTWISE,
  FUSE_INDEX,
  FUSE_REDUCE,
} FuseClass;

typedef struct {
  PlGraph      *g;
  PlFusionPlan *plan;
  int           max_ops;
  bool          input_fusion;
  guint32       n_ids;
  guint8       *cls;        /* FuseClass by node id */
  guint32      *axes;       /* reductions: the reduced axes as a bit mask, by node id */
  int          *pos;        /* topological position by node id */
  int          *loc;        /* scratch: position inside the group being checked, by node id */
  guint        *loc_stamp;
  guint         stamp;
  GHashTable   *graph_outputs;
} Ctx;

/* --- what may fuse ------------------------------------------------------------ */

static bool
is_row_reduction (PlOp op)
{
  switch (op)
    {
    case PL_OP_ReduceSum: case PL_OP_ReduceMean: case PL_OP_ReduceMax: case PL_OP_ReduceMin:
    case PL_OP_ReduceProd: case PL_OP_ReduceL1: case PL_OP_ReduceL2: case PL_OP_ReduceLogSum:
    case PL_OP_ReduceLogSumExp: case PL_OP_ReduceSumSquare: case PL_OP_ArgMax: case PL_OP_ArgMin:
    case PL_OP_Softmax: case PL_OP_LogSoftmax: case PL_OP_Hardmax:
      return true;
    default:
      return false;
    }
}

static FuseClass
classify (Ctx *c, const PlNode *node)
{
  const PlOpInfo *info = pl_op_info (node->op);
  if (node->body || node->op == PL_OP_OPAQUE || !info->eval || node->n_outputs == 0 || node->n_inputs == 0)
    return FUSE_NONE;
  for (int i = 0; i < node->n_outputs; i++)
    if (node->outputs[i] && (node->outputs[i]->shape.rank < 0 || node->outputs[i]->dtype == PL_DTYPE_UNDEFINED))
      return FUSE_NONE;
  switch (node->op)
    {
    case PL_OP_Reshape: case PL_OP_Transpose: case PL_OP_Squeeze: case PL_OP_Unsqueeze:
    case PL_OP_Flatten: case PL_OP_Expand: case PL_OP_Tile: case PL_OP_DepthToSpace: case PL_OP_SpaceToDepth:
      return node->inputs[0] && pl_rw_operands_constant (node) ? FUSE_INDEX : FUSE_NONE;
    case PL_OP_Slice:
      {
        int64_t start[PL_MAX_RANK], step[PL_MAX_RANK];
        return pl_slice_static_window (node, start, step) ? FUSE_INDEX : FUSE_NONE;
      }
    case PL_OP_Pad:
      {
        int64_t b[PL_MAX_RANK], e[PL_MAX_RANK];
        double fill;
        PlPadMode mode;
        return pl_pad_static (node, b, e, &fill, &mode) ? FUSE_INDEX : FUSE_NONE;
      }
    case PL_OP_Resize:
      {
        PlResizeAxis f[PL_MAX_RANK];
        PlResizeSampleAxis lf[PL_MAX_RANK];
        return node->inputs[0] && (pl_resize_nearest_form (node, f) || pl_resize_sample_form (node, lf)) ? FUSE_INDEX
                                                                                                       : FUSE_NONE;
      }
    case PL_OP_Concat:
      for (int i = 0; i < node->n_inputs; i++)
        if (!node->inputs[i] || !pl_shape_is_static (&node->inputs[i]->shape))
          return FUSE_NONE;
      return FUSE_INDEX;
    case PL_OP_OneHot:   /* a select on the index: values and depth constants (else not one loop) */
      return node->n_inputs == 3 && node->inputs[0] && pl_shape_is_static (&node->inputs[0]->shape) &&
             node->inputs[1] && pl_value_constant (node->inputs[1]) && node->inputs[2] &&
             pl_value_constant (node->inputs[2])
             ? FUSE_INDEX : FUSE_NONE;
    case PL_OP_Gather: case PL_OP_GatherElements: case PL_OP_GatherND:   /* a load at the indices' value (group_ok: of an input) */
      return node->n_inputs == 2 && node->inputs[0] && node->inputs[1] && pl_shape_is_static (&node->inputs[0]->shape) &&
             pl_shape_is_static (&node->inputs[1]->shape) &&
             (node->inputs[1]->dtype == PL_DTYPE_I64 || node->inputs[1]->dtype == PL_DTYPE_I32)
             ? FUSE_INDEX : FUSE_NONE;
    default:
      break;
    }
  if (info->category == PL_CAT_ELEMENTWISE)
    return FUSE_ELEMENTWISE;
  if (c->input_fusion && is_row_reduction (node->op) && node->inputs[0] && node->n_outputs == 1 &&
      pl_rw_reduction_axes (node, &c->axes[node->id]))
    return FUSE_REDUCE;
  return FUSE_NONE;
}

static FuseClass
cls (const Ctx *c, const PlNode *node)
{
  return (FuseClass) c->cls[node->id];
}

/* Two reductions over the same rows: same input shape, same axes. */
static bool
same_rows (const Ctx *c, const PlNode *a, const PlNode *b)
{
  return c->axes[a->id] == c->axes[b->id] && pl_rw_same_shape (&a->inputs[0]->shape, &b->inputs[0]->shape);
}

/* --- well-formed groups ----------------------------------------------------------- */

static int
cmp_pos (gconstpointer a, gconstpointer b, gpointer data)
{
  const Ctx *c = data;
  int x = c->pos[(*(PlNode *const *) a)->id], y = c->pos[(*(PlNode *const *) b)->id];
  return (x > y) - (x < y);
}

/* The member index of node in the group being checked, or -1. */
static int
member (const Ctx *c, const PlNode *node)
{
  return node && c->loc_stamp[node->id] == c->stamp ? c->loc[node->id] : -1;
}

/* Whether the nodes m (sorted topologically) make a well-formed group; see
 * the top of the file. */
static bool
group_ok (Ctx *c, GPtrArray *m)
{
  int n = (int) m->len;
  if (n > c->max_ops)
    return false;
  c->stamp++;
  for (int i = 0; i < n; i++)
    {
      PlNode *x = m->pdata[i];
      c->loc[x->id] = i;
      c->loc_stamp[x->id] = c->stamp;
    }
  PlNode *row = NULL;   /* the first reduction: every other one must reduce the same rows */
  for (int i = 0; i < n; i++)
    {
      PlNode *x = m->pdata[i];
      /* a gather reads its data at computed offsets: data from memory, not computed in the loop */
      if ((x->op == PL_OP_Gather || x->op == PL_OP_GatherElements || x->op == PL_OP_GatherND)
          && member (c, x->inputs[0]->producer) >= 0)
        return false;
      if (cls (c, x) != FUSE_REDUCE)
        continue;
      if (!row)
        row = x;
      else if (!same_rows (c, row, x))
        return false;
    }

  /* down: reads a reduction's result inside the group; reach: leads to a reduction. */
  g_autofree bool *down = g_new0 (bool, (gsize) MAX (n, 1));
  g_autofree bool *reach = g_new0 (bool, (gsize) MAX (n, 1));
  for (int i = 0; i < n; i++)
    {
      PlNode *x = m->pdata[i];
      for (int k = 0; k < x->n_inputs; k++)
        {
          int j = x->inputs[k] ? member (c, x->inputs[k]->producer) : -1;
          if (j >= 0 && (down[j] || cls (c, m->pdata[j]) == FUSE_REDUCE))
            down[i] = true;
        }
    }
  for (int i = n - 1; i >= 0; i--)
    {
      PlNode *x = m->pdata[i];
      reach[i] = cls (c, x) == FUSE_REDUCE;
      for (int o = 0; o < x->n_outputs && !reach[i]; o++)
        for (int u = 0; x->outputs[o] && u < x->outputs[o]->n_uses; u++)
          {
            int j = member (c, x->outputs[o]->uses[u].node);
            if (j >= 0 && reach[j])
              reach[i] = true;
          }
      if (down[i] && !reach[i])
        return false;
    }

  /* Outputs: one shape for a loop group; the rows' shape or a reduction's
   * result for an input group. */
  const PlShape *shape = row ? &row->inputs[0]->shape : NULL;
  int escaping = 0;
  for (int i = 0; i < n; i++)
    {
      PlNode *x = m->pdata[i];
      for (int o = 0; o < x->n_outputs; o++)
        {
          PlValue *v = x->outputs[o];
          bool escapes = v && g_hash_table_contains (c->graph_outputs, v);
          for (int u = 0; v && u < v->n_uses && !escapes; u++)
            escapes = member (c, v->uses[u].node) < 0;
          if (!escapes)
            continue;
          escaping++;
          if (row && cls (c, x) == FUSE_REDUCE)
            continue;
          if (!shape)
            shape = &v->shape;
          else if (!pl_rw_same_shape (shape, &v->shape))
            return false;
        }
    }
  return escaping > 0;
}

/* Merges the groups of a and b if the result is well formed and acyclic. */
static bool
try_merge (Ctx *c, PlNode *a, PlNode *b)
{
  if (pl_fusion_plan_same_group (c->plan, a, b))
    return true;
  if (pl_fusion_plan_group_size (c->plan, a) + pl_fusion_plan_group_size (c->plan, b) > c->max_ops)
    return false;
  g_autoptr (GPtrArray) m = pl_fusion_plan_members (c->plan, a);
  g_autoptr (GPtrArray) mb = pl_fusion_plan_members (c->plan, b);
  for (guint i = 0; i < mb->len; i++)
    g_ptr_array_add (m, mb->pdata[i]);
  g_ptr_array_sort_with_data (m, cmp_pos, c);
  if (!group_ok (c, m))
    return false;
  return pl_fusion_plan_merge (c->plan, (PlNode *[]) { a, b }, 2);
}

/* --- the pass ------------------------------------------------------------------- */

/* Phase 2: fusible readers of v with the same output shape join one group. */
static void
merge_siblings (Ctx *c, PlValue *v)
{
  if (v->n_uses < 2 || pl_rw_constant (v))
    return;
  PlNode *base = NULL;
  for (int u = 0; u < v->n_uses; u++)
    {
      PlNode *x = v->uses[u].node;
      if (cls (c, x) == FUSE_NONE || !x->outputs[0])
        continue;
      if (!base)
        base = x;
      else if (pl_rw_same_shape (&x->outputs[0]->shape, &base->outputs[0]->shape))
        try_merge (c, base, x);
    }
}

/* "kind, N ops: a, b, c, …" — made before the members are gone. */
static char *
describe_group (GPtrArray *members, const char *kind)
{
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "%s, %u ops: ", kind, members->len);
  for (guint i = 0; i < members->len; i++)
    {
      if (i == 8)
        {
          g_string_append_printf (s, ", … (%u more)", members->len - 8);
          break;
        }
      g_string_append_printf (s, "%s%s", i ? ", " : "", ((PlNode *) members->pdata[i])->name);
    }
  return g_string_free (s, FALSE);
}

static bool
run (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer user_data, GError **error)
{
  PlGraphStats before, after;
  pl_graph_stats (g, 1, &before);

  Ctx c = {
    .g = g,
    .max_ops = (int) MAX (1, MIN (pl_pass_args_int (args, "max_ops"), G_MAXINT / 2)),
    .input_fusion = pl_pass_args_bool (args, "input_fusion"),
    .n_ids = MAX (g->next_node_id, 1),
  };
  c.plan = pl_fusion_plan_new (g, error);
  if (!c.plan)
    return false;
  c.cls = g_new0 (guint8, c.n_ids);
  c.axes = g_new0 (guint32, c.n_ids);
  c.pos = g_new0 (int, c.n_ids);
  c.loc = g_new0 (int, c.n_ids);
  c.loc_stamp = g_new0 (guint, c.n_ids);
  c.graph_outputs = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < g->outputs->len; i++)
    g_hash_table_add (c.graph_outputs, g->outputs->pdata[i]);

  int n;
  g_autofree PlNode **order = pl_graph_topo_order (g, &n, NULL);
  for (int i = 0; i < n; i++)
    {
      c.pos[order[i]->id] = i;
      c.cls[order[i]->id] = (guint8) classify (&c, order[i]);
    }

  /* 1. producer -> consumer, consumers last to first */
  for (int k = n - 1; k >= 0; k--)
    {
      PlNode *x = order[k];
      if (cls (&c, x) == FUSE_NONE)
        continue;
      for (int i = 0; i < x->n_inputs; i++)
        {
          PlValue *v = x->inputs[i];
          if (v && v->producer && cls (&c, v->producer) != FUSE_NONE)
            try_merge (&c, v->producer, x);
        }
    }
  /* 2. siblings */
  for (guint i = 0; i < g->inputs->len; i++)
    merge_siblings (&c, g->inputs->pdata[i]);
  for (int k = 0; k < n; k++)
    for (int o = 0; o < order[k]->n_outputs; o++)
      if (order[k]->outputs[o])
        merge_siblings (&c, order[k]->outputs[o]);

  /* Groups worth a fusion node: two or more nodes, one that launches a kernel. */
  g_autoptr (GPtrArray) planned = pl_fusion_plan_groups (c.plan, 2);
  g_autoptr (GPtrArray) groups = g_ptr_array_new ();
  g_autoptr (GPtrArray) kinds = g_ptr_array_new ();
  for (guint i = 0; i < planned->len; i++)
    {
      GPtrArray *m = planned->pdata[i];
      bool computes = false, reduces = false;
      for (guint k = 0; k < m->len; k++)
        {
          computes |= !pl_node_is_metadata_only (m->pdata[k]);
          reduces |= cls (&c, m->pdata[k]) == FUSE_REDUCE;
        }
      if (!computes)
        continue;
      g_ptr_array_add (groups, m);
      g_ptr_array_add (kinds, (gpointer) (reduces ? PL_FUSION_KIND_INPUT : PL_FUSION_KIND_LOOP));
    }
  pl_fusion_plan_free (g_steal_pointer (&c.plan));
  g_free (c.cls);
  g_free (c.axes);
  g_free (c.pos);
  g_free (c.loc);
  g_free (c.loc_stamp);
  g_hash_table_unref (c.graph_outputs);

  if (groups->len == 0)
    {
      pl_pass_report_printf (report, "nothing to fuse");
      return true;
    }
  g_autoptr (GPtrArray) lines = g_ptr_array_new_with_free_func (g_free);
  int64_t ops = 0;
  for (guint i = 0; i < groups->len; i++)
    {
      GPtrArray *m = groups->pdata[i];
      ops += m->len;
      pl_pass_report_count (report, g_str_equal (kinds->pdata[i], PL_FUSION_KIND_INPUT) ? "input fusions" : "loop fusions", 1);
      if (i < MAX_REPORT_LINES)
        g_ptr_array_add (lines, describe_group (m, kinds->pdata[i]));
    }
  g_autoptr (GPtrArray) left_out = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) made = pl_fusion_create_many (g, groups, (const char *const *) kinds->pdata, left_out, error);
  if (!made)
    return false;
  guint n_made = 0;
  for (guint i = 0; i < made->len; i++)
    if (made->pdata[i])
      n_made++;
    else
      ops -= ((GPtrArray *) groups->pdata[i])->len;
  for (guint i = 0; i < lines->len; i++)
    if (made->pdata[i])
      pl_pass_report_printf (report, "%s (%s)", ((PlNode *) made->pdata[i])->name, (char *) lines->pdata[i]);
  if (made->len > MAX_REPORT_LINES)
    pl_pass_report_printf (report, "… and %u more fusions", made->len - MAX_REPORT_LINES);
  for (guint i = 0; i < left_out->len; i++)
    pl_pass_report_printf (report, "%s", (char *) left_out->pdata[i]);
  pl_graph_stats (g, 1, &after);
  pl_pass_report_printf (report, "%u fusions of %" G_GINT64_FORMAT " ops (%.1f ops per fusion); "
                         "kernels %" G_GINT64_FORMAT " -> %" G_GINT64_FORMAT,
                         n_made, ops, n_made ? (double) ops / n_made : 0.0, before.kernels, after.kernels);
  pl_pass_report_count (report, "fusions", n_made);
  pl_pass_report_count (report, "ops fused", ops);
  pl_pass_report_count (report, "kernels before", before.kernels);
  pl_pass_report_count (report, "kernels after", after.kernels);
  report->changed = n_made > 0;
  return true;
}

PlPass *
pl_pass_fuse_loops_new (void)
{
  static const PlPassParam params[] = {
    { "max_ops", PL_PARAM_INT, "32", "most nodes in one fusion" },
    { "input_fusion", PL_PARAM_BOOL, "true", "let a fusion end in reductions over the same rows (kind \"input\")" },
  };
  return pl_pass_new ("fuse-loops",
                      "loop fusion: elementwise chains with reshape/transpose/broadcast as index functions, "
                      "multi-output siblings, and input fusions that end in reductions",
                      params, G_N_ELEMENTS (params), run, NULL, NULL);
}
