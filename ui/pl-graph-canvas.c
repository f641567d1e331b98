/* pl-graph-canvas.c — the graph canvas widget.
 *
 * The canvas holds a PlGraphLayout (geometry of one version or of the union
 * of a history) and a PlGraphScene (what the shown version looks like on
 * it: which boxes exist, diff states, texts, selection, hover), and draws
 * the scene with pl-graph-draw.c inside gtk_snapshot_append_cairo, culled to
 * the visible rectangle. The view is a zoom and the layout point at the
 * widget's top-left.
 *
 * Which layout boxes the shown version has is found through sketches
 * (pl-graph-layout.h): the version's sketch, mapped through the layout's
 * collapse set, names the keys it owns; the previous version's sketch names
 * the removed ones, drawn as ghosts at their union-layout place.
 *
 * Panning must not redraw a big graph every frame: the scene is drawn into
 * a texture a bit larger than the view, and frames whose view stays inside
 * it only move that texture (GL renderers keep it on the GPU; the cairo
 * renderer paints the cached surface from a cairo node). Any change of content (states,
 * selection, hover, layout) or of zoom draws it again.
 *
 * Layouts run in a GTask thread. The canvas keeps the union sketch it was
 * given, so it can lay out again by itself when a fusion is collapsed or
 * expanded; a newer request cancels the running one (the thread stops at
 * the next band) and results of superseded requests are dropped.
 */
#define G_LOG_DOMAIN "passlab"

#include "pl-graph-canvas.h"

#include <math.h>
#include <string.h>

#include "pl-graph-draw.h"

#define ZOOM_MAX   4.0
#define FOCUS_ZOOM 0.9  /* centring a search hit zooms in at least this far */
#define FIRST_ZOOM 0.6  /* a new graph too big to fit legibly starts at this zoom */

struct _PlGraphCanvas {
  GtkWidget        parent_instance;

  PlGraphLayout   *layout;
  PlGraphScene    *scene;
  PlGraphSketch   *shown;           /* the version on screen, and its predecessor */
  PlGraphSketch   *prev;
  GHashTable      *changed_ids;     /* node ids the diff says changed */
  bool             has_diff;
  GHashTable      *annotations;     /* key -> text, kept across layouts */
  char            *selected_key;

  /* view */
  double           zoom, ox, oy;
  bool             view_set;
  double           drag_ox, drag_oy, pinch_zoom;
  double           pointer_x, pointer_y;
  bool             pointer_in;
  gint64           draw_us;

  /* the drawn scene around the view: valid for one zoom and content */
  cairo_surface_t *cache;
  GdkTexture      *cache_texture;   /* the same pixels, made on demand for GL renderers */
  bool             cache_valid;
  double           cache_x, cache_y, cache_w, cache_h;  /* layout units */
  double           cache_zoom;
  int              cache_scale;

  /* layouts of our own */
  PlGraphSketch   *source;          /* the union sketch of the last layout_async */
  PlLayoutOptions  options;         /* with owned collapsed / expanded sets */
  GCancellable    *cancellable;
  guint            serial;
  gint            *progress;        /* permille, shared with the running task */
  gint64           busy_since;
  guint            busy_timer;
  GtkWidget       *busy_box, *busy_label;
  char            *message;         /* shown when there is nothing to draw */
};

G_DEFINE_FINAL_TYPE (PlGraphCanvas, pl_graph_canvas, GTK_TYPE_WIDGET)

enum { SIGNAL_SELECTION_CHANGED, SIGNAL_NODE_ACTIVATED, SIGNAL_LAYOUT_FINISHED, N_SIGNALS };
static guint signals[N_SIGNALS];

/* --- view ---------------------------------------------------------------------- */

/* The content changed: the cached drawing is stale. */
static void
scene_changed (PlGraphCanvas *self)
{
  self->cache_valid = false;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

static double
fit_zoom (PlGraphCanvas *self)
{
  double w = gtk_widget_get_width (GTK_WIDGET (self)), h = gtk_widget_get_height (GTK_WIDGET (self));
  if (self->layout == NULL || w <= 0 || h <= 0)
    return 1.0;
  double z = MIN (w / MAX (self->layout->width, 1), h / MAX (self->layout->height, 1));
  return MIN (z, 1.5);
}

static double
min_zoom (PlGraphCanvas *self)
{
  return MIN (fit_zoom (self) * 0.5, 0.1);
}

/* Zooms to z keeping the layout point under widget point (wx, wy) still. */
static void
zoom_at (PlGraphCanvas *self, double z, double wx, double wy)
{
  z = CLAMP (z, min_zoom (self), ZOOM_MAX);
  double px = self->ox + wx / self->zoom, py = self->oy + wy / self->zoom;
  self->zoom = z;
  self->ox = px - wx / z;
  self->oy = py - wy / z;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

static void
center_point (PlGraphCanvas *self, double x, double y)
{
  self->ox = x - gtk_widget_get_width (GTK_WIDGET (self)) / 2.0 / self->zoom;
  self->oy = y - gtk_widget_get_height (GTK_WIDGET (self)) / 2.0 / self->zoom;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

void
pl_graph_canvas_zoom_fit (PlGraphCanvas *self)
{
  g_return_if_fail (PL_IS_GRAPH_CANVAS (self));
  if (self->layout == NULL)
    return;
  self->zoom = fit_zoom (self);
  center_point (self, self->layout->width / 2, self->layout->height / 2);
  self->view_set = gtk_widget_get_width (GTK_WIDGET (self)) > 0;
}

/* A new graph: all of it when that is legible, else its beginning at a
 * zoom that shows text (the overview of a deep model is a thin line; the
 * 0 key still fits it). */
static void
initial_view (PlGraphCanvas *self)
{
  pl_graph_canvas_zoom_fit (self);
  double w = gtk_widget_get_width (GTK_WIDGET (self)), h = gtk_widget_get_height (GTK_WIDGET (self));
  if (self->layout == NULL || self->layout->n_nodes == 0 || self->zoom >= FIRST_ZOOM || w <= 0)
    return;
  /* Where the data enters: the first box along the flow. */
  const PlGraphLayout *l = self->layout;
  bool lr = l->width > l->height;
  int first = 0;
  for (int i = 1; i < l->n_nodes; i++)
    if (lr ? l->nodes[i].x < l->nodes[first].x : l->nodes[i].y < l->nodes[first].y)
      first = i;
  self->zoom = FIRST_ZOOM;
  self->ox = lr ? 0 : l->nodes[first].x - w / 2 / self->zoom;
  self->oy = lr ? l->nodes[first].y - h / 2 / self->zoom : 0;
}

void
pl_graph_canvas_zoom_by (PlGraphCanvas *self, double factor)
{
  g_return_if_fail (PL_IS_GRAPH_CANVAS (self) && factor > 0);
  zoom_at (self, self->zoom * factor, gtk_widget_get_width (GTK_WIDGET (self)) / 2.0,
           gtk_widget_get_height (GTK_WIDGET (self)) / 2.0);
}

void
pl_graph_canvas_pan_by (PlGraphCanvas *self, double dx, double dy)
{
  g_return_if_fail (PL_IS_GRAPH_CANVAS (self));
  self->ox += dx / self->zoom;
  self->oy += dy / self->zoom;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

void
pl_graph_canvas_get_view (PlGraphCanvas *self, double *x, double *y, double *zoom)
{
  g_return_if_fail (PL_IS_GRAPH_CANVAS (self));
  if (x != NULL)
    *x = self->ox;
  if (y != NULL)
    *y = self->oy;
  if (zoom != NULL)
    *zoom = self->zoom;
}

gint64
pl_graph_canvas_get_draw_time (PlGraphCanvas *self)
{
  g_return_val_if_fail (PL_IS_GRAPH_CANVAS (self), 0);
  return self->draw_us;
}

PlGraphLayout *
pl_graph_canvas_get_layout (PlGraphCanvas *self)
{
  g_return_val_if_fail (PL_IS_GRAPH_CANVAS (self), NULL);
  return self->layout;
}

/* Centre of a key's box or cluster; false if the layout has neither. */
static bool
key_center (PlGraphCanvas *self, const char *key, double *x, double *y)
{
  if (self->layout == NULL || key == NULL)
    return false;
  int i = pl_graph_layout_find (self->layout, key);
  if (i >= 0)
    {
      *x = self->layout->nodes[i].x;
      *y = self->layout->nodes[i].y;
      return true;
    }
  int c = pl_graph_scene_find_cluster (self->scene, key);
  if (c < 0)
    return false;
  const PlLayoutCluster *cl = &self->layout->clusters[c];
  *x = cl->x + cl->width / 2;
  *y = cl->y + cl->height / 2;
  return true;
}

void
pl_graph_canvas_center_on (PlGraphCanvas *self, const char *key)
{
  g_return_if_fail (PL_IS_GRAPH_CANVAS (self));
  double x, y;
  if (!key_center (self, key, &x, &y))
    return;
  if (self->zoom < FOCUS_ZOOM)
    self->zoom = MIN (FOCUS_ZOOM, ZOOM_MAX);
  center_point (self, x, y);
  self->view_set = true;
}

/* --- what the shown version has ------------------------------------------------- */

static void
apply_states (PlGraphCanvas *self)
{
  if (self->scene != NULL)
    pl_graph_scene_show (self->scene, self->shown, self->prev, self->changed_ids);
}

static void
apply_selection (PlGraphCanvas *self)
{
  if (self->scene == NULL)
    return;
  self->scene->selected = self->selected_key != NULL ? pl_graph_layout_find (self->layout, self->selected_key) : -1;
  self->scene->selected_cluster = self->selected_key != NULL
    ? pl_graph_scene_find_cluster (self->scene, self->selected_key) : -1;
}

static void
apply_annotations (PlGraphCanvas *self)
{
  if (self->scene == NULL)
    return;
  GHashTableIter it;
  gpointer key, text;
  g_hash_table_iter_init (&it, self->annotations);
  while (g_hash_table_iter_next (&it, &key, &text))
    {
      int i = pl_graph_layout_find (self->layout, key);
      if (i >= 0)
        {
          g_free (self->scene->annotation[i]);
          self->scene->annotation[i] = g_strdup (text);
        }
    }
}

/* --- public: graph, layout, selection ------------------------------------------- */

/* Shows a new layout, keeping the view where it can. */
static void
install_layout (PlGraphCanvas *self, PlGraphLayout *layout)
{

  /* Keep the view: a key both layouts have (the selection, else the box
   * nearest the view's centre) stays at the same place on screen. */
  double w = gtk_widget_get_width (GTK_WIDGET (self)), h = gtk_widget_get_height (GTK_WIDGET (self));
  double cx = self->ox + w / 2 / self->zoom, cy = self->oy + h / 2 / self->zoom;
  g_autofree char *anchor = NULL;
  double ax = 0, ay = 0;
  if (self->layout != NULL && layout != NULL && self->view_set)
    {
      if (self->selected_key != NULL && key_center (self, self->selected_key, &ax, &ay)
          && (pl_graph_layout_find (layout, self->selected_key) >= 0))
        anchor = g_strdup (self->selected_key);
      double best = G_MAXDOUBLE;
      for (int i = 0; anchor == NULL && i < self->layout->n_nodes; i++)
        {
          const PlLayoutNode *n = &self->layout->nodes[i];
          double d = hypot (n->x - cx, n->y - cy);
          if (d < best && pl_graph_layout_find (layout, n->key) >= 0)
            {
              best = d;
              ax = n->x;
              ay = n->y;
              g_free (anchor);
              anchor = g_strdup (n->key);
            }
        }
      if (anchor == NULL)
        {
          /* A toggled fusion: the box became a cluster or the other way. */
          for (int i = 0; anchor == NULL && i < layout->n_clusters; i++)
            if (key_center (self, layout->clusters[i].key, &ax, &ay))
              anchor = g_strdup (layout->clusters[i].key);
        }
    }

  if (layout != NULL)
    pl_graph_layout_ref (layout);
  g_clear_pointer (&self->scene, pl_graph_scene_free);
  g_clear_pointer (&self->layout, pl_graph_layout_unref);
  self->layout = layout;
  if (layout != NULL)
    {
      self->scene = pl_graph_scene_new (layout);
      g_clear_pointer (&self->message, g_free);
    }
  apply_states (self);
  apply_selection (self);
  apply_annotations (self);

  double nx, ny;
  if (anchor != NULL && key_center (self, anchor, &nx, &ny))
    {
      self->ox += nx - ax;
      self->oy += ny - ay;
    }
  else if (layout != NULL)
    initial_view (self);
  scene_changed (self);
}

void
pl_graph_canvas_set_layout (PlGraphCanvas *self, PlGraphLayout *layout)
{
  g_return_if_fail (PL_IS_GRAPH_CANVAS (self));
  /* A layout from elsewhere: fusions can no longer be re-laid out here. */
  g_clear_pointer (&self->source, pl_graph_sketch_unref);
  install_layout (self, layout);
}

static PlGraphSketch *
sketch_of (PlGraphCanvas *self, const PlGraph *g)
{
  if (g == NULL)
    return NULL;
  bool show_constants = self->layout != NULL ? self->layout->show_constants : self->options.show_constants;
  return pl_graph_sketch_new (&g, 1, show_constants);
}

void
pl_graph_canvas_set_graph (PlGraphCanvas *self, const PlGraph *graph, const PlGraph *prev,
                           const PlGraphDiff *diff)
{
  g_return_if_fail (PL_IS_GRAPH_CANVAS (self));
  g_clear_pointer (&self->shown, pl_graph_sketch_unref);
  g_clear_pointer (&self->prev, pl_graph_sketch_unref);
  g_clear_pointer (&self->changed_ids, g_hash_table_unref);
  self->shown = sketch_of (self, graph);
  self->prev = sketch_of (self, prev);
  if (diff != NULL && diff->changed != NULL)
    {
      self->changed_ids = g_hash_table_new (g_direct_hash, g_direct_equal);
      for (guint i = 0; i < diff->changed->len; i++)
        g_hash_table_add (self->changed_ids, GUINT_TO_POINTER (g_array_index (diff->changed, guint32, i)));
    }
  apply_states (self);
  if (self->scene != NULL)
    pl_graph_scene_set_hover (self->scene, -1);
  scene_changed (self);
}

void
pl_graph_canvas_select (PlGraphCanvas *self, const char *key)
{
  g_return_if_fail (PL_IS_GRAPH_CANVAS (self));
  if (g_strcmp0 (key, self->selected_key) == 0)
    return;
  g_free (self->selected_key);
  self->selected_key = g_strdup (key);
  apply_selection (self);
  scene_changed (self);
  g_signal_emit (self, signals[SIGNAL_SELECTION_CHANGED], 0, self->selected_key);
}

const char *
pl_graph_canvas_get_selected (PlGraphCanvas *self)
{
  g_return_val_if_fail (PL_IS_GRAPH_CANVAS (self), NULL);
  return self->selected_key;
}

void
pl_graph_canvas_set_annotation (PlGraphCanvas *self, const char *key, const char *text)
{
  g_return_if_fail (PL_IS_GRAPH_CANVAS (self) && key != NULL);
  if (text != NULL)
    g_hash_table_replace (self->annotations, g_strdup (key), g_strdup (text));
  else
    g_hash_table_remove (self->annotations, key);
  int i = self->layout != NULL ? pl_graph_layout_find (self->layout, key) : -1;
  if (i >= 0)
    {
      g_free (self->scene->annotation[i]);
      self->scene->annotation[i] = g_strdup (text);
      scene_changed (self);
    }
}

static bool
matches (const char *hay, const char *needle)
{
  if (hay == NULL)
    return false;
  g_autofree char *folded = g_utf8_casefold (hay, -1);
  return strstr (folded, needle) != NULL;
}

bool
pl_graph_canvas_search_next (PlGraphCanvas *self, const char *text)
{
  g_return_val_if_fail (PL_IS_GRAPH_CANVAS (self), false);
  if (self->scene == NULL || text == NULL || text[0] == '\0')
    return false;
  g_autofree char *needle = g_utf8_casefold (text, -1);
  const PlGraphLayout *l = self->layout;
  const PlGraphScene *sc = self->scene;
  /* Boxes first, then clusters, in one cycle starting after the selection. */
  int total = l->n_nodes + l->n_clusters;
  int start = sc->selected >= 0 ? sc->selected + 1
              : sc->selected_cluster >= 0 ? l->n_nodes + sc->selected_cluster + 1 : 0;
  for (int k = 0; k < total; k++)
    {
      int i = (start + k) % total;
      const char *key = NULL;
      if (i < l->n_nodes)
        {
          if (sc->node_state[i] == PL_DRAW_HIDDEN)
            continue;
          const char *title = sc->title[i] != NULL ? sc->title[i] : l->nodes[i].title;
          const char *sub = sc->subtitle[i] != NULL ? sc->subtitle[i] : l->nodes[i].subtitle;
          if (matches (title, needle) || (l->nodes[i].kind == PL_LAYOUT_NODE_OP && matches (sub, needle))
              || (l->nodes[i].kind == PL_LAYOUT_NODE_FUSION && matches (sub, needle)))
            key = l->nodes[i].key;
        }
      else
        {
          int c = i - l->n_nodes;
          if (sc->cluster_state[c] != PL_DRAW_HIDDEN && matches (l->clusters[c].title, needle))
            key = l->clusters[c].key;
        }
      if (key != NULL)
        {
          pl_graph_canvas_select (self, key);
          pl_graph_canvas_center_on (self, key);
          return true;
        }
    }
  return false;
}

/* --- layouts in a thread ---------------------------------------------------------- */

typedef struct {
  PlGraphSketch   *sketch;
  PlLayoutOptions  options;   /* sets owned */
  gint             progress;  /* permille, written by the thread */
} LayoutJob;

static GHashTable *
copy_set (GHashTable *set)
{
  GHashTable *copy = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  if (set != NULL)
    {
      GHashTableIter it;
      gpointer key;
      g_hash_table_iter_init (&it, set);
      while (g_hash_table_iter_next (&it, &key, NULL))
        g_hash_table_add (copy, g_strdup (key));
    }
  return copy;
}

static void
options_copy (PlLayoutOptions *dst, const PlLayoutOptions *src)
{
  *dst = *src;
  dst->collapsed = copy_set (src->collapsed);
  dst->expanded = copy_set (src->expanded);
  dst->progress = NULL;
  dst->progress_data = NULL;
}

static void
options_clear (PlLayoutOptions *o)
{
  g_clear_pointer (&o->collapsed, g_hash_table_unref);
  g_clear_pointer (&o->expanded, g_hash_table_unref);
}

static void
layout_job_free (gpointer p)
{
  LayoutJob *job = p;
  pl_graph_sketch_unref (job->sketch);
  options_clear (&job->options);
  g_free (job);
}

static void
job_progress (double fraction, gpointer data)
{
  LayoutJob *job = data;
  g_atomic_int_set (&job->progress, (int) (fraction * 1000));
}

static void
layout_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
  LayoutJob *job = data;
  GError *error = NULL;
  PlGraphLayout *l = pl_graph_layout_compute_sketch (job->sketch, &job->options, cancellable, &error);
  if (l == NULL)
    g_task_return_error (task, error);
  else
    g_task_return_pointer (task, l, (GDestroyNotify) pl_graph_layout_unref);
}

static void
busy_update (PlGraphCanvas *self)
{
  int permille = self->progress != NULL ? g_atomic_int_get (self->progress) : 0;
  double secs = (g_get_monotonic_time () - self->busy_since) / 1e6;
  int n = self->source != NULL ? (int) self->source->nodes->len : 0;
  g_autofree char *text = NULL;
  if (permille > 0)
    text = g_strdup_printf ("Laying out %'d nodes… %d%% (%.0f s)", n, permille / 10, secs);
  else
    text = g_strdup_printf ("Laying out %'d nodes… (%.0f s)", n, secs);
  gtk_label_set_text (GTK_LABEL (self->busy_label), text);
}

static gboolean
busy_tick (gpointer data)
{
  busy_update (PL_GRAPH_CANVAS (data));
  return G_SOURCE_CONTINUE;
}

static void
set_busy (PlGraphCanvas *self, bool busy)
{
  g_clear_handle_id (&self->busy_timer, g_source_remove);
  if (self->busy_box == NULL)  /* disposed */
    return;
  gtk_widget_set_visible (self->busy_box, busy);
  if (busy)
    {
      self->busy_since = g_get_monotonic_time ();
      busy_update (self);
      self->busy_timer = g_timeout_add (250, busy_tick, self);
    }
  else
    self->progress = NULL;
}

typedef struct {
  PlGraphCanvas *self;
  guint          serial;
} LayoutReply;

static void
layout_done (GObject *source, GAsyncResult *result, gpointer data)
{
  LayoutReply *reply = data;
  PlGraphCanvas *self = reply->self;
  guint serial = reply->serial;
  g_free (reply);
  g_autoptr (GError) error = NULL;
  g_autoptr (PlGraphLayout) l = g_task_propagate_pointer (G_TASK (result), &error);
  if (serial != self->serial)
    {
      g_object_unref (self);  /* superseded: a newer request owns the overlay */
      return;
    }
  set_busy (self, false);
  g_clear_object (&self->cancellable);
  if (l != NULL)
    install_layout (self, l);
  else if (!g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      g_free (self->message);
      self->message = g_strdup (error->message);
      gtk_widget_queue_draw (GTK_WIDGET (self));
    }
  bool cancelled = error != NULL && g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_signal_emit (self, signals[SIGNAL_LAYOUT_FINISHED], 0,
                 l != NULL ? NULL : cancelled ? "cancelled" : error->message);
  g_object_unref (self);
}

static void
start_layout (PlGraphCanvas *self)
{
  if (self->cancellable != NULL)
    g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->cancellable);
  self->cancellable = g_cancellable_new ();
  self->serial++;

  LayoutJob *job = g_new0 (LayoutJob, 1);
  job->sketch = pl_graph_sketch_ref (self->source);
  options_copy (&job->options, &self->options);
  job->options.progress = job_progress;
  job->options.progress_data = job;
  self->progress = &job->progress;

  LayoutReply *reply = g_new (LayoutReply, 1);
  reply->self = g_object_ref (self);
  reply->serial = self->serial;
  GTask *task = g_task_new (NULL, self->cancellable, layout_done, reply);
  g_task_set_source_tag (task, start_layout);
  g_task_set_task_data (task, job, layout_job_free);
  g_task_run_in_thread (task, layout_thread);
  g_object_unref (task);
  set_busy (self, true);
}

void
pl_graph_canvas_layout_async (PlGraphCanvas *self, const PlGraph *const *graphs, int n,
                              const PlLayoutOptions *options)
{
  g_return_if_fail (PL_IS_GRAPH_CANVAS (self));
  g_return_if_fail (graphs != NULL && n > 0);
  PlLayoutOptions defaults;
  if (options == NULL)
    {
      pl_layout_options_init (&defaults);
      options = &defaults;
    }
  options_clear (&self->options);
  options_copy (&self->options, options);
  g_clear_pointer (&self->source, pl_graph_sketch_unref);
  self->source = pl_graph_sketch_new (graphs, n, options->show_constants);
  start_layout (self);
}

bool
pl_graph_canvas_is_busy (PlGraphCanvas *self)
{
  g_return_val_if_fail (PL_IS_GRAPH_CANVAS (self), false);
  return self->cancellable != NULL;
}

void
pl_graph_canvas_cancel_layout (PlGraphCanvas *self)
{
  g_return_if_fail (PL_IS_GRAPH_CANVAS (self));
  if (self->cancellable == NULL)
    return;
  /* The thread stops at its next band; its result is dropped. */
  g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->cancellable);
  self->serial++;
  set_busy (self, false);
  if (self->layout == NULL)
    {
      g_free (self->message);
      self->message = g_strdup ("Layout cancelled.");
    }
  gtk_widget_queue_draw (GTK_WIDGET (self));
  g_signal_emit (self, signals[SIGNAL_LAYOUT_FINISHED], 0, "cancelled");
}

bool
pl_graph_canvas_toggle_fusion (PlGraphCanvas *self, const char *key)
{
  g_return_val_if_fail (PL_IS_GRAPH_CANVAS (self), false);
  if (self->source == NULL || key == NULL)
    return false;
  int j = pl_graph_sketch_find (self->source, key);
  if (j < 0 || !g_array_index (self->source->nodes, PlSketchNode, j).has_body)
    return false;
  bool collapsed = self->layout != NULL && g_hash_table_contains (self->layout->collapsed, key);
  if (collapsed)
    {
      g_hash_table_remove (self->options.collapsed, key);
      g_hash_table_add (self->options.expanded, g_strdup (key));
    }
  else
    {
      g_hash_table_add (self->options.collapsed, g_strdup (key));
      g_hash_table_remove (self->options.expanded, key);
    }
  start_layout (self);
  return true;
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

#define CANVAS_BG 0.973, 0.976, 0.984

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
  cairo_set_source_rgb (cr, CANVAS_BG);
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
  gtk_snapshot_append_color (snapshot, &(GdkRGBA) { CANVAS_BG, 1 }, &GRAPHENE_RECT_INIT (0, 0, w, h));
  if (self->scene != NULL && w > 0 && h > 0)
    {
      if (!self->view_set)
        initial_view (self);
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
    initial_view (self);
}

/* --- input ------------------------------------------------------------------------- */

static void
to_layout (PlGraphCanvas *self, double wx, double wy, double *x, double *y)
{
  *x = self->ox + wx / self->zoom;
  *y = self->oy + wy / self->zoom;
}

/* Key of the box or cluster at widget point (wx, wy), or NULL. */
static const char *
key_at (PlGraphCanvas *self, double wx, double wy, int *node)
{
  *node = -1;
  if (self->scene == NULL)
    return NULL;
  double x, y;
  int cluster;
  to_layout (self, wx, wy, &x, &y);
  *node = pl_graph_scene_hit (self->scene, x, y, &cluster);
  if (*node >= 0)
    return self->layout->nodes[*node].key;
  return cluster >= 0 ? self->layout->clusters[cluster].key : NULL;
}

static void
activate_key (PlGraphCanvas *self, const char *key)
{
  g_autofree char *k = g_strdup (key);
  g_signal_emit (self, signals[SIGNAL_NODE_ACTIVATED], 0, k);
  pl_graph_canvas_toggle_fusion (self, k);
}

static void
click_pressed (GtkGestureClick *gesture, int n_press, double wx, double wy, PlGraphCanvas *self)
{
  gtk_widget_grab_focus (GTK_WIDGET (self));
  int node;
  const char *key = key_at (self, wx, wy, &node);
  if (n_press == 1)
    pl_graph_canvas_select (self, key);
  else if (n_press == 2 && key != NULL)
    activate_key (self, key);
}

static void
drag_begin (GtkGestureDrag *gesture, double x, double y, PlGraphCanvas *self)
{
  self->drag_ox = self->ox;
  self->drag_oy = self->oy;
}

static void
drag_update (GtkGestureDrag *gesture, double dx, double dy, PlGraphCanvas *self)
{
  if (hypot (dx, dy) > 3)
    gtk_widget_set_cursor_from_name (GTK_WIDGET (self), "grabbing");
  self->ox = self->drag_ox - dx / self->zoom;
  self->oy = self->drag_oy - dy / self->zoom;
  self->view_set = true;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

static void
drag_end (GtkGestureDrag *gesture, double dx, double dy, PlGraphCanvas *self)
{
  gtk_widget_set_cursor (GTK_WIDGET (self), NULL);
}

static gboolean
scrolled (GtkEventControllerScroll *ctl, double dx, double dy, PlGraphCanvas *self)
{
  GdkModifierType state = gtk_event_controller_get_current_event_state (GTK_EVENT_CONTROLLER (ctl));
  bool wheel = gtk_event_controller_scroll_get_unit (ctl) == GDK_SCROLL_UNIT_WHEEL;
  double wx = self->pointer_in ? self->pointer_x : gtk_widget_get_width (GTK_WIDGET (self)) / 2.0;
  double wy = self->pointer_in ? self->pointer_y : gtk_widget_get_height (GTK_WIDGET (self)) / 2.0;
  self->view_set = true;
  if ((state & GDK_CONTROL_MASK) || (wheel && !(state & GDK_SHIFT_MASK)))
    {
      /* A mouse wheel notch zooms by 15%; smooth deltas proportionally. */
      double f = pow (1.15, -(wheel ? dy : dy / 10.0));
      zoom_at (self, self->zoom * f, wx, wy);
    }
  else if (wheel)
    pl_graph_canvas_pan_by (self, dy * 60, dx * 60);  /* Shift+wheel: sideways */
  else
    pl_graph_canvas_pan_by (self, dx, dy);  /* touchpad: pixels */
  return TRUE;
}

static void
pinch_begin (GtkGesture *gesture, GdkEventSequence *seq, PlGraphCanvas *self)
{
  self->pinch_zoom = self->zoom;
}

static void
pinch_changed (GtkGestureZoom *gesture, double scale, PlGraphCanvas *self)
{
  double x, y;
  if (!gtk_gesture_get_bounding_box_center (GTK_GESTURE (gesture), &x, &y))
    {
      x = gtk_widget_get_width (GTK_WIDGET (self)) / 2.0;
      y = gtk_widget_get_height (GTK_WIDGET (self)) / 2.0;
    }
  self->view_set = true;
  zoom_at (self, self->pinch_zoom * scale, x, y);
}

static void
set_hover (PlGraphCanvas *self, int node)
{
  if (self->scene == NULL || self->scene->hover == node)
    return;
  pl_graph_scene_set_hover (self->scene, node);
  scene_changed (self);
}

static void
motion (GtkEventControllerMotion *ctl, double wx, double wy, PlGraphCanvas *self)
{
  self->pointer_x = wx;
  self->pointer_y = wy;
  self->pointer_in = true;
  int node;
  key_at (self, wx, wy, &node);
  set_hover (self, node);
}

static void
leave (GtkEventControllerMotion *ctl, PlGraphCanvas *self)
{
  self->pointer_in = false;
  set_hover (self, -1);
}

static gboolean
key_pressed (GtkEventControllerKey *ctl, guint keyval, guint keycode, GdkModifierType state,
             PlGraphCanvas *self)
{
  double w = gtk_widget_get_width (GTK_WIDGET (self)), h = gtk_widget_get_height (GTK_WIDGET (self));
  self->view_set = true;
  switch (keyval)
    {
    case GDK_KEY_plus: case GDK_KEY_equal: case GDK_KEY_KP_Add:
      pl_graph_canvas_zoom_by (self, 1.25);
      return TRUE;
    case GDK_KEY_minus: case GDK_KEY_KP_Subtract:
      pl_graph_canvas_zoom_by (self, 0.8);
      return TRUE;
    case GDK_KEY_0: case GDK_KEY_KP_0: case GDK_KEY_Home:
      pl_graph_canvas_zoom_fit (self);
      return TRUE;
    case GDK_KEY_Left:  pl_graph_canvas_pan_by (self, -w * 0.15, 0); return TRUE;
    case GDK_KEY_Right: pl_graph_canvas_pan_by (self, w * 0.15, 0);  return TRUE;
    case GDK_KEY_Up:    pl_graph_canvas_pan_by (self, 0, -h * 0.15); return TRUE;
    case GDK_KEY_Down:  pl_graph_canvas_pan_by (self, 0, h * 0.15);  return TRUE;
    case GDK_KEY_Return: case GDK_KEY_KP_Enter:
      if (self->selected_key == NULL)
        return FALSE;
      activate_key (self, self->selected_key);
      return TRUE;
    case GDK_KEY_Escape:
      if (self->selected_key == NULL)
        return FALSE;
      pl_graph_canvas_select (self, NULL);
      return TRUE;
    default:
      return FALSE;
    }
}

static gboolean
query_tooltip (GtkWidget *widget, int wx, int wy, gboolean keyboard, GtkTooltip *tooltip)
{
  PlGraphCanvas *self = PL_GRAPH_CANVAS (widget);
  int node;
  if (keyboard || key_at (self, wx, wy, &node) == NULL || node < 0)
    return FALSE;
  const PlGraphScene *sc = self->scene;
  const PlLayoutNode *n = &self->layout->nodes[node];
  g_autofree char *title = g_markup_escape_text (sc->title[node] != NULL ? sc->title[node] : n->title, -1);
  const char *sub_raw = sc->subtitle[node] != NULL ? sc->subtitle[node] : n->subtitle;
  g_autofree char *sub = g_markup_escape_text (sub_raw != NULL ? sub_raw : "", -1);
  static const char *const states[] = { "", "", "\nadded in this step", "\nchanged in this step",
                                        "\nremoved in this step" };
  g_autofree char *detail = sc->detail[node] != NULL ? g_markup_printf_escaped ("\n%s", sc->detail[node]) : NULL;
  g_autofree char *markup = g_strdup_printf ("<b>%s</b>\n%s%s%s%s%s", title, sub, detail != NULL ? detail : "",
                                             states[sc->node_state[node] % 5],
                                             sc->annotation[node] != NULL ? "\n" : "",
                                             sc->annotation[node] != NULL ? sc->annotation[node] : "");
  gtk_tooltip_set_markup (tooltip, markup);
  return TRUE;
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
  PlGraphCanvas *self = PL_GRAPH_CANVAS (object);
  self->serial++;  /* a layout still running lands nowhere */
  if (self->cancellable != NULL)
    g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->cancellable);
  g_clear_handle_id (&self->busy_timer, g_source_remove);
  g_clear_pointer (&self->busy_box, gtk_widget_unparent);
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
  g_clear_pointer (&self->source, pl_graph_sketch_unref);
  g_clear_pointer (&self->changed_ids, g_hash_table_unref);
  g_clear_pointer (&self->annotations, g_hash_table_unref);
  options_clear (&self->options);
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
  widget_class->query_tooltip = query_tooltip;
  gtk_widget_class_set_css_name (widget_class, "graphcanvas");

  signals[SIGNAL_SELECTION_CHANGED] =
    g_signal_new ("selection-changed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                  NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
  signals[SIGNAL_NODE_ACTIVATED] =
    g_signal_new ("node-activated", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                  NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
  signals[SIGNAL_LAYOUT_FINISHED] =
    g_signal_new ("layout-finished", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                  NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
}

static void
build_busy_box (PlGraphCanvas *self)
{
  self->busy_box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 12);
  gtk_widget_add_css_class (self->busy_box, "osd");
  gtk_widget_add_css_class (self->busy_box, "toolbar");
  GtkWidget *spinner = gtk_spinner_new ();
  gtk_spinner_start (GTK_SPINNER (spinner));
  self->busy_label = gtk_label_new ("");
  gtk_label_set_width_chars (GTK_LABEL (self->busy_label), 34);
  gtk_label_set_xalign (GTK_LABEL (self->busy_label), 0);
  GtkWidget *cancel = gtk_button_new_with_mnemonic ("_Cancel");
  g_signal_connect_swapped (cancel, "clicked", G_CALLBACK (pl_graph_canvas_cancel_layout), self);
  gtk_box_append (GTK_BOX (self->busy_box), spinner);
  gtk_box_append (GTK_BOX (self->busy_box), self->busy_label);
  gtk_box_append (GTK_BOX (self->busy_box), cancel);
  gtk_widget_set_visible (self->busy_box, false);
  gtk_widget_set_parent (self->busy_box, GTK_WIDGET (self));
}

static void
pl_graph_canvas_init (PlGraphCanvas *self)
{
  GtkWidget *widget = GTK_WIDGET (self);
  self->zoom = 1.0;
  self->annotations = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  pl_layout_options_init (&self->options);
  self->options.collapsed = copy_set (NULL);
  self->options.expanded = copy_set (NULL);
  gtk_widget_set_focusable (widget, TRUE);
  gtk_widget_set_overflow (widget, GTK_OVERFLOW_HIDDEN);
  gtk_widget_set_has_tooltip (widget, TRUE);
  build_busy_box (self);

  GtkGesture *click = gtk_gesture_click_new ();
  gtk_gesture_single_set_button (GTK_GESTURE_SINGLE (click), GDK_BUTTON_PRIMARY);
  g_signal_connect (click, "pressed", G_CALLBACK (click_pressed), self);
  gtk_widget_add_controller (widget, GTK_EVENT_CONTROLLER (click));

  /* Drag with the primary or the middle button. */
  for (guint button = GDK_BUTTON_PRIMARY; button <= GDK_BUTTON_MIDDLE; button++)
    {
      GtkGesture *drag = gtk_gesture_drag_new ();
      gtk_gesture_single_set_button (GTK_GESTURE_SINGLE (drag), button);
      g_signal_connect (drag, "drag-begin", G_CALLBACK (drag_begin), self);
      g_signal_connect (drag, "drag-update", G_CALLBACK (drag_update), self);
      g_signal_connect (drag, "drag-end", G_CALLBACK (drag_end), self);
      gtk_widget_add_controller (widget, GTK_EVENT_CONTROLLER (drag));
    }

  GtkEventController *scroll = gtk_event_controller_scroll_new (GTK_EVENT_CONTROLLER_SCROLL_BOTH_AXES);
  g_signal_connect (scroll, "scroll", G_CALLBACK (scrolled), self);
  gtk_widget_add_controller (widget, scroll);

  GtkGesture *pinch = gtk_gesture_zoom_new ();
  g_signal_connect (pinch, "begin", G_CALLBACK (pinch_begin), self);
  g_signal_connect (pinch, "scale-changed", G_CALLBACK (pinch_changed), self);
  gtk_widget_add_controller (widget, GTK_EVENT_CONTROLLER (pinch));

  GtkEventController *hover = gtk_event_controller_motion_new ();
  g_signal_connect (hover, "motion", G_CALLBACK (motion), self);
  g_signal_connect (hover, "leave", G_CALLBACK (leave), self);
  gtk_widget_add_controller (widget, hover);

  GtkEventController *keys = gtk_event_controller_key_new ();
  g_signal_connect (keys, "key-pressed", G_CALLBACK (key_pressed), self);
  gtk_widget_add_controller (widget, keys);
}

GtkWidget *
pl_graph_canvas_new (void)
{
  return g_object_new (PL_TYPE_GRAPH_CANVAS, NULL);
}
