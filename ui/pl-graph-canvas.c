/* pl-graph-canvas.c — the graph canvas widget: its lifecycle, its size, the
 * snapshot, and export. (The other parts: pl-graph-canvas-private.h.)
 *
 * The canvas holds a PlGraphLayout and a PlGraphScene over it
 * (pl-graph-canvas-scene.c) and draws the scene with pl-graph-draw.c inside
 * the snapshot, culled to the visible rectangle. The view is a zoom and the
 * layout point at the widget's top-left (pl-graph-canvas-input.c).
 *
 * Panning must not redraw a big graph every frame: the scene is drawn into
 * a texture a bit larger than the view, and frames whose view stays inside
 * it only move that texture (GL renderers keep it on the GPU; the cairo
 * renderer paints the cached surface from a cairo node). Any change of content (states,
 * selection, hover, layout) or of zoom draws it again.
 */
#define G_LOG_DOMAIN "passlab"

#include "pl-graph-canvas-private.h"

#include <math.h>

G_DEFINE_FINAL_TYPE (PlGraphCanvas, pl_graph_canvas, GTK_TYPE_WIDGET)

guint canvas_signals[N_SIGNALS];

void
canvas_scene_changed (PlGraphCanvas *self)
{
  self->cache_valid = false;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

void
canvas_set_message (PlGraphCanvas *self, const char *message)
{
  g_free (self->message);
  self->message = g_strdup (message);
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

gint64
pl_graph_canvas_get_draw_time (PlGraphCanvas *self)
{
  g_return_val_if_fail (PL_IS_GRAPH_CANVAS (self), 0);
  return self->draw_us;
}

/* --- drawing ------------------------------------------------------------------------ */

static void
draw_message (PlGraphCanvas *self, GtkSnapshot *snapshot, int w, int h)
{
  const char *text = self->message != NULL ? self->message
                     : self->cancellable != NULL ? "" : "No graph";
  PangoLayout *pl = gtk_widget_create_pango_layout (GTK_WIDGET (self), text);
  pango_layout_set_width (pl, (w - 40) * PANGO_SCALE);
  pango_layout_set_alignment (pl, PANGO_ALIGN_CENTER);
  pango_layout_set_wrap (pl, PANGO_WRAP_WORD_CHAR);
  int tw, th;
  pango_layout_get_pixel_size (pl, &tw, &th);
  gtk_snapshot_save (snapshot);
  gtk_snapshot_translate (snapshot, &GRAPHENE_POINT_INIT (20, (h - th) / 2.0));
  gtk_snapshot_append_layout (snapshot, pl, &(GdkRGBA) { 0.4, 0.4, 0.42, 1 });
  gtk_snapshot_restore (snapshot);
  g_object_unref (pl);
}

static bool
cache_covers (PlGraphCanvas *self, double vw, double vh, int scale)
{
  return self->cache != NULL && self->cache_valid && self->cache_zoom == self->zoom
         && self->cache_scale == scale && self->ox >= self->cache_x && self->oy >= self->cache_y
         && self->ox + vw <= self->cache_x + self->cache_w
         && self->oy + vh <= self->cache_y + self->cache_h;
}

static void
free_surface (gpointer surface)
{
  cairo_surface_destroy (surface);
}

static GdkTexture *
cache_texture (PlGraphCanvas *self)
{
  if (self->cache_texture == NULL)
    {
      /* Cairo's ARGB32 is premultiplied BGRA in memory on little-endian
       * and ARGB on big-endian: GDK_MEMORY_DEFAULT is defined to match. */
      cairo_surface_t *surface = cairo_surface_reference (self->cache);
      int stride = cairo_image_surface_get_stride (surface);
      int height = cairo_image_surface_get_height (surface);
      GBytes *bytes = g_bytes_new_with_free_func (cairo_image_surface_get_data (surface),
                                                  (gsize) stride * height, free_surface, surface);
      self->cache_texture = gdk_memory_texture_new (cairo_image_surface_get_width (surface), height,
                                                    GDK_MEMORY_DEFAULT, bytes, stride);
      g_bytes_unref (bytes);
    }
  return self->cache_texture;
}

/* Draws the scene around the view (a third of a view on every side) into a
 * new texture at device resolution. */
static void
redraw_cache (PlGraphCanvas *self, double vw, double vh, int scale)
{
  double z = self->zoom * scale;
  double lw = vw * 5 / 3, lh = vh * 5 / 3;
  int pw = (int) ceil (lw * z), ph = (int) ceil (lh * z);
  if (pw > 8192 || ph > 8192)
    {
      /* A huge window on a HiDPI screen: just the view. */
      lw = vw;
      lh = vh;
      pw = (int) ceil (lw * z);
      ph = (int) ceil (lh * z);
    }
  self->cache_x = self->ox - (lw - vw) / 2;
  self->cache_y = self->oy - (lh - vh) / 2;
  self->cache_w = pw / z;
  self->cache_h = ph / z;
  cairo_surface_t *surface = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, pw, ph);
  cairo_t *cr = cairo_create (surface);
  cairo_set_source_rgb (cr, PL_GRAPH_BACKGROUND);
  cairo_paint (cr);
  cairo_scale (cr, z, z);
  cairo_translate (cr, -self->cache_x, -self->cache_y);
  pl_graph_scene_draw (self->scene, cr, self->cache_x, self->cache_y, self->cache_x + self->cache_w,
                       self->cache_y + self->cache_h, self->zoom);
  cairo_destroy (cr);
  cairo_surface_flush (surface);
  g_clear_object (&self->cache_texture);
  g_clear_pointer (&self->cache, cairo_surface_destroy);
  self->cache = surface;
  self->cache_zoom = self->zoom;
  self->cache_scale = scale;
  self->cache_valid = true;
}

static void
pl_graph_canvas_snapshot (GtkWidget *widget, GtkSnapshot *snapshot)
{
  PlGraphCanvas *self = PL_GRAPH_CANVAS (widget);
  int w = gtk_widget_get_width (widget), h = gtk_widget_get_height (widget);
  gtk_snapshot_append_color (snapshot, &(GdkRGBA) { PL_GRAPH_BACKGROUND, 1 }, &GRAPHENE_RECT_INIT (0, 0, w, h));
  if (self->scene != NULL && w > 0 && h > 0)
    {
      if (!self->view_set)
        canvas_initial_view (self);
      gint64 t0 = g_get_monotonic_time ();
      double vw = w / self->zoom, vh = h / self->zoom;
      int scale = gtk_widget_get_scale_factor (widget);
      if (!cache_covers (self, vw, vh, scale))
        redraw_cache (self, vw, vh, scale);
      /* Whole device pixels: a plain copy, no resampling blur. */
      graphene_rect_t where = GRAPHENE_RECT_INIT (round ((self->cache_x - self->ox) * self->zoom * scale) / scale,
                                                  round ((self->cache_y - self->oy) * self->zoom * scale) / scale,
                                                  self->cache_w * self->zoom, self->cache_h * self->zoom);
      GskRenderer *renderer = gtk_native_get_renderer (gtk_widget_get_native (widget));
      if (renderer != NULL && GSK_IS_CAIRO_RENDERER (renderer))
        {
          /* The cairo renderer would convert a texture into a new surface
           * every frame: paint the cached surface from a cairo node. */
          cairo_t *cr = gtk_snapshot_append_cairo (snapshot, &GRAPHENE_RECT_INIT (0, 0, w, h));
          cairo_translate (cr, where.origin.x, where.origin.y);
          cairo_scale (cr, 1.0 / scale, 1.0 / scale);
          cairo_set_source_surface (cr, self->cache, 0, 0);
          cairo_paint (cr);
          cairo_destroy (cr);
        }
      else
        gtk_snapshot_append_texture (snapshot, cache_texture (self), &where);
      /* What the layout colours mean, when the version has any (over the
       * drawing, so it stays put while panning). */
      bool transforms;
      if (pl_graph_scene_layouts_shown (self->scene, &transforms) != 0 || transforms)
        {
          cairo_t *cr = gtk_snapshot_append_cairo (snapshot, &GRAPHENE_RECT_INIT (0, 0, w, h));
          pl_graph_scene_draw_legend (self->scene, cr, w - 10, h - 10);
          cairo_destroy (cr);
        }
      self->draw_us = g_get_monotonic_time () - t0;
    }
  else
    draw_message (self, snapshot, w, h);
  gtk_widget_snapshot_child (widget, self->busy_box, snapshot);
}

/* The busy overlay sits centred near the top; the canvas asks for no more
 * than it needs. */
static void
pl_graph_canvas_measure (GtkWidget *widget, GtkOrientation orientation, int for_size,
                         int *minimum, int *natural, int *minimum_baseline, int *natural_baseline)
{
  PlGraphCanvas *self = PL_GRAPH_CANVAS (widget);
  int m = 0, n = 0;
  gtk_widget_measure (self->busy_box, orientation, -1, &m, &n, NULL, NULL);
  *minimum = m;
  *natural = MAX (n, orientation == GTK_ORIENTATION_HORIZONTAL ? 400 : 300);
}

static void
pl_graph_canvas_size_allocate (GtkWidget *widget, int width, int height, int baseline)
{
  PlGraphCanvas *self = PL_GRAPH_CANVAS (widget);
  int mw, nw, mh, nh;
  gtk_widget_measure (self->busy_box, GTK_ORIENTATION_HORIZONTAL, -1, &mw, &nw, NULL, NULL);
  gtk_widget_measure (self->busy_box, GTK_ORIENTATION_VERTICAL, nw, &mh, &nh, NULL, NULL);
  int bw = MIN (nw, width), bh = MIN (nh, height);
  bw = MAX (bw, mw);
  gtk_widget_size_allocate (self->busy_box,
                            &(GtkAllocation) { (width - bw) / 2, MIN (24, (height - bh) / 2), bw, bh }, -1);
  if (!self->view_set && self->layout != NULL && width > 0)
    canvas_initial_view (self);
}

/* --- export ------------------------------------------------------------------------- */

bool
pl_graph_canvas_export (PlGraphCanvas *self, const char *path, bool whole_graph, GError **error)
{
  g_return_val_if_fail (PL_IS_GRAPH_CANVAS (self) && path != NULL, false);
  if (self->scene == NULL)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "cannot export %s: no graph is laid out", path);
      return false;
    }
  if (whole_graph)
    return pl_graph_scene_export (self->scene, path, 0, 0, self->layout->width,
                                  self->layout->height, 1.0, error);
  double w = gtk_widget_get_width (GTK_WIDGET (self)), h = gtk_widget_get_height (GTK_WIDGET (self));
  if (w <= 0 || h <= 0)
    {
      w = 800;
      h = 600;
    }
  int scale = gtk_widget_get_scale_factor (GTK_WIDGET (self));
  return pl_graph_scene_export (self->scene, path, self->ox, self->oy, w / self->zoom,
                                h / self->zoom, self->zoom * scale, error);
}

/* --- object ------------------------------------------------------------------------ */

static void
pl_graph_canvas_dispose (GObject *object)
{
  canvas_jobs_dispose (PL_GRAPH_CANVAS (object));
  G_OBJECT_CLASS (pl_graph_canvas_parent_class)->dispose (object);
}

static void
pl_graph_canvas_finalize (GObject *object)
{
  PlGraphCanvas *self = PL_GRAPH_CANVAS (object);
  g_clear_pointer (&self->scene, pl_graph_scene_free);
  g_clear_pointer (&self->layout, pl_graph_layout_unref);
  g_clear_object (&self->cache_texture);
  g_clear_pointer (&self->cache, cairo_surface_destroy);
  g_clear_pointer (&self->shown, pl_graph_sketch_unref);
  g_clear_pointer (&self->prev, pl_graph_sketch_unref);
  g_clear_pointer (&self->changed_ids, g_hash_table_unref);
  g_clear_pointer (&self->annotations, g_hash_table_unref);
  canvas_jobs_finalize (self);
  g_free (self->selected_key);
  g_free (self->message);
  G_OBJECT_CLASS (pl_graph_canvas_parent_class)->finalize (object);
}

static void
pl_graph_canvas_class_init (PlGraphCanvasClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);
  object_class->dispose = pl_graph_canvas_dispose;
  object_class->finalize = pl_graph_canvas_finalize;
  widget_class->snapshot = pl_graph_canvas_snapshot;
  widget_class->measure = pl_graph_canvas_measure;
  widget_class->size_allocate = pl_graph_canvas_size_allocate;
  widget_class->query_tooltip = canvas_query_tooltip;
  gtk_widget_class_set_css_name (widget_class, "graphcanvas");

  canvas_signals[SIGNAL_SELECTION_CHANGED] =
    g_signal_new ("selection-changed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                  NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
  canvas_signals[SIGNAL_NODE_ACTIVATED] =
    g_signal_new ("node-activated", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                  NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
  canvas_signals[SIGNAL_LAYOUT_FINISHED] =
    g_signal_new ("layout-finished", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                  NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
}

static void
pl_graph_canvas_init (PlGraphCanvas *self)
{
  GtkWidget *widget = GTK_WIDGET (self);
  self->zoom = 1.0;
  self->annotations = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  gtk_widget_set_focusable (widget, TRUE);
  gtk_widget_set_overflow (widget, GTK_OVERFLOW_HIDDEN);
  gtk_widget_set_has_tooltip (widget, TRUE);
  canvas_jobs_init (self);
  canvas_input_init (self);
}

GtkWidget *
pl_graph_canvas_new (void)
{
  return g_object_new (PL_TYPE_GRAPH_CANVAS, NULL);
}
