/* pl-chart-axes.c — the scales of a chart's plot rectangle and what is drawn
 * along them: values to pixels (linear, or logarithmic in y), round tick
 * steps, numbers formatted as the axes and labels show them, the x ticks,
 * the y grid, and the dashed limit lines. The line, step-line and span
 * charts all draw their axes through these, so they read alike. */
#define G_LOG_DOMAIN "passlab"

#include "pl-chart-private.h"

#include <math.h>

#define MIB 1048576.0

double
chart_plot_px (const Plot *p, double x)
{
  return p->left + (x - p->x0) / (p->x1 - p->x0) * (p->right - p->left);
}

double
chart_plot_py (const Plot *p, double y)
{
  if (p->log)
    return y <= p->ymin ? p->bottom
                        : p->bottom - log (y / p->ymin) / log (p->ymax / p->ymin) * (p->bottom - p->top);
  return p->bottom - y / p->ymax * (p->bottom - p->top);
}

char *
chart_format_value (PlChart *self, double v)
{
  if (self->bytes)
    return g_format_size_full ((guint64) MAX (v, 0), G_FORMAT_SIZE_IEC_UNITS);
  if (v != 0 && fabs (v) < 0.01)
    return g_strdup_printf ("%.4f %s", v, self->unit ? self->unit : "");
  return g_strdup_printf ("%.3g %s", v, self->unit ? self->unit : "");
}

/* A round step of about range / target: 1, 2, 2.5 or 5 times a power of ten. */
static double
nice_step (double range, int target)
{
  if (range <= 0)
    return 1;
  double raw = range / target, mag = pow (10, floor (log10 (raw))), f = raw / mag;
  return (f < 1.5 ? 1 : f < 2.25 ? 2 : f < 3.5 ? 2.5 : f < 7.5 ? 5 : 10) * mag;
}

/* Decimals that show multiples of step exactly (at most 4). */
static int
step_decimals (double step)
{
  int d = 0;
  while (d < 4 && fabs (step * pow (10, d) - round (step * pow (10, d))) > 1e-6)
    d++;
  return d;
}

/* A y value as the axis shows it: bytes in MiB, else the number and unit. */
static char *
format_y (PlChart *self, double v, int decimals)
{
  if (self->bytes)
    return g_strdup_printf ("%.*f MiB", decimals, v / MIB);
  return g_strdup_printf ("%.*f%s%s", decimals, v, self->unit ? " " : "", self->unit ? self->unit : "");
}

char *
chart_format_y_label (PlChart *self, double v)
{
  double a = fabs (self->bytes ? v / MIB : v);
  return format_y (self, v, a < 10 ? 2 : a < 100 ? 1 : 0);
}

/* Ticks on [0 or lo, hi] about 90 px apart: the axis labels. */
void
chart_draw_x_ticks (PlChart *self, cairo_t *cr, PangoLayout *layout, const Plot *p, double y, const char *unit)
{
  double step = nice_step (p->x1 - p->x0, MAX (2, (int) ((p->right - p->left) / 90)));
  int dec = step_decimals (step);
  for (double t = ceil (p->x0 / step) * step; t <= p->x1 + step * 1e-9; t += step)
    {
      double px = chart_plot_px (p, t);
      chart_set_source_fg (GTK_WIDGET (self), cr, 0.3);
      cairo_move_to (cr, px, p->bottom);
      cairo_line_to (cr, px, p->bottom + 3);
      cairo_stroke (cr);
      chart_set_source_fg (GTK_WIDGET (self), cr, 0.8);
      /* -0 would read "-0" */
      g_autofree char *text = g_strdup_printf ("%.*f%s%s", dec, fabs (t) < step * 1e-6 ? 0.0 : t, unit ? " " : "",
                                               unit ? unit : "");
      int tw, th;
      chart_text_size (layout, text, &tw, &th);
      if (px + tw / 2.0 > p->right + PAD)
        break;   /* it would be cut at the edge */
      chart_draw_text (cr, layout, text, px, y, 0, 0.5);
    }
}

/* A grid line across the plot at y, of this alpha, labelled (label NULL: not). */
static void
y_tick (PlChart *self, cairo_t *cr, PangoLayout *layout, const Plot *p, double y, double alpha, const char *label)
{
  double py = chart_plot_py (p, y);
  chart_set_source_fg (GTK_WIDGET (self), cr, alpha);
  cairo_move_to (cr, p->left, py);
  cairo_line_to (cr, p->right, py);
  cairo_stroke (cr);
  if (!label)
    return;
  chart_set_source_fg (GTK_WIDGET (self), cr, 0.8);
  chart_draw_text (cr, layout, label, p->left - 6, py, 0, 1.0);
}

/* Grid lines and labels: every round step from 0, or on a logarithmic axis
 * lines at 1, 2 and 5 times each power of ten, labelled at the powers (and
 * at 2 and 5 when the axis spans at most two decades). */
void
chart_draw_y_axis (PlChart *self, cairo_t *cr, PangoLayout *layout, const Plot *p)
{
  cairo_set_line_width (cr, 1);
  if (p->log)
    {
      gboolean few = p->ymax / p->ymin <= 100.5;
      for (double d = p->ymin; d <= p->ymax * 1.001; d *= 10)
        for (int m = 1; m <= 5 && d * m <= p->ymax * 1.001; m += m == 1 ? 1 : 3)
          {
            double t = d * m;
            g_autofree char *text = m == 1 || few ? format_y (self, t, t < 1 ? (int) ceil (-log10 (t) - 1e-9) : 0)
                                                  : NULL;
            y_tick (self, cr, layout, p, t, t == p->ymin ? 0.3 : m == 1 ? 0.12 : 0.06, text);
          }
    }
  else
    {
      double step = nice_step (self->bytes ? p->ymax / MIB : p->ymax, 4);
      int dec = step_decimals (step);
      if (self->bytes)
        step *= MIB;
      for (double t = 0; t <= p->ymax; t += step)
        {
          g_autofree char *text = format_y (self, t, dec);
          y_tick (self, cr, layout, p, t, t == 0 ? 0.3 : 0.08, text);
        }
    }
  chart_set_source_fg (GTK_WIDGET (self), cr, 0.3);
  cairo_move_to (cr, p->left, p->top);
  cairo_line_to (cr, p->left, p->bottom);
  cairo_stroke (cr);
}

double
chart_draw_limit_line (cairo_t *cr, const Plot *p, double y, double width)
{
  double ly = chart_plot_py (p, y), dash[] = { 5, 4 };
  cairo_set_dash (cr, dash, 2, 0);
  chart_set_source_color (cr, PL_CHART_COLOR_RED, 0.9);
  cairo_set_line_width (cr, width);
  cairo_move_to (cr, p->left, ly);
  cairo_line_to (cr, p->right, ly);
  cairo_stroke (cr);
  cairo_set_dash (cr, NULL, 0, 0);
  return ly;
}
