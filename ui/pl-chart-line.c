/* pl-chart-line.c — one line over time (memory in use during a run): the
 * curve drawn as steps (a sample holds until the next) and filled under, its
 * peak marked and labelled, a device limit dashed across. Only the top of
 * the y axis and the end of the x axis are labelled: the peak label is the
 * number that matters. */
#define G_LOG_DOMAIN "passlab"

#include "pl-chart-private.h"

void
chart_draw_line (PlChart *self, cairo_t *cr, PangoLayout *layout, double w, double h)
{
  int peak = 0;
  for (int i = 0; i < self->n; i++)
    if (self->ys[i] > self->ys[peak])
      peak = i;
  Plot p = { PAD + 64, w - PAD, PAD + 4, h - PAD - 16, self->xs[0], self->xs[self->n - 1],
             MAX (self->ys[peak], self->limit) * 1.1 };
  if (p.ymax <= 0)
    p.ymax = 1;
  if (p.x1 <= p.x0)
    p.x1 = p.x0 + 1;
  if (p.right - p.left < 10 || p.bottom - p.top < 10)
    return;
  chart_set_source_fg (GTK_WIDGET (self), cr, 0.3);
  cairo_set_line_width (cr, 1);
  cairo_move_to (cr, p.left, p.top);
  cairo_line_to (cr, p.left, p.bottom);
  cairo_line_to (cr, p.right, p.bottom);
  cairo_stroke (cr);
  chart_set_source_fg (GTK_WIDGET (self), cr, 0.8);
  g_autofree char *ytop = chart_format_value (self, p.ymax);
  chart_draw_text (cr, layout, ytop, p.left - 4, p.top, 0, 1.0);
  chart_draw_text (cr, layout, "0", p.left - 4, p.bottom, 0, 1.0);
  g_autofree char *xend = g_strdup_printf ("%.3g %s", p.x1, self->unit ? self->unit : "");
  chart_draw_text (cr, layout, xend, p.right, p.bottom + 9, 0, 1.0);

  /* The memory in use holds until the next sample: draw steps. */
  cairo_move_to (cr, chart_plot_px (&p, self->xs[0]), p.bottom);
  for (int i = 0; i < self->n; i++)
    {
      if (i > 0)
        cairo_line_to (cr, chart_plot_px (&p, self->xs[i]), chart_plot_py (&p, self->ys[i - 1]));
      cairo_line_to (cr, chart_plot_px (&p, self->xs[i]), chart_plot_py (&p, self->ys[i]));
    }
  cairo_line_to (cr, chart_plot_px (&p, self->xs[self->n - 1]), p.bottom);
  cairo_close_path (cr);
  chart_set_source_color (cr, PL_CHART_COLOR_ACCENT, 0.25);
  cairo_fill_preserve (cr);
  chart_set_source_color (cr, PL_CHART_COLOR_ACCENT, 1);
  cairo_set_line_width (cr, 1.5);
  cairo_stroke (cr);

  double px = chart_plot_px (&p, self->xs[peak]), py = chart_plot_py (&p, self->ys[peak]);
  chart_set_source_color (cr, PL_CHART_COLOR_ORANGE, 1);
  chart_draw_dot (cr, px, py, 4);
  g_autofree char *pv = chart_format_value (self, self->ys[peak]);
  g_autofree char *pl = g_strdup_printf ("peak %s", pv);
  /* beside the marker, below it when it is at the top (the axis label is there) */
  chart_draw_text (cr, layout, pl, MIN (px + 8, p.right - 90), py - 10 < p.top + 16 ? py + 10 : py - 10, 0, 0.0);

  if (self->limit > 0)
    {
      double ly = chart_draw_limit_line (cr, &p, self->limit, 1.5);
      chart_draw_text (cr, layout, self->limit_label ? self->limit_label : "limit", p.right, ly - 9, 0, 1.0);
    }
}

void
pl_chart_set_line (PlChart *self, const double *xs, const double *ys, int n, const char *x_unit, gboolean bytes,
                   double limit, const char *limit_label)
{
  g_return_if_fail (PL_IS_CHART (self));
  chart_reset (self);
  self->kind = CHART_LINE;
  self->n = MAX (n, 0);
  self->xs = g_memdup2 (xs, sizeof (double) * self->n);
  self->ys = g_memdup2 (ys, sizeof (double) * self->n);
  self->unit = g_strdup (x_unit);
  self->bytes = bytes;
  self->limit = limit;
  self->limit_label = g_strdup (limit_label);
  gtk_widget_queue_resize (GTK_WIDGET (self));
}
