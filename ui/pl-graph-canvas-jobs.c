/* pl-graph-canvas-jobs.c — the canvas's own layouts, computed in a GTask
 * thread while a "laying out N nodes…" overlay with a Cancel button shows.
 *
 * The canvas keeps the union sketch it was given, so it can lay out again by
 * itself when a fusion is collapsed or expanded. Each job gets its own copy
 * of the sketch and the options; a newer request cancels the running one
 * (the thread stops at the next band) and the serial number drops results
 * of superseded requests. */
#define G_LOG_DOMAIN "passlab"

#include "pl-graph-canvas-private.h"

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

/* --- the busy overlay -------------------------------------------------------------- */

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

/* --- running a job ------------------------------------------------------------------ */

/* Cancels the running job, if any (the thread stops at its next band).
 * Callers move the serial on, so that its result is dropped. */
static void
cancel_running (PlGraphCanvas *self)
{
  if (self->cancellable != NULL)
    g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->cancellable);
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
    canvas_install_layout (self, l);
  else if (!g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    canvas_set_message (self, error->message);
  bool cancelled = error != NULL && g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_signal_emit (self, canvas_signals[SIGNAL_LAYOUT_FINISHED], 0,
                 l != NULL ? NULL : cancelled ? "cancelled" : error->message);
  g_object_unref (self);
}

static void
start_layout (PlGraphCanvas *self)
{
  cancel_running (self);
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
  cancel_running (self);
  self->serial++;
  set_busy (self, false);
  if (self->layout == NULL)
    canvas_set_message (self, "Layout cancelled.");
  gtk_widget_queue_draw (GTK_WIDGET (self));
  g_signal_emit (self, canvas_signals[SIGNAL_LAYOUT_FINISHED], 0, "cancelled");
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

/* --- the widget's lifecycle ------------------------------------------------------------ */

void
canvas_jobs_init (PlGraphCanvas *self)
{
  pl_layout_options_init (&self->options);
  self->options.collapsed = copy_set (NULL);
  self->options.expanded = copy_set (NULL);
  build_busy_box (self);
}

void
canvas_jobs_dispose (PlGraphCanvas *self)
{
  self->serial++;  /* a layout still running lands nowhere */
  cancel_running (self);
  g_clear_handle_id (&self->busy_timer, g_source_remove);
  g_clear_pointer (&self->busy_box, gtk_widget_unparent);
}

void
canvas_jobs_finalize (PlGraphCanvas *self)
{
  g_clear_pointer (&self->source, pl_graph_sketch_unref);
  options_clear (&self->options);
}
