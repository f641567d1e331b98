/* pl-tune-panel.c — the tuning page (see pl-tune-panel.h). Built in code: a
 * tool row (convolution, layout, trials, Tune, Cancel, status), then the
 * chart of best time so far against trials (the full search and the pruned
 * one as two step lines) beside a summary of the result.
 *
 * A tune copies the current step's graph and a worker thread (GTask) runs
 * pl_tune_conv on the Conv in the copy; the result comes back to the main
 * thread and stays until the next successful tune. pl_tune_conv cannot be
 * interrupted, so Cancel abandons the worker: its result is dropped when it
 * arrives, and no new tune starts before then (two at once would time each
 * other's kernels). */
#define G_LOG_DOMAIN "passlab"

#include "pl-tune-panel.h"

#include "calibrate.h"
#include "pass-manager.h"
#include "pl-panel-util.h"
#include "pl-quiet.h"

#define DEFAULT_TRIALS 32

/* What one tune needs and gives back. Freed on the main thread. */
typedef struct {
  PlGraph      *graph;     /* a copy of the step's graph: the Conv lives in it */
  char         *key;       /* the Conv's canvas key in it */
  PlLayout      layout;
  int           trials;
  PlTuneResult *result;
  double        fma_peak;  /* the cpu's peak, GFLOP/s (the calibration's; 0: unknown) */
  PlQuiet      *quiet;     /* the window's frames while the trials were timed */
} TuneJob;

struct _PlTunePanel
{
  GtkBox         parent_instance;

  PlWindow      *window;           /* weak */
  GtkDropDown   *conv_dropdown;
  GtkStringList *conv_names;       /* what the dropdown shows */
  GPtrArray     *conv_keys;        /* canvas key per entry */
  GtkDropDown   *layout_dropdown;
  GtkSpinButton *trials_spin;
  GtkButton     *tune_button;
  GtkButton     *cancel_button;
  GtkLabel      *status_label;
  PlChart       *chart;
  GtkLabel      *verdict_label;
  GtkGrid       *summary_grid;

  GCancellable  *cancellable;      /* cancelled when the panel goes away */
  gboolean       running;          /* a worker is out */
  gboolean       abandoned;        /* ... and Cancel was pressed: drop what it brings */
  PlTuneResult  *result;
  double         fma_peak;         /* the result's cpu peak, GFLOP/s (0: unknown) */
  int            frames;           /* the result's frames drawn while it was timed (pl-quiet.h) */
  char          *error;
  char          *verdict;
  gboolean       syncing;          /* the selection is being propagated: ignore echoes */
};

G_DEFINE_FINAL_TYPE (PlTunePanel, pl_tune_panel, GTK_TYPE_BOX)

enum { SIGNAL_TUNE_FINISHED, N_SIGNALS };
static guint signals[N_SIGNALS];

static void
tune_job_free (TuneJob *job)
{
  if (!job)
    return;
  g_clear_pointer (&job->result, pl_tune_result_free);
  g_clear_pointer (&job->graph, pl_graph_free);
  g_clear_pointer (&job->quiet, pl_quiet_free);
  g_free (job->key);
  g_free (job);
}

static char *
format_ms (double ms)
{
  if (ms >= 10)
    return g_strdup_printf ("%.1f ms", ms);
  if (ms >= 0.01)
    return g_strdup_printf ("%.3f ms", ms);
  return g_strdup_printf ("%.5f ms", ms);
}

static char *
format_tile (const int64_t t[3])
{
  return g_strdup_printf ("%" G_GINT64_FORMAT "×%" G_GINT64_FORMAT "×%" G_GINT64_FORMAT, t[0], t[1], t[2]);
}

/* --- the convs of the current step ----------------------------------------------------------- */

static const PlGraph *
current_graph (PlTunePanel *self)
{
  const PlHistory *h = self->window ? pl_window_get_history (self->window) : NULL;
  const PlStep *s = h ? pl_history_step (h, pl_window_get_step (self->window)) : NULL;
  return s ? s->graph : NULL;
}

/* The node a canvas key names ("n12", "n5/n2": through fusion bodies), or NULL. */
static const PlNode *
node_at_key (const PlGraph *g, const char *key)
{
  const PlNode *node = NULL;
  for (const char *seg = key; g && seg && *seg == 'n'; )
    {
      char *end = NULL;
      guint64 id = g_ascii_strtoull (seg + 1, &end, 10);
      if (end == seg + 1 || id > G_MAXUINT32)
        return NULL;
      node = pl_graph_node_by_id (g, (guint32) id);
      if (!node || *end == '\0')
        return node;
      if (*end != '/')
        return NULL;
      g = node->body;
      seg = end + 1;
    }
  return NULL;
}

/* Every Conv of g, fusion bodies included: keys and names to show. */
static void
collect_convs (const PlGraph *g, const char *prefix, const char *inside, GPtrArray *keys, GPtrArray *names)
{
  for (guint i = 0; i < g->nodes->len; i++)
    {
      const PlNode *n = g->nodes->pdata[i];
      g_autofree char *key = g_strdup_printf ("%sn%u", prefix, n->id);
      if (n->op == PL_OP_Conv)
        {
          g_ptr_array_add (keys, g_strdup (key));
          g_ptr_array_add (names, inside ? g_strdup_printf ("%s (in %s)", n->name, inside) : g_strdup (n->name));
        }
      if (n->body)
        {
          g_autofree char *inner = g_strconcat (key, "/", NULL);
          collect_convs (n->body, inner, n->name, keys, names);
        }
    }
}

static const char *
selected_key (PlTunePanel *self)
{
  guint i = gtk_drop_down_get_selected (self->conv_dropdown);
  return i < self->conv_keys->len ? self->conv_keys->pdata[i] : NULL;
}

static void update_sensitivity (PlTunePanel *self);

/* Lists the current step's convs again when they changed, keeping the pick. */
static void
refresh_convs (PlTunePanel *self)
{
  g_autoptr (GPtrArray) keys = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  const PlGraph *g = current_graph (self);
  if (g)
    collect_convs (g, "", NULL, keys, names);
  bool same = keys->len == self->conv_keys->len;
  for (guint i = 0; same && i < keys->len; i++)
    same = g_str_equal (keys->pdata[i], self->conv_keys->pdata[i])
           && g_str_equal (names->pdata[i], gtk_string_list_get_string (self->conv_names, i));
  if (same)
    return;
  g_autofree char *was = g_strdup (selected_key (self));
  self->syncing = TRUE;
  g_ptr_array_add (names, NULL);
  gtk_string_list_splice (self->conv_names, 0, g_list_model_get_n_items (G_LIST_MODEL (self->conv_names)),
                          (const char *const *) names->pdata);
  g_ptr_array_set_size (self->conv_keys, 0);
  guint pick = 0;
  for (guint i = 0; i < keys->len; i++)
    {
      if (was && g_str_equal (was, keys->pdata[i]))
        pick = i;
      g_ptr_array_add (self->conv_keys, g_strdup (keys->pdata[i]));
    }
  gtk_drop_down_set_selected (self->conv_dropdown, keys->len > 0 ? pick : GTK_INVALID_LIST_POSITION);
  self->syncing = FALSE;
  update_sensitivity (self);
}

static void
on_window_state (PlWindow *window, GParamSpec *pspec, PlTunePanel *self)
{
  refresh_convs (self);
}

/* Picking a conv takes its layout as the one to tune in. */
static void
on_conv_picked (GtkDropDown *dd, GParamSpec *pspec, PlTunePanel *self)
{
  const PlNode *conv = node_at_key (current_graph (self), selected_key (self) ? selected_key (self) : "");
  if (conv && conv->n_outputs > 0 && conv->outputs[0])
    gtk_drop_down_set_selected (self->layout_dropdown, conv->outputs[0]->layout);
  if (self->syncing || !self->window || !conv)
    return;
  /* ... and shows it on the canvas. */
  self->syncing = TRUE;
  pl_graph_canvas_select (pl_window_get_canvas (self->window), selected_key (self));
  pl_graph_canvas_center_on (pl_window_get_canvas (self->window), selected_key (self));
  self->syncing = FALSE;
}

static gboolean
pick_key (PlTunePanel *self, const char *key)
{
  for (guint i = 0; key && i < self->conv_keys->len; i++)
    if (g_str_equal (key, self->conv_keys->pdata[i]))
      {
        gtk_drop_down_set_selected (self->conv_dropdown, i);
        return TRUE;
      }
  return FALSE;
}

/* A Conv selected on the canvas becomes the one to tune. */
static void
on_canvas_selection_changed (PlGraphCanvas *canvas, const char *key, PlTunePanel *self)
{
  if (self->syncing || !self->window || self->running)
    return;
  refresh_convs (self);
  self->syncing = TRUE;
  pick_key (self, key);
  self->syncing = FALSE;
}

/* --- showing a result -------------------------------------------------------------------------- */

/* The 1-based trial at which a search first reached its final best. */
static int
trial_of_best (const GArray *trials, double best)
{
  for (guint i = 0; i < trials->len; i++)
    if (g_array_index (trials, PlTuneTrial, i).best_ms <= best)
      return (int) i + 1;
  return (int) trials->len;
}

static void
add_series (PlChart *chart, const char *name, const GArray *trials, double x_end, PlChartColor color)
{
  int n = (int) trials->len;
  g_autofree double *xs = g_new (double, MAX (n, 1));
  g_autofree double *ys = g_new (double, MAX (n, 1));
  g_autofree char **labels = g_new0 (char *, n + 1);
  for (int i = 0; i < n; i++)
    {
      const PlTuneTrial *t = &g_array_index (trials, PlTuneTrial, i);
      xs[i] = i + 1;
      ys[i] = t->best_ms;
      g_autofree char *tile = format_tile (t->tile);
      g_autofree char *ms = format_ms (t->ms), *best = format_ms (t->best_ms);
      labels[i] = g_strdup_printf ("%s trial %d: tile %s, %s (best so far %s)", name, i + 1, tile, ms, best);
    }
  pl_chart_add_series (chart, name, xs, ys, n, x_end, color, FALSE, (const char *const *) labels);
  for (int i = 0; i < n; i++)
    g_free (labels[i]);
}

static void
add_summary_row (PlTunePanel *self, int row, const char *name, const char *value)
{
  GtkWidget *n = gtk_label_new (name);
  gtk_label_set_xalign (GTK_LABEL (n), 0);
  gtk_widget_set_valign (n, GTK_ALIGN_START);
  gtk_widget_add_css_class (n, "dim-label");
  GtkWidget *v = gtk_label_new (value);
  gtk_label_set_xalign (GTK_LABEL (v), 0);
  gtk_label_set_wrap (GTK_LABEL (v), TRUE);
  gtk_label_set_selectable (GTK_LABEL (v), TRUE);
  gtk_widget_set_focusable (v, FALSE);
  gtk_widget_set_hexpand (v, TRUE);
  gtk_grid_attach (self->summary_grid, n, 0, row, 1, 1);
  gtk_grid_attach (self->summary_grid, v, 1, row, 1, 1);
}

static void
clear_summary (PlTunePanel *self)
{
  GtkWidget *child;
  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self->summary_grid))))
    gtk_grid_remove (self->summary_grid, child);
}

/* "The pruned search's best tile runs at 97% of the full search's best
 * speed (head to head, median of 7 rounds); found in 12 of 32 trials
 * (...)": the two best tiles timed side by side (tune.h) — a search's own
 * best is the minimum of many noisy trials and flatters the longer one. */
static char *
verdict_text (const PlTuneResult *r)
{
  if (r->pruned->len == 0 || r->full->len == 0 || r->head_pruned_ms <= 0)
    return g_strdup ("Not enough trials to compare the searches.");
  double pct = 100.0 * r->head_full_ms / r->head_pruned_ms;
  int n = trial_of_best (r->pruned, r->best_pruned_ms), m = (int) r->pruned->len;
  int k = trial_of_best (r->full, r->best_full_ms), l = (int) r->full->len;
  return g_strdup_printf ("The pruned search's best tile runs at %.0f%% of the full search's best%s "
                          "(%s 5%%; side by side, median of %d rounds), found in %d of %d trials "
                          "(the full search found its best at trial %d of %d)",
                          pct, pct > 100.5 ? " (a faster tile)" : "",
                          r->head_pruned_ms <= 1.05 * r->head_full_ms ? "within" : "not within", r->rounds, n, m, k,
                          l);
}

static void
show_result (PlTunePanel *self)
{
  const PlTuneResult *r = self->result;
  double x_end = MAX (r->full->len, r->pruned->len) + 1;
  pl_chart_set_lines (self->chart, "trials", FALSE, "ms");
  /* The first tiles of a random walk can be 30 times slower than the best:
   * decades, and each search's best marked rather than its first trial. */
  pl_chart_set_log_y (self->chart, TRUE, TRUE);
  add_series (self->chart, "full search", r->full, x_end, PL_CHART_COLOR_ORANGE);
  add_series (self->chart, "pruned (pebble rule)", r->pruned, x_end, PL_CHART_COLOR_ACCENT);
  int k = trial_of_best (r->full, r->best_full_ms), n = trial_of_best (r->pruned, r->best_pruned_ms);
  g_autofree char *full_at = g_strdup_printf ("the full search found its best at trial %d", k);
  g_autofree char *pruned_at = g_strdup_printf ("the pruned search found its best at trial %d", n);
  pl_chart_add_x_mark (self->chart, k, PL_CHART_COLOR_ORANGE, TRUE, "full best found", full_at);
  pl_chart_add_x_mark (self->chart, n, PL_CHART_COLOR_ACCENT, TRUE, "pruned best found", pruned_at);

  g_free (self->verdict);
  self->verdict = verdict_text (r);
  gtk_label_set_text (self->verdict_label, self->verdict);

  clear_summary (self);
  g_autofree char *conv = g_strdup_printf ("%s — %s", r->conv, r->shape ? r->shape : "");
  g_autofree char *spaces = g_strdup_printf ("full %d tiles, pruned %d (%.1f%%)", r->full_space, r->pruned_space,
                                             r->full_space > 0 ? 100.0 * r->pruned_space / r->full_space : 0.0);
  g_autofree char *pebble = format_tile (r->pebble_tile);
  g_autofree char *ft = format_tile (r->best_full_tile), *fm = format_ms (r->best_full_ms);
  g_autofree char *pt = format_tile (r->best_pruned_tile), *pm = format_ms (r->best_pruned_ms);
  g_autofree char *full = g_strdup_printf ("%s in %s (trial %d of %u)", ft, fm, k, r->full->len);
  g_autofree char *pruned = g_strdup_printf ("%s in %s (trial %d of %u)", pt, pm, n, r->pruned->len);
  int row = 0;
  add_summary_row (self, row++, "convolution", conv);
  add_summary_row (self, row++, "layout", pl_layout_name (r->layout));
  add_summary_row (self, row++, "tile spaces", spaces);
  add_summary_row (self, row++, "pebble tile", pebble);
  add_summary_row (self, row++, "best, full", full);
  add_summary_row (self, row++, "best, pruned", pruned);
  double best_ms = MIN (r->best_full_ms, r->best_pruned_ms), gflops = best_ms > 0 ? r->gflop / best_ms * 1e3 : 0;
  if (gflops > 0)
    {
      g_autofree char *speed = self->fma_peak > 0
                               ? g_strdup_printf ("%.1f GFLOP/s, %.0f%% of this cpu's FMA peak (%.0f GFLOP/s)", gflops,
                                                  100.0 * gflops / self->fma_peak, self->fma_peak)
                               : g_strdup_printf ("%.1f GFLOP/s", gflops);
      add_summary_row (self, row++, "best speed", speed);
    }

  g_autofree char *status = g_strdup_printf ("Tuned %s in %s: best tile %s, %s", r->conv, pl_layout_name (r->layout),
                                             r->best_pruned_ms <= r->best_full_ms ? pt : ft,
                                             r->best_pruned_ms <= r->best_full_ms ? pm : fm);
  if (self->frames > 0)
    {
      g_autofree char *plain = g_steal_pointer (&status);
      status = g_strdup_printf ("%s. The window drew %d frame%s while the trials were timed, which may have slowed "
                                "them: tune again for clean figures", plain, self->frames, self->frames == 1 ? "" : "s");
    }
  pl_panel_set_status (self->status_label, status, self->frames > 0);
}

/* --- tuning -------------------------------------------------------------------------------------- */

static void
tune_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
  TuneJob *job = data;
  const PlNode *conv = node_at_key (job->graph, job->key);
  if (!conv)
    {
      g_task_return_new_error (task, PL_ERROR, PL_ERROR_FAILED, "the convolution is not in this step");
      return;
    }
  PlTuneOptions options = { .max_trials = job->trials, .repeat = 0, .seed = 1, .cache_dir = NULL };
  GError *error = NULL;
  pl_quiet_wait (job->quiet, cancellable);   /* the window's own drawing would be timed too */
  job->result = pl_tune_conv (conv, job->layout, &options, &error);
  pl_quiet_end (job->quiet);
  if (job->result)
    {
      /* measured once per machine and cached: a few tenths of a second the first time */
      g_autoptr (PlCalibration) cal = pl_calibration_new (PL_BACKEND_CPU, false, NULL);
      job->fma_peak = cal ? pl_calibration_fma_peak (cal) : 0;
    }
  if (!job->result)
    g_task_return_error (task, error);
  else
    g_task_return_boolean (task, TRUE);
}

static void
update_sensitivity (PlTunePanel *self)
{
  gboolean have = selected_key (self) != NULL;
  gtk_widget_set_sensitive (GTK_WIDGET (self->tune_button), !self->running && have);
  gtk_widget_set_sensitive (GTK_WIDGET (self->cancel_button), self->running && !self->abandoned);
  gtk_widget_set_sensitive (GTK_WIDGET (self->conv_dropdown), !self->running);
  gtk_widget_set_sensitive (GTK_WIDGET (self->layout_dropdown), !self->running);
  gtk_widget_set_sensitive (GTK_WIDGET (self->trials_spin), !self->running);
}

static void
tune_done (GObject *source, GAsyncResult *res, gpointer user_data)
{
  PlTunePanel *self = PL_TUNE_PANEL (source);
  GTask *task = G_TASK (res);
  TuneJob *job = g_task_get_task_data (task);
  g_autoptr (GError) error = NULL;
  gboolean ok = g_task_propagate_boolean (task, &error);
  if (g_cancellable_is_cancelled (self->cancellable))
    {
      /* The panel went away meanwhile: touch nothing of it. */
      tune_job_free (job);
      return;
    }
  self->running = FALSE;
  if (self->abandoned)
    {
      self->abandoned = FALSE;
      tune_job_free (job);
      pl_panel_set_status (self->status_label, "Cancelled.", FALSE);
      update_sensitivity (self);
      return;
    }
  g_clear_pointer (&self->error, g_free);
  if (ok)
    {
      g_clear_pointer (&self->result, pl_tune_result_free);
      self->result = g_steal_pointer (&job->result);
      self->fma_peak = job->fma_peak;
      self->frames = pl_quiet_frames (job->quiet);
      show_result (self);
    }
  else
    {
      self->error = g_strdup (error ? error->message : "the tune failed");
      g_autofree char *msg = g_strdup_printf ("Tuning failed: %s%s", self->error,
                                              self->result ? " (the last result is kept below)" : "");
      pl_panel_set_status (self->status_label, msg, TRUE);
    }
  tune_job_free (job);
  update_sensitivity (self);
  g_signal_emit (self, signals[SIGNAL_TUNE_FINISHED], 0, self->error);
}

static gboolean
refuse (PlTunePanel *self, GError **error, const char *message)
{
  pl_panel_set_status (self->status_label, message, TRUE);
  g_set_error_literal (error, PL_ERROR, PL_ERROR_FAILED, message);
  return FALSE;
}

gboolean
pl_tune_panel_run (PlTunePanel *self, GError **error)
{
  g_return_val_if_fail (PL_IS_TUNE_PANEL (self), FALSE);
  if (self->running)
    return refuse (self, error, self->abandoned ? "The cancelled search is still finishing; try again in a moment."
                                                : "A tune is already under way.");
  refresh_convs (self);
  const PlGraph *g = current_graph (self);
  const char *key = selected_key (self);
  if (!g)
    return refuse (self, error, "Open a graph with a convolution to tune it.");
  if (!key || !node_at_key (g, key))
    return refuse (self, error, "This step has no convolution to tune.");

  TuneJob *job = g_new0 (TuneJob, 1);
  job->graph = pl_graph_copy (g);
  job->key = g_strdup (key);
  job->layout = pl_tune_panel_get_layout (self);
  job->trials = gtk_spin_button_get_value_as_int (self->trials_spin);
  job->quiet = pl_quiet_new (GTK_WIDGET (self));
  g_clear_pointer (&self->error, g_free);
  self->running = TRUE;
  update_sensitivity (self);
  const PlNode *conv = node_at_key (g, key);
  /* No spinner (see pl-window-worker.c, set_busy): the window holds still while it measures. */
  g_autofree char *msg = g_strdup_printf ("Tuning %s in %s: up to %d trials in each search… (the window holds "
                                          "still while it measures)", conv->name, pl_layout_name (job->layout),
                                          job->trials);
  pl_panel_set_status (self->status_label, msg, FALSE);

  g_autoptr (GTask) task = g_task_new (self, NULL, tune_done, NULL);
  g_task_set_task_data (task, job, NULL); /* tune_done frees it */
  g_task_run_in_thread (task, tune_thread);
  return TRUE;
}

gboolean
pl_tune_panel_run_sync (PlTunePanel *self, GError **error)
{
  g_return_val_if_fail (PL_IS_TUNE_PANEL (self), FALSE);
  if (!pl_tune_panel_run (self, error))
    return FALSE;
  while (self->running && !self->abandoned)
    g_main_context_iteration (NULL, TRUE);
  if (self->error)
    {
      g_set_error_literal (error, PL_ERROR, PL_ERROR_EXEC, self->error);
      return FALSE;
    }
  return TRUE;
}

void
pl_tune_panel_cancel (PlTunePanel *self)
{
  g_return_if_fail (PL_IS_TUNE_PANEL (self));
  if (!self->running || self->abandoned)
    return;
  self->abandoned = TRUE;
  pl_panel_set_status (self->status_label,
                       "Cancelling: the search under way cannot be interrupted and finishes in the background…",
                       FALSE);
  update_sensitivity (self);
  g_signal_emit (self, signals[SIGNAL_TUNE_FINISHED], 0, "cancelled");
}

static void
on_tune_clicked (GtkButton *button, PlTunePanel *self)
{
  pl_tune_panel_run (self, NULL);
}

static void
on_cancel_clicked (GtkButton *button, PlTunePanel *self)
{
  pl_tune_panel_cancel (self);
}

/* --- construction -------------------------------------------------------------------------------- */

static GtkWidget *
labelled (GtkWidget *row, const char *text, GtkWidget *widget)
{
  gtk_box_append (GTK_BOX (row), gtk_label_new (text));
  gtk_box_append (GTK_BOX (row), widget);
  return widget;
}

static GtkWidget *
build_tool_row (PlTunePanel *self)
{
  GtkWidget *row = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 8);
  self->conv_names = gtk_string_list_new (NULL);
  self->conv_dropdown = GTK_DROP_DOWN (gtk_drop_down_new (G_LIST_MODEL (self->conv_names), NULL));
  gtk_widget_set_tooltip_text (GTK_WIDGET (self->conv_dropdown),
                               "The convolution to tune (selecting a Conv on the canvas picks it)");
  labelled (row, "Convolution", GTK_WIDGET (self->conv_dropdown));

  const char *layouts[PL_LAYOUT_COUNT + 1] = { NULL };
  for (int i = 0; i < PL_LAYOUT_COUNT; i++)
    layouts[i] = pl_layout_name (i);
  self->layout_dropdown = GTK_DROP_DOWN (gtk_drop_down_new_from_strings (layouts));
  gtk_widget_set_tooltip_text (GTK_WIDGET (self->layout_dropdown),
                               "The data layout of the convolution's input and output while tuning");
  labelled (row, "Layout", GTK_WIDGET (self->layout_dropdown));

  self->trials_spin = GTK_SPIN_BUTTON (gtk_spin_button_new_with_range (1, 2000, 1));
  gtk_spin_button_set_value (self->trials_spin, DEFAULT_TRIALS);
  gtk_widget_set_tooltip_text (GTK_WIDGET (self->trials_spin),
                               "Tiles timed in each search (the full space and the pruned one)");
  labelled (row, "Trials", GTK_WIDGET (self->trials_spin));

  self->tune_button = GTK_BUTTON (gtk_button_new_with_mnemonic ("_Tune"));
  gtk_widget_add_css_class (GTK_WIDGET (self->tune_button), "suggested-action");
  gtk_widget_set_tooltip_text (GTK_WIDGET (self->tune_button),
                               "Time the direct kernel's tiles on the cpu: a random walk through all tiles, "
                               "and the tiles the pebble rule keeps");
  g_signal_connect (self->tune_button, "clicked", G_CALLBACK (on_tune_clicked), self);
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (self->tune_button));
  self->cancel_button = GTK_BUTTON (gtk_button_new_with_mnemonic ("_Cancel"));
  g_signal_connect (self->cancel_button, "clicked", G_CALLBACK (on_cancel_clicked), self);
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (self->cancel_button));

  self->status_label = pl_panel_status_label ("Pick a convolution and tune its kernel's tile.");
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (self->status_label));
  return row;
}

static GtkWidget *
build_body (PlTunePanel *self)
{
  GtkWidget *left = gtk_box_new (GTK_ORIENTATION_VERTICAL, 4);
  GtkWidget *title = gtk_label_new ("Best time so far against trials");
  gtk_label_set_xalign (GTK_LABEL (title), 0);
  gtk_widget_add_css_class (title, "heading");
  gtk_box_append (GTK_BOX (left), title);
  self->chart = PL_CHART (pl_chart_new ());
  gtk_widget_set_vexpand (GTK_WIDGET (self->chart), TRUE);
  gtk_widget_set_hexpand (GTK_WIDGET (self->chart), TRUE);
  gtk_box_append (GTK_BOX (left), GTK_WIDGET (self->chart));

  GtkWidget *right = gtk_box_new (GTK_ORIENTATION_VERTICAL, 8);
  self->verdict_label = GTK_LABEL (gtk_label_new ("No tune yet."));
  gtk_label_set_xalign (self->verdict_label, 0);
  gtk_label_set_wrap (self->verdict_label, TRUE);
  gtk_widget_add_css_class (GTK_WIDGET (self->verdict_label), "tune-verdict");
  gtk_box_append (GTK_BOX (right), GTK_WIDGET (self->verdict_label));
  self->summary_grid = GTK_GRID (gtk_grid_new ());
  gtk_grid_set_column_spacing (self->summary_grid, 10);
  gtk_grid_set_row_spacing (self->summary_grid, 3);
  gtk_box_append (GTK_BOX (right), GTK_WIDGET (self->summary_grid));
  GtkWidget *sw = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (sw), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (sw), right);

  GtkWidget *p = pl_panel_paned (GTK_ORIENTATION_HORIZONTAL, left, sw, -1);
  gtk_paned_set_resize_end_child (GTK_PANED (p), FALSE);
  gtk_widget_set_size_request (sw, 300, -1);
  gtk_widget_set_vexpand (p, TRUE);
  return p;
}

static void
pl_tune_panel_init (PlTunePanel *self)
{
  self->cancellable = g_cancellable_new ();
  self->conv_keys = g_ptr_array_new_with_free_func (g_free);
  pl_panel_init_box (GTK_BOX (self));
  gtk_box_append (GTK_BOX (self), build_tool_row (self));
  gtk_box_append (GTK_BOX (self), build_body (self));
  g_signal_connect (self->conv_dropdown, "notify::selected", G_CALLBACK (on_conv_picked), self);
  update_sensitivity (self);
}

static void
pl_tune_panel_dispose (GObject *object)
{
  PlTunePanel *self = PL_TUNE_PANEL (object);
  g_cancellable_cancel (self->cancellable);
  pl_panel_detach (&self->window);
  G_OBJECT_CLASS (pl_tune_panel_parent_class)->dispose (object);
}

static void
pl_tune_panel_finalize (GObject *object)
{
  PlTunePanel *self = PL_TUNE_PANEL (object);
  g_clear_object (&self->cancellable);
  g_clear_pointer (&self->result, pl_tune_result_free);
  g_clear_pointer (&self->conv_keys, g_ptr_array_unref);
  g_free (self->error);
  g_free (self->verdict);
  G_OBJECT_CLASS (pl_tune_panel_parent_class)->finalize (object);
}

static void
pl_tune_panel_class_init (PlTunePanelClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  object_class->dispose = pl_tune_panel_dispose;
  object_class->finalize = pl_tune_panel_finalize;
  signals[SIGNAL_TUNE_FINISHED] = g_signal_new ("tune-finished", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                                                NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
}

/* --- API ------------------------------------------------------------------------------------------ */

GtkWidget *
pl_tune_panel_new (PlWindow *window)
{
  g_return_val_if_fail (PL_IS_WINDOW (window), NULL);
  PlTunePanel *self = g_object_new (PL_TYPE_TUNE_PANEL, NULL);
  pl_panel_attach (self, window, &self->window, "pl-tune-panel");
  g_signal_connect_object (pl_window_get_canvas (window), "selection-changed",
                           G_CALLBACK (on_canvas_selection_changed), self, 0);
  /* The window notifies its state whenever the step shown changes. */
  g_signal_connect_object (window, "notify::has-graph", G_CALLBACK (on_window_state), self, 0);
  return GTK_WIDGET (self);
}

PlTunePanel *
pl_tune_panel_get_for_window (PlWindow *window)
{
  g_return_val_if_fail (PL_IS_WINDOW (window), NULL);
  return g_object_get_data (G_OBJECT (window), "pl-tune-panel");
}

gboolean
pl_tune_panel_set_conv (PlTunePanel *self, const char *name_or_key)
{
  g_return_val_if_fail (PL_IS_TUNE_PANEL (self) && name_or_key != NULL, FALSE);
  refresh_convs (self);
  const PlGraph *g = current_graph (self);
  g_autofree char *key = g ? pl_graph_key_for_name (g, name_or_key) : NULL;
  if (!pick_key (self, key))
    return FALSE;
  /* Shown on the canvas even when it was picked already. */
  if (self->window && !self->syncing)
    {
      self->syncing = TRUE;
      pl_graph_canvas_select (pl_window_get_canvas (self->window), key);
      pl_graph_canvas_center_on (pl_window_get_canvas (self->window), key);
      self->syncing = FALSE;
    }
  return TRUE;
}

const char *
pl_tune_panel_get_conv (PlTunePanel *self)
{
  g_return_val_if_fail (PL_IS_TUNE_PANEL (self), NULL);
  const PlNode *conv = node_at_key (current_graph (self), selected_key (self) ? selected_key (self) : "");
  return conv ? conv->name : NULL;
}

int
pl_tune_panel_get_n_convs (PlTunePanel *self)
{
  g_return_val_if_fail (PL_IS_TUNE_PANEL (self), 0);
  refresh_convs (self);
  return (int) self->conv_keys->len;
}

void
pl_tune_panel_set_layout (PlTunePanel *self, PlLayout layout)
{
  g_return_if_fail (PL_IS_TUNE_PANEL (self) && (int) layout >= 0 && layout < PL_LAYOUT_COUNT);
  gtk_drop_down_set_selected (self->layout_dropdown, layout);
}

PlLayout
pl_tune_panel_get_layout (PlTunePanel *self)
{
  g_return_val_if_fail (PL_IS_TUNE_PANEL (self), PL_LAYOUT_NCHW);
  guint i = gtk_drop_down_get_selected (self->layout_dropdown);
  return i < PL_LAYOUT_COUNT ? (PlLayout) i : PL_LAYOUT_NCHW;
}

void
pl_tune_panel_set_trials (PlTunePanel *self, int trials)
{
  g_return_if_fail (PL_IS_TUNE_PANEL (self));
  gtk_spin_button_set_value (self->trials_spin, trials);
}

gboolean
pl_tune_panel_is_running (PlTunePanel *self)
{
  g_return_val_if_fail (PL_IS_TUNE_PANEL (self), FALSE);
  return self->running;
}

const PlTuneResult *
pl_tune_panel_get_result (PlTunePanel *self)
{
  g_return_val_if_fail (PL_IS_TUNE_PANEL (self), NULL);
  return self->result;
}

const char *
pl_tune_panel_get_error (PlTunePanel *self)
{
  g_return_val_if_fail (PL_IS_TUNE_PANEL (self), NULL);
  return self->error;
}

PlChart *
pl_tune_panel_get_chart (PlTunePanel *self)
{
  g_return_val_if_fail (PL_IS_TUNE_PANEL (self), NULL);
  return self->chart;
}

const char *
pl_tune_panel_get_verdict (PlTunePanel *self)
{
  g_return_val_if_fail (PL_IS_TUNE_PANEL (self), NULL);
  return self->verdict;
}
