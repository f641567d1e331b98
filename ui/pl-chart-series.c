/* pl-chart-series.c — several step lines over one x axis (memory before and
 * after a pass, best time against trials): each line holds ys[i] from xs[i]
 * to the next x, is optionally filled under, and has its peak (or lowest
 * point) marked and labelled; dashed y lines mark budgets and triangles
 * under the x axis mark events. The y axis is linear, or logarithmic over
 * whole decades. Labels are placed last, around what is already there. */
#define G_LOG_DOMAIN "passlab"

#include "pl-chart-private.h"

#include <math.h>

static void
series_plot (PlChart *self, double w, double h, Plot *p)
{
  *p = (Plot) { PAD + 70, w - PAD - 10, PAD + LEGEND_H + 6, h - PAD - MARK_BAND - 30, 0, 1, 0 };
  gboolean any = FALSE;
  for (guint k = 0; k < self->series->len; k++)
    {
      const Series *s = &g_array_index (self->series, Series, k);
      if (s->n == 0)
        continue;
      p->x0 = any ? MIN (p->x0, s->xs[0]) : s->xs[0];
      p->x1 = any ? MAX (p->x1, s->x_end) : s->x_end;
      any = TRUE;
      for (int i = 0; i < s->n; i++)
        p->ymax = MAX (p->ymax, s->ys[i]);
    }
  for (guint k = 0; k < self->ylines->len; k++)
    p->ymax = MAX (p->ymax, g_array_index (self->ylines, YLine, k).y);
  p->ymax = p->ymax > 0 ? p->ymax * 1.15 : 1;
  if (p->x1 <= p->x0)
    p->x1 = p->x0 + 1;
  if (self->log_y)
    {
      /* Whole decades around the positive values. */
      double lo = G_MAXDOUBLE;
      for (guint k = 0; k < self->series->len; k++)
        {
          const Series *s = &g_array_index (self->series, Series, k);
          for (int i = 0; i < s->n; i++)
            if (s->ys[i] > 0)
              lo = MIN (lo, s->ys[i]);
        }
      p->log = TRUE;
      p->ymin = lo < G_MAXDOUBLE ? pow (10, floor (log10 (lo))) : 1;
      p->ymax = MAX (pow (10, ceil (log10 (p->ymax / 1.15))), p->ymin * 10);
    }
}

static double
series_next_x (const Series *s, int i)
{
  return i + 1 < s->n ? s->xs[i + 1] : s->x_end;
}

/* Where point i is marked: the middle of its step. */
static double
point_px (const Plot *p, const Series *s, int i)
{
  return (chart_plot_px (p, s->xs[i]) + chart_plot_px (p, series_next_x (s, i))) / 2;
}

/* The index of the largest y (or the smallest, when lowest), the first of
 * equals; -1 when empty. */
static int
series_extreme (const Series *s, gboolean lowest)
{
  int best = s->n > 0 ? 0 : -1;
  for (int i = 1; i < s->n; i++)
    if (lowest ? s->ys[i] < s->ys[best] : s->ys[i] > s->ys[best])
      best = i;
  return best;
}

/* The step of s holding at x, or -1 outside it. */
static int
series_index_at (const Series *s, double x)
{
  if (s->n == 0 || x < s->xs[0] || x > s->x_end)
    return -1;
  int lo = 0, hi = s->n - 1;   /* the last i with xs[i] <= x */
  while (lo < hi)
    {
      int mid = (lo + hi + 1) / 2;
      if (s->xs[mid] <= x)
        lo = mid;
      else
        hi = mid - 1;
    }
  return lo;
}

/* The selected series when a point of it is selected, else NULL. */
static const Series *
selected_series (PlChart *self)
{
  if (self->sel_series < 0 || self->sel_series >= (int) self->series->len)
    return NULL;
  const Series *s = &g_array_index (self->series, Series, self->sel_series);
  return self->sel_point >= 0 && self->sel_point < s->n ? s : NULL;
}

static void
draw_one_series (cairo_t *cr, const Plot *p, const Series *s)
{
  if (s->n == 0)
    return;
  cairo_move_to (cr, chart_plot_px (p, s->xs[0]), chart_plot_py (p, 0));
  for (int i = 0; i < s->n; i++)
    {
      cairo_line_to (cr, chart_plot_px (p, s->xs[i]), chart_plot_py (p, s->ys[i]));
      cairo_line_to (cr, chart_plot_px (p, series_next_x (s, i)), chart_plot_py (p, s->ys[i]));
    }
  cairo_line_to (cr, chart_plot_px (p, s->x_end), chart_plot_py (p, 0));
  if (s->fill)
    {
      chart_set_source_color (cr, s->color, 0.18);
      cairo_fill_preserve (cr);
    }
  cairo_new_path (cr);
  for (int i = 0; i < s->n; i++)
    {
      if (i == 0)
        cairo_move_to (cr, chart_plot_px (p, s->xs[0]), chart_plot_py (p, s->ys[0]));
      else
        cairo_line_to (cr, chart_plot_px (p, s->xs[i]), chart_plot_py (p, s->ys[i]));
      cairo_line_to (cr, chart_plot_px (p, series_next_x (s, i)), chart_plot_py (p, s->ys[i]));
    }
  chart_set_source_color (cr, s->color, 1);
  cairo_set_line_width (cr, 1.5);
  cairo_stroke (cr);
}

void
chart_draw_series (PlChart *self, cairo_t *cr, PangoLayout *layout, double w, double h)
{
  Plot p;
  series_plot (self, w, h, &p);
  if (p.right - p.left < 20 || p.bottom - p.top < 20)
    return;
  g_autoptr (GArray) placed = g_array_new (FALSE, FALSE, sizeof (Box));
  chart_draw_legend (self, cr, layout, p.left, w, placed);
  chart_draw_y_axis (self, cr, layout, &p);
  chart_draw_x_ticks (self, cr, layout, &p, p.bottom + MARK_BAND + 8, NULL);
  chart_set_source_fg (GTK_WIDGET (self), cr, 0.7);
  chart_draw_text (cr, layout, self->x_title ? self->x_title : "", (p.left + p.right) / 2,
                   p.bottom + MARK_BAND + 23, 0, 0.5);

  /* the selected step, under the lines */
  const Series *sel = selected_series (self);
  if (sel != NULL)
    {
      double x0 = chart_plot_px (&p, sel->xs[self->sel_point]);
      double x1 = chart_plot_px (&p, series_next_x (sel, self->sel_point));
      chart_set_source_fg (GTK_WIDGET (self), cr, 0.12);
      cairo_rectangle (cr, x0, p.top, MAX (x1 - x0, 2), p.bottom - p.top);
      cairo_fill (cr);
    }
  for (guint k = 0; k < self->series->len; k++)
    draw_one_series (cr, &p, &g_array_index (self->series, Series, k));

  for (guint k = 0; k < self->xmarks->len; k++)
    {
      const XMark *m = &g_array_index (self->xmarks, XMark, k);
      chart_set_source_color (cr, m->color, 0.9);
      chart_draw_triangle (cr, chart_plot_px (&p, m->x), p.bottom + MARK_BAND / 2 + 1, 4, m->up);
    }

  for (guint k = 0; k < self->ylines->len; k++)
    {
      const YLine *l = &g_array_index (self->ylines, YLine, k);
      double ly = chart_draw_limit_line (cr, &p, l->y, 1.2);
      chart_draw_label_near (cr, layout, placed, &p, l->label ? l->label : "limit", p.right, ly);
    }

  /* peaks (or lowest points) last, so that their labels stay on top */
  for (guint k = 0; k < self->series->len; k++)
    {
      const Series *s = &g_array_index (self->series, Series, k);
      int i = series_extreme (s, self->mark_lowest);
      if (i < 0)
        continue;
      /* a best-so-far line's best sits where it was found (the trial the
       * x axis marks too), a peak in the middle of its step */
      double px = self->mark_lowest ? chart_plot_px (&p, s->xs[i]) : point_px (&p, s, i);
      double py = chart_plot_py (&p, s->ys[i]);
      chart_set_source_color (cr, s->color, 1);
      chart_draw_dot (cr, px, py, 4);
      g_autofree char *v = chart_format_y_label (self, s->ys[i]);
      g_autofree char *text = g_strdup_printf ("%s %s", self->mark_lowest ? "best" : "peak", v);
      chart_draw_label_near (cr, layout, placed, &p, text, px, py);
    }

  if (sel != NULL)
    {
      int i = self->sel_point;
      double px = point_px (&p, sel, i), py = chart_plot_py (&p, sel->ys[i]);
      chart_set_source_fg (GTK_WIDGET (self), cr, 0.9);
      cairo_set_line_width (cr, 2);
      cairo_new_sub_path (cr);   /* not joined to the last label's text */
      cairo_arc (cr, px, py, 5, 0, 2 * G_PI);
      cairo_stroke (cr);
    }
}

const XMark *
chart_xmark_at (PlChart *self, double x, double y)
{
  Plot p;
  series_plot (self, gtk_widget_get_width (GTK_WIDGET (self)), gtk_widget_get_height (GTK_WIDGET (self)), &p);
  if (y < p.bottom || y > p.bottom + MARK_BAND + 2)
    return NULL;
  const XMark *best = NULL;
  double best_d = 5;
  for (guint k = 0; k < self->xmarks->len; k++)
    {
      const XMark *m = &g_array_index (self->xmarks, XMark, k);
      double d = fabs (chart_plot_px (&p, m->x) - x);
      if (d <= best_d)
        best = m, best_d = d;
    }
  return best;
}

/* --- API ------------------------------------------------------------------------------------ */

void
pl_chart_set_lines (PlChart *self, const char *x_title, gboolean bytes, const char *y_unit)
{
  g_return_if_fail (PL_IS_CHART (self));
  chart_reset (self);
  self->kind = CHART_SERIES;
  self->x_title = g_strdup (x_title);
  self->bytes = bytes;
  self->unit = g_strdup (y_unit);
  gtk_widget_queue_resize (GTK_WIDGET (self));
}

void
pl_chart_set_log_y (PlChart *self, gboolean log_y, gboolean mark_lowest)
{
  g_return_if_fail (PL_IS_CHART (self) && self->kind == CHART_SERIES);
  self->log_y = log_y;
  self->mark_lowest = mark_lowest;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

int
pl_chart_add_series (PlChart *self, const char *name, const double *xs, const double *ys, int n, double x_end,
                     PlChartColor color, gboolean fill, const char *const *point_labels)
{
  g_return_val_if_fail (PL_IS_CHART (self) && self->kind == CHART_SERIES, -1);
  g_return_val_if_fail (n >= 0 && (n == 0 || (xs && ys)), -1);
  Series s = { g_strdup (name), g_memdup2 (xs, sizeof (double) * n), g_memdup2 (ys, sizeof (double) * n), n,
               n > 0 ? MAX (x_end, xs[n - 1]) : x_end, color, fill, NULL };
  if (point_labels)
    {
      s.labels = g_new0 (char *, n + 1);
      for (int i = 0; i < n; i++)
        s.labels[i] = g_strdup (point_labels[i] ? point_labels[i] : "");
    }
  g_array_append_val (self->series, s);
  chart_add_legend (self, color, LEGEND_LINE, name ? name : "");
  self->n += n;
  gtk_widget_queue_draw (GTK_WIDGET (self));
  return (int) self->series->len - 1;
}

void
pl_chart_add_y_line (PlChart *self, double y, const char *label)
{
  g_return_if_fail (PL_IS_CHART (self) && self->kind == CHART_SERIES);
  YLine l = { y, g_strdup (label) };
  g_array_append_val (self->ylines, l);
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

void
pl_chart_add_x_mark (PlChart *self, double x, PlChartColor color, gboolean up, const char *legend,
                     const char *label)
{
  g_return_if_fail (PL_IS_CHART (self) && self->kind == CHART_SERIES);
  XMark m = { x, color, up, g_strdup (label) };
  g_array_append_val (self->xmarks, m);
  if (legend)
    chart_add_legend (self, color, up ? LEGEND_UP : LEGEND_DOWN, legend);
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

int
pl_chart_get_n_series (PlChart *self)
{
  g_return_val_if_fail (PL_IS_CHART (self), 0);
  return self->kind == CHART_SERIES ? (int) self->series->len : 0;
}

/* Series number series, or NULL when there is none. */
static const Series *
series_get (PlChart *self, int series)
{
  if (series < 0 || series >= pl_chart_get_n_series (self))
    return NULL;
  return &g_array_index (self->series, Series, series);
}

int
pl_chart_get_series_n_points (PlChart *self, int series)
{
  g_return_val_if_fail (PL_IS_CHART (self), 0);
  const Series *s = series_get (self, series);
  return s != NULL ? s->n : 0;
}

double
pl_chart_get_series_peak (PlChart *self, int series, int *index)
{
  g_return_val_if_fail (PL_IS_CHART (self), 0);
  const Series *s = series_get (self, series);
  int i = s != NULL ? series_extreme (s, FALSE) : -1;
  if (index)
    *index = i;
  return i >= 0 ? s->ys[i] : 0;
}

gboolean
pl_chart_get_point_position (PlChart *self, int series, int i, double *x, double *y)
{
  g_return_val_if_fail (PL_IS_CHART (self), FALSE);
  double w = gtk_widget_get_width (GTK_WIDGET (self)), h = gtk_widget_get_height (GTK_WIDGET (self));
  const Series *s = series_get (self, series);
  if (s == NULL || w <= 0 || h <= 0 || i < 0 || i >= s->n)
    return FALSE;
  Plot p;
  series_plot (self, w, h, &p);
  *x = point_px (&p, s, i);
  *y = chart_plot_py (&p, s->ys[i]);
  return TRUE;
}

gboolean
pl_chart_pick_point (PlChart *self, double x, double y, int *series, int *i)
{
  g_return_val_if_fail (PL_IS_CHART (self), FALSE);
  double w = gtk_widget_get_width (GTK_WIDGET (self)), h = gtk_widget_get_height (GTK_WIDGET (self));
  if (self->kind != CHART_SERIES || w <= 0 || h <= 0)
    return FALSE;
  Plot p;
  series_plot (self, w, h, &p);
  if (x < p.left || x > p.right || y < p.top - 6 || y > p.bottom)
    return FALSE;
  double at = p.x0 + (x - p.left) / (p.right - p.left) * (p.x1 - p.x0), best = G_MAXDOUBLE;
  *series = *i = -1;
  for (guint k = 0; k < self->series->len; k++)
    {
      const Series *s = &g_array_index (self->series, Series, k);
      int j = series_index_at (s, at);
      double d = j >= 0 ? fabs (chart_plot_py (&p, s->ys[j]) - y) : G_MAXDOUBLE;
      if (d < best)
        best = d, *series = (int) k, *i = j;
    }
  return *series >= 0;
}

void
pl_chart_select_point (PlChart *self, int series, int i)
{
  g_return_if_fail (PL_IS_CHART (self));
  const Series *s = series_get (self, series);
  gboolean ok = s != NULL && i >= 0 && i < s->n;
  self->sel_series = ok ? series : -1;
  self->sel_point = ok ? i : -1;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}
