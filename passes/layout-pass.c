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
 *      decides where the transforms go;
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
#include "layout-private.h"
#include "layout-search.h"

#include <math.h>
#include <string.h>

/* The cost of something impossible (an unsupported choice or transform):
 * finite, so sums stay ordered, and far above any real plan. */
#define PENALTY 1e9
#define MAX_LINES 40

typedef struct {
  PlCostSource source;
  bool         measured_mode;
  PlBackend    backend;
  guint        layouts;       /* bit per PlLayout */
  guint        impls;         /* bit per PlConvImpl */
  int          force;         /* PlLayout, or -1 */
  const char  *table;
  int64_t      max_visits;
  int          tune;          /* trials of the pruned tile search per direct conv and layout; 0: pebble tile */
} Params;

typedef enum { PN_SOURCE, PN_NODE, PN_HUB, PN_SINK } PnKind;

/* One problem node; choice c is (layout[c], impl[c]) at cost[c]. */
typedef struct {
  PnKind       kind;
  PlNode      *node;        /* PN_NODE */
  PlValue     *value;       /* PN_SOURCE, PN_HUB: the value; PN_SINK: the output's root */
  bool         conv, pointwise, pool;
  int          n_choices;
  PlLayout     layout[PL_LS_MAX_CHOICES];
  PlConvImpl   impl[PL_LS_MAX_CHOICES];
  PlCost       cost[PL_LS_MAX_CHOICES];
} PNode;

typedef struct {
  GArray     *pnodes;       /* PNode */
  GArray     *edges;        /* PlLsEdge */
  GArray     *edge_value;   /* PlValue*, per edge: the data it carries */
  GHashTable *pnode_of;     /* PlNode* -> index + 1 */
  GHashTable *hub_of;       /* PlValue* (root) -> index + 1 of its hub or producer */
} Model;

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
  return true;
}

/* --- the model ----------------------------------------------------------------------- */

/* The value v transforms, through any LayoutTransform nodes (a previous run's). */
static PlValue *
root_of (PlValue *v)
{
  while (v && v->producer && v->producer->op == PL_OP_LayoutTransform)
    v = v->producer->inputs[0];
  return v;
}

static bool
static_rank4 (const PlValue *v)
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
  if (!info || info->category != PL_CAT_ELEMENTWISE || node->n_outputs < 1 || !static_rank4 (node->outputs[0]))
    return false;
  for (int k = 1; k < node->n_outputs; k++)
    if (node->outputs[k])
      return false;
  for (int k = 0; k < node->n_inputs; k++)
    {
      PlValue *r = root_of (node->inputs[k]);
      if (r && !is_constant (r) && static_rank4 (r) && pl_shape_equal (&r->shape, &node->outputs[0]->shape))
        return true;
    }
  return false;
}

/* A pool the runtime generates in every layout (a calibration key says so), rank 4 in and out. */
static bool
is_pool (const PlNode *node)
{
  if (node->n_inputs < 1 || node->n_outputs < 1 || !static_rank4 (node->inputs[0]) || !static_rank4 (node->outputs[0]))
    return false;
  g_autofree char *key = pl_calibration_pool_key (node, PL_LAYOUT_NCHW);
  return key != NULL;
}

/* Whether input slot k of a decision node follows the node's layout. */
static bool
slot_follows (const PNode *pn, int k, const PlValue *root)
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

static void
add_edge (Model *M, PlCalibration *cal, int from, int to, PlValue *value)
{
  const PNode *a = &g_array_index (M->pnodes, PNode, from), *b = &g_array_index (M->pnodes, PNode, to);
  PlLsEdge e = { .from = from, .to = to };
  for (int i = 0; i < a->n_choices; i++)
    for (int j = 0; j < b->n_choices; j++)
      {
        double ms = pl_calibration_transform (cal, value, a->layout[i], b->layout[j]).ms;
        e.transform[i][j] = isfinite (ms) ? ms : PENALTY;
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
  if (node->op == PL_OP_Conv && static_rank4 (node->inputs[0]))
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
      if (static_rank4 (pn->node->outputs[k]))
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
          PlValue *r = root_of (pn->node->inputs[k]);
          if (!static_rank4 (r) || !slot_follows (pn, k, r))
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
      PlValue *r = root_of (g->outputs->pdata[i]);
      if (static_rank4 (r) && g_hash_table_add (is_sink, r))
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

/* The parts of a plan's predicted time. */
typedef struct {
  double convs, pointwise, pools, transforms, total;
} Totals;

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
      t.transforms += edge->transform[s->choice[edge->from]][s->choice[edge->to]];
    }
  t.total = t.convs + t.pointwise + t.pools + t.transforms;
  return t;
}

/* --- applying a plan ----------------------------------------------------------------- */

typedef struct {
  PlGraph       *g;
  GHashTable    *transform_of;   /* (root id, layout) -> LayoutTransform node */
  GPtrArray     *added;          /* LayoutTransform nodes made by this run */
  bool           changed;
} Apply;

static gpointer
transform_key (const PlValue *root, PlLayout to)
{
  return GSIZE_TO_POINTER ((gsize) root->id * PL_LAYOUT_COUNT + to + 1);
}

static bool
set_layout (Apply *A, PlValue *v, PlLayout layout)
{
  if (v && v->layout != layout)
    {
      v->layout = layout;
      A->changed = true;
    }
  return true;
}

/* The value to read v in layout `to`: v itself, or a (new or reused) transform of it. */
static PlValue *
in_layout (Apply *A, PlValue *v, PlLayout to, GError **error)
{
  if (v->layout == to)
    return v;
  PlNode *t = g_hash_table_lookup (A->transform_of, transform_key (v, to));
  if (t)
    return t->outputs[0];
  g_autofree char *lower = g_ascii_strdown (pl_layout_name (to), -1);
  g_autofree char *base = g_strdup_printf ("%s_%s", v->name, lower);
  g_autofree char *name = pl_graph_unique_name (A->g, base);
  t = pl_graph_add_node (A->g, "LayoutTransform", NULL, name, 1, &v, 1, (const char *const[]) { name }, error);
  if (!t)
    return NULL;
  pl_node_set_attr_string (t, "to", pl_layout_name (to));
  if (!pl_node_infer (t, error))
    return NULL;
  g_hash_table_insert (A->transform_of, transform_key (v, to), t);
  g_ptr_array_add (A->added, t);
  A->changed = true;
  return t->outputs[0];
}

/* The value a reader of root r that needs layout `to` reads, as the model
 * priced it: r itself when the layouts agree; with a hub, r transformed once
 * to the hub's layout (shared) and, for readers that need yet another
 * layout, transformed again from there; else one transform of r. */
static PlValue *
read_as (Apply *A, const Model *M, const PlLsSolution *s, PlValue *r, PlLayout to, GError **error)
{
  if (r->layout == to)
    return r;
  int hub = GPOINTER_TO_INT (g_hash_table_lookup (M->hub_of, r)) - 1;
  if (hub < 0)
    return in_layout (A, r, to, error);
  PlValue *shared = in_layout (A, r, g_array_index (M->pnodes, PNode, hub).layout[s->choice[hub]], error);
  return shared ? in_layout (A, shared, to, error) : NULL;
}

static void
set_conv_impl (Apply *A, PlCalibration *cal, PlNode *conv, PlLayout layout, PlConvImpl impl)
{
  const char *had = pl_node_attr_string (conv, "impl", NULL);
  if (impl == PL_CONV_IMPL_DIRECT)
    {
      int64_t tile[3];
      pl_calibration_conv_tile (cal, conv, layout, tile);
      const int64_t *v;
      int n;
      bool same_tile = tile[0] > 0 ? pl_node_attr_ints (conv, "tile", &v, &n) && n == 3 && memcmp (v, tile, sizeof tile) == 0
                                   : !pl_node_attr (conv, "tile");
      if (g_strcmp0 (had, "direct") != 0)
        pl_node_set_attr_string (conv, "impl", "direct");
      if (!same_tile && tile[0] > 0)
        pl_node_set_attr_ints (conv, "tile", tile, 3);
      else if (!same_tile)
        pl_node_remove_attr (conv, "tile");
      A->changed |= g_strcmp0 (had, "direct") != 0 || !same_tile;
    }
  else if (g_strcmp0 (had, "direct") == 0 || pl_node_attr (conv, "tile"))
    {
      if (g_strcmp0 (had, "direct") == 0)
        pl_node_remove_attr (conv, "impl");
      pl_node_remove_attr (conv, "tile");
      A->changed = true;
    }
}

/* Graph output i is read through want: the old value keeps its data under
 * "<name>_<layout>", want takes the output's name. */
static bool
set_output (Apply *A, int i, PlValue *want, GError **error)
{
  PlValue *old = A->g->outputs->pdata[i];
  if (old == want)
    return true;
  bool named = true;
  for (int k = 0; k < i; k++)
    named &= A->g->outputs->pdata[k] != want;   /* an earlier output already named it */
  if (named)
    {
      g_autofree char *name = g_strdup (old->name);
      g_autofree char *lower = g_ascii_strdown (pl_layout_name (old->layout), -1);
      g_autofree char *base = g_strdup_printf ("%s_%s", name, lower);
      g_autofree char *aside = pl_graph_unique_name (A->g, base);
      if (!pl_value_rename (old, aside, error) || !pl_value_rename (want, name, error))
        return false;
    }
  pl_graph_set_output (A->g, i, want);
  A->changed = true;
  return true;
}

/* Removes transforms nobody reads any more (a previous plan's). */
static void
remove_unused_transforms (Apply *A)
{
  for (;;)
    {
      g_autoptr (GPtrArray) dead = g_ptr_array_new ();
      for (guint i = 0; i < A->g->nodes->len; i++)
        {
          PlNode *n = A->g->nodes->pdata[i];
          if (n->op == PL_OP_LayoutTransform && n->outputs[0]->n_uses == 0 && !pl_value_is_output (n->outputs[0]))
            g_ptr_array_add (dead, n);
        }
      if (dead->len == 0)
        return;
      for (guint i = 0; i < dead->len; i++)
        g_ptr_array_remove (A->added, dead->pdata[i]);
      pl_graph_remove_nodes (A->g, (PlNode *const *) dead->pdata, (int) dead->len);
      A->changed = true;
    }
}

/* Places each new transform right before its first reader (graph-output
 * transforms right after their producer), so the schedule converts data
 * when it is needed, not when the node list happens to end. */
static bool
place_new_transforms (Apply *A, GError **error)
{
  if (A->added->len == 0)
    return true;
  int n = 0;
  g_autofree PlNode **order = pl_graph_topo_order (A->g, &n, error);
  if (!order)
    return false;
  g_autoptr (GHashTable) fresh = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < A->added->len; i++)
    g_hash_table_add (fresh, A->added->pdata[i]);
  g_autoptr (GPtrArray) out = g_ptr_array_sized_new (n);
  g_autoptr (GHashTable) placed = g_hash_table_new (NULL, NULL);
  for (int i = 0; i < n; i++)
    {
      PlNode *node = order[i];
      if (g_hash_table_contains (fresh, node))
        continue;
      for (int k = 0; k < node->n_inputs; k++)
        {
          PlNode *t = node->inputs[k] ? node->inputs[k]->producer : NULL;
          if (t && g_hash_table_contains (fresh, t) && g_hash_table_add (placed, t))
            g_ptr_array_add (out, t);
        }
      g_ptr_array_add (out, node);
      for (int o = 0; o < node->n_outputs; o++)
        for (int u = 0; node->outputs[o] && u < node->outputs[o]->n_uses; u++)
          {
            PlNode *t = node->outputs[o]->uses[u].node;
            if (g_hash_table_contains (fresh, t) && t->outputs[0]->n_uses == 0 && g_hash_table_add (placed, t))
              g_ptr_array_add (out, t);
          }
    }
  for (guint i = 0; i < A->added->len; i++)
    if (g_hash_table_add (placed, A->added->pdata[i]))
      g_ptr_array_add (out, A->added->pdata[i]);
  pl_graph_set_node_order (A->g, (PlNode *const *) out->pdata, (int) out->len);
  return true;
}

static bool
apply_plan (PlGraph *g, const Model *M, const PlLsSolution *s, PlCalibration *cal, bool *changed, GError **error)
{
  Apply A = { .g = g };
  A.transform_of = g_hash_table_new (NULL, NULL);
  A.added = g_ptr_array_new ();
  bool ok = true;
  /* layouts and conv attributes */
  for (guint i = 0; i < M->pnodes->len; i++)
    {
      const PNode *pn = &g_array_index (M->pnodes, PNode, i);
      if (pn->kind != PN_NODE)
        continue;
      PlLayout l = pn->layout[s->choice[i]];
      bool decides = pn->conv || pn->pointwise || pn->pool;
      for (int k = 0; k < pn->node->n_outputs; k++)
        set_layout (&A, pn->node->outputs[k], decides && k == 0 ? l : PL_LAYOUT_NCHW);
      if (pn->conv)
        set_conv_impl (&A, cal, pn->node, l, pn->impl[s->choice[i]]);
    }
  /* the transforms there are (a previous plan's), to reuse */
  for (guint i = 0; i < g->nodes->len; i++)
    {
      PlNode *t = g->nodes->pdata[i];
      PlLayout to;
      if (t->op == PL_OP_LayoutTransform && t->inputs[0] && pl_layout_parse (pl_node_attr_string (t, "to", ""), &to) &&
          !g_hash_table_contains (A.transform_of, transform_key (t->inputs[0], to)))
        g_hash_table_insert (A.transform_of, transform_key (t->inputs[0], to), t);
    }
  /* every reader reads its root in the layout it needs */
  for (guint i = 0; ok && i < M->pnodes->len; i++)
    {
      const PNode *pn = &g_array_index (M->pnodes, PNode, i);
      if (pn->kind != PN_NODE)
        continue;
      PlLayout l = pn->conv || pn->pointwise || pn->pool ? pn->layout[s->choice[i]] : PL_LAYOUT_NCHW;
      for (int k = 0; ok && k < pn->node->n_inputs; k++)
        {
          PlValue *v = pn->node->inputs[k], *r = root_of (v);
          if (!v)
            continue;
          PlValue *want = static_rank4 (r) && slot_follows (pn, k, r) ? read_as (&A, M, s, r, l, error) : r;
          if (!want)
            ok = false;
          else if (want != v)
            {
              pl_node_set_input (pn->node, k, want);
              A.changed = true;
            }
        }
    }
  for (guint i = 0; ok && i < g->outputs->len; i++)
    {
      PlValue *r = root_of (g->outputs->pdata[i]);
      PlValue *want = static_rank4 (r) ? read_as (&A, M, s, r, PL_LAYOUT_NCHW, error) : r;
      ok = want && set_output (&A, (int) i, want, error);
    }
  if (ok)
    {
      remove_unused_transforms (&A);
      ok = place_new_transforms (&A, error);
    }
  *changed = A.changed;
  g_hash_table_unref (A.transform_of);
  g_ptr_array_unref (A.added);
  return ok;
}

/* --- the report ---------------------------------------------------------------------- */

/* "1x64x56x56 -> 64 k3x3 s1 p1" */
static char *
conv_shape (const PlNode *conv)
{
  PlConvDesc c;
  g_autofree char *why = NULL;
  if (!pl_conv_desc_from_node (conv, &c, &why) || c.n != 2)
    return g_strdup ("?");
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                          " -> %" G_GINT64_FORMAT " k%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT,
                          c.batch, c.c_in, c.in[0], c.in[1], c.c_out, c.kernel[0], c.kernel[1]);
  if (c.strides[0] != 1 || c.strides[1] != 1)
    g_string_append_printf (s, " s%" G_GINT64_FORMAT, c.strides[0]);
  if (c.pads[0] || c.pads[1])
    g_string_append_printf (s, " p%" G_GINT64_FORMAT, c.pads[0]);
  if (c.group != 1)
    g_string_append_printf (s, " g%" G_GINT64_FORMAT, c.group);
  return g_string_free (s, FALSE);
}

/* "1x64x112x112 max k3x3 s2 p1", "1x512x7x7 global avg" */
static char *
pool_shape (const PlNode *pool)
{
  PlPoolDesc d;
  g_autofree char *why = NULL;
  if (!pl_pool_desc_from_node (pool, &d, &why) || d.n != 2)
    return g_strdup ("?");
  const char *kind = d.kind == PL_POOL_MAX ? "max" : "avg";
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " ",
                          d.batch, d.channels, d.in[0], d.in[1]);
  if (d.global)
    g_string_append_printf (s, "global %s", kind);
  else
    g_string_append_printf (s, "%s k%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT, kind, d.kernel[0], d.kernel[1]);
  if (!d.global && (d.strides[0] != 1 || d.strides[1] != 1))
    g_string_append_printf (s, " s%" G_GINT64_FORMAT, d.strides[0]);
  if (d.pads[0] || d.pads[1])
    g_string_append_printf (s, " p%" G_GINT64_FORMAT, d.pads[0]);
  return g_string_free (s, FALSE);
}

static const char *
impl_name (PlConvImpl impl)
{
  return impl == PL_CONV_IMPL_DIRECT ? "direct" : "gemm";
}

/* The best cost of pn in layout l over its impls (INFINITY: none). */
static double
best_in_layout (const PNode *pn, PlLayout l)
{
  double best = INFINITY;
  for (int c = 0; c < pn->n_choices; c++)
    if (pn->layout[c] == l)
      best = MIN (best, pn->cost[c].ms);
  return best;
}

/* The table of the convs (pools: of the pools): shape, plan, predicted ms,
 * the best in each layout; counts[source] of the chosen costs. */
static void
report_table (PlPassReport *report, const Model *M, const PlLsSolution *s, const Params *p, PlCalibration *cal,
              bool pools, int counts[3])
{
  GString *head = g_string_new (NULL);
  g_string_append_printf (head, "%-16s %-28s %-12s %9s", pools ? "pool" : "conv", "shape", "plan", "ms");
  for (int l = 0; l < PL_LAYOUT_COUNT; l++)
    if (p->layouts & (1u << l))
      g_string_append_printf (head, " %9s", pl_layout_name (l));
  g_string_append (head, "  source");
  pl_pass_report_printf (report, "%s", head->str);
  g_string_free (head, TRUE);
  int lines = 0;
  for (guint i = 0; i < M->pnodes->len; i++)
    {
      const PNode *pn = &g_array_index (M->pnodes, PNode, i);
      if (!(pools ? pn->pool : pn->conv))
        continue;
      int c = s->choice[i];
      counts[pn->cost[c].source]++;
      if (lines++ >= MAX_LINES)
        continue;
      g_autofree char *shape = pools ? pool_shape (pn->node) : conv_shape (pn->node);
      g_autofree char *plan = pools ? g_strdup (pl_layout_name (pn->layout[c]))
                                    : g_strdup_printf ("%s %s", pl_layout_name (pn->layout[c]), impl_name (pn->impl[c]));
      GString *line = g_string_new (NULL);
      g_string_append_printf (line, "%-16s %-28s %-12s %9.4f", pn->node->name, shape, plan, pn->cost[c].ms);
      for (int l = 0; l < PL_LAYOUT_COUNT; l++)
        if (p->layouts & (1u << l))
          {
            double ms = best_in_layout (pn, l);
            if (isfinite (ms))
              g_string_append_printf (line, " %9.4f", ms);
            else
              g_string_append_printf (line, " %9s", "-");
          }
      g_string_append_printf (line, "  %s", pl_cost_source_name (pn->cost[c].source));
      int64_t t[3];
      if (!pools && pn->impl[c] == PL_CONV_IMPL_DIRECT && (pl_calibration_conv_tile (cal, pn->node, pn->layout[c], t), t[0] > 0))
        g_string_append_printf (line, ", tile %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT, t[0], t[1],
                                t[2]);
      pl_pass_report_printf (report, "%s", line->str);
      g_string_free (line, TRUE);
    }
  if (lines > MAX_LINES)
    pl_pass_report_printf (report, "... and %d more %s", lines - MAX_LINES, pools ? "pools" : "convs");
}

/* The transforms in the graph now, one line each; returns their predicted ms. */
static double
report_transforms (PlPassReport *report, PlGraph *g, PlCalibration *cal, int *count, int counts[3])
{
  double total = 0;
  *count = 0;
  for (guint i = 0; i < g->nodes->len; i++)
    {
      PlNode *t = g->nodes->pdata[i];
      if (t->op != PL_OP_LayoutTransform)
        continue;
      PlValue *x = t->inputs[0], *y = t->outputs[0];
      PlCost c = pl_calibration_transform (cal, x, x->layout, y->layout);
      total += c.ms;
      counts[c.source]++;
      if ((*count)++ >= MAX_LINES)
        continue;
      GString *readers = g_string_new (NULL);
      for (int u = 0; u < y->n_uses; u++)
        g_string_append_printf (readers, "%s%s", u ? ", " : "", y->uses[u].node->name);
      if (pl_value_is_output (y))
        g_string_append_printf (readers, "%sthe graph output", y->n_uses ? ", " : "");
      pl_pass_report_printf (report, "  %s: %s %s -> %s, %.4f ms %s, for %s", t->name, x->name, pl_layout_name (x->layout),
                             pl_layout_name (y->layout), c.ms, pl_cost_source_name (c.source), readers->str);
      g_string_free (readers, TRUE);
    }
  if (*count > MAX_LINES)
    pl_pass_report_printf (report, "  ... and %d more", *count - MAX_LINES);
  return total;
}

static void
report_totals (PlPassReport *report, const Totals *plan, const Totals *single_t, const Params *p)
{
  int best = -1;
  GString *all = g_string_new (NULL);
  for (int l = 0; l < PL_LAYOUT_COUNT; l++)
    {
      if (!(p->layouts & (1u << l)))
        continue;
      bool feasible = single_t[l].total < PENALTY;
      g_string_append_printf (all, "%s%s ", all->len ? ", " : "", pl_layout_name (l));
      if (feasible)
        g_string_append_printf (all, "%.4f", single_t[l].total);
      else
        g_string_append (all, "n/a");
      if (feasible && (best < 0 || single_t[l].total < single_t[best].total))
        best = l;
    }
  pl_pass_report_printf (report, "predicted total %.4f ms (convs %.4f + transforms %.4f + pointwise %.4f + pools %.4f)",
                         plan->total, plan->convs, plan->transforms, plan->pointwise, plan->pools);
  if (best >= 0)
    pl_pass_report_printf (report, "best single layout: %s %.4f ms (%s, each with the search placing transforms): "
                           "plan/best = %.3f, speedup %.3fx", pl_layout_name (best), single_t[best].total, all->str,
                           plan->total / single_t[best].total, single_t[best].total / plan->total);
  g_string_free (all, TRUE);
}

static bool
convs_inside (const PlGraph *g)
{
  for (guint i = 0; i < g->nodes->len; i++)
    {
      const PlNode *n = g->nodes->pdata[i];
      if (n->op == PL_OP_Conv || (n->body && convs_inside (n->body)))
        return true;
    }
  return false;
}

static bool
fused_convs (const PlGraph *g)
{
  for (guint i = 0; i < g->nodes->len; i++)
    {
      const PlNode *n = g->nodes->pdata[i];
      if (n->body && convs_inside (n->body))
        return true;
    }
  return false;
}

static bool
top_level_convs (const PlGraph *g)
{
  for (guint i = 0; i < g->nodes->len; i++)
    if (((const PlNode *) g->nodes->pdata[i])->op == PL_OP_Conv)
      return true;
  return false;
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
  pl_pass_report_printf (report, "costs: %s on %s (%s); %d entries measured now; cache %s",
                         p->measured_mode ? "measured (analytic where not measured)" : "analytic",
                         pl_backend_name (p->backend), pl_calibration_machine (cal), pl_calibration_n_measured (cal),
                         pl_calibration_path (cal));
  pl_pass_report_printf (report, "ceilings: memcpy %.1f GB/s, GEMM %.1f GFLOP/s%s%s", gbps, gflops,
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
} Plans;

static void
search_plans (const Model *M, const Params *p, Plans *P)
{
  for (int l = 0; l < PL_LAYOUT_COUNT; l++)
    if (p->layouts & (1u << l))
      {
        P->single[l] = solve (M, l, p->max_visits);
        P->single_totals[l] = plan_totals (M, P->single[l]);
      }
  P->plan = solve (M, p->force, p->max_visits);
  P->totals = plan_totals (M, P->plan);
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
  report_table (report, M, P->plan, p, cal, false, sources);
  report_totals (report, &P->totals, P->single_totals, p);
  if (pools_count (M))
    report_table (report, M, P->plan, p, cal, true, psources);
  if (!apply_plan (g, M, P->plan, cal, &changed, error))
    return false;
  report->changed = changed;
  g_autoptr (PlPassReport) lines = pl_pass_report_new ();
  double ms = report_transforms (lines, g, cal, &n_transforms, tsources);
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

static bool
run (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer user_data G_GNUC_UNUSED, GError **error)
{
  Params p;
  if (!read_params (args, &p, error))
    return false;
  if (fused_convs (g))
    {
      pl_pass_report_printf (report, "convolutions sit inside fusion bodies: `layout` must run before fusion "
                             "(fuse-library, fuse-loops, stitch); nothing changed");
      pl_pass_report_count (report, "convs fused", 1);
      return true;
    }
  if (!top_level_convs (g))
    {
      pl_pass_report_printf (report, "no convolutions: nothing to plan");
      return true;
    }
  g_autoptr (PlCalibration) cal = pl_calibration_new (p.backend, p.measured_mode, error);
  if (!cal)
    return false;
  pl_calibration_restrict (cal, p.layouts, p.impls);
  if (p.measured_mode)
    pl_calibration_set_tuning (cal, p.tune);
  if ((*p.table && !pl_calibration_load_table (cal, p.table, error)) || !pl_calibration_prepare (cal, g, error))
    return false;

  Model M = { 0 };
  Plans P = { 0 };
  model_init (&M);
  bool ok = build_model (&M, g, cal, &p, error);
  if (ok)
    {
      search_plans (&M, &p, &P);
      report_costs_header (report, cal, &p);
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
    { "tune", PL_PARAM_INT, "0", "cost=measured on cpu: trials of the pebble-pruned tile search per direct conv "
      "and layout before calibrating; a tile it finds is measured beside the pebble tile and the faster one is "
      "used (cached per machine); 0: the pebble tile" },
  };
  return pl_pass_new ("layout",
                      "data-layout planning (MACO): one layout and implementation per convolution chosen "
                      "globally from measured costs, with the layout transforms between them",
                      params, G_N_ELEMENTS (params), run, NULL, NULL);
}
