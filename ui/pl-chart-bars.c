/* pl-chart-bars.c — the bar chart: a label column, then one bar per value,
 * longest first (the caller's indices are kept in `order`, so clicks and
 * selection speak of the caller's i), with the value at each bar's end. */
#define G_LOG_DOMAIN "passlab"

#include "pl-chart-private.h"

#include <math.h>

void
chart_draw_bars (PlChart *self, cairo_t *cr, PangoLayout *layout, double w)
{
  double max = 0;
  for (int i = 0; i < self->n; i++)
    max = MAX (max, self->ys[i]);
  double lw = MIN (160.0, w * 0.35);   /* the label column */
  double x0 = PAD + lw + 6, bar_w = MAX (w - x0 - PAD - 70, 10);
  for (int k = 0; k < self->n; k++)
    {
      int i = self->order[k];
      double y = PAD + k * (BAR_H + BAR_GAP);
      double len = max > 0 ? bar_w * self->ys[i] / max : 0;
      if (i == self->selected)
        chart_set_source_color (cr, PL_CHART_COLOR_ORANGE, 1);
      else
        chart_set_source_color (cr, PL_CHART_COLOR_ACCENT, 0.85);
      cairo_rectangle (cr, x0, y, MAX (len, 1), BAR_H);
      cairo_fill (cr);
      chart_set_source_fg (GTK_WIDGET (self), cr, 1);
      chart_draw_text (cr, layout, self->labels[i], PAD + lw, y + BAR_H / 2, lw, 1.0);
      g_autofree char *v = chart_format_value (self, self->ys[i]);
      chart_draw_text (cr, layout, v, x0 + len + 4, y + BAR_H / 2, 0, 0.0);
    }
}

int
chart_bar_at (PlChart *self, double y)
{
  int k = (int) floor ((y - PAD) / (BAR_H + BAR_GAP));
  if (self->kind != CHART_BARS || y < PAD || k < 0 || k >= self->n)
    return -1;
  return self->order[k];
}

static int
compare_desc (gconstpointer a, gconstpointer b, gpointer data)
{
  const double *v = data;
  int i = *(const int *) a, j = *(const int *) b;
  /* ties keep the caller's order: the sort is not stable */
  return v[i] < v[j] ? 1 : v[i] > v[j] ? -1 : i - j;
}

void
pl_chart_set_bars (PlChart *self, const char *const *labels, const double *values, int n, const char *unit)
{
  g_return_if_fail (PL_IS_CHART (self));
  chart_reset (self);
  self->kind = CHART_BARS;
  self->n = MAX (n, 0);
  self->labels = g_new0 (char *, self->n + 1);
  self->ys = g_new (double, MAX (self->n, 1));
  self->order = g_new (int, MAX (self->n, 1));
  for (int i = 0; i < self->n; i++)
    {
      self->labels[i] = g_strdup (labels[i] ? labels[i] : "");
      self->ys[i] = values[i];
      self->order[i] = i;
    }
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS /* g_sort_array is newer than Debian 12's GLib */
  g_qsort_with_data (self->order, self->n, sizeof (int), compare_desc, self->ys);
  G_GNUC_END_IGNORE_DEPRECATIONS
  self->unit = g_strdup (unit);
  gtk_widget_queue_resize (GTK_WIDGET (self));
}

void
pl_chart_select_bar (PlChart *self, int i)
{
  g_return_if_fail (PL_IS_CHART (self));
  self->selected = self->kind == CHART_BARS && i >= 0 && i < self->n ? i : -1;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

int
pl_chart_get_selected_bar (PlChart *self)
{
  g_return_val_if_fail (PL_IS_CHART (self), -1);
  return self->selected;
}
