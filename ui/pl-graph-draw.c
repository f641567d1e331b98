/* pl-graph-draw.c — cairo drawing of a PlGraphScene, shared by the canvas
 * and by PNG/SVG export: the whole picture in its order (clusters, edges,
 * nodes, edge labels), the shapes the other parts share, and the clusters.
 * (The other parts: pl-graph-draw-private.h.)
 *
 * What the picture shows:
 *   op nodes      rounded boxes filled by op category (light tints of the
 *                 Okabe–Ito colour-blind-safe palette), name in bold, op below
 *   fusions       collapsed: a box with a double border; expanded: a cluster
 *                 (a light rounded panel titled with the fusion's name)
 *   inputs        white pills; constants: small grey pills; outputs: pills
 *                 with a thick border
 *   edges         dot's bezier routes with arrow heads, labelled "f32[2, 64]"
 *                 in small grey type; control edges dashed red
 *   layouts       an edge carrying a value in a non-default data layout is
 *                 drawn thicker in that layout's colour (NHWC teal, CHWN
 *                 reddish purple) with the layout name in bold colour after
 *                 its label; a LayoutTransform is a hexagon in the colour of
 *                 the layout it makes, "→ NHWC" under its op; a Conv shows its
 *                 layout and implementation on a third line
 *   diff          added: green outline and glow; changed: amber; removed:
 *                 a dashed grey ghost
 *   selection     thick blue outline; hover: the node's input edges and
 *                 producers in orange, its output edges and consumers in
 *                 purple (an orange/purple pair reads for most colour-blind
 *                 viewers)
 *
 * Only what intersects the visible rectangle is drawn, and the level of
 * detail drops with the zoom: no text when it would be unreadable, and far
 * out, plain boxes and straight edges batched into one path per colour so a
 * 10,000-node overview costs a few fills and one stroke.
 */
#define G_LOG_DOMAIN "passlab"

#include "pl-graph-draw-private.h"

void
pl_graph_layout_colour (PlLayout layout, double *r, double *g, double *b)
{
  Rgb c = layout_line[layout_index (layout)];
  *r = c.r;
  *g = c.g;
  *b = c.b;
}

/* --- shapes ------------------------------------------------------------------------- */

void
pl_draw_rounded_rect (cairo_t *cr, double x, double y, double w, double h, double r)
{
  r = MIN (r, MIN (w, h) / 2);
  cairo_new_sub_path (cr);
  cairo_arc (cr, x + w - r, y + r, r, -G_PI / 2, 0);
  cairo_arc (cr, x + w - r, y + h - r, r, 0, G_PI / 2);
  cairo_arc (cr, x + r, y + h - r, r, G_PI / 2, G_PI);
  cairo_arc (cr, x + r, y + r, r, G_PI, 3 * G_PI / 2);
  cairo_close_path (cr);
}

void
pl_draw_hexagon (cairo_t *cr, double x, double y, double w, double h)
{
  double tip = MIN (h * 0.3, w / 4);
  cairo_new_sub_path (cr);
  cairo_move_to (cr, x + tip, y);
  cairo_line_to (cr, x + w - tip, y);
  cairo_line_to (cr, x + w, y + h / 2);
  cairo_line_to (cr, x + w - tip, y + h);
  cairo_line_to (cr, x + tip, y + h);
  cairo_line_to (cr, x, y + h / 2);
  cairo_close_path (cr);
}

/* --- clusters -------------------------------------------------------------------- */

static void
draw_clusters (const PlGraphScene *s, cairo_t *cr, PlDrawText *t, double x0, double y0, double x1,
               double y1, double zoom)
{
  const PlGraphLayout *l = s->layout;
  for (int i = 0; i < l->n_clusters; i++)
    {
      const PlLayoutCluster *c = &l->clusters[i];
      guint8 st = s->cluster_state[i];
      if (st == PL_DRAW_HIDDEN || c->x > x1 || c->x + c->width < x0 || c->y > y1
          || c->y + c->height < y0)
        continue;
      pl_draw_rounded_rect (cr, c->x, c->y, c->width, c->height, 10);
      if (st == PL_DRAW_REMOVED)
        cairo_set_source_rgba (cr, 1, 1, 1, 0.3);
      else
        set_rgb (cr, c_cluster, 0.85);
      cairo_fill_preserve (cr);
      Rgb border = st == PL_DRAW_ADDED ? c_added : st == PL_DRAW_CHANGED ? c_changed
                   : st == PL_DRAW_REMOVED ? c_ghost : c_cluster_border;
      if (i == s->selected_cluster)
        border = c_select;
      set_rgb (cr, border, 1.0);
      cairo_set_line_width (cr, i == s->selected_cluster || st == PL_DRAW_ADDED || st == PL_DRAW_CHANGED
                                  ? MAX (2.5, 2 / zoom) : 1.0);
      if (st == PL_DRAW_REMOVED)
        {
          static const double dash[] = { 4.0, 3.0 };
          cairo_set_dash (cr, dash, 2, 0);
        }
      cairo_stroke (cr);
      cairo_set_dash (cr, NULL, 0, 0);
      if (zoom < LOD_TEXT)
        continue;
      double w;
      set_rgb (cr, c_text, st == PL_DRAW_REMOVED ? 0.5 : 0.9);
      pl_draw_show_text (cr, t, c->title, t->cluster, c->x + 8, c->y + 10, c->width - 16, true, &w, NULL);
      if (s->cluster_subtitle[i] != NULL && w + 24 < c->width - 16)
        {
          set_rgb (cr, c_subtext, 1.0);
          pl_draw_show_text (cr, t, s->cluster_subtitle[i], t->subtitle, c->x + 8 + w + 8, c->y + 10,
                             c->width - 24 - w, true, NULL, NULL);
        }
    }
}

/* --- the whole picture ----------------------------------------------------------- */

void
pl_graph_scene_draw (const PlGraphScene *s, cairo_t *cr, double x0, double y0, double x1,
                     double y1, double zoom)
{
  g_return_if_fail (s != NULL && cr != NULL);
  const PlGraphLayout *l = s->layout;
  bool simple = zoom < LOD_SIMPLE;
  PlDrawText t;
  pl_draw_text_init (&t, cr);
  cairo_save (cr);
  cairo_set_line_join (cr, CAIRO_LINE_JOIN_ROUND);
  if (simple)
    cairo_set_antialias (cr, CAIRO_ANTIALIAS_FAST);

  draw_clusters (s, cr, &t, x0, y0, x1, y1, zoom);
  pl_draw_edges (s, cr, x0, y0, x1, y1, zoom, simple);
  if (simple)
    pl_draw_nodes_simple (s, cr, x0, y0, x1, y1, zoom);
  else
    {
      for (int i = 0; i < l->n_nodes; i++)
        if (pl_graph_scene_node_visible (s, i, x0, y0, x1, y1))
          pl_draw_node (s, cr, &t, i, zoom);
      if (zoom >= LOD_LABELS)
        pl_draw_edge_labels (s, cr, &t, x0, y0, x1, y1);
    }
  cairo_restore (cr);
  pl_draw_text_clear (&t);
}
