/* pl-window-worker.c — the worker that loads, runs pipelines and lays out.
 *
 * Everything slow happens off the main thread, one job at a time: a GTask
 * loads the file (or takes step 0 of the open document) and applies the
 * passes one by one with the numerical check; then the canvas lays out the
 * union of all versions (pl_graph_canvas_layout_async). The window is busy
 * until the layout has arrived. The job produces a whole new PlDocument; the
 * window swaps it in only when the job succeeded, so a bad file never loses
 * the graph already open. A newer job cancels an older one; an older job's
 * late result is dropped (its cancellable is no longer the window's).
 *
 * Laying out the union of every version once is what keeps unchanged nodes
 * where they were while a person steps through the history.
 */
#define G_LOG_DOMAIN "passlab"

#include "pl-window-private.h"

#include "onnx-io.h"

/* --- the worker ----------------------------------------------------------------------------- */

typedef struct {
  GFile        *file;      /* load this file, or ... */
  PlDocument   *base;      /* ... start from step 0 of this document */
  PlPipeline   *pipeline;  /* NULL: no passes */
  PlRunOptions  options;
  PlWindow     *window;
  GMainContext *context;
} Job;

static void
job_free (Job *job)
{
  g_clear_object (&job->file);
  g_clear_pointer (&job->base, pl_document_unref);
  g_clear_pointer (&job->pipeline, pl_pipeline_free);
  g_clear_object (&job->window);
  g_main_context_unref (job->context);
  g_free (job);
}

typedef struct {
  PlWindow     *window;
  GCancellable *cancellable;
  double        fraction;  /* < 0: unknown, pulse */
  char         *text;
} Progress;

static void
progress_free (Progress *p)
{
  g_object_unref (p->window);
  g_object_unref (p->cancellable);
  g_free (p->text);
  g_free (p);
}

static gboolean
progress_dispatch (gpointer data)
{
  Progress *p = data;
  if (p->window->cancellable != p->cancellable)
    return G_SOURCE_REMOVE;  /* a job that has been replaced */
  gtk_label_set_text (p->window->progress_label, p->text);
  if (p->fraction < 0)
    gtk_progress_bar_pulse (p->window->progress_bar);
  else
    gtk_progress_bar_set_fraction (p->window->progress_bar, p->fraction);
  return G_SOURCE_REMOVE;
}

static void G_GNUC_PRINTF (4, 5)
report_progress (Job *job, GCancellable *cancellable, double fraction, const char *format, ...)
{
  va_list ap;
  Progress *p = g_new0 (Progress, 1);
  p->window = g_object_ref (job->window);
  p->cancellable = g_object_ref (cancellable);
  p->fraction = fraction;
  va_start (ap, format);
  p->text = g_strdup_vprintf (format, ap);
  va_end (ap);
  g_main_context_invoke_full (job->context, G_PRIORITY_DEFAULT, progress_dispatch, p, (GDestroyNotify) progress_free);
}

static PlGraph *
load_file (Job *job, GCancellable *cancellable, GError **error)
{
  g_autofree char *name = g_file_get_basename (job->file);
  g_autofree char *path = g_file_get_path (job->file);
  if (!path)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "%s is not a local file", name);
      return NULL;
    }
  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "%s: no such file", path);
      return NULL;
    }
  if (g_file_test (path, G_FILE_TEST_IS_DIR))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "%s is a folder, not a graph file", path);
      return NULL;
    }
  report_progress (job, cancellable, -1, "Loading %s…", name);
  return pl_graph_load (path, error);
}

static void
job_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
  Job *job = task_data;
  g_autoptr (GError) error = NULL;
  g_autoptr (PlGraph) loaded = NULL;
  if (job->file && !(loaded = load_file (job, cancellable, &error)))
    {
      g_task_return_error (task, g_steal_pointer (&error));
      return;
    }
  const PlGraph *input = loaded ? loaded : pl_history_step (job->base->history, 0)->graph;

  PlDocument *doc = g_rc_box_new0 (PlDocument);
  doc->file = g_object_ref (job->file ? job->file : job->base->file);
  doc->history = pl_history_new (input, &job->options);
  int n = job->pipeline ? (int) job->pipeline->entries->len : 0;
  bool ok = true;
  for (int i = 0; ok && i < n; i++)
    {
      if ((ok = !g_cancellable_set_error_if_cancelled (cancellable, &error)))
        {
          const PlPassArgs *args = job->pipeline->entries->pdata[i];
          report_progress (job, cancellable, (double) i / n, "Running %s (pass %d of %d)…",
                           pl_pass_args_pass (args)->name, i + 1, n);
          /* A failing pass ends the history there; history->error says why. */
          if (!pl_history_apply (doc->history, args, &job->options, NULL))
            break;
        }
    }
  if (ok)
    g_task_return_pointer (task, doc, (GDestroyNotify) pl_document_unref);
  else
    {
      pl_document_unref (doc);
      g_task_return_error (task, g_steal_pointer (&error));
    }
}

/* No spinner: a pass may measure (the layout pass calibrates), and an
 * animation redrawing the window at 60 frames a second takes the cores from
 * what it measures where the drawing is done in software (a ResNeXt-50 run
 * timed 57 ms beside the run panel's spinner, 37 ms without, under Xvfb). */
static void
set_busy (PlWindow *self, gboolean busy)
{
  self->busy = busy;
  gtk_revealer_set_reveal_child (self->progress_revealer, busy);
  pl_window_notify_state (self);
}

static void
finish_pending (PlWindow *self)
{
  if (self->pending_select)
    {
      g_autofree char *name = g_steal_pointer (&self->pending_select);
      if (!pl_window_select (self, name))
        {
          g_autofree char *msg = g_strdup_printf ("There is no node called '%s' in step %d.", name, self->step);
          pl_window_set_banner (self, msg, TRUE);
        }
    }
}

/* Reports what went wrong inside a history that was still installed. */
static void
report_history_problems (PlWindow *self)
{
  const PlHistory *h = self->doc->history;
  g_autofree char *msg = NULL;
  if (h->error)
    msg = g_strdup_printf ("The pipeline stopped: %s. The steps before it are shown.", h->error);
  for (int i = 1; !msg && i < pl_history_n_steps (h); i++)
    {
      const PlStep *s = pl_history_step (h, i);
      if (s->check_failed)
        msg = g_strdup_printf ("Numerical check failed at step %d: %s", i,
                               s->check_message ? s->check_message : s->pass_name);
    }
  if (msg)
    pl_window_set_banner (self, msg, TRUE);
}

/* Swaps doc in and has the canvas lay out all its versions; the window
 * stays busy until "layout-finished". */
static void
install_document (PlWindow *self, PlDocument *doc)
{
  PlDocument *old = self->doc;
  self->fit_after_layout = !old || !g_file_equal (old->file, doc->file);
  self->doc = doc;
  int n = pl_history_n_steps (doc->history);

  g_autofree const PlGraph **graphs = g_new (const PlGraph *, n);
  for (int i = 0; i < n; i++)
    graphs[i] = pl_history_step (doc->history, i)->graph;
  self->awaiting_layout = TRUE;
  pl_graph_canvas_layout_async (self->canvas, graphs, n, NULL);
  gtk_stack_set_visible_child_name (self->view_stack, "canvas");
  /* The canvas shows its own progress while it lays out. */
  gtk_revealer_set_reveal_child (self->progress_revealer, FALSE);

  pl_timeline_set_history (self->timeline, doc->history);
  int step = self->pending_step == -1 ? n - 1 : self->pending_step;
  if (step >= n)
    {
      g_autofree char *msg = g_strdup_printf ("There is no step %d: the pipeline has %d step%s after the loaded graph.",
                                              step, n - 1, n == 2 ? "" : "s");
      step = n - 1;
      pl_window_set_banner (self, msg, TRUE);
    }
  /* The canvas now points at the new versions only: the old ones may go. */
  pl_window_show_step (self, step);
  if (old)
    pl_document_unref (old);
  report_history_problems (self);
}

/* A new file's first view: the whole graph when it is legible so, else its
 * top (the inputs) at the smallest legible zoom. */
#define LEGIBLE_ZOOM 0.6
static void
first_view (PlWindow *self)
{
  pl_graph_canvas_zoom_fit (self->canvas);
  double zoom, oy;
  pl_graph_canvas_get_view (self->canvas, NULL, NULL, &zoom);
  if (zoom >= LEGIBLE_ZOOM)
    return;
  pl_graph_canvas_zoom_by (self->canvas, LEGIBLE_ZOOM / zoom);
  pl_graph_canvas_get_view (self->canvas, NULL, &oy, &zoom);
  const double margin = 12; /* points above the top row */
  pl_graph_canvas_pan_by (self->canvas, 0, (-margin - oy) * zoom);
}

/* After the layout: the first view of a new file, the node to select, and
 * the end of "busy". The canvas needs a size for the first two, so before
 * the window is shown this waits for the canvas's first frame. */
static void
settle (PlWindow *self, gboolean laid_out)
{
  if (laid_out && self->fit_after_layout)
    first_view (self);
  if (laid_out)
    finish_pending (self);
  g_clear_pointer (&self->pending_select, g_free);
  set_busy (self, FALSE);
}

static gboolean
settle_when_shown (GtkWidget *canvas, GdkFrameClock *clock, gpointer data)
{
  PlWindow *self = data;
  if (gtk_widget_get_width (canvas) <= 0)
    return G_SOURCE_CONTINUE;
  self->settle_tick = 0;
  settle (self, TRUE);
  return G_SOURCE_REMOVE;
}

void
pl_window_on_layout_finished (PlGraphCanvas *canvas, const char *error, PlWindow *self)
{
  /* A fusion expanded or collapsed on the canvas also lays out again. */
  if (!self->awaiting_layout)
    return;
  self->awaiting_layout = FALSE;
  if (error && !g_str_equal (error, "cancelled"))
    {
      g_autofree char *msg = g_strdup_printf ("Could not lay out the graph: %s", error);
      pl_window_set_banner (self, msg, TRUE);
    }
  if (!error && gtk_widget_get_width (GTK_WIDGET (canvas)) <= 0)
    self->settle_tick = gtk_widget_add_tick_callback (GTK_WIDGET (canvas), settle_when_shown, self, NULL);
  else
    settle (self, !error);
}

static void
job_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
  PlWindow *self = PL_WINDOW (source);
  GTask *task = G_TASK (result);
  Job *job = g_task_get_task_data (task);
  g_autoptr (GError) error = NULL;
  PlDocument *doc = g_task_propagate_pointer (task, &error);
  if (g_task_get_cancellable (task) != self->cancellable)
    {
      /* Replaced by a newer job, or the window went away. */
      if (doc)
        pl_document_unref (doc);
      return;
    }
  g_clear_object (&self->cancellable);
  if (doc)
    {
      install_document (self, doc);
      if (job->file)
        pl_window_add_recent (self, job->file);
    }
  else if (!g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      g_autofree char *name = job->file ? g_file_get_basename (job->file) : NULL;
      g_autofree char *msg = name ? g_strdup_printf ("Could not open %s: %s", name, error->message)
                                  : g_strdup_printf ("Could not run the pipeline: %s", error->message);
      pl_window_set_banner (self, msg, TRUE);
    }
  if (!self->awaiting_layout)
    {
      g_clear_pointer (&self->pending_select, g_free);
      set_busy (self, FALSE);
    }
}

static void
start_job (PlWindow *self, GFile *file, PlPipeline *pipeline)
{
  pl_window_cancel (self);
  self->cancellable = g_cancellable_new ();
  Job *job = g_new0 (Job, 1);
  job->file = file ? g_object_ref (file) : NULL;
  job->base = file ? NULL : pl_document_ref (self->doc);
  job->pipeline = pipeline;
  pl_run_options_init (&job->options);
  job->options.check = true;
  job->window = g_object_ref (self);
  job->context = g_main_context_ref_thread_default ();

  GTask *task = g_task_new (self, self->cancellable, job_done, NULL);
  g_task_set_source_tag (task, start_job);
  g_task_set_task_data (task, job, (GDestroyNotify) job_free);
  pl_window_set_banner (self, NULL, FALSE);
  gtk_progress_bar_set_fraction (self->progress_bar, 0);
  gtk_label_set_text (self->progress_label, "Working…");
  set_busy (self, TRUE);
  g_task_run_in_thread (task, job_thread);
  g_object_unref (task);
}

void
pl_window_cancel (PlWindow *self)
{
  if (self->settle_tick)
    gtk_widget_remove_tick_callback (GTK_WIDGET (self->canvas), self->settle_tick);
  self->settle_tick = 0;
  if (self->awaiting_layout)
    pl_graph_canvas_cancel_layout (self->canvas);  /* its "layout-finished" ends the wait */
  if (self->cancellable)
    g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->cancellable);
  g_clear_pointer (&self->pending_select, g_free);
  if (self->busy)
    set_busy (self, FALSE);
}

void
pl_window_open (PlWindow *self, GFile *file, const PlOpenRequest *request)
{
  g_return_if_fail (PL_IS_WINDOW (self));
  g_return_if_fail (G_IS_FILE (file));
  PlPipeline *pipeline = NULL;
  g_autoptr (GError) error = NULL;
  if (request && request->passes)
    {
      pipeline = pl_pipeline_parse (request->passes, &error);
      gtk_editable_set_text (GTK_EDITABLE (self->pipeline_entry), request->passes);
    }
  start_job (self, file, pipeline);
  /* A bad pipeline still opens the file; the error stays in the banner. */
  if (error)
    {
      g_autofree char *msg = g_strdup_printf ("Bad pipeline: %s", error->message);
      pl_window_set_banner (self, msg, TRUE);
    }
  self->pending_step = request && request->step >= 0 ? request->step : pipeline ? -1 : 0;
  g_free (self->pending_select);
  self->pending_select = g_strdup (request ? request->select : NULL);
}

void
pl_window_run_pipeline (PlWindow *self, const char *spec)
{
  g_return_if_fail (PL_IS_WINDOW (self));
  if (!self->doc)
    return;
  if (!spec)
    spec = gtk_editable_get_text (GTK_EDITABLE (self->pipeline_entry));
  else
    gtk_editable_set_text (GTK_EDITABLE (self->pipeline_entry), spec);
  g_autoptr (GError) error = NULL;
  PlPipeline *pipeline = pl_pipeline_parse (spec, &error);
  if (!pipeline)
    {
      g_autofree char *msg = g_strdup_printf ("Bad pipeline: %s", error->message);
      pl_window_set_banner (self, msg, TRUE);
      return;
    }
  start_job (self, NULL, pipeline);
  self->pending_step = -1;
}

/* Installs a history made elsewhere (a script's passlab.run) the way a
 * finished run is installed. */
void
pl_window_show_history (PlWindow *self, PlHistory *history, GFile *file)
{
  g_return_if_fail (PL_IS_WINDOW (self));
  g_return_if_fail (history != NULL);
  GFile *current = self->doc ? self->doc->file : file;
  if (!current)
    {
      pl_history_free (history);
      g_return_if_reached ();
    }
  pl_window_cancel (self);
  PlDocument *doc = g_rc_box_new0 (PlDocument);
  doc->file = g_object_ref (current);
  doc->history = history;
  pl_window_set_banner (self, NULL, FALSE);
  self->pending_step = -1;
  set_busy (self, TRUE);
  install_document (self, doc);
}
