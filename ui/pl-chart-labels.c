/* pl-chart-labels.c — colour and text for every kind of chart: the theme's
 * text colour and the small fixed palette of step lines and spans, text
 * aligned on a point, peak and limit labels placed where they cover no other
 * label, and the legend along the top with its swatches (a line, a box, a
 * hatched box, a triangle) — the same shapes the plots draw, so they are
 * drawn here once. */
#define G_LOG_DOMAIN "passlab"

#include "pl-chart-private.h"

static const double palette[][3] = {
  [PL_CHART_COLOR_ACCENT] = { 0.21, 0.52, 0.89 },
  [PL_CHART_COLOR_MUTED] = { 0.50, 0.50, 0.54 },
  [PL_CHART_COLOR_ORANGE] = { 0.90, 0.45, 0.10 },
  [PL_CHART_COLOR_GREEN] = { 0.15, 0.60, 0.38 },
  [PL_CHART_COLOR_PURPLE] = { 0.57, 0.25, 0.67 },
  [PL_CHART_COLOR_RED] = { 0.85, 0.15, 0.15 },
};

void
chart_set_source_fg (GtkWidget *w, cairo_t *cr, double alpha)
{
  GdkRGBA c;
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  gtk_style_context_get_color (gtk_widget_get_style_context (w), &c);
  G_GNUC_END_IGNORE_DEPRECATIONS
  cairo_set_source_rgba (cr, c.red, c.green, c.blue, c.alpha * alpha);
}

void
chart_set_source_color (cairo_t *cr, PlChartColor c, double alpha)
{
  cairo_set_source_rgba (cr, palette[c][0], palette[c][1], palette[c][2], alpha);
}

void
chart_draw_text (cairo_t *cr, PangoLayout *layout, const char *text, double x, double y, double max_w,
                 double xalign)
{
  pango_layout_set_text (layout, text, -1);
  pango_layout_set_width (layout, max_w > 0 ? (int) (max_w * PANGO_SCALE) : -1);
  pango_layout_set_ellipsize (layout, max_w > 0 ? PANGO_ELLIPSIZE_MIDDLE : PANGO_ELLIPSIZE_NONE);
  int tw, th;
  pango_layout_get_pixel_size (layout, &tw, &th);
  cairo_move_to (cr, x - xalign * tw, y - th / 2.0);
  pango_cairo_show_layout (cr, layout);
}

void
chart_text_size (PangoLayout *layout, const char *text, int *tw, int *th)
{
  pango_layout_set_text (layout, text, -1);
  pango_layout_set_width (layout, -1);
  pango_layout_set_ellipsize (layout, PANGO_ELLIPSIZE_NONE);
  pango_layout_get_pixel_size (layout, tw, th);
}

static gboolean
boxes_overlap (const Box *a, const Box *b)
{
  return a->x < b->x + b->w && b->x < a->x + a->w && a->y < b->y + b->h && b->y < a->y + a->h;
}

/* Tries right above, right below, left above, left below (the first when
 * all collide), clamped inside the plot. */
void
chart_draw_label_near (cairo_t *cr, PangoLayout *layout, GArray *placed, const Plot *p, const char *text, double ax,
                       double ay)
{
  int tw, th;
  chart_text_size (layout, text, &tw, &th);
  const double dx[] = { 6, 6, -6 - tw, -6 - tw }, dy[] = { -4 - th, 4, -4 - th, 4 };
  Box chosen = { 0 };
  for (int k = 0; k < 4; k++)
    {
      Box b = { CLAMP (ax + dx[k], p->left + 2, p->right - tw - 2), CLAMP (ay + dy[k], p->top, p->bottom - th), tw,
                th };
      gboolean free = TRUE;
      for (guint i = 0; free && i < placed->len; i++)
        free = !boxes_overlap (&b, &g_array_index (placed, Box, i));
      if (k == 0 || free)
        chosen = b;
      if (free)
        break;
    }
  g_array_append_val (placed, chosen);
  cairo_move_to (cr, chosen.x, chosen.y);
  pango_cairo_show_layout (cr, layout);
}

void
chart_draw_dot (cairo_t *cr, double x, double y, double r)
{
  cairo_arc (cr, x, y, r, 0, 2 * G_PI);
  cairo_fill (cr);
}

void
chart_draw_triangle (cairo_t *cr, double x, double y, double r, gboolean up)
{
  double s = up ? 1 : -1;
  cairo_move_to (cr, x, y - s * r);
  cairo_line_to (cr, x + r, y + s * r * 0.8);
  cairo_line_to (cr, x - r, y + s * r * 0.8);
  cairo_close_path (cr);
  cairo_fill (cr);
}

void
chart_draw_hatch (cairo_t *cr, double x, double y, double w, double h)
{
  cairo_save (cr);
  cairo_rectangle (cr, x, y, w, h);
  cairo_clip (cr);
  cairo_set_line_width (cr, 1);
  for (double k = x - h; k < x + w; k += 4)
    {
      cairo_move_to (cr, k, y + h);
      cairo_line_to (cr, k + h, y);
    }
  cairo_stroke (cr);
  cairo_restore (cr);
}

void
chart_add_legend (PlChart *self, PlChartColor color, LegendStyle style, const char *text)
{
  for (guint i = 0; i < self->legend->len; i++)
    if (g_strcmp0 (g_array_index (self->legend, Legend, i).text, text) == 0)
      return;
  Legend l = { color, style, g_strdup (text) };
  g_array_append_val (self->legend, l);
}

void
chart_fill_box (cairo_t *cr, PlChartColor color, double alpha, gboolean hatched, double x, double y, double w,
                double h)
{
  chart_set_source_color (cr, color, alpha);
  cairo_rectangle (cr, x, y, w, h);
  cairo_fill (cr);
  if (hatched)
    {
      chart_set_source_color (cr, color, 1);
      chart_draw_hatch (cr, x, y, w, h);
    }
}

/* A legend entry's swatch, 14 px wide from x, centred on y. */
static void
draw_swatch (cairo_t *cr, const Legend *l, double x, double y)
{
  switch (l->style)
    {
    case LEGEND_LINE:
      chart_set_source_color (cr, l->color, 1);
      cairo_set_line_width (cr, 2);
      cairo_move_to (cr, x, y);
      cairo_line_to (cr, x + 14, y);
      cairo_stroke (cr);
      break;
    case LEGEND_UP:
    case LEGEND_DOWN:
      chart_set_source_color (cr, l->color, 1);
      chart_draw_triangle (cr, x + 7, y, 5, l->style == LEGEND_UP);
      break;
    case LEGEND_HATCH:
      chart_fill_box (cr, l->color, 0.35, TRUE, x + 1, y - 5, 12, 10);
      break;
    case LEGEND_BOX:
    default:
      chart_fill_box (cr, l->color, 1, FALSE, x + 1, y - 5, 12, 10);
      break;
    }
}

void
chart_draw_legend (PlChart *self, cairo_t *cr, PangoLayout *layout, double x, double w, GArray *placed)
{
  double y = PAD + LEGEND_H / 2, x0 = x;
  for (guint i = 0; i < self->legend->len; i++)
    {
      const Legend *l = &g_array_index (self->legend, Legend, i);
      int tw, th;
      chart_text_size (layout, l->text, &tw, &th);
      if (x + 18 + tw > w - PAD && x > x0)
        break;   /* no room left: the rest would be cut */
      draw_swatch (cr, l, x, y);
      chart_set_source_fg (GTK_WIDGET (self), cr, 0.85);
      chart_draw_text (cr, layout, l->text, x + 18, y, 0, 0.0);
      x += 18 + tw + 14;
    }
  Box b = { x0, PAD, x - x0, LEGEND_H };
  g_array_append_val (placed, b);
}
