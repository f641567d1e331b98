/* pl-window.c — the workbench window: the open document, the worker that
 * loads, runs pipelines and lays out, and keeping the views in step.
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
 *
 * Actions, dialogs, drag and drop, recent files and the saved window state
 * live in pl-window-actions.c.
 */
#define G_LOG_DOMAIN "passlab"

#include "pl-window-private.h"

#include "onnx-io.h"
#include "passlab-resources.h"
#include "pl-memory-view.h"
#include "pl-run-panel.h"
#include "pl-script-panel.h"
#include "pl-tune-panel.h"

/* --- documents -------------------------------------------------------------------- */

static void
document_clear (PlDocument *doc)
{
  g_clear_object (&doc->file);
  g_clear_pointer (&doc->history, pl_history_free);
}

PlDocument *
pl_document_ref (PlDocument *doc)
{
  return g_rc_box_acquire (doc);
}

void
pl_document_unref (PlDocument *doc)
{
  g_rc_box_release_full (doc, (GDestroyNotify) document_clear);
}

/* --- the window --------------------------------------------------------------------- */

G_DEFINE_FINAL_TYPE (PlWindow, pl_window, GTK_TYPE_APPLICATION_WINDOW)

enum {
  PROP_0,
  PROP_BUSY,
  PROP_HAS_GRAPH,
  PROP_CAN_RUN,
  PROP_CAN_STEP_BACK,
  PROP_CAN_STEP_FORWARD,
  N_PROPS
};
static GParamSpec *properties[N_PROPS];

/* The pipeline presets of the header bar's drop-down; the last entry of the
 * drop-down, "Custom", stands for whatever else is typed in the entry. */
static const struct {
  const char *label;
  const char *spec;
} presets[] = {
  { "Full pipeline", PL_WINDOW_DEFAULT_PIPELINE },
  { "Simplify", "simplify" },
  { "Simplify, decompose", "simplify,decompose" },
  { "Reshape sinking", "simplify,reshape-sink" },
  { "Library fusion", "simplify,decompose,fuse-library" },
  { "Loop fusion", "simplify,decompose,fuse-loops" },
};

static void
notify_state (PlWindow *self)
{
  for (int p = PROP_BUSY; p < N_PROPS; p++)
    g_object_notify_by_pspec (G_OBJECT (self), properties[p]);
}

static gboolean
can_step (PlWindow *self, int direction)
{
  if (!self->doc || self->busy)
    return FALSE;
  int to = direction > 0 ? pl_timeline_next_step (self->timeline, self->step)
                         : pl_timeline_prev_step (self->timeline, self->step);
  return to >= 0;
}

static const PlStep *
current_step (PlWindow *self)
{
  return self->doc ? pl_history_step (self->doc->history, self->step) : NULL;
}

/* --- banner ----------------------------------------------------------------------------- */

void
pl_window_set_banner (PlWindow *self, const char *message, gboolean is_error)
{
  g_clear_pointer (&self->banner_text, g_free);
  if (!message)
    {
      gtk_revealer_set_reveal_child (self->banner_revealer, FALSE);
      return;
    }
  if (is_error)
    {
      self->banner_text = g_strdup (message);
      g_debug ("%s", message);
    }
  gtk_label_set_text (self->banner_label, message);
  /* Parse errors quote the line with a caret under the column: keep it aligned. */
  if (strchr (message, '\n'))
    gtk_widget_add_css_class (GTK_WIDGET (self->banner_label), "monospace");
  else
    gtk_widget_remove_css_class (GTK_WIDGET (self->banner_label), "monospace");
  gtk_image_set_from_icon_name (self->banner_icon, is_error ? "dialog-error-symbolic" : "dialog-information-symbolic");
  gtk_widget_remove_css_class (self->banner_box, is_error ? "info" : "error");
  gtk_widget_add_css_class (self->banner_box, is_error ? "error" : "info");
  gtk_revealer_set_reveal_child (self->banner_revealer, TRUE);
}

void
pl_window_show_error (PlWindow *self, const char *message)
{
  g_return_if_fail (PL_IS_WINDOW (self));
  pl_window_set_banner (self, message, TRUE);
}

const char *
pl_window_get_error (PlWindow *self)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), NULL);
  return self->banner_text;
}

/* --- what is shown ------------------------------------------------------------------------ */

/* The header shows the file name over the step ("step 4 of 5: fuse-library");
 * self->subtitle holds both on one line (tests and the window title use it). */
static void
update_titles (PlWindow *self)
{
  g_clear_pointer (&self->subtitle, g_free);
  if (!self->doc)
    {
      gtk_label_set_text (self->title_label, "passlab");
      gtk_label_set_text (self->subtitle_label, "");
      gtk_widget_set_visible (GTK_WIDGET (self->subtitle_label), FALSE);
      gtk_window_set_title (GTK_WINDOW (self), "passlab");
      return;
    }
  g_autofree char *name = g_file_get_basename (self->doc->file);
  const PlStep *s = current_step (self);
  int passes = pl_history_n_steps (self->doc->history) - 1;
  g_autofree char *where = NULL;
  if (passes == 0)
    where = g_strdup_printf ("%" G_GINT64_FORMAT " nodes, no passes run", s->stats.nodes);
  else if (self->step == 0)
    where = g_strdup_printf ("step 0 of %d: the loaded graph", passes);
  else
    where = g_strdup_printf ("step %d of %d: %s%s", self->step, passes, s->pass_name, s->changed ? "" : " (no change)");
  self->subtitle = g_strdup_printf ("%s — %s", name, where);
  gtk_label_set_text (self->title_label, name);
  gtk_label_set_text (self->subtitle_label, where);
  gtk_widget_set_visible (GTK_WIDGET (self->subtitle_label), TRUE);
  g_autofree char *title = g_strdup_printf ("%s — passlab", self->subtitle);
  gtk_window_set_title (GTK_WINDOW (self), title);
}

/* The legend over the canvas says what the diff colours mean for this step
 * (the colours are the canvas's, pl-graph-draw.c). */
static void
update_legend (PlWindow *self)
{
  const PlStep *s = current_step (self);
  if (!s || self->step == 0)
    {
      gtk_widget_set_visible (GTK_WIDGET (self->legend_label), FALSE);
      return;
    }
  g_autofree char *markup = NULL;
  if (!s->changed || !s->diff)
    markup = g_markup_printf_escaped ("<b>%s</b> changed nothing", s->pass_name);
  else
    markup = g_markup_printf_escaped ("<b>%s</b> against step %d:  "
                                      "<span foreground='#26a269'>■</span> %u added   "
                                      "<span foreground='#e5a50a'>■</span> %u changed   "
                                      "<span foreground='#9a9a9a'>▢</span> %u removed (ghosted)",
                                      s->pass_name, self->step - 1, s->diff->added->len, s->diff->changed->len,
                                      s->diff->removed->len);
  gtk_label_set_markup (self->legend_label, markup);
  gtk_widget_set_visible (GTK_WIDGET (self->legend_label), TRUE);
}

static void
refresh_inspector (PlWindow *self)
{
  const PlStep *s = current_step (self);
  pl_inspector_show (self->inspector, s ? s->graph : NULL, s ? pl_graph_canvas_get_selected (self->canvas) : NULL, s,
                     self->step);
}

static void
show_step (PlWindow *self, int i)
{
  const PlHistory *h = self->doc->history;
  self->step = CLAMP (i, 0, pl_history_n_steps (h) - 1);
  const PlStep *s = pl_history_step (h, self->step);
  const PlStep *prev = self->step > 0 ? pl_history_step (h, self->step - 1) : NULL;
  pl_graph_canvas_set_graph (self->canvas, s->graph, prev ? prev->graph : NULL, prev ? s->diff : NULL);
  pl_timeline_set_selected_step (self->timeline, self->step);
  update_titles (self);
  update_legend (self);
  refresh_inspector (self);
  notify_state (self);
}

gboolean
pl_window_set_step (PlWindow *self, int i)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), FALSE);
  if (!self->doc || i < 0 || i >= pl_history_n_steps (self->doc->history))
    return FALSE;
  show_step (self, i);
  return TRUE;
}

int
pl_window_get_step (PlWindow *self)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), -1);
  return self->doc ? self->step : -1;
}

gboolean
pl_window_step_forward (PlWindow *self)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), FALSE);
  return self->doc && pl_window_set_step (self, pl_timeline_next_step (self->timeline, self->step));
}

gboolean
pl_window_step_back (PlWindow *self)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), FALSE);
  return self->doc && pl_window_set_step (self, pl_timeline_prev_step (self->timeline, self->step));
}

static void
select_key (PlWindow *self, const char *key)
{
  pl_graph_canvas_select (self->canvas, key);
  if (key)
    pl_graph_canvas_center_on (self->canvas, key);
  refresh_inspector (self);
}

gboolean
pl_window_select (PlWindow *self, const char *name_or_key)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), FALSE);
  const PlStep *s = current_step (self);
  if (!s || !name_or_key)
    return FALSE;
  g_autofree char *key = pl_graph_key_for_name (s->graph, name_or_key);
  if (!key)
    return FALSE;
  select_key (self, key);
  return TRUE;
}

gboolean
pl_window_search_next (PlWindow *self, const char *text)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), FALSE);
  if (!self->doc || !pl_graph_canvas_get_layout (self->canvas) || !text || !*text)
    return FALSE;
  gboolean found = pl_graph_canvas_search_next (self->canvas, text);
  gtk_label_set_text (self->search_status, found ? "" : "no match");
  if (found)
    gtk_widget_remove_css_class (GTK_WIDGET (self->search_entry), "error");
  else
    gtk_widget_add_css_class (GTK_WIDGET (self->search_entry), "error");
  refresh_inspector (self);
  return found;
}

void
pl_window_zoom (PlWindow *self, int direction)
{
  if (!self->doc || !pl_graph_canvas_get_layout (self->canvas))
    return;
  if (direction == 0)
    pl_graph_canvas_zoom_fit (self->canvas);
  else
    pl_graph_canvas_zoom_by (self->canvas, direction > 0 ? 1.25 : 0.8);
}

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

static void
set_busy (PlWindow *self, gboolean busy)
{
  self->busy = busy;
  gtk_revealer_set_reveal_child (self->progress_revealer, busy);
  if (busy)
    gtk_spinner_start (self->progress_spinner);
  else
    gtk_spinner_stop (self->progress_spinner);
  notify_state (self);
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
  show_step (self, step);
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

static void
on_layout_finished (PlGraphCanvas *canvas, const char *error, PlWindow *self)
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

/* --- bottom pages --------------------------------------------------------------------------- */

void
pl_window_add_bottom_page (PlWindow *self, GtkWidget *page, const char *name, const char *title)
{
  g_return_if_fail (PL_IS_WINDOW (self));
  g_return_if_fail (GTK_IS_WIDGET (page));
  gtk_stack_add_titled (self->bottom_stack, page, name, title);
}

void
pl_window_show_bottom_page (PlWindow *self, const char *name)
{
  g_return_if_fail (PL_IS_WINDOW (self));
  gtk_stack_set_visible_child_name (self->bottom_stack, name);
}

GtkWidget *
pl_window_get_script_panel (PlWindow *self)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), NULL);
  return self->script_panel;
}

/* --- accessors ------------------------------------------------------------------------------ */

gboolean
pl_window_is_busy (PlWindow *self)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), FALSE);
  return self->busy;
}

gboolean
pl_window_has_graph (PlWindow *self)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), FALSE);
  return self->doc != NULL;
}

GFile *
pl_window_get_file (PlWindow *self)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), NULL);
  return self->doc ? self->doc->file : NULL;
}

const PlHistory *
pl_window_get_history (PlWindow *self)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), NULL);
  return self->doc ? self->doc->history : NULL;
}

const char *
pl_window_get_subtitle (PlWindow *self)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), NULL);
  return self->subtitle;
}

PlGraphCanvas *
pl_window_get_canvas (PlWindow *self)
{
  return self->canvas;
}

PlTimeline *
pl_window_get_timeline (PlWindow *self)
{
  return self->timeline;
}

PlInspector *
pl_window_get_inspector (PlWindow *self)
{
  return self->inspector;
}

GMenuModel *
pl_window_get_recent_menu (PlWindow *self)
{
  return G_MENU_MODEL (self->recent_menu);
}

gboolean
pl_window_save_screenshot (PlWindow *self, const char *path, GError **error)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), FALSE);
  GtkWidget *widget = GTK_WIDGET (self);
  int width = gtk_widget_get_width (widget), height = gtk_widget_get_height (widget);
  GskRenderer *renderer = gtk_native_get_renderer (GTK_NATIVE (self));
  if (width <= 0 || height <= 0 || !renderer)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_FAILED, "the window is not shown yet");
      return FALSE;
    }
  g_autoptr (GdkPaintable) paintable = gtk_widget_paintable_new (widget);
  GtkSnapshot *snapshot = gtk_snapshot_new ();
  gdk_paintable_snapshot (paintable, snapshot, width, height);
  g_autoptr (GskRenderNode) node = gtk_snapshot_free_to_node (snapshot);
  if (!node)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_FAILED, "the window drew nothing");
      return FALSE;
    }
  g_autoptr (GdkTexture) texture = gsk_renderer_render_texture (renderer, node, &GRAPHENE_RECT_INIT (0, 0, width, height));
  if (!texture || !gdk_texture_save_to_png (texture, path))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "cannot write %s", path);
      return FALSE;
    }
  return TRUE;
}

/* --- template callbacks -------------------------------------------------------------------- */

static void
on_canvas_selection_changed (PlGraphCanvas *canvas, const char *key, PlWindow *self)
{
  refresh_inspector (self);
}

static void
on_inspector_key_activated (PlInspector *inspector, const char *key, PlWindow *self)
{
  select_key (self, key);
}

static void
on_timeline_step_selected (PlTimeline *timeline, int step, PlWindow *self)
{
  if (self->doc && step != self->step)
    show_step (self, step);
}

static void
on_hide_unchanged_changed (PlTimeline *timeline, GParamSpec *pspec, PlWindow *self)
{
  notify_state (self);
}

static void
on_pipeline_entry_activate (GtkEntry *entry, PlWindow *self)
{
  if (self->doc && !self->busy)
    pl_window_run_pipeline (self, NULL);
}

/* The drop-down follows the entry: a preset when the text is one, else "Custom". */
static void
on_pipeline_entry_changed (GtkEntry *entry, PlWindow *self)
{
  if (self->ignore_preset)
    return;
  const char *text = gtk_editable_get_text (GTK_EDITABLE (entry));
  guint selected = G_N_ELEMENTS (presets);
  for (guint i = 0; i < G_N_ELEMENTS (presets); i++)
    if (g_str_equal (presets[i].spec, text))
      selected = i;
  self->ignore_preset++;
  gtk_drop_down_set_selected (self->pipeline_dropdown, selected);
  self->ignore_preset--;
}

static void
on_preset_selected (GtkDropDown *dropdown, GParamSpec *pspec, PlWindow *self)
{
  guint i = gtk_drop_down_get_selected (dropdown);
  if (self->ignore_preset || i >= G_N_ELEMENTS (presets))
    return;
  self->ignore_preset++;
  gtk_editable_set_text (GTK_EDITABLE (self->pipeline_entry), presets[i].spec);
  self->ignore_preset--;
}

static void
on_search_activate (GtkSearchEntry *entry, PlWindow *self)
{
  pl_window_search_next (self, gtk_editable_get_text (GTK_EDITABLE (entry)));
}

/* Typing searches from the top again. */
static void
on_search_changed (GtkSearchEntry *entry, PlWindow *self)
{
  const char *text = gtk_editable_get_text (GTK_EDITABLE (entry));
  gtk_widget_remove_css_class (GTK_WIDGET (entry), "error");
  gtk_label_set_text (self->search_status, "");
  if (!*text || !self->doc || !pl_graph_canvas_get_layout (self->canvas))
    return;
  pl_graph_canvas_select (self->canvas, NULL);
  pl_window_search_next (self, text);
}

static void
on_search_stop (GtkSearchEntry *entry, PlWindow *self)
{
  gtk_search_bar_set_search_mode (self->search_bar, FALSE);
  gtk_widget_grab_focus (GTK_WIDGET (self->canvas));
}

/* --- GObject ------------------------------------------------------------------------------- */

static void
pl_window_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  PlWindow *self = PL_WINDOW (object);
  switch (prop_id)
    {
    case PROP_BUSY:
      g_value_set_boolean (value, self->busy);
      break;
    case PROP_HAS_GRAPH:
      g_value_set_boolean (value, self->doc != NULL);
      break;
    case PROP_CAN_RUN:
      g_value_set_boolean (value, self->doc != NULL && !self->busy);
      break;
    case PROP_CAN_STEP_BACK:
      g_value_set_boolean (value, can_step (self, -1));
      break;
    case PROP_CAN_STEP_FORWARD:
      g_value_set_boolean (value, can_step (self, +1));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
pl_window_dispose (GObject *object)
{
  PlWindow *self = PL_WINDOW (object);
  if (self->cancellable)
    g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->cancellable);
  gtk_widget_dispose_template (GTK_WIDGET (self), PL_TYPE_WINDOW);
  G_OBJECT_CLASS (pl_window_parent_class)->dispose (object);
}

static void
pl_window_finalize (GObject *object)
{
  PlWindow *self = PL_WINDOW (object);
  /* The canvas is gone (template disposed): nothing points into the document now. */
  g_clear_pointer (&self->doc, pl_document_unref);
  g_free (self->subtitle);
  g_free (self->banner_text);
  g_free (self->pending_select);
  g_clear_object (&self->recent_menu);
  G_OBJECT_CLASS (pl_window_parent_class)->finalize (object);
}

static void
pl_window_class_init (PlWindowClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->get_property = pl_window_get_property;
  object_class->dispose = pl_window_dispose;
  object_class->finalize = pl_window_finalize;

  /* Read-only state that action enabled-ness is bound to. */
  properties[PROP_BUSY] = g_param_spec_boolean ("busy", NULL, NULL, FALSE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_HAS_GRAPH] =
    g_param_spec_boolean ("has-graph", NULL, NULL, FALSE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_CAN_RUN] = g_param_spec_boolean ("can-run", NULL, NULL, FALSE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_CAN_STEP_BACK] =
    g_param_spec_boolean ("can-step-back", NULL, NULL, FALSE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_CAN_STEP_FORWARD] =
    g_param_spec_boolean ("can-step-forward", NULL, NULL, FALSE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  /* Referencing the resource bundle keeps its object (and the constructor
   * that registers it) in programs that link the static ui library. */
  (void) passlab_get_resource ();
  g_type_ensure (PL_TYPE_GRAPH_CANVAS);
  g_type_ensure (PL_TYPE_TIMELINE);
  g_type_ensure (PL_TYPE_INSPECTOR);

  gtk_widget_class_set_template_from_resource (widget_class, "/org/passlab/Passlab/pl-window.ui");
  gtk_widget_class_bind_template_child (widget_class, PlWindow, title_label);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, subtitle_label);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, recent_button);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, pipeline_dropdown);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, preset_list);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, pipeline_entry);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, banner_revealer);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, banner_box);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, banner_icon);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, banner_label);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, search_bar);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, search_entry);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, search_status);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, outer_paned);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, inner_paned);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, view_stack);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, canvas_overlay);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, canvas);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, legend_label);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, timeline);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, bottom_stack);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, inspector);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, progress_revealer);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, progress_spinner);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, progress_label);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, progress_bar);
  gtk_widget_class_bind_template_callback (widget_class, on_pipeline_entry_activate);
  gtk_widget_class_bind_template_callback (widget_class, on_pipeline_entry_changed);
  gtk_widget_class_bind_template_callback (widget_class, on_search_activate);
  gtk_widget_class_bind_template_callback (widget_class, on_search_changed);
  gtk_widget_class_bind_template_callback (widget_class, on_search_stop);
}

static void
pl_window_init (PlWindow *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
  self->pending_step = 0;

  for (guint i = 0; i < G_N_ELEMENTS (presets); i++)
    gtk_string_list_append (self->preset_list, presets[i].label);
  gtk_string_list_append (self->preset_list, "Custom");
  g_signal_connect (self->pipeline_dropdown, "notify::selected", G_CALLBACK (on_preset_selected), self);
  gtk_editable_set_text (GTK_EDITABLE (self->pipeline_entry), PL_WINDOW_DEFAULT_PIPELINE);

  g_signal_connect (self->canvas, "selection-changed", G_CALLBACK (on_canvas_selection_changed), self);
  g_signal_connect (self->canvas, "layout-finished", G_CALLBACK (on_layout_finished), self);
  g_signal_connect (self->inspector, "key-activated", G_CALLBACK (on_inspector_key_activated), self);
  g_signal_connect (self->timeline, "step-selected", G_CALLBACK (on_timeline_step_selected), self);
  g_signal_connect (self->timeline, "notify::hide-unchanged", G_CALLBACK (on_hide_unchanged_changed), self);
  gtk_search_bar_connect_entry (self->search_bar, GTK_EDITABLE (self->search_entry));
  gtk_stack_set_visible_child_name (self->view_stack, "empty");

  self->script_panel = pl_script_panel_new (self);
  pl_window_add_bottom_page (self, self->script_panel, "script", "Script");
  pl_window_add_bottom_page (self, pl_run_panel_new (self), "run", "Run");
  pl_window_add_bottom_page (self, pl_memory_view_new (self), "memory", "Memory");
  pl_window_add_bottom_page (self, pl_tune_panel_new (self), "tuning", "Tuning");

  pl_window_actions_init (self);
  update_titles (self);
  pl_inspector_clear (self->inspector);
}

PlWindow *
pl_window_new (PlApplication *app)
{
  return g_object_new (PL_TYPE_WINDOW, "application", app, NULL);
}
