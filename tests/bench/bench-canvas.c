/* bench-canvas.c — how the graph canvas scales: for generated graphs of
 * 100, 1,000 and 10,000 op nodes (pl_random_chain_graph: layer norms, MLPs,
 * attention-like blocks, constants as their own boxes) it measures
 *   - the layout (sketch + Graphviz dot, in bands) in the worker thread,
 *   - time to first paint: from the layout request to the first frame that
 *     shows the laid-out graph (the frame clock's "after-paint"),
 *   - panning: 60 pan steps through the API, one frame each, at the
 *     fit-to-window zoom (everything visible, far level of detail) and at
 *     zoom 1 (readable text): the interval between frames, the frame's own
 *     work (from the frame clock's frame time to "after-paint": snapshot +
 *     render) and the canvas's drawing (pl_graph_canvas_get_draw_time).
 * Needs a display: run it under `xvfb-run -a`. Arguments: node counts
 * (default 100 1000 10000); --full lays out without simplification. */
#define G_LOG_DOMAIN "passlab"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "pl-graph-canvas.h"
#include "random-graph.h"

typedef struct {
  PlGraphCanvas *canvas;
  int            finished;
  int            frames;
  gint64         last_after_paint;
  GArray        *intervals;  /* µs between frames */
  GArray        *paints;     /* µs from "layout" to "after-paint" */
  GArray        *draws;      /* µs the canvas spent drawing */
} Bench;

static void
on_finished (PlGraphCanvas *canvas, const char *error, Bench *b)
{
  if (error != NULL)
    g_printerr ("layout failed: %s\n", error);
  b->finished++;
}

static void
on_after_paint (GdkFrameClock *clock, Bench *b)
{
  gint64 now = g_get_monotonic_time ();
  if (b->intervals != NULL && b->last_after_paint > 0)
    {
      gint64 interval = now - b->last_after_paint;
      gint64 paint = now - gdk_frame_clock_get_frame_time (clock);
      gint64 draw = pl_graph_canvas_get_draw_time (b->canvas);
      g_array_append_val (b->intervals, interval);
      g_array_append_val (b->paints, paint);
      g_array_append_val (b->draws, draw);
    }
  b->last_after_paint = now;
  b->frames++;
}

static void
spin_until_frame (Bench *b)
{
  int target = b->frames + 1;
  while (b->frames < target)
    g_main_context_iteration (NULL, TRUE);
}

static int
cmp_i64 (const void *a, const void *b)
{
  gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;
  return x < y ? -1 : x > y;
}

static void
stats (GArray *a, double *mean, double *p95)
{
  *mean = *p95 = 0;
  if (a->len == 0)
    return;
  g_array_sort (a, cmp_i64);
  for (guint i = 0; i < a->len; i++)
    *mean += g_array_index (a, gint64, i);
  *mean /= a->len * 1000.0;
  *p95 = g_array_index (a, gint64, (guint) floor ((a->len - 1) * 0.95)) / 1000.0;
}

static double
cpu_seconds (void)
{
  struct rusage u;
  getrusage (RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

/* 60 pan steps of dy pixels, one frame each. */
static void
pan_run (Bench *b, double dy, double *frame_mean, double *frame_p95, double *paint_mean,
         double *draw_mean)
{
  b->intervals = g_array_new (FALSE, FALSE, sizeof (gint64));
  b->paints = g_array_new (FALSE, FALSE, sizeof (gint64));
  b->draws = g_array_new (FALSE, FALSE, sizeof (gint64));
  b->last_after_paint = 0;
  for (int i = 0; i < 61; i++)
    {
      pl_graph_canvas_pan_by (b->canvas, 0, dy);
      spin_until_frame (b);
    }
  double p;
  stats (b->intervals, frame_mean, frame_p95);
  stats (b->paints, paint_mean, &p);
  stats (b->draws, draw_mean, &p);
  g_clear_pointer (&b->intervals, g_array_unref);
  g_clear_pointer (&b->paints, g_array_unref);
  g_clear_pointer (&b->draws, g_array_unref);
}

static void
run_one (int n_nodes, bool full)
{
  g_autoptr (PlGraph) g = pl_random_chain_graph (n_nodes, 1);
  GtkWidget *window = gtk_window_new ();
  gtk_window_set_default_size (GTK_WINDOW (window), 1280, 800);
  Bench b = { .canvas = PL_GRAPH_CANVAS (pl_graph_canvas_new ()) };
  gtk_window_set_child (GTK_WINDOW (window), GTK_WIDGET (b.canvas));
  g_signal_connect (b.canvas, "layout-finished", G_CALLBACK (on_finished), &b);
  gtk_window_present (GTK_WINDOW (window));
  while (gtk_widget_get_frame_clock (GTK_WIDGET (b.canvas)) == NULL
         || gtk_widget_get_width (GTK_WIDGET (b.canvas)) == 0)
    g_main_context_iteration (NULL, TRUE);
  GdkFrameClock *clock = gtk_widget_get_frame_clock (GTK_WIDGET (b.canvas));
  gulong h = g_signal_connect (clock, "after-paint", G_CALLBACK (on_after_paint), &b);

  /* The floor: the same window and canvas with nothing to draw. */
  double base_mean, base_p95, base_paint, base_draw;
  pan_run (&b, 3, &base_mean, &base_p95, &base_paint, &base_draw);

  PlLayoutOptions o;
  pl_layout_options_init (&o);
  if (full)
    o.simplify_above = G_MAXINT;
  const PlGraph *gs[] = { g };
  double cpu0 = cpu_seconds ();
  gint64 t0 = g_get_monotonic_time ();
  pl_graph_canvas_layout_async (b.canvas, gs, 1, &o);
  gint64 t_sketch = g_get_monotonic_time () - t0;
  while (b.finished == 0)
    g_main_context_iteration (NULL, TRUE);
  gint64 t_layout = g_get_monotonic_time () - t0;
  double cpu_layout = cpu_seconds () - cpu0;
  spin_until_frame (&b);
  gint64 t_first = g_get_monotonic_time () - t0;
  gint64 first_draw = pl_graph_canvas_get_draw_time (b.canvas);

  PlGraphLayout *l = pl_graph_canvas_get_layout (b.canvas);
  if (l == NULL)
    {
      g_printerr ("no layout for %d nodes\n", n_nodes);
      exit (1);
    }
  double fit_mean, fit_p95, fit_paint, fit_draw, z1_mean, z1_p95, z1_paint, z1_draw;
  pl_graph_canvas_zoom_fit (b.canvas);
  spin_until_frame (&b);
  double fit_zoom;
  pl_graph_canvas_get_view (b.canvas, NULL, NULL, &fit_zoom);
  pan_run (&b, 3, &fit_mean, &fit_p95, &fit_paint, &fit_draw);

  /* Zoom 1 around the middle of the graph. */
  pl_graph_canvas_center_on (b.canvas, l->nodes[l->n_nodes / 2].key);
  double z;
  pl_graph_canvas_get_view (b.canvas, NULL, NULL, &z);
  pl_graph_canvas_zoom_by (b.canvas, 1.0 / z);
  spin_until_frame (&b);
  pan_run (&b, 12, &z1_mean, &z1_p95, &z1_paint, &z1_draw);

  printf ("%6.1f %6.1f | %6u %6d %6d %5d %4s %6.0fx%-7.0f %7.1f %7.2f %7.2f %7.2f %7.2f %6.1f | %6.4f %6.1f %6.1f %6.1f %6.1f | %5.1f %5.1f %5.1f %5.1f\n",
          base_mean, base_paint, g->nodes->len, l->n_nodes, l->n_edges, l->n_bands, l->simplified ? "yes" : "no",
          l->width, l->height, t_sketch / 1e3, l->seconds, t_layout / 1e6, cpu_layout, t_first / 1e6,
          first_draw / 1e3, fit_zoom, fit_mean, fit_p95, fit_paint, fit_draw, z1_mean, z1_p95,
          z1_paint, z1_draw);
  fflush (stdout);
  g_signal_handler_disconnect (clock, h);
  gtk_window_destroy (GTK_WINDOW (window));
  while (g_main_context_iteration (NULL, FALSE))
    ;
}

int
main (int argc, char **argv)
{
  g_setenv ("GTK_A11Y", "none", TRUE);
  if (!gtk_init_check ())
    {
      g_printerr ("bench-canvas needs a display: run it under xvfb-run -a\n");
      return 77;
    }
  pl_ops_init ();
  bool full = false;
  GArray *sizes = g_array_new (FALSE, FALSE, sizeof (int));
  for (int i = 1; i < argc; i++)
    {
      if (strcmp (argv[i], "--full") == 0)
        full = true;
      else
        {
          int n = atoi (argv[i]);
          if (n > 0)
            g_array_append_val (sizes, n);
        }
    }
  if (sizes->len == 0)
    {
      int defaults[] = { 100, 1000, 10000 };
      g_array_append_vals (sizes, defaults, 3);
    }
  printf ("GTK %u.%u.%u, renderer %s; window 1280x800; times in ms unless marked s\n",
          gtk_get_major_version (), gtk_get_minor_version (), gtk_get_micro_version (),
          g_getenv ("GSK_RENDERER") != NULL ? g_getenv ("GSK_RENDERER") : "default");
  printf ("%6s %6s | %6s %6s %6s %5s %4s %15s %7s %7s %7s %7s %7s %6s | %6s %6s %6s %6s %6s | %5s %5s %5s %5s\n",
          "frame", "paint", "ops", "boxes", "edges", "bands", "simp", "layout size", "sketch", "dot s", "wall s", "cpu s",
          "1st s", "draw1", "fitzm", "frame", "p95", "paint", "draw", "frame", "p95", "paint", "draw");
  printf ("empty canvas  | %96s | pan at fit-to-window zoom             | pan at zoom 1\n", "");
  for (guint i = 0; i < sizes->len; i++)
    run_one (g_array_index (sizes, int, i), full);
  g_array_unref (sizes);
  return 0;
}
