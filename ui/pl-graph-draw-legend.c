/* pl-graph-draw-legend.c — the small legend the canvas keeps in its
 * bottom-right corner: which data layouts the shown version's edges carry
 * (a line in each layout's colour) and, when it has LayoutTransform nodes,
 * the hexagon they are drawn as. Drawn in widget pixels over the cached
 * picture, so it stays put while panning. */
#define G_LOG_DOMAIN "passlab"

#include "pl-graph-draw-private.h"

guint
pl_graph_scene_layouts_shown (const PlGraphScene *s, bool *transforms)
{
  g_return_val_if_fail (s != NULL, 0);
  const PlGraphLayout *l = s->layout;
  guint bits = 0;
  for (int i = 0; i < l->n_edges; i++)
    if (s->edge_state[i] != PL_DRAW_HIDDEN && s->edge_state[i] != PL_DRAW_REMOVED
        && s->edge_layout[i] != PL_LAYOUT_NCHW)
      bits |= 1u << layout_index (s->edge_layout[i]);
  bool any = false;
  for (int i = 0; i < l->n_nodes && !any; i++)
    any = s->node_transform[i] && s->node_state[i] != PL_DRAW_HIDDEN && s->node_state[i] != PL_DRAW_REMOVED;
  if (transforms != NULL)
    *transforms = any;
  return bits;
}

/* One legend entry at x: a swatch then text; returns the x after it. */
static double
legend_entry (cairo_t *cr, PangoLayout *pl, double x, double cy, PlLayout lay, bool hexagon_swatch,
              const char *text, bool draw)
{
  if (draw)
    {
      if (hexagon_swatch)
        {
          pl_draw_hexagon (cr, x, cy - 6, 22, 12);
          set_rgb (cr, layout_tint[lay], 1.0);
          cairo_fill_preserve (cr);
          set_rgb (cr, layout_line[lay], 1.0);
          cairo_set_line_width (cr, 1.5);
          cairo_stroke (cr);
        }
      else
        {
          cairo_move_to (cr, x, cy);
          cairo_line_to (cr, x + 22, cy);
          set_rgb (cr, layout_line[lay], 1.0);
          cairo_set_line_width (cr, 2.5);
          cairo_stroke (cr);
        }
    }
  pango_layout_set_text (pl, text, -1);
  int tw, th;
  pango_layout_get_pixel_size (pl, &tw, &th);
  if (draw)
    {
      set_rgb (cr, c_text, 0.9);
      cairo_move_to (cr, x + 27, cy - th / 2.0);
      pango_cairo_show_layout (cr, pl);
    }
  return x + 27 + tw + 14;
}

/* The entries in a row starting at x; returns the row's width. */
static double
legend_row (const PlGraphScene *s, cairo_t *cr, PangoLayout *pl, double x, double cy, bool draw)
{
  bool transforms;
  guint bits = pl_graph_scene_layouts_shown (s, &transforms);
  double x0 = x;
  for (int lay = PL_LAYOUT_NHWC; lay < PL_LAYOUT_COUNT; lay++)
    if (bits & (1u << lay))
      {
        g_autofree char *text = g_strdup_printf ("%s data", pl_layout_name (lay));
        x = legend_entry (cr, pl, x, cy, lay, false, text, draw);
      }
  if (transforms)
    {
      /* The swatch takes the first layout shown (most graphs use one). */
      PlLayout lay = PL_LAYOUT_NHWC;
      for (int k = PL_LAYOUT_COUNT - 1; k > PL_LAYOUT_NCHW; k--)
        if (bits & (1u << k))
          lay = k;
      x = legend_entry (cr, pl, x, cy, lay, true, "layout transform", draw);
    }
  return x - x0 - 14;
}

void
pl_graph_scene_draw_legend (const PlGraphScene *s, cairo_t *cr, double x, double y)
{
  g_return_if_fail (s != NULL && cr != NULL);
  bool transforms;
  if (pl_graph_scene_layouts_shown (s, &transforms) == 0 && !transforms)
    return;
  PangoLayout *pl = pango_cairo_create_layout (cr);
  PangoFontDescription *fd = pl_draw_font (11.0, PANGO_WEIGHT_NORMAL);
  pango_layout_set_font_description (pl, fd);
  double w = legend_row (s, cr, pl, 0, 0, false) + 20, h = 26;
  cairo_save (cr);
  pl_draw_rounded_rect (cr, x - w, y - h, w, h, 6);
  cairo_set_source_rgba (cr, 1, 1, 1, 0.92);
  cairo_fill_preserve (cr);
  cairo_set_source_rgba (cr, 0, 0, 0, 0.15);
  cairo_set_line_width (cr, 1);
  cairo_stroke (cr);
  legend_row (s, cr, pl, x - w + 10, y - h / 2, true);
  cairo_restore (cr);
  pango_font_description_free (fd);
  g_object_unref (pl);
}
