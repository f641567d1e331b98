/* layout-pass.c — the `layout` pass: one data layout per convolution,
 * chosen globally, and the layout transforms between them (seed 003, MACO;
 * DESIGN.md §1.4). Contract: needs an inferred graph without fusion nodes
 * around convolutions (run it before fuse-library); keeps every value
 * (layouts are physical, the reference interpreter ignores them); graph
 * inputs, outputs and constants stay NCHW; idempotent (a second run with the
 * same costs changes nothing).
 *
 * 1. The model (layout-search.h). Decision nodes:
 *    - each 2-d Conv with static shapes: one choice per (layout, impl) with
 *      a finite cost from the calibration (kernels/calibrate.h: measured on
 *      the backend, cached per machine, analytic where not measured);
 *    - each layout-agnostic pointwise op (the elementwise category:
 *      BatchNormalization, Relu, Add with broadcasting over [C,1,1], ...)
 *      whose output is a static rank-4 tensor: one choice per layout, all at
 *      the same cost (its bytes at the machine's bandwidth), so the search
 *      decides where the transforms go. One that fuses into its producer
 *      (pl_lp_fused_producer: a conv's bias or activation, its epilogue; a
 *      pointwise op of one computed input after another, one loop) costs
 *      nothing in the producer's layout and that cost on the edge from it
 *      where the layouts differ (a transform between them keeps them
 *      apart): so transforms go after a conv's Relu, not between, and the
 *      plan's pointwise time is what runs (ResNeXt-50 at batch 8: 42 ms
 *      counted as if nothing fused, 16.5 ms now);
 *    - each pool (MaxPool without its Indices, AveragePool,
 *      GlobalAveragePool, GlobalMaxPool) whose input and output are static
 *      rank 4 and that the runtime generates (kernels/pool.h): one choice
 *      per layout, its output in its input's layout, at the pool's cost in
 *      that layout — measured by the calibration like a conv, else its
 *      bytes at the machine's bandwidth (then the same in every layout, and
 *      the transforms decide). A global pool's [N, C, 1, 1] output takes
 *      any layout too;
 *    - everything else is fixed NCHW: other ops, graph inputs and constants
 *      (sources), graph outputs (sinks).
 *    Edges carry rank-4 data (a conv's or a pool's X, a pointwise op's
 *    non-constant inputs — constant operands are read in their own layout —
 *    and every rank-4 input of a fixed op); an edge costs the transform from the
 *    producer's layout to the consumer's. A value read by several consumers
 *    is transformed once per target layout, not once per consumer, so such
 *    a value gets a "hub" node (any layout, no cost) between its producer
 *    and its consumers: exact when the consumers want at most one layout
 *    besides the producer's, which is the common case.
 *    Existing LayoutTransform nodes (a previous run) are looked through: the
 *    model is built on the values they transform.
 * 2. The search: chain DP, frontier DP or branch and bound (layout-search.c)
 *    for the plan; the same search with every conv held to one layout gives
 *    the single-layout baselines (and `force`).
 * 3. Apply: value layouts, Conv attributes impl/tile (only for direct; the
 *    tile the calibration measured: the pebble rule's, or with tune=N the
 *    pruned tile search's best when it measured faster),
 *    one LayoutTransform per (value, target layout) shared by its consumers
 *    (existing ones reused, unused ones removed), graph outputs delivered in
 *    NCHW under their old names; new transforms are placed right before
 *    their first consumer in the node order. A value with a hub is
 *    transformed as the model priced it: once to the hub's layout, and from
 *    there for readers that need a third layout (a reader that wants the
 *    producer's layout reads the value itself, which costs at most what the
 *    model charged).
 * The report: per conv its shape, chosen layout and impl, predicted ms and
 * the best in each single layout; the plan's predicted total against the
 * best single-layout one; the same table for the pools; the transforms; the
 * search method and states; where each cost came from.
 */
#define G_LOG_DOMAIN "passlab"
#include "builtin-passes.h"
#include "calibrate.h"
#include "fusion.h"
#include "layout-pass-private.h"
#include "layout-private.h"
#include "layout-search.h"

#include <math.h>
#include <string.h>


/* --- parameters ---------------------------------------------------------------------- */

static bool
parse_layouts (const char *text, guint *mask, GError **error)
{
  g_auto (GStrv) parts = g_strsplit (text, ",", -1);
  *mask = 0;
  for (int i = 0; parts[i]; i++)
    {
      PlLayout l;
      char *name = g_strstrip (parts[i]);
      if (!*name)
        continue;
      if (!pl_layout_parse (name, &l))
        {
          g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "layout.layouts: '%s' is not NCHW, NHWC or CHWN", name);
          return false;
        }
      *mask |= 1u << l;
    }
  if (!*mask)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "layout.layouts: no layout given");
      return false;
    }
  return true;
}

static bool
parse_impls (const char *text, guint *mask, GError **error)
{
  g_auto (GStrv) parts = g_strsplit (text, ",", -1);
  *mask = 0;
  for (int i = 0; parts[i]; i++)
    {
      char *name = g_strstrip (parts[i]);
      if (strcmp (name, "gemm") == 0)
        *mask |= 1u << PL_CONV_IMPL_GEMM;
      else if (strcmp (name, "direct") == 0)
        *mask |= 1u << PL_CONV_IMPL_DIRECT;
      else if (*name)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "layout.impls: '%s' is not gemm or direct", name);
          return false;
        }
    }
  if (!*mask)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "layout.impls: no impl given");
      return false;
    }
  return true;
}

static bool
read_params (const PlPassArgs *args, Params *p, GError **error)
{
  const char *cost = pl_pass_args_string (args, "cost");
  if (strcmp (cost, "measured") == 0)
    p->measured_mode = true;
  else if (strcmp (cost, "analytic") == 0)
    p->measured_mode = false;
  else
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "layout.cost: '%s' is not measured or analytic", cost);
      return false;
    }
  const char *backend = pl_pass_args_string (args, "backend");
  if (!pl_backend_from_name (backend, &p->backend) || p->backend == PL_BACKEND_REFERENCE)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "layout.backend: '%s' is not cpu or cuda", backend);
      return false;
    }
  if (!parse_layouts (pl_pass_args_string (args, "layouts"), &p->layouts, error) ||
      !parse_impls (pl_pass_args_string (args, "impls"), &p->impls, error))
    return false;
  const char *force = pl_pass_args_string (args, "force");
  PlLayout fl;
  p->force = -1;
  if (*force)
    {
      if (!pl_layout_parse (force, &fl))
        {
          g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "layout.force: '%s' is not NCHW, NHWC or CHWN", force);
          return false;
        }
      p->force = fl;
      p->layouts |= 1u << fl;
    }
  p->table = pl_pass_args_string (args, "table");
  p->max_visits = pl_pass_args_int (args, "max_visits");
  int64_t tune = pl_pass_args_int (args, "tune");
  if (tune < 0 || tune > 1000)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "layout.tune: %" G_GINT64_FORMAT " is not in 0..1000", tune);
      return false;
    }
  p->tune = (int) tune;
  int64_t refine = pl_pass_args_int (args, "refine");
  if (refine < 0 || refine > 10)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "layout.refine: %" G_GINT64_FORMAT " is not in 0..10", refine);
      return false;
    }
  p->refine = (int) refine;
  p->recalibrate = pl_pass_args_bool (args, "recalibrate");
  p->min_gain = pl_pass_args_float (args, "min_gain");
  if (!(p->min_gain >= 0 && p->min_gain < 1))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "layout.min_gain: %g is not in [0, 1)", p->min_gain);
      return false;
    }
  return true;
}

/* --- the model ----------------------------------------------------------------------- */

/* The value v transforms, through any LayoutTransform nodes (a previous run's). */
PlValue *
pl_lp_root_of (PlValue *v)
{
  while (v && v->producer && v->producer->op == PL_OP_LayoutTransform)
    v = v->producer->inputs[0];
  return v;
}

bool
pl_lp_static_rank4 (const PlValue *v)
{
  return v && v->shape.rank == 4 && pl_shape_is_static (&v->shape);
}

static bool
is_constant (const PlValue *v)
{
  return v->producer == NULL ? !v->is_input : pl_value_constant (v) != NULL;
}

static int64_t
value_bytes (const PlValue *v)
{
  int64_t n = pl_shape_numel (&v->shape);
  return n > 0 ? n * (int64_t) pl_dtype_size (v->dtype) : 0;
}

/* A layout-agnostic pointwise op on a rank-4 tensor (see the top). */
static bool
is_pointwise (const PlNode *node)
{
  const PlOpInfo *info = pl_op_info (node->op);
  if (!info || info->category != PL_CAT_ELEMENTWISE || node->n_outputs < 1 || !pl_lp_static_rank4 (node->outputs[0]))
    return false;
  for (int k = 1; k < node->n_outputs; k++)
    if (node->outputs[k])
      return false;
  for (int k = 0; k < node->n_inputs; k++)
    {
      PlValue *r = pl_lp_root_of (node->inputs[k]);
      if (r && !is_constant (r) && pl_lp_static_rank4 (r) && pl_shape_equal (&r->shape, &node->outputs[0]->shape))
        return true;
    }
  return false;
}

/* The graph node that pointwise op `node` fuses into when both take one
 * layout: a conv whose result only `node` reads and whose epilogue it can
 * be (fuse-library), or a pointwise op whose result only `node` reads
 * (fuse-loops); `node` itself reads one computed value. NULL otherwise.
 * Transforms of a previous run are looked through. Its marginal cost there
 * is nothing for an op of one input: the fused kernel reads what the
 * producer read and writes what `node` writes. */
PlNode *
pl_lp_fused_producer (const PlNode *node)
{
  PlValue *in = NULL, *r = NULL;
  for (int k = 0; k < node->n_inputs; k++)
    {
      PlValue *v = node->inputs[k] ? pl_lp_root_of (node->inputs[k]) : NULL;
      if (!v || is_constant (v))
        continue;
      if (r)
        return NULL;   /* a second computed input (a residual Add) */
      r = v, in = node->inputs[k];
    }
  if (!r || !r->producer)
    return NULL;
  for (PlValue *v = in; v != r; v = v->producer->inputs[0])
    if (v->n_uses != 1 || pl_value_is_output (v))
      return NULL;
  if (r->n_uses != 1 || pl_value_is_output (r))
    return NULL;
  PlNode *p = r->producer;
  if (p->op == PL_OP_Conv)
    return pl_fusion_epilogue_step (node, in, true) ? p : NULL;
  if (!is_pointwise (p))
    return NULL;
  /* after a conv's epilogue op, only another epilogue op joins it (loop
   * fusion leaves library fusions alone) */
  for (const PlNode *q = p; (q = pl_lp_fused_producer (q));)
    if (q->op == PL_OP_Conv)
      return pl_fusion_epilogue_step (node, in, true) ? p : NULL;
  return p;
}

/* A pool the runtime generates in every layout (a calibration key says so), rank 4 in and out. */
static bool
is_pool (const PlNode *node)
{
  if (node->n_inputs < 1 || node->n_outputs < 1 || !pl_lp_static_rank4 (node->inputs[0]) || !pl_lp_static_rank4 (node->outputs[0]))
    return false;
  g_autofree char *key = pl_calibration_pool_key (node, PL_LAYOUT_NCHW);
  return key != NULL;
}

/* Whether input slot k of a decision node follows the node's layout. */
bool
pl_lp_slot_follows (const PNode *pn, int k, const PlValue *root)
{
  if (pn->conv || pn->pool)
    return k == 0;
  if (pn->pointwise)
    return !is_constant (root);
  return true;   /* fixed: every rank-4 input in NCHW */
}

static int
add_pnode (Model *M, PNode *pn)
{
  g_array_append_val (M->pnodes, *pn);
  return (int) M->pnodes->len - 1;
}

static PNode
fixed_pnode (PnKind kind)
{
  PNode pn = { .kind = kind, .n_choices = 1 };
  pn.layout[0] = PL_LAYOUT_NCHW;
  return pn;
}

/* The choices of a conv: every allowed (layout, impl) of finite cost. */
static void
conv_choices (PNode *pn, PlCalibration *cal, const Params *p)
{
  pn->n_choices = 0;
  for (int l = 0; l < PL_LAYOUT_COUNT; l++)
    for (int m = 0; m <= PL_CONV_IMPL_DIRECT; m++)
      {
        if (!(p->layouts & (1u << l)) || !(p->impls & (1u << m)))
          continue;
        PlCost c = pl_calibration_conv (cal, pn->node, l, m);
        if (!isfinite (c.ms) || pn->n_choices == PL_LS_MAX_CHOICES)
          continue;
        pn->layout[pn->n_choices] = l;
        pn->impl[pn->n_choices] = m;
        pn->cost[pn->n_choices++] = c;
      }
}

static void
pointwise_choices (PNode *pn, PlCalibration *cal, const Params *p)
{
  int64_t bytes = value_bytes (pn->node->outputs[0]);
  for (int k = 0; k < pn->node->n_inputs; k++)
    if (pn->node->inputs[k])
      bytes += value_bytes (pn->node->inputs[k]);
  PlCost c = pl_calibration_bytes (cal, bytes);
  pn->n_choices = 0;
  for (int l = 0; l < PL_LAYOUT_COUNT; l++)
    if (p->layouts & (1u << l))
      {
        pn->layout[pn->n_choices] = l;
        pn->cost[pn->n_choices++] = c;
      }
}

static void
pool_choices (PNode *pn, PlCalibration *cal, const Params *p)
{
  pn->n_choices = 0;
  for (int l = 0; l < PL_LAYOUT_COUNT; l++)
    {
      PlCost c = pl_calibration_pool (cal, pn->node, l);
      if (!(p->layouts & (1u << l)) || !isfinite (c.ms))
        continue;
      pn->layout[pn->n_choices] = l;
      pn->cost[pn->n_choices++] = c;
    }
}

/* The extra cost on edge a -> b where their layouts differ: b's own when
 * it fuses into a, which it then cannot (a transform between them). */
double
pl_lp_unfused_ms (const PNode *a, const PNode *b)
{
  return b->fused_into && a->kind == PN_NODE && a->node == b->fused_into ? b->fused_ms : 0;
}

static void
add_edge (Model *M, PlCalibration *cal, int from, int to, PlValue *value)
{
  const PNode *a = &g_array_index (M->pnodes, PNode, from), *b = &g_array_index (M->pnodes, PNode, to);
  PlLsEdge e = { .from = from, .to = to };
  const double unfused = pl_lp_unfused_ms (a, b);
  for (int i = 0; i < a->n_choices; i++)
    for (int j = 0; j < b->n_choices; j++)
      {
        double ms = pl_calibration_transform (cal, value, a->layout[i], b->layout[j]).ms;
        e.transform[i][j] = isfinite (ms) ? ms + (a->layout[i] != b->layout[j] ? unfused : 0) : PENALTY;
      }
  g_array_append_val (M->edges, e);
  g_array_append_val (M->edge_value, value);
}

/* The decision or fixed problem node of a (non-transform) graph node. */
static PNode
classify (PlNode *node, PlCalibration *cal, const Params *p)
{
  PNode pn = fixed_pnode (PN_NODE);
  pn.node = node;
  if (node->op == PL_OP_Conv && pl_lp_static_rank4 (node->inputs[0]))
    {
      g_autofree char *key = pl_calibration_conv_key (node, PL_LAYOUT_NCHW, PL_CONV_IMPL_GEMM);
      if (key)
        {
          pn.conv = true;
          conv_choices (&pn, cal, p);
          if (pn.n_choices == 0)
            {
              pn = fixed_pnode (PN_NODE);   /* nothing allowed can run it: it stays as it is */
              pn.node = node;
            }
        }
    }
  else if (is_pointwise (node))
    {
      pn.pointwise = true;
      pointwise_choices (&pn, cal, p);
      if ((pn.fused_into = pl_lp_fused_producer (node)))
        {
          pn.fused_ms = pn.cost[0].ms;
          for (int c = 0; c < pn.n_choices; c++)
            pn.cost[c].ms = 0;
        }
    }
  else if (is_pool (node))
    {
      pn.pool = true;
      pool_choices (&pn, cal, p);
      if (pn.n_choices == 0)
        {
          pn = fixed_pnode (PN_NODE);   /* measured unsupported in every allowed layout */
          pn.node = node;
        }
    }
  return pn;
}

/* A hub: any allowed layout (NCHW always), no cost. */
static PNode
hub_pnode (PlValue *v, const Params *p)
{
  PNode hub = { .kind = PN_HUB, .value = v };
  for (int l = 0; l < PL_LAYOUT_COUNT; l++)
    if ((p->layouts | 1u << PL_LAYOUT_NCHW) & (1u << l))
      hub.layout[hub.n_choices++] = l;
  return hub;
}

/* The rank-4 root values pn produces (a source: its value), into outs (emptied first). */
static GPtrArray *
produced (const PNode *pn, GPtrArray *outs)
{
  g_ptr_array_set_size (outs, 0);
  if (pn->kind == PN_SOURCE)
    g_ptr_array_add (outs, pn->value);
  else if (pn->kind == PN_NODE)
    for (int k = 0; k < pn->node->n_outputs; k++)
      if (pl_lp_static_rank4 (pn->node->outputs[k]))
        g_ptr_array_add (outs, pn->node->outputs[k]);
  return outs;
}

/* Appends pn, then a hub for each value it produces that has two readers or more. */
static void
append_with_hubs (Model *M, PNode *pn, GHashTable *readers, GHashTable *is_sink, const Params *p)
{
  add_pnode (M, pn);
  g_autoptr (GPtrArray) outs = produced (pn, g_ptr_array_new ());
  for (guint k = 0; k < outs->len; k++)
    {
      PlValue *v = outs->pdata[k];
      GPtrArray *list = g_hash_table_lookup (readers, v);
      int count = (list ? (int) list->len : 0) + (g_hash_table_contains (is_sink, v) ? 1 : 0);
      if (count >= 2)
        {
          PNode hub = hub_pnode (v, p);
          g_hash_table_insert (M->hub_of, v, GINT_TO_POINTER (add_pnode (M, &hub) + 1));
        }
    }
}

/* Sources, graph nodes (each followed by the hubs of its outputs) in
 * topological order, then sinks; edges producer -> hub -> consumers. */
static bool
build_model (Model *M, PlGraph *g, PlCalibration *cal, const Params *p, GError **error)
{
  int n_order = 0;
  g_autofree PlNode **order = pl_graph_topo_order (g, &n_order, error);
  if (!order)
    return false;
  g_autoptr (GArray) real = g_array_new (FALSE, FALSE, sizeof (PNode));
  for (int i = 0; i < n_order; i++)
    if (order[i]->op != PL_OP_LayoutTransform)
      {
        PNode pn = classify (order[i], cal, p);
        g_array_append_val (real, pn);
      }
  /* readers: root value -> the graph nodes reading it in a layout that matters */
  g_autoptr (GHashTable) readers = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) g_ptr_array_unref);
  g_autoptr (GPtrArray) sources = g_ptr_array_new ();
  for (guint i = 0; i < real->len; i++)
    {
      const PNode *pn = &g_array_index (real, PNode, i);
      for (int k = 0; k < pn->node->n_inputs; k++)
        {
          PlValue *r = pl_lp_root_of (pn->node->inputs[k]);
          if (!pl_lp_static_rank4 (r) || !pl_lp_slot_follows (pn, k, r))
            continue;
          GPtrArray *list = g_hash_table_lookup (readers, r);
          if (!list)
            {
              g_hash_table_insert (readers, r, list = g_ptr_array_new ());
              if (!r->producer)
                g_ptr_array_add (sources, r);
            }
          if (!g_ptr_array_find (list, pn->node, NULL))
            g_ptr_array_add (list, pn->node);
        }
    }
  g_autoptr (GHashTable) is_sink = g_hash_table_new (NULL, NULL);
  g_autoptr (GPtrArray) sinks = g_ptr_array_new ();
  for (guint i = 0; i < g->outputs->len; i++)
    {
      PlValue *r = pl_lp_root_of (g->outputs->pdata[i]);
      if (pl_lp_static_rank4 (r) && g_hash_table_add (is_sink, r))
        g_ptr_array_add (sinks, r);
    }
  for (guint i = 0; i < sources->len; i++)
    {
      PNode src = fixed_pnode (PN_SOURCE);
      src.value = sources->pdata[i];
      append_with_hubs (M, &src, readers, is_sink, p);
    }
  for (guint i = 0; i < real->len; i++)
    {
      PNode *pn = &g_array_index (real, PNode, i);
      g_hash_table_insert (M->pnode_of, pn->node, GINT_TO_POINTER ((int) M->pnodes->len + 1));
      append_with_hubs (M, pn, readers, is_sink, p);
    }
  int first_sink = (int) M->pnodes->len;
  for (guint i = 0; i < sinks->len; i++)
    {
      PNode sink = fixed_pnode (PN_SINK);
      sink.value = sinks->pdata[i];
      add_pnode (M, &sink);
    }
  /* edges, in producer order */
  g_autoptr (GPtrArray) outs = g_ptr_array_new ();
  for (int i = 0; i < first_sink; i++)
    {
      produced (&g_array_index (M->pnodes, PNode, i), outs);
      for (guint k = 0; k < outs->len; k++)
        {
          PlValue *r = outs->pdata[k];
          int from = i, hub = GPOINTER_TO_INT (g_hash_table_lookup (M->hub_of, r)) - 1;
          if (hub >= 0)
            {
              add_edge (M, cal, from, hub, r);
              from = hub;
            }
          GPtrArray *list = g_hash_table_lookup (readers, r);
          for (guint u = 0; list && u < list->len; u++)
            add_edge (M, cal, from, GPOINTER_TO_INT (g_hash_table_lookup (M->pnode_of, list->pdata[u])) - 1, r);
          guint si;
          if (g_ptr_array_find (sinks, r, &si))
            add_edge (M, cal, from, first_sink + (int) si, r);
        }
    }
  return true;
}

static void
model_clear (Model *M)
{
  g_clear_pointer (&M->pnodes, g_array_unref);
  g_clear_pointer (&M->edges, g_array_unref);
  g_clear_pointer (&M->edge_value, g_array_unref);
  g_clear_pointer (&M->pnode_of, g_hash_table_unref);
  g_clear_pointer (&M->hub_of, g_hash_table_unref);
}

static void
model_init (Model *M)
{
  M->pnodes = g_array_new (FALSE, TRUE, sizeof (PNode));
  M->edges = g_array_new (FALSE, TRUE, sizeof (PlLsEdge));
  M->edge_value = g_array_new (FALSE, FALSE, sizeof (PlValue *));
  M->pnode_of = g_hash_table_new (NULL, NULL);
  M->hub_of = g_hash_table_new (NULL, NULL);
}

/* --- the search ---------------------------------------------------------------------- */

/* The search problem of the model; with force >= 0 every conv that can run
 * in that layout is held to it (its other choices cost PENALTY). */
static PlLsNode *
problem_nodes (const Model *M, int force)
{
  PlLsNode *nodes = g_new0 (PlLsNode, MAX (M->pnodes->len, 1));
  for (guint i = 0; i < M->pnodes->len; i++)
    {
      const PNode *pn = &g_array_index (M->pnodes, PNode, i);
      bool can = false;
      for (int c = 0; c < pn->n_choices; c++)
        can |= (int) pn->layout[c] == force;
      nodes[i].n_choices = pn->n_choices;
      for (int c = 0; c < pn->n_choices; c++)
        {
          nodes[i].choice_layout[c] = pn->layout[c];
          nodes[i].cost[c] = isfinite (pn->cost[c].ms) ? pn->cost[c].ms : PENALTY;
          if (pn->conv && can && (int) pn->layout[c] != force)
            nodes[i].cost[c] = PENALTY;
        }
    }
  return nodes;
}

static PlLsSolution *
solve (const Model *M, int force, int64_t max_visits)
{
  g_autofree PlLsNode *nodes = problem_nodes (M, force);
  PlLsProblem prob = {
    .n_nodes = (int) M->pnodes->len, .nodes = nodes,
    .n_edges = (int) M->edges->len, .edges = (PlLsEdge *) (void *) M->edges->data,
  };
  return pl_ls_solve (&prob, max_visits);
}


static Totals
plan_totals (const Model *M, const PlLsSolution *s)
{
  Totals t = { 0 };
  for (guint i = 0; i < M->pnodes->len; i++)
    {
      const PNode *pn = &g_array_index (M->pnodes, PNode, i);
      double ms = pn->n_choices > 0 ? pn->cost[s->choice[i]].ms : 0;
      if (pn->conv)
        t.convs += ms;
      else if (pn->pointwise)
        t.pointwise += ms;
      else if (pn->pool)
        t.pools += ms;
    }
  for (guint e = 0; e < M->edges->len; e++)
    {
      const PlLsEdge *edge = &g_array_index (M->edges, PlLsEdge, e);
      const PNode *a = &g_array_index (M->pnodes, PNode, edge->from), *b = &g_array_index (M->pnodes, PNode, edge->to);
      const int i = s->choice[edge->from], j = s->choice[edge->to];
      /* a pointwise op kept from fusing by a transform: its cost is a pointwise one */
      const double unfused = a->layout[i] != b->layout[j] ? pl_lp_unfused_ms (a, b) : 0;
      t.transforms += edge->transform[i][j] - unfused;
      t.pointwise += unfused;
    }
  t.total = t.convs + t.pointwise + t.pools + t.transforms;
  return t;
}

/* --- the pass -------------------------------------------------------------------------- */

static int
convs_count (const Model *M)
{
  int n = 0;
  for (guint i = 0; i < M->pnodes->len; i++)
    n += g_array_index (M->pnodes, PNode, i).conv;
  return n;
}

static int
pools_count (const Model *M)
{
  int n = 0;
  for (guint i = 0; i < M->pnodes->len; i++)
    n += g_array_index (M->pnodes, PNode, i).pool;
  return n;
}

static void
report_costs_header (PlPassReport *report, PlCalibration *cal, const Params *p)
{
  double gbps = 0, gflops = 0;
  pl_calibration_ceilings (cal, &gbps, &gflops);
  int n = pl_calibration_n_measured (cal), disturbed = pl_calibration_n_disturbed_rounds (cal);
  int unsettled = pl_calibration_n_unsettled (cal);
  double spread_median = 1, spread_max = 1;
  g_autoptr (GString) now = g_string_new (NULL);
  g_string_printf (now, "%d entries measured now", n);
  if (pl_calibration_round_spread (cal, &spread_median, &spread_max))
    g_string_append_printf (now, " (the least of 3 rounds' medians; the slowest round +%.0f%% on the median entry, "
                            "+%.0f%% at most", 100 * (spread_median - 1), 100 * (spread_max - 1));
  if (disturbed > 0)
    g_string_append_printf (now, "; %d round%s run again: the hypervisor or other processes took CPU time", disturbed,
                            disturbed == 1 ? "" : "s");
  if (unsettled > 0)
    g_string_append_printf (now, "; %d measured while this machine was busy throughout: cached as such, measured "
                            "again next time", unsettled);
  if (n > 0)
    g_string_append (now, ")");
  pl_pass_report_printf (report, "costs: %s on %s (%s); %s%s; cache %s",
                         p->measured_mode ? "measured (analytic where not measured)" : "analytic",
                         pl_backend_name (p->backend), pl_calibration_machine (cal), now->str,
                         p->recalibrate ? ", cached ones again" : "", pl_calibration_path (cal));
  double peak = pl_calibration_fma_peak (cal);
  g_autofree char *peak_text = peak > 0 ? g_strdup_printf (", FMA peak %.0f GFLOP/s", peak) : g_strdup ("");
  pl_pass_report_printf (report, "ceilings: memcpy %.1f GB/s, GEMM %.1f GFLOP/s%s%s%s", gbps, gflops, peak_text,
                         *p->table ? "; table " : "", p->table);
  if (pl_calibration_last_error (cal))
    pl_pass_report_printf (report, "measuring: %s (branches measured one by one; failing ones unsupported)",
                           pl_calibration_last_error (cal));
}

/* The plan and the single-layout baselines (a layout not allowed: NULL). */
typedef struct {
  PlLsSolution *plan;
  Totals        totals;
  PlLsSolution *single[PL_LAYOUT_COUNT];
  Totals        single_totals[PL_LAYOUT_COUNT];
  int           kept_single;   /* the layout kept for min_gain, or -1 */
  double        search_total;  /* then: what the search's own plan predicted */
} Plans;

/* The search's plan, unless it predicts less than min_gain below the best
 * single-layout plan: then that one. On this 2-core VM the costs of one
 * layer in two layouts moved by several percent between calibrations, and
 * mixed plans predicted 0.3-2.7% faster than NHWC ran as fast or slower;
 * a gain within the noise of the costs buys transforms, not time. */
static void
search_plans (const Model *M, const Params *p, Plans *P)
{
  int best = -1;
  P->kept_single = -1;
  for (int l = 0; l < PL_LAYOUT_COUNT; l++)
    if (p->layouts & (1u << l))
      {
        P->single[l] = solve (M, l, p->max_visits);
        P->single_totals[l] = plan_totals (M, P->single[l]);
        if (P->single_totals[l].total < PENALTY && (best < 0 || P->single_totals[l].total < P->single_totals[best].total))
          best = l;
      }
  P->plan = solve (M, p->force, p->max_visits);
  P->totals = plan_totals (M, P->plan);
  if (p->force < 0 && best >= 0 && P->totals.total < P->single_totals[best].total
      && P->totals.total > P->single_totals[best].total * (1 - p->min_gain))
    {
      P->kept_single = best;
      P->search_total = P->totals.total;
      pl_ls_solution_free (P->plan);
      P->plan = g_steal_pointer (&P->single[best]);   /* its totals stay in single_totals */
      P->totals = P->single_totals[best];
    }
}

static void
plans_clear (Plans *P)
{
  for (int l = 0; l < PL_LAYOUT_COUNT; l++)
    pl_ls_solution_free (P->single[l]);
  pl_ls_solution_free (P->plan);
}

static void
report_search (PlPassReport *report, const Model *M, const PlLsSolution *plan, const Params *p)
{
  int convs = convs_count (M), pools = pools_count (M), pointwise = 0;
  for (guint i = 0; i < M->pnodes->len; i++)
    pointwise += g_array_index (M->pnodes, PNode, i).pointwise;
  pl_pass_report_printf (report, "search: %s, %" G_GINT64_FORMAT " states, %s; %u problem nodes (%d conv%s, %d "
                         "pointwise op%s, %d pool%s, the rest fixed NCHW), %u edges%s%s", pl_ls_method_name (plan->method),
                         plan->states, plan->exact ? "optimal" : "visit budget ran out: best found", M->pnodes->len,
                         convs, convs == 1 ? "" : "s", pointwise, pointwise == 1 ? "" : "s", pools, pools == 1 ? "" : "s",
                         M->edges->len, p->force >= 0 ? "; forced " : "", p->force >= 0 ? pl_layout_name (p->force) : "");
}

/* Applies the plan and reports the transforms it left in the graph. */
static bool
apply_and_report (PlGraph *g, const Model *M, const Plans *P, PlCalibration *cal, const Params *p,
                  PlPassReport *report, GError **error)
{
  int sources[3] = { 0 }, tsources[3] = { 0 }, psources[3] = { 0 }, n_transforms = 0;
  bool changed = false;
  pl_lp_report_table (report, M, P->plan, p, cal, false, sources);
  pl_lp_report_totals (report, &P->totals, P->single_totals, p);
  if (P->kept_single >= 0)
    pl_pass_report_printf (report, "kept %s: the search's mixed plan predicted %.4f ms, %.1f%% less, below layout.min_gain "
                           "(%.0f%%), which is within the costs' noise", pl_layout_name (P->kept_single), P->search_total,
                           100 * (1 - P->search_total / P->single_totals[P->kept_single].total), 100 * p->min_gain);
  if (pools_count (M))
    pl_lp_report_table (report, M, P->plan, p, cal, true, psources);
  if (!pl_lp_apply_plan (g, M, P->plan, cal, &changed, error))
    return false;
  report->changed = changed;
  g_autoptr (PlPassReport) lines = pl_pass_report_new ();
  double ms = pl_lp_report_transforms (lines, g, cal, &n_transforms, tsources);
  pl_pass_report_printf (report, "transforms: %d in the graph, %.4f ms predicted (model: %.4f ms)%s", n_transforms,
                         ms, P->totals.transforms, n_transforms ? ":" : "");
  if (lines->text->len)
    pl_pass_report_printf (report, "%s", g_strchomp (lines->text->str));
  pl_pass_report_printf (report, "cost sources: convs %d measured, %d analytic, %d table; transforms %d measured, "
                         "%d analytic, %d table; pools %d measured, %d analytic, %d table", sources[PL_COST_MEASURED],
                         sources[PL_COST_ANALYTIC], sources[PL_COST_TABLE], tsources[PL_COST_MEASURED],
                         tsources[PL_COST_ANALYTIC], tsources[PL_COST_TABLE], psources[PL_COST_MEASURED],
                         psources[PL_COST_ANALYTIC], psources[PL_COST_TABLE]);
  pl_pass_report_printf (report, "%s", changed ? "graph updated" : "the graph already follows this plan: nothing changed");
  pl_pass_report_count (report, "convs", convs_count (M));
  pl_pass_report_count (report, "pools", pools_count (M));
  pl_pass_report_count (report, "transforms", n_transforms);
  pl_pass_report_count (report, "predicted us", llround (P->totals.total * 1e3));
  pl_pass_report_count (report, "states", P->plan->states);
  return true;
}

/* What a plan decided, as text: each node's output layouts, impl and tile. */
static char *
plan_signature (const PlGraph *g)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < g->nodes->len; i++)
    {
      const PlNode *n = g->nodes->pdata[i];
      g_string_append_printf (s, "%s:", n->name);
      for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k])
          g_string_append_printf (s, "%s,", pl_layout_name (n->outputs[k]->layout));
      const int64_t *t;
      int nt;
      g_string_append_printf (s, "%s", pl_node_attr_string (n, "impl", ""));
      if (pl_node_attr_ints (n, "tile", &t, &nt) && nt == 3)
        g_string_append_printf (s, "@%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT, t[0], t[1], t[2]);
      g_string_append_c (s, ';');
    }
  return g_string_free (s, FALSE);
}

/* Costs in context (refine=N): each single-layout plan and the plan are
 * applied to a copy of g and run on the backend unfused, and their convs',
 * pools' and transforms' kernel times replace the calibration's, which time
 * each kernel alone (pl_calibration_measure_graph). Then the plan again
 * with the new costs, until it stands or N rounds. *runs: graphs run. */
static bool
refine_in_context (PlGraph *g, PlCalibration *cal, const Params *p, int *runs, int *rounds, GError **error)
{
  *runs = *rounds = 0;
  g_autofree char *last = NULL;
  for (int r = 0; r < p->refine; r++)
    {
      bool stands = false;
      for (int l = -1; l < PL_LAYOUT_COUNT && !stands; l++)
        {
          if (l >= 0 && (!(p->layouts & (1u << l)) || r > 0 || p->force >= 0))
            continue;   /* single-layout plans: measured in the first round */
          g_autoptr (PlGraph) c = pl_graph_copy (g);
          Model M = { 0 };
          model_init (&M);
          bool ok = build_model (&M, c, cal, p, error), changed = false;
          PlLsSolution *s = ok ? solve (&M, l >= 0 ? l : p->force, p->max_visits) : NULL;
          if (s && plan_totals (&M, s).total < PENALTY && (ok = pl_lp_apply_plan (c, &M, s, cal, &changed, error)))
            {
              g_autofree char *sig = l < 0 ? plan_signature (c) : NULL;
              stands = sig && last && strcmp (sig, last) == 0;   /* measured already */
              if (!stands && (ok = pl_calibration_measure_graph (cal, c, error) >= 0))
                (*runs)++;
              if (sig)
                {
                  g_free (last);
                  last = g_steal_pointer (&sig);
                }
            }
          pl_ls_solution_free (s);
          model_clear (&M);
          if (!ok)
            return false;
        }
      if (stands)
        break;
      (*rounds)++;
    }
  return true;
}

static bool
run (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer user_data G_GNUC_UNUSED, GError **error)
{
  Params p;
  if (!read_params (args, &p, error))
    return false;
  if (pl_lp_fused_convs (g))
    {
      pl_pass_report_printf (report, "convolutions sit inside fusion bodies: `layout` must run before fusion "
                             "(fuse-library, fuse-loops, stitch); nothing changed");
      pl_pass_report_count (report, "convs fused", 1);
      return true;
    }
  if (!pl_lp_top_level_convs (g))
    {
      pl_pass_report_printf (report, "no convolutions: nothing to plan");
      return true;
    }
  g_autoptr (PlCalibration) cal = pl_calibration_new (p.backend, p.measured_mode, error);
  if (!cal)
    return false;
  pl_calibration_restrict (cal, p.layouts, p.impls);
  if (p.measured_mode)
    {
      pl_calibration_set_tuning (cal, p.tune);
      pl_calibration_set_remeasure (cal, p.recalibrate);
    }
  if ((*p.table && !pl_calibration_load_table (cal, p.table, error)) || !pl_calibration_prepare (cal, g, error))
    return false;
  int runs = 0, rounds = 0;
  if (p.measured_mode && p.refine > 0 && !refine_in_context (g, cal, &p, &runs, &rounds, error))
    return false;

  Model M = { 0 };
  Plans P = { 0 };
  model_init (&M);
  bool ok = build_model (&M, g, cal, &p, error);
  if (ok)
    {
      search_plans (&M, &p, &P);
      report_costs_header (report, cal, &p);
      if (runs > 0)
        pl_pass_report_printf (report, "refined in context: %d graph%s run in %d round%s (each single-layout plan and "
                               "the plan), %d costs replaced by their kernels' times there", runs, runs == 1 ? "" : "s",
                               rounds, rounds == 1 ? "" : "s", pl_calibration_n_in_context (cal));
      report_search (report, &M, P.plan, &p);
      if (P.totals.total >= PENALTY)
        pl_pass_report_printf (report, "no plan runs every conv with the allowed layouts and impls on this "
                               "backend; nothing changed");
      else
        ok = apply_and_report (g, &M, &P, cal, &p, report, error);
    }
  plans_clear (&P);
  model_clear (&M);
  return ok;
}

PlPass *
pl_pass_layout_new (void)
{
  static const PlPassParam params[] = {
    { "cost", PL_PARAM_STRING, "measured",
      "measured: calibrate on `backend` what the cache lacks (analytic where that fails); analytic: bytes and "
      "FLOPs against this machine's ceilings" },
    { "backend", PL_PARAM_STRING, "cpu", "the backend the plan is for: cpu or cuda" },
    { "layouts", PL_PARAM_STRING, "NCHW,NHWC,CHWN", "layouts a conv (and the pointwise ops and pools around it) may take" },
    { "impls", PL_PARAM_STRING, "gemm,direct", "conv implementations: gemm (im2col + BLAS), direct (generated, "
      "tiled by the pebble rule; where supported)" },
    { "force", PL_PARAM_STRING, "", "a layout: every conv in it (the single-layout baseline); empty: search" },
    { "table", PL_PARAM_STRING, "", "a file of `key<TAB>ms` cost entries that override the calibration "
      "(keys as in the cache; for tests and what-ifs)" },
    { "max_visits", PL_PARAM_INT, "10000000", "branch and bound budget (search nodes) when the frontier DP does not apply" },
    { "refine", PL_PARAM_INT, "0", "cost=measured: rounds of running each single-layout plan and the plan on the "
      "backend and taking their convs', pools' and transforms' times there (in context) over the calibration's; "
      "0: none" },
    { "recalibrate", PL_PARAM_BOOL, "false", "cost=measured: measure again every cost the graph needs, cached or "
      "not, and replace the cache's (after a noisy calibration, or a change to the machine)" },
    { "min_gain", PL_PARAM_FLOAT, "0.03", "a plan mixing layouts is kept only when it predicts at least this share "
      "less time than the best single-layout plan (else that one): smaller gains are within the costs' noise; 0: "
      "the search's minimum" },
    { "tune", PL_PARAM_INT, "0", "cost=measured on cpu: trials of the pebble-pruned tile search per direct conv "
      "and layout before calibrating; a tile it finds is measured beside the pebble tile and the faster one is "
      "used (cached per machine); 0: the pebble tile" },
  };
  return pl_pass_new ("layout",
                      "data-layout planning (MACO): one layout and implementation per convolution chosen "
                      "globally from measured costs, with the layout transforms between them",
                      params, G_N_ELEMENTS (params), run, NULL, NULL);
}
