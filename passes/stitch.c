/* stitch.c — the "stitch" pass: every memory-intensive region becomes one
 * kernel with a thread mapping and a data-reuse plan (seed 002, AStitch,
 * ASPLOS'22; DESIGN.md §1.3).
 *
 * 1. Regions. Compute-intensive ops (MatMul, Gemm, Conv, library fusions)
 *    cut the graph. Memory-intensive are elementwise ops, Expand, views
 *    (Reshape/Squeeze/Unsqueeze/Flatten with constant operands), Transpose,
 *    row reductions (Reduce*, ArgMax/Min) and the composite row ops
 *    Softmax/LogSoftmax/Hardmax/LayerNormalization, with static shapes;
 *    other ops (Gather, Concat, pooling, ...) stay kernels of their own.
 *    Loop/input/stitch fusions made earlier are inlined first. Each connected
 *    set of memory-intensive ops that merges without a cycle (PlFusionPlan)
 *    becomes one Fusion of kind "stitch": one kernel. Its plan is then made
 *    from its body, the graph the code generators see.
 * 2.–5. Backbones and groups, the thread mapping per group, phases and
 *    data reuse, shared-memory offsets and the grid: stitch-plan.c plans
 *    each region and explains how; this file writes the plan onto the
 *    fusion node and into the report.
 *
 * Plan attributes of a "stitch" fusion (see also fusion.h):
 *   target          STRING  "cuda" | "cpu"
 *   rows, row_length INT    the kernel's mapping (its largest group): rows × row length
 *   block_size      INT     threads per block (cpu: 1)
 *   rows_per_block  INT     rows one block (cpu: one thread) handles
 *   blocks_per_row  INT     > 1: each row split across this many blocks
 *   grid            INT     blocks (cpu: threads) launched
 *   grid_barrier    INT     1: a value crosses blocks; the grid is one wave
 *   shared_bytes    INT     shared memory per block after buffer reuse
 *   backbones       STRINGS each group's first backbone, in group order
 *   sub_backbones   STRINGS "sub:backbone"
 *   groups          STRINGS each group's nodes joined by ','; group 0 maps the kernel
 *   group_rows, group_row_length, group_rows_per_block, group_blocks_per_row   INTS
 *   reuse           STRINGS "value:register|shared|global" per value read in the body
 *                           (deepest level over its readers), cached inputs, split results
 *   shared_buffers  STRINGS "value:offset:bytes"
 */
#define G_LOG_DOMAIN "passlab"
#include "builtin-passes.h"
#include "cost.h"
#include "fusion.h"
#include "rewrite.h"
#include "stitch-private.h"

#include <string.h>

#define STITCH_KIND  "stitch"
#define MAX_REPORTED 200    /* kernels described in the report */

static const char *const level_name[] = { "none", "register", "shared", "global" };

/* --- what stitches -------------------------------------------------------------- */

static bool
static_typed (const PlValue *v)
{
  return !v || (v->dtype != PL_DTYPE_UNDEFINED && pl_shape_is_static (&v->shape));
}

static void
row_space_of (const PlShape *s, guint32 mask, RowSpace *sp)
{
  memset (sp, 0, sizeof *sp);
  sp->rows = sp->row_len = 1;
  for (int i = 0; i < s->rank; i++)
    {
      int64_t d = s->dims[i].size;
      bool red = (mask >> i) & 1;
      *(red ? &sp->row_len : &sp->rows) *= d;
      if (d != 1)
        {
          sp->dims[sp->n] = d;
          sp->reduced[sp->n++] = red;
        }
    }
}

/* What node is for stitching; backbones also get their row space and barriers. */
static Kind
classify (const PlNode *node, RowSpace *sp, guint8 *barriers)
{
  const PlOpInfo *info = pl_op_info (node->op);
  if (node->body || node->op == PL_OP_OPAQUE || !info->eval || node->n_outputs == 0 ||
      node->n_inputs == 0 || !node->inputs[0] || !node->outputs[0])
    return K_OUT;
  for (int i = 0; i < MAX (node->n_outputs, node->n_inputs); i++)
    if ((i < node->n_outputs && !static_typed (node->outputs[i])) ||
        (i < node->n_inputs && !static_typed (node->inputs[i])))
      return K_OUT;
  guint32 mask;
  switch (node->op)
    {
    case PL_OP_Reshape: case PL_OP_Squeeze: case PL_OP_Unsqueeze: case PL_OP_Flatten:
      return pl_rw_operands_constant (node) ? K_VIEW : K_OUT;
    case PL_OP_Expand:
      return pl_rw_operands_constant (node) ? K_EXPAND : K_OUT;
    case PL_OP_Transpose:
      return K_TRANSPOSE;
    case PL_OP_ReduceSum: case PL_OP_ReduceMean: case PL_OP_ReduceMax: case PL_OP_ReduceMin:
    case PL_OP_ReduceProd: case PL_OP_ReduceL1: case PL_OP_ReduceL2: case PL_OP_ReduceLogSum:
    case PL_OP_ReduceLogSumExp: case PL_OP_ReduceSumSquare: case PL_OP_ArgMax: case PL_OP_ArgMin:
      if (!pl_rw_reduction_axes (node, &mask))
        return K_OUT;
      row_space_of (&node->inputs[0]->shape, mask, sp);
      *barriers = 1;
      return K_REDUCE;
    case PL_OP_Softmax: case PL_OP_LogSoftmax: case PL_OP_Hardmax: case PL_OP_LayerNormalization:
      if (!pl_rw_reduction_axes (node, &mask))
        return K_OUT;
      row_space_of (&node->inputs[0]->shape, mask, sp);
      *barriers = node->op == PL_OP_Hardmax ? 1 : 2;   /* (max, sum), (mean, variance), argmax */
      return K_COMPOSITE;
    default:
      return info->category == PL_CAT_ELEMENTWISE ? K_ELEM : K_OUT;
    }
}

static void
ctx_init (Ctx *c, const PlGraph *g, const Device *dev)
{
  *c = (Ctx) { .dev = dev, .n_ids = MAX (g->next_node_id, 1) };
  c->kind = g_new0 (guint8, c->n_ids);
  c->barriers = g_new0 (guint8, c->n_ids);
  c->space = g_new (int, c->n_ids);
  memset (c->space, 0xff, sizeof (int) * c->n_ids);
  c->spaces = g_array_new (FALSE, FALSE, sizeof (RowSpace));
  c->loc = g_new0 (int, c->n_ids);
  c->loc_stamp = g_new0 (guint, c->n_ids);
}

static void
ctx_clear (Ctx *c)
{
  g_free (c->kind);
  g_free (c->barriers);
  g_free (c->space);
  g_array_unref (c->spaces);
  g_free (c->loc);
  g_free (c->loc_stamp);
}

static void
ctx_classify (Ctx *c, const PlNode *x)
{
  RowSpace sp;
  c->kind[x->id] = (guint8) classify (x, &sp, &c->barriers[x->id]);
  if (c->kind[x->id] == K_REDUCE || c->kind[x->id] == K_COMPOSITE)
    {
      c->space[x->id] = (int) c->spaces->len;
      g_array_append_val (c->spaces, sp);
    }
}

void
pl_stitch_stamp_members (Ctx *c, PlNode *const *nodes, int n)
{
  c->stamp++;
  for (int i = 0; i < n; i++)
    {
      c->loc[nodes[i]->id] = i;
      c->loc_stamp[nodes[i]->id] = c->stamp;
    }
}

/* --- the plan on the fusion node, and in the report --------------------------------- */

static void
set_strings (PlNode *f, const char *name, GPtrArray *a)
{
  pl_node_set_attr_strings (f, name, (const char *const *) a->pdata, (int) a->len);
}

static char *
format_bytes (int64_t b)
{
  return b >= 10 * 1024 ? g_strdup_printf ("%.1f KiB", b / 1024.0) : g_strdup_printf ("%" G_GINT64_FORMAT " B", b);
}

/* Appends up to MAX_LISTED items, then "… (N more)". */
static void
append_listed (GString *s, int *listed, int total, const char *text)
{
  if (*listed < MAX_LISTED)
    g_string_append_printf (s, "%s%s", *listed ? ", " : "", text);
  else if (*listed == MAX_LISTED)
    g_string_append_printf (s, ", … (%d more)", total - MAX_LISTED);
  (*listed)++;
}

static void
describe_mapping (GString *s, const Device *d, const Group *G)
{
  const Mapping *m = &G->map;
  g_string_append_printf (s, "%" G_GINT64_FORMAT " rows × %" G_GINT64_FORMAT " → ", m->rows, m->row_len);
  if (m->blocks_per_row > 1)
    g_string_append_printf (s, "each row split over %" G_GINT64_FORMAT " %s", m->blocks_per_row,
                            d->cuda ? "blocks" : "threads");
  else
    g_string_append_printf (s, "%" G_GINT64_FORMAT " row%s per %s", m->rows_per_block,
                            m->rows_per_block == 1 ? "" : "s", d->cuda ? "block" : "thread");
  if (d->cuda)
    g_string_append_printf (s, ", %" G_GINT64_FORMAT " threads per block, %" G_GINT64_FORMAT " blocks",
                            m->block, m->grid);
  else
    g_string_append_printf (s, ", %" G_GINT64_FORMAT " threads", m->grid);
  if (G->capped)
    g_string_append (s, ", looping within one wave");
}

/* Report lines about the groups ("fusion_3: backbone mean, sub-backbones var; ...") */
static void
report_groups (Ctx *c, Region *r, PlNode *f, GString **subs, PlPassReport *report)
{
  for (int k = 0; k < MIN (r->n_groups, MAX_LISTED); k++)
    {
      Group *G = group_at (r, r->by_order[k]);
      g_autoptr (GString) t = g_string_new (NULL);
      if (r->n_groups > 1)
        g_string_append_printf (t, "group %d: ", k);
      if (G->primary >= 0)
        g_string_append_printf (t, "backbone %s%s%s; ", r->m[G->primary]->name, subs[k]->len ? ", sub-backbones " : "",
                                subs[k]->str);
      else
        g_string_append (t, "no backbone (elementwise: rows of 1); ");
      describe_mapping (t, c->dev, G);
      pl_pass_report_printf (report, "%s: %s", f->name, t->str);
    }
}

/* "fusion_3: reuse: mean→d shared, ...", and the shared-memory line. */
static void
report_reuse (Ctx *c, Region *r, PlNode *f, PlPassReport *report)
{
  g_autoptr (GString) t = g_string_new (NULL), cached = g_string_new (NULL), demoted = g_string_new (NULL);
  int n_shared = 0, listed = 0;
  for (guint e = 0; e < r->edges->len; e++)
    {
      Edge *ed = &g_array_index (r->edges, Edge, e);
      g_string_append_printf (t, "%s%s→%s %s", e ? ", " : "", r->m[ed->from]->name, r->m[ed->to]->name,
                              level_name[ed->level]);
    }
  const int64_t *n = r->edge_count;
  if (n[1] + n[2] + n[3] > (int64_t) r->edges->len)
    g_string_append (t, ", …");
  for (guint a = 0; a < r->vals->len; a++)
    {
      Val *v = &g_array_index (r->vals, Val, a);
      n_shared += v->level == L_SHARED && !v->demoted;
      if (v->level == L_SHARED && !v->demoted && v->producer < 0)
        g_string_append_printf (cached, "%s%s", cached->len ? ", " : "", v->v->name);
      if (v->demoted)
        append_listed (demoted, &listed, r->n_demoted, v->v->name);
    }
  pl_pass_report_printf (report, "%s: reuse: %s%s%" G_GINT64_FORMAT " edges: %" G_GINT64_FORMAT " register, %"
                         G_GINT64_FORMAT " shared, %" G_GINT64_FORMAT " global%s%s", f->name, t->str,
                         t->len ? "; " : "", n[1] + n[2] + n[3], n[1], n[2], n[3],
                         cached->len ? "; inputs cached in shared memory: " : "", cached->str);
  g_autofree char *bytes = format_bytes (r->shared_bytes);
  g_autofree char *limit = format_bytes (c->dev->shared_limit);
  g_string_printf (t, "%s: %s memory: %s per %s in %d buffer%s for %d value%s", f->name,
                   c->dev->cuda ? "shared" : "scratch", bytes, c->dev->cuda ? "block" : "thread", r->n_buffers,
                   r->n_buffers == 1 ? "" : "s", n_shared, n_shared == 1 ? "" : "s");
  if (r->n_buffers < n_shared)
    g_string_append_printf (t, " (%d reused)", n_shared - r->n_buffers);
  if (r->n_demoted)
    g_string_append_printf (t, "; over the %s limit %d fall back to global memory: %s", limit, r->n_demoted,
                            demoted->str);
  if (r->barrier)
    g_string_append_printf (t, "; grid barrier: the grid is one wave of %" G_GINT64_FORMAT " %s", r->grid,
                            c->dev->cuda ? "blocks" : "threads");
  else
    g_string_append (t, "; no grid barrier");
  pl_pass_report_printf (report, "%s", t->str);
}

/* Writes the plan of region r onto its fusion f (see the top of the file),
 * counts it, and describes it in the report when with_text. */
static void
write_plan (Ctx *c, Region *r, PlNode *f, PlPassReport *report, bool with_text)
{
  const Mapping *m = &group_at (r, r->by_order[0])->map;
  static const char *const names[] = { "rows", "row_length", "block_size", "rows_per_block", "blocks_per_row",
                                       "grid", "grid_barrier", "shared_bytes" };
  int64_t values[] = { m->rows, m->row_len, m->block, m->rows_per_block, m->blocks_per_row, r->grid, r->barrier,
                       r->shared_bytes };
  pl_node_set_attr_string (f, "target", c->dev->cuda ? "cuda" : "cpu");
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    pl_node_set_attr_int (f, names[i], values[i]);

  g_autoptr (GPtrArray) backbones = g_ptr_array_new (), subs = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) groups = g_ptr_array_new_with_free_func (g_free);
  g_autofree int64_t *per_group = g_new (int64_t, 4 * r->n_groups);
  g_autofree GString **members = g_new (GString *, r->n_groups), **group_subs = g_new (GString *, r->n_groups);
  for (int k = 0; k < r->n_groups; k++)
    {
      members[k] = g_string_new (NULL);
      group_subs[k] = g_string_new (NULL);
    }
  for (int i = 0; i < r->n; i++)
    {
      Group *G = group_at (r, r->grp[i]);
      g_string_append_printf (members[G->order], "%s%s", members[G->order]->len ? "," : "", r->m[i]->name);
      if (is_backbone (c, r->m[i]) && i != G->primary)
        {
          g_ptr_array_add (subs, g_strdup_printf ("%s:%s", r->m[i]->name, r->m[G->primary]->name));
          g_string_append_printf (group_subs[G->order], "%s%s", group_subs[G->order]->len ? ", " : "", r->m[i]->name);
        }
    }
  int split = 0, packed = 0;
  for (int k = 0; k < r->n_groups; k++)
    {
      Group *G = group_at (r, r->by_order[k]);
      if (G->primary >= 0)
        g_ptr_array_add (backbones, r->m[G->primary]->name);
      g_ptr_array_add (groups, g_string_free (members[k], FALSE));
      int64_t *col = per_group + k;
      col[0] = G->map.rows;
      col[r->n_groups] = G->map.row_len;
      col[2 * r->n_groups] = G->map.rows_per_block;
      col[3 * r->n_groups] = G->map.blocks_per_row;
      split += G->map.blocks_per_row > 1;
      packed += G->map.rows_per_block > 1 && c->dev->cuda;
    }
  set_strings (f, "backbones", backbones);
  set_strings (f, "sub_backbones", subs);
  set_strings (f, "groups", groups);
  static const char *const group_names[] = { "group_rows", "group_row_length", "group_rows_per_block",
                                             "group_blocks_per_row" };
  for (int j = 0; j < 4; j++)
    pl_node_set_attr_ints (f, group_names[j], per_group + j * r->n_groups, r->n_groups);

  g_autoptr (GPtrArray) reuse = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) buffers = g_ptr_array_new_with_free_func (g_free);
  for (guint a = 0; a < r->vals->len; a++)
    {
      Val *v = &g_array_index (r->vals, Val, a);
      g_ptr_array_add (reuse, g_strdup_printf ("%s:%s", v->v->name, level_name[v->demoted ? L_GLOBAL : v->level]));
      if (v->level == L_SHARED && !v->demoted)
        g_ptr_array_add (buffers, g_strdup_printf ("%s:%" G_GINT64_FORMAT ":%" G_GINT64_FORMAT, v->v->name, v->offset,
                                                   v->bytes));
    }
  set_strings (f, "reuse", reuse);
  set_strings (f, "shared_buffers", buffers);

  static const char *const counters[] = { "stitch kernels", "ops stitched", "backbones", "sub-backbones",
                                          "split rows", "packed rows", "grid barriers", "register edges",
                                          "shared edges", "global edges", "shared bytes", "values demoted to global" };
  int64_t counts[] = { 1, r->n, backbones->len, subs->len, split, packed, r->barrier, r->edge_count[L_REGISTER],
                       r->edge_count[L_SHARED], r->edge_count[L_GLOBAL], r->shared_bytes, r->n_demoted };
  for (guint i = 0; i < G_N_ELEMENTS (counters); i++)
    pl_pass_report_count (report, counters[i], counts[i]);
  if (with_text)
    {
      g_autoptr (GString) t = g_string_new (NULL);
      int listed = 0;
      for (int i = 0; i < r->n; i++)
        append_listed (t, &listed, r->n, r->m[i]->name);
      pl_pass_report_printf (report, "%s (stitch, %d ops: %s)", f->name, r->n, t->str);
      report_groups (c, r, f, group_subs, report);
      report_reuse (c, r, f, report);
    }
  for (int k = 0; k < r->n_groups; k++)
    g_string_free (group_subs[k], TRUE);
}

/* Plans fusion f from its body. */
static void
plan_fusion (const Device *dev, PlNode *f, PlPassReport *report, bool with_text)
{
  Ctx c;
  ctx_init (&c, f->body, dev);
  int n;
  g_autofree PlNode **order = pl_graph_topo_order (f->body, &n, NULL);
  for (int i = 0; i < n; i++)
    ctx_classify (&c, order[i]);
  Region r = { .n = n, .m = order };
  pl_stitch_plan_region (&c, &r);
  write_plan (&c, &r, f, report, with_text);
  pl_stitch_region_clear (&r);
  ctx_clear (&c);
}

/* --- absorbing earlier fusions ---------------------------------------------------------- */

/* A loop, input or stitch fusion without control edges whose ops all stitch. */
static bool
absorbable (const PlNode *f, GHashTable *waited_on)
{
  const char *kind = pl_node_attr_string (f, "kind", "");
  if (f->op != PL_OP_Fusion || !f->body || f->n_controls > 0 || f->body->n_control_edges > 0 ||
      g_hash_table_contains (waited_on, f) ||
      (strcmp (kind, PL_FUSION_KIND_LOOP) != 0 && strcmp (kind, PL_FUSION_KIND_INPUT) != 0 &&
       strcmp (kind, STITCH_KIND) != 0))
    return false;
  for (guint i = 0; i < f->body->nodes->len; i++)
    {
      RowSpace sp;
      guint8 barriers;
      if (classify (f->body->nodes->pdata[i], &sp, &barriers) == K_OUT)
        return false;
    }
  return true;
}

/* Inlines every absorbable fusion; returns how many, or -1 on error. */
static int
absorb_fusions (PlGraph *g, GError **error)
{
  g_autoptr (GHashTable) waited_on = g_hash_table_new (NULL, NULL);
  for (guint i = 0; g->n_control_edges > 0 && i < g->nodes->len; i++)
    {
      PlNode *x = g->nodes->pdata[i];
      for (int k = 0; k < x->n_controls; k++)
        g_hash_table_add (waited_on, x->controls[k].node);
    }
  g_autoptr (GPtrArray) fusions = g_ptr_array_new ();
  for (guint i = 0; i < g->nodes->len; i++)
    if (absorbable (g->nodes->pdata[i], waited_on))
      g_ptr_array_add (fusions, g->nodes->pdata[i]);
  for (guint i = 0; i < fusions->len; i++)
    if (!pl_fusion_inline (g, fusions->pdata[i], error))
      return -1;
  pl_graph_remove_nodes (g, (PlNode *const *) fusions->pdata, (int) fusions->len);
  return (int) fusions->len;
}

/* --- the pass ----------------------------------------------------------------------- */

static bool
read_device (const PlPassArgs *args, Device *d, GError **error)
{
  const char *target = pl_pass_args_string (args, "target");
  static const char *const names[] = { "sm_count", "cores", "max_threads_per_block", "threads_per_sm",
                                       "shared_mem_per_block", "regs_per_thread" };
  static const int64_t mins[] = { 1, 1, WARP, WARP, 0, 0 };
  int64_t v[G_N_ELEMENTS (names)];
  if (g_strcmp0 (target, "cuda") != 0 && g_strcmp0 (target, "cpu") != 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "stitch.target: '%s' is neither 'cuda' nor 'cpu'", target);
      return false;
    }
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    if ((v[i] = pl_pass_args_int (args, names[i])) < mins[i])
      {
        g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "stitch.%s must be at least %" G_GINT64_FORMAT
                     " (got %" G_GINT64_FORMAT ")", names[i], mins[i], v[i]);
        return false;
      }
  d->cuda = g_strcmp0 (target, "cuda") == 0;
  d->units = MIN (v[d->cuda ? 0 : 1], G_MAXINT32);
  d->max_threads = MIN (v[2], 1 << 20) / WARP * WARP;
  d->threads_per_sm = MIN (v[3], G_MAXINT32);
  d->shared_limit = v[4];
  d->regs = MIN (v[5], REGS_PER_SM);
  if (d->regs > 0)
    d->max_threads = MAX (WARP, MIN (d->max_threads, REGS_PER_SM / d->regs / WARP * WARP));
  return true;
}

/* Whether region m is worth a kernel: it computes, has two ops or a backbone
 * (whose mapping is the plan), and something outside reads it. */
static bool
region_worth (Ctx *c, GPtrArray *m, GHashTable *graph_outputs)
{
  pl_stitch_stamp_members (c, (PlNode *const *) m->pdata, (int) m->len);
  bool computes = false, backbone = false, escapes = false;
  for (guint i = 0; i < m->len; i++)
    {
      PlNode *x = m->pdata[i];
      computes |= !pl_node_is_metadata_only (x);
      backbone |= is_backbone (c, x);
      for (int o = 0; o < x->n_outputs && !escapes; o++)
        {
          PlValue *v = x->outputs[o];
          escapes |= v && g_hash_table_contains (graph_outputs, v);
          for (int u = 0; v && u < v->n_uses && !escapes; u++)
            escapes = member (c, v->uses[u].node) < 0;
        }
    }
  return computes && escapes && (m->len >= 2 || backbone);
}

/* The regions: memory-intensive producer → consumer edges merged on a
 * fusion plan, which refuses a merge that would make a cycle. */
static GPtrArray *
find_regions (PlGraph *g, const Device *dev, GError **error)
{
  g_autoptr (PlFusionPlan) plan = pl_fusion_plan_new (g, error);
  int n;
  g_autofree PlNode **order = plan ? pl_graph_topo_order (g, &n, error) : NULL;
  if (!order)
    return NULL;
  Ctx c;
  ctx_init (&c, g, dev);
  for (int k = 0; k < n; k++)
    {
      PlNode *x = order[k];
      ctx_classify (&c, x);
      for (int i = 0; kind_of (&c, x) != K_OUT && i < x->n_inputs; i++)
        {
          PlNode *p = x->inputs[i] ? x->inputs[i]->producer : NULL;
          if (p && kind_of (&c, p) != K_OUT)
            pl_fusion_plan_merge (plan, (PlNode *[]) { p, x }, 2);
        }
    }
  g_autoptr (GHashTable) graph_outputs = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < g->outputs->len; i++)
    g_hash_table_add (graph_outputs, g->outputs->pdata[i]);
  g_autoptr (GPtrArray) all = pl_fusion_plan_groups (plan, 1);
  GPtrArray *regions = g_ptr_array_new_with_free_func ((GDestroyNotify) g_ptr_array_unref);
  for (guint i = 0; i < all->len; i++)
    {
      GPtrArray *m = all->pdata[i];
      if (kind_of (&c, m->pdata[0]) != K_OUT && region_worth (&c, m, graph_outputs))
        g_ptr_array_add (regions, g_ptr_array_ref (m));
    }
  ctx_clear (&c);
  return regions;
}

static bool
run (PlGraph *g, const PlPassArgs *args, PlPassReport *report, gpointer user_data G_GNUC_UNUSED, GError **error)
{
  Device dev;
  PlGraphStats before, after;
  if (!read_device (args, &dev, error))
    return false;
  pl_graph_stats (g, 1, &before);
  int absorbed = absorb_fusions (g, error);
  if (absorbed < 0)
    return false;
  g_autoptr (GPtrArray) regions = find_regions (g, &dev, error);
  if (!regions)
    return false;
  if (regions->len == 0)
    {
      pl_pass_report_printf (report, "nothing to stitch%s", absorbed ? " (earlier fusions inlined again)" : "");
      report->changed = absorbed > 0;
      return true;
    }
  g_autofree const char **kinds = g_new (const char *, regions->len);
  int64_t ops = 0;
  for (guint i = 0; i < regions->len; i++)
    {
      kinds[i] = STITCH_KIND;
      ops += ((GPtrArray *) regions->pdata[i])->len;
    }
  g_autoptr (GPtrArray) left_out = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) made = pl_fusion_create_many (g, regions, kinds, left_out, error);
  if (!made)
    return false;
  guint n_made = 0;
  for (guint i = 0; i < made->len; i++)
    if (made->pdata[i])
      plan_fusion (&dev, made->pdata[i], report, n_made++ < MAX_REPORTED);
    else
      ops -= ((GPtrArray *) regions->pdata[i])->len;
  if (n_made > MAX_REPORTED)
    pl_pass_report_printf (report, "… and %u more stitch kernels", n_made - MAX_REPORTED);
  for (guint i = 0; i < left_out->len; i++)
    pl_pass_report_printf (report, "%s", (char *) left_out->pdata[i]);
  if (absorbed)
    pl_pass_report_printf (report, "%d earlier fusions inlined and stitched again", absorbed);
  pl_graph_stats (g, 1, &after);
  pl_pass_report_printf (report, "%u stitch kernels of %" G_GINT64_FORMAT " ops (%.1f ops per kernel); "
                         "kernels %" G_GINT64_FORMAT " → %" G_GINT64_FORMAT, n_made, ops,
                         n_made ? (double) ops / n_made : 0.0, before.kernels, after.kernels);
  pl_pass_report_count (report, "fusions absorbed", absorbed);
  pl_pass_report_count (report, "kernels before", before.kernels);
  pl_pass_report_count (report, "kernels after", after.kernels);
  report->changed = n_made > 0 || absorbed > 0;
  return true;
}

PlPass *
pl_pass_stitch_new (void)
{
  static const PlPassParam params[] = {
    { "target", PL_PARAM_STRING, "cuda", "device the plan is for: cuda (blocks on multiprocessors) or cpu (rows chunked over cores)" },
    { "sm_count", PL_PARAM_INT, "132", "free multiprocessors (H100 SXM: 132)" },
    { "max_threads_per_block", PL_PARAM_INT, "1024", "most threads in one block" },
    { "threads_per_sm", PL_PARAM_INT, "2048", "resident threads per multiprocessor: with a grid barrier the grid is one wave" },
    { "shared_mem_per_block", PL_PARAM_INT, "232448", "shared memory one block may use, bytes (H100: 227 KiB); cpu: per-thread scratch" },
    { "regs_per_thread", PL_PARAM_INT, "0", "registers one thread needs (0: not limiting); caps a block at 65536 / this threads" },
    { "cores", PL_PARAM_INT, "2", "cpu: threads the rows are chunked over" },
  };
  return pl_pass_new ("stitch",
                      "stitching (AStitch): each memory-intensive region between compute-intensive ops becomes one "
                      "kernel, grouped around its reductions, with a thread mapping and per-edge data reuse "
                      "(register, shared or global memory)",
                      params, G_N_ELEMENTS (params), run, NULL, NULL);
}
