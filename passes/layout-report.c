/* layout-report.c — the `layout` pass's report: per conv (and pool) its
 * shape, chosen layout, impl and tile, predicted ms and the best in each
 * single layout; the plan's predicted total against the best single-layout
 * plan; the transforms left in the graph; where each cost came from. */
#define G_LOG_DOMAIN "passlab"
#include "layout-pass-private.h"

#include "cost.h"

#include <math.h>
#include <string.h>

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
void
pl_lp_report_table (PlPassReport *report, const Model *M, const PlLsSolution *s, const Params *p, PlCalibration *cal,
              bool pools, int counts[3])
{
  /* convs on the cpu: the plan's share of the arithmetic peak, how far
   * its kernel is from what no kernel can beat; and for every row the
   * bandwidth its time implies (inputs read and output written once), to
   * set against the memcpy ceiling: a depthwise conv far from the peak may
   * be at the memory's limit */
  double peak = pools ? 0 : pl_calibration_fma_peak (cal) * 1e6;   /* FLOPs per ms */
  /* two spaces between the text columns: a name or shape wider than its
   * column still leaves a gap that tells the columns apart */
  GString *head = g_string_new (NULL);
  g_string_append_printf (head, "%-16s  %-28s  %-12s %9s", pools ? "pool" : "conv", "shape", "plan", "ms");
  if (peak > 0)
    g_string_append (head, "  peak");
  g_string_append (head, "   GB/s");
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
      g_string_append_printf (line, "%-16s  %-28s  %-12s %9.4f", pn->node->name, shape, plan, pn->cost[c].ms);
      if (peak > 0)
        g_string_append_printf (line, " %4.0f%%", 100.0 * (double) pl_node_flops (pn->node, 1, NULL) / pn->cost[c].ms / peak);
      g_string_append_printf (line, " %6.1f", (double) pl_node_bytes (pn->node, 1, NULL) / pn->cost[c].ms / 1e6);
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
double
pl_lp_report_transforms (PlPassReport *report, PlGraph *g, PlCalibration *cal, int *count, int counts[3])
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

void
pl_lp_report_totals (PlPassReport *report, const Totals *plan, const Totals *single_t, const Params *p)
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

bool
pl_lp_fused_convs (const PlGraph *g)
{
  for (guint i = 0; i < g->nodes->len; i++)
    {
      const PlNode *n = g->nodes->pdata[i];
      if (n->body && convs_inside (n->body))
        return true;
    }
  return false;
}

bool
pl_lp_top_level_convs (const PlGraph *g)
{
  for (guint i = 0; i < g->nodes->len; i++)
    if (((const PlNode *) g->nodes->pdata[i])->op == PL_OP_Conv)
      return true;
  return false;
}

