/* pl-run-panel.c — the run panel (see pl-run-panel.h). Built in code: a
 * tool row (backend, repeats, Run, status), the kernel timeline of the last
 * run (compute on one row, swap copies on another, waits hatched), then
 * panes: the kernel table over the kernel-time chart on the left, the
 * memory chart over the code of the selected kernel on the right.
 *
 * A run copies the step's graph, and a worker thread (GTask) makes random
 * inputs, compiles and runs it; the copy, the executable and the report come
 * back together and stay until the next successful run, because the code
 * view reads the executable's sources. A failed run shows its error and
 * keeps the last results. */
#define G_LOG_DOMAIN "passlab"

#include "pl-run-panel.h"

#include <gtksourceview/gtksource.h>
#include <math.h>

#include "calibrate.h"
#include "interp.h"
#include "pass-manager.h"
#include "pl-panel-util.h"
#include "pl-quiet.h"

#define N_BACKENDS 3

/* What one run needs and gives back. Freed on the main thread. */
typedef struct {
  PlGraph      *graph;     /* a copy of the step's graph: the executable points into it */
  PlBackend     backend;
  int           repeats;
  int           step;
  PlExecutable *exe;
  PlRunReport  *report;
  PlQuiet      *quiet;     /* the window's frames while the kernels were timed */
  double       *predicted; /* per kernel: the layout pass's cost model (calibrate.h), NAN: none */
  PlCostSource *sources;   /* ... and where each prediction came from */
} RunJob;

/* The kernel table's columns (table_row). */
enum { COL_NAME, COL_OPS, COL_MEDIAN, COL_PREDICTED, COL_BYTES, COL_GBPS, COL_KIND, N_COLUMNS };

struct _PlRunPanel
{
  GtkBox         parent_instance;

  PlWindow      *window;           /* weak */
  GtkDropDown   *backend_dropdown;
  GtkSpinButton *repeat_spin;
  GtkButton     *run_button;
  GtkLabel      *status_label;
  GtkListBox    *table;
  PlChart       *time_chart;
  PlChart       *memory_chart;
  PlChart       *timeline_chart;
  GtkLabel      *code_title;
  GtkTextView   *code_view;

  char          *unavailable[N_BACKENDS]; /* why a backend cannot run here; NULL: it can */
  GCancellable  *cancellable;
  gboolean       running;
  RunJob        *result;           /* the last successful run */
  char          *error;            /* the last run's error */
  char          *summary;          /* the status line of the last successful run */
  int            selected;         /* kernel index, -1 none */
  gboolean       syncing;          /* selection being propagated: ignore echoes */
  GPtrArray     *annotated;        /* canvas keys annotated by the last run */
  GtkSizeGroup  *column_width[N_COLUMNS];  /* one per column but Ops (table_row) */
};

G_DEFINE_FINAL_TYPE (PlRunPanel, pl_run_panel, GTK_TYPE_BOX)

enum { SIGNAL_RUN_FINISHED, N_SIGNALS };
static guint signals[N_SIGNALS];

static void
run_job_free (RunJob *job)
{
  if (!job)
    return;
  g_clear_pointer (&job->exe, pl_executable_free);
  g_clear_pointer (&job->report, pl_run_report_free);
  g_clear_pointer (&job->graph, pl_graph_free);
  g_clear_pointer (&job->quiet, pl_quiet_free);
  g_free (job->predicted);
  g_free (job->sources);
  g_free (job);
}

static PlGraphCanvas *
panel_canvas (PlRunPanel *self)
{
  return self->window ? pl_window_get_canvas (self->window) : NULL;
}

static char *
format_ms (double ms)
{
  if (ms >= 10)
    return g_strdup_printf ("%.1f ms", ms);
  if (ms >= 0.01)
    return g_strdup_printf ("%.2f ms", ms);
  return g_strdup_printf ("%.4f ms", ms);
}

static void
set_code (PlRunPanel *self, const char *title, const char *code)
{
  gtk_label_set_text (self->code_title, title);
  /* C for the cpu backend, CUDA C for cuda (the reference shows only comments). */
  GtkSourceBuffer *buffer = GTK_SOURCE_BUFFER (gtk_text_view_get_buffer (self->code_view));
  GtkSourceLanguageManager *lm = gtk_source_language_manager_get_default ();
  gboolean cuda = self->result && self->result->backend == PL_BACKEND_CUDA;
  GtkSourceLanguage *lang = gtk_source_language_manager_get_language (lm, cuda ? "cuda" : "c");
  gtk_source_buffer_set_language (buffer, lang ? lang : gtk_source_language_manager_get_language (lm, "c"));
  gtk_text_buffer_set_text (gtk_text_view_get_buffer (self->code_view), code ? code : "", -1);
}

/* --- selection ----------------------------------------------------------------------------- */

static const PlKernelTiming *
kernel_at (PlRunPanel *self, int i)
{
  if (!self->result || i < 0 || i >= self->result->report->n_kernels)
    return NULL;
  return &self->result->report->kernels[i];
}

static void
show_kernel_code (PlRunPanel *self, const PlKernelTiming *k)
{
  if (!k)
    {
      const char *all = self->result ? pl_executable_full_source (self->result->exe) : NULL;
      set_code (self, all ? "All kernels (select one to see its own)" : "Code",
                all ? all : "/* The reference backend generates no code: it runs the interpreter. */\n");
      return;
    }
  g_autofree char *title = g_strdup_printf ("%s — %s", k->name, k->ops ? k->ops : "");
  const char *src = pl_executable_source (self->result->exe, k->node_id);
  if (src)
    {
      set_code (self, title, src);
      return;
    }
  /* Library calls and fallbacks have no source of their own: say what ran. */
  g_autofree char *plan = pl_executable_plan_dump (self->result->exe, k->node_id);
  g_autofree char *text = g_strdup_printf ("/* %s: no generated code (%s%s%s). */\n%s", k->name,
                                           k->kind ? k->kind : "op", k->note && *k->note ? ": " : "",
                                           k->note ? k->note : "", plan ? plan : "");
  set_code (self, title, text);
}

/* Shows kernel i in the table, the bar chart and the code view; moves the
 * canvas too unless the canvas asked. */
static void
select_kernel (PlRunPanel *self, int i, gboolean move_canvas)
{
  if (self->syncing)
    return;
  const PlKernelTiming *k = kernel_at (self, i);
  self->syncing = TRUE;
  self->selected = k ? i : -1;
  GtkListBoxRow *row = k ? gtk_list_box_get_row_at_index (self->table, i) : NULL;
  if (row)
    gtk_list_box_select_row (self->table, row);
  else
    gtk_list_box_unselect_all (self->table);
  pl_chart_select_bar (self->time_chart, self->selected);
  pl_chart_select_span (self->timeline_chart, self->selected);
  if (k)
    pl_chart_reveal_span (self->timeline_chart, self->selected);
  show_kernel_code (self, k);
  PlGraphCanvas *canvas = panel_canvas (self);
  if (k && move_canvas && canvas)
    {
      g_autofree char *key = g_strdup_printf ("n%u", k->node_id);
      pl_graph_canvas_select (canvas, key);
      pl_graph_canvas_center_on (canvas, key);
    }
  self->syncing = FALSE;
}

static void
on_row_selected (GtkListBox *box, GtkListBoxRow *row, PlRunPanel *self)
{
  if (row && !self->syncing)
    select_kernel (self, gtk_list_box_row_get_index (row), TRUE);
}

static void
on_bar_activated (PlChart *chart, int i, PlRunPanel *self)
{
  select_kernel (self, i, TRUE);
}

static void
on_span_activated (PlChart *chart, int kernel, PlRunPanel *self)
{
  select_kernel (self, kernel, TRUE);
}

/* The kernel that runs the canvas node `key` ("n<id>", or "n<id>/n<id>..."
 * inside a fusion: the fusion's kernel), or -1. */
static int
kernel_of_key (PlRunPanel *self, const char *key)
{
  if (!self->result || !key || key[0] != 'n')
    return -1;
  char *end = NULL;
  guint64 id = g_ascii_strtoull (key + 1, &end, 10);
  if (end == key + 1 || (*end != '\0' && *end != '/') || id > G_MAXUINT32)
    return -1;
  for (int i = 0; i < self->result->report->n_kernels; i++)
    if (self->result->report->kernels[i].node_id == id)
      return i;
  return -1;
}

/* A node selected on the canvas selects its kernel here, when it has one. */
static void
on_canvas_selection_changed (PlGraphCanvas *canvas, const char *key, PlRunPanel *self)
{
  if (self->syncing || !self->window)
    return;
  int i = kernel_of_key (self, key);
  if (i >= 0)
    select_kernel (self, i, FALSE);
}

/* --- showing a report ---------------------------------------------------------------------- */

/* A row of the kernel table: cells in the order of COLUMNS. Each column's
 * cells share a size group, the heading's too: its bold cells are wider
 * than the rows' at the same width in characters, and the rows sit inside
 * the list's padding, so widths in characters alone let the numbers drift
 * out from under their headings. */
static const struct { int chars; float xalign; gboolean dim; } COLUMNS[N_COLUMNS] = {
  { 12, 0, FALSE }, { 10, 0, TRUE }, { 9, 1, FALSE }, { 9, 1, TRUE }, { 9, 1, FALSE }, { 6, 1, FALSE }, { 7, 0, TRUE },
};

static GtkWidget *
table_row (PlRunPanel *self, const char *const cells[N_COLUMNS], gboolean header)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 8);
  gtk_widget_set_margin_start (box, 6);
  gtk_widget_set_margin_end (box, 6);
  gtk_widget_set_margin_top (box, 2);
  gtk_widget_set_margin_bottom (box, 2);
  for (int c = 0; c < N_COLUMNS; c++)
    {
      GtkWidget *cell = pl_panel_cell (cells[c], COLUMNS[c].chars, COLUMNS[c].xalign, COLUMNS[c].dim && !header);
      if (c == COL_OPS)
        {
          /* the one column that takes the room left */
          gtk_label_set_max_width_chars (GTK_LABEL (cell), 60);
          gtk_label_set_ellipsize (GTK_LABEL (cell), PANGO_ELLIPSIZE_END);
          gtk_widget_set_hexpand (cell, TRUE);
        }
      else
        gtk_size_group_add_widget (self->column_width[c], cell);
      gtk_box_append (GTK_BOX (box), cell);
    }
  if (header)
    gtk_widget_add_css_class (box, "heading");
  return box;
}

static double
predicted_at (const RunJob *job, int i)
{
  return job && job->predicted && i >= 0 && i < job->report->n_kernels ? job->predicted[i] : NAN;
}

static void
fill_table (PlRunPanel *self, const PlRunReport *r)
{
  GtkWidget *child;
  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self->table))))
    gtk_list_box_remove (self->table, child);
  for (int i = 0; i < r->n_kernels; i++)
    {
      const PlKernelTiming *k = &r->kernels[i];
      g_autofree char *ops = k->n_ops > 1 ? g_strdup_printf ("%d: %s", k->n_ops, k->ops) : g_strdup (k->ops);
      g_autofree char *ms = format_ms (k->median_ms);
      g_autofree char *bytes = g_format_size_full ((guint64) MAX (k->bytes, 0), G_FORMAT_SIZE_IEC_UNITS);
      g_autofree char *gbps = g_strdup_printf ("%.1f", k->gbps);
      g_autofree char *kind = k->fallback ? g_strdup_printf ("%s (fallback)", k->kind ? k->kind : "op")
                                          : g_strdup (k->kind ? k->kind : "");
      double p = predicted_at (self->result, i);
      g_autofree char *pms = isfinite (p) ? format_ms (p) : g_strdup ("");
      const char *cells[N_COLUMNS] = { k->name, ops ? ops : "", ms, pms, bytes, gbps, kind };
      GtkWidget *row = table_row (self, cells, FALSE);
      g_autofree char *tip = isfinite (p) ? g_strdup_printf ("%s\npredicted %s (%s by the layout pass's cost model), "
                                                            "measured %s: %.2fx", k->note && *k->note ? k->note : k->ops,
                                                            pms, pl_cost_source_name (self->result->sources[i]), ms,
                                                            p > 0 ? k->median_ms / p : NAN)
                                          : g_strdup (k->note && *k->note ? k->note : k->ops);
      gtk_widget_set_tooltip_text (row, tip);
      gtk_list_box_append (self->table, row);
    }
}

static void
clear_annotations (PlRunPanel *self)
{
  PlGraphCanvas *canvas = panel_canvas (self);
  for (guint i = 0; canvas && i < self->annotated->len; i++)
    pl_graph_canvas_set_annotation (canvas, self->annotated->pdata[i], NULL);
  g_ptr_array_set_size (self->annotated, 0);
}

/* --- the kernel timeline ---------------------------------------------------------------------- */

typedef enum { SPAN_COMPUTE, SPAN_CONVERT, SPAN_SWAP_OUT, SPAN_SWAP_IN } SpanKind;

static SpanKind
span_kind (const PlKernelTiming *k)
{
  if (g_strcmp0 (k->kind, "swap-out") == 0)
    return SPAN_SWAP_OUT;
  if (g_strcmp0 (k->kind, "swap-in") == 0)
    return SPAN_SWAP_IN;
  return g_strcmp0 (k->kind, "convert") == 0 ? SPAN_CONVERT : SPAN_COMPUTE;
}

/* What a copy ran beside: the compute launches it overlaps, or (copies that
 * ran alone, as on the cpu) the launches just before and after it. */
static char *
copy_context (const PlRunReport *r, const PlTraceEvent *copy)
{
  g_autoptr (GString) over = g_string_new (NULL);
  const PlTraceEvent *before = NULL, *after = NULL;
  double end = copy->start_ms + copy->dur_ms;
  int n_over = 0;
  for (int i = 0; i < r->n_events; i++)
    {
      const PlTraceEvent *ev = &r->events[i];
      if (span_kind (&r->kernels[ev->kernel]) >= SPAN_SWAP_OUT)
        continue;
      double ev_end = ev->start_ms + ev->dur_ms;
      if (ev->start_ms < end && ev_end > copy->start_ms)
        {
          if (n_over++ < 4)
            g_string_append_printf (over, "%s'%s'", over->len ? ", " : "", ev->name);
        }
      else if (ev_end <= copy->start_ms && (!before || ev_end > before->start_ms + before->dur_ms))
        before = ev;
      else if (ev->start_ms >= end && (!after || ev->start_ms < after->start_ms))
        after = ev;
    }
  if (n_over > 0)
    return g_strdup_printf ("overlaps %s%s", over->str, n_over > 4 ? ", …" : "");
  return g_strdup_printf ("ran alone, between '%s' and '%s'", before ? before->name : "the start",
                          after ? after->name : "the end");
}

/* The last run's launches at their start times: compute (and f16
 * conversions) on the first row, swap copies on the second. On the cpu a
 * copy is synchronous, so compute waits for all of it: a hatched span on the
 * compute row. The cuda report has only the total wait, not per copy. */
static void
show_timeline (PlRunPanel *self, const PlRunReport *r)
{
  const char *rows[] = { "Compute", "Copies" };
  pl_chart_set_spans (self->timeline_chart, rows, 2, "ms");
  static const PlChartColor colors[] = { PL_CHART_COLOR_ACCENT, PL_CHART_COLOR_PURPLE, PL_CHART_COLOR_ORANGE,
                                         PL_CHART_COLOR_GREEN };
  gboolean synchronous = r->backend != PL_BACKEND_CUDA, seen[4] = { FALSE };
  for (int i = 0; i < r->n_events; i++)
    {
      const PlTraceEvent *ev = &r->events[i];
      const PlKernelTiming *k = &r->kernels[ev->kernel];
      SpanKind kind = span_kind (k);
      seen[kind] = TRUE;
      g_autofree char *start = format_ms (ev->start_ms);
      g_autofree char *dur = format_ms (ev->dur_ms);
      g_autofree char *context = kind >= SPAN_SWAP_OUT ? copy_context (r, ev) : NULL;
      g_autofree char *label = g_strdup_printf ("%s\n%s, at %s for %s%s%s%s%s", ev->name, k->kind ? k->kind : "",
                                                start, dur, k->note && *k->note ? "\n" : "", k->note ? k->note : "",
                                                context ? "\n" : "", context ? context : "");
      int row = kind >= SPAN_SWAP_OUT ? 1 : 0;
      pl_chart_add_span (self->timeline_chart, row, ev->start_ms, ev->start_ms + ev->dur_ms, colors[kind], FALSE,
                         label, ev->kernel);
      if (row == 1 && synchronous)
        {
          g_autofree char *wait = g_strdup_printf ("compute waits for %s (%s): the cpu copies synchronously",
                                                   ev->name, dur);
          pl_chart_add_span (self->timeline_chart, 0, ev->start_ms, ev->start_ms + ev->dur_ms, PL_CHART_COLOR_RED,
                             TRUE, wait, ev->kernel);
        }
    }
  static const char *names[] = { "compute", "f16 conversion", "swap-out (device → host)", "swap-in (host → device)" };
  for (int kind = 0; kind < 4; kind++)
    if (seen[kind] || kind == SPAN_COMPUTE)
      pl_chart_add_legend (self->timeline_chart, colors[kind], FALSE, names[kind]);
  if (r->n_copies > 0)
    {
      g_autofree char *copy = format_ms (r->copy_ms);
      g_autofree char *wait = format_ms (r->wait_ms);
      g_autofree char *text = g_strdup_printf ("waiting for copies: %s of %s copying%s", wait, copy,
                                               synchronous ? "" : " (per-copy waits are not reported)");
      pl_chart_add_legend (self->timeline_chart, PL_CHART_COLOR_RED, TRUE, text);
    }
}

static void
show_report (PlRunPanel *self)
{
  const PlRunReport *r = self->result->report;
  fill_table (self, r);

  g_autofree const char **names = g_new0 (const char *, r->n_kernels + 1);
  g_autofree double *ms = g_new (double, MAX (r->n_kernels, 1));
  PlGraphCanvas *canvas = panel_canvas (self);
  clear_annotations (self);
  for (int i = 0; i < r->n_kernels; i++)
    {
      names[i] = r->kernels[i].name;
      ms[i] = r->kernels[i].median_ms;
      char *key = g_strdup_printf ("n%u", r->kernels[i].node_id);
      g_autofree char *text = format_ms (ms[i]);
      if (canvas)
        pl_graph_canvas_set_annotation (canvas, key, text);
      g_ptr_array_add (self->annotated, key);
    }
  pl_chart_set_bars (self->time_chart, names, ms, r->n_kernels, "ms");

  g_autofree double *t = g_new (double, MAX (r->n_memory, 1));
  g_autofree double *bytes = g_new (double, MAX (r->n_memory, 1));
  for (int i = 0; i < r->n_memory; i++)
    {
      t[i] = r->memory[i].t_ms;
      bytes[i] = (double) r->memory[i].bytes;
    }
  g_autofree char *budget = NULL;
  if (r->device_budget > 0)
    {
      g_autofree char *b = g_format_size_full ((guint64) r->device_budget, G_FORMAT_SIZE_IEC_UNITS);
      budget = g_strdup_printf ("budget %s", b);
    }
  pl_chart_set_line (self->memory_chart, t, bytes, r->n_memory, "ms", TRUE, (double) r->device_budget, budget);
  show_timeline (self, r);

  g_autofree char *total = format_ms (r->total_ms);
  g_autofree char *peak = g_format_size_full ((guint64) MAX (r->peak_bytes, 0), G_FORMAT_SIZE_IEC_UNITS);
  g_autofree char *status = g_strdup_printf ("Step %d on %s%s: %d kernel%s, %s per run (median of %d), peak %s",
                                             self->result->step, pl_backend_name (r->backend),
                                             r->emulated ? " (emulated on the CPU: results are checked, times are not a GPU's)" : "",
                                             r->n_kernels, r->n_kernels == 1 ? "" : "s", total, r->repeats, peak);
  double predicted = 0, measured = 0;
  int n_predicted = 0;
  for (int i = 0; i < r->n_kernels; i++)
    if (isfinite (predicted_at (self->result, i)))
      {
        predicted += predicted_at (self->result, i);
        measured += r->kernels[i].median_ms;
        n_predicted++;
      }
  if (n_predicted > 0 && predicted > 0)
    {
      g_autofree char *plain = g_steal_pointer (&status);
      g_autofree char *p = format_ms (predicted), *m = format_ms (measured);
      status = g_strdup_printf ("%s; convs and transforms %s, predicted %s (%.2fx; %d kernels, the layout pass's "
                                "cost model)", plain, m, p, measured / predicted, n_predicted);
    }
  int frames = pl_quiet_frames (self->result->quiet);
  if (frames > 0)
    {
      /* the window kept drawing (an animation): the kernels shared the CPU with it */
      g_autofree char *plain = g_steal_pointer (&status);
      status = g_strdup_printf ("%s. The window drew %d frame%s while the kernels were timed, which may have "
                                "slowed them: time the step again for clean figures", plain, frames,
                                frames == 1 ? "" : "s");
    }
  pl_panel_set_status (self->status_label, status, frames > 0);
  g_free (self->summary);
  self->summary = g_strdup (status);
  /* The device line can be long (the compiler's flags): a tooltip. */
  g_autofree char *tip = g_strdup_printf ("%s\n%s", status, r->device ? r->device : "");
  gtk_widget_set_tooltip_text (GTK_WIDGET (self->status_label), tip);
  self->selected = -1;
  select_kernel (self, -1, FALSE);
}

/* --- running ------------------------------------------------------------------------------- */

/* The layout pass's cost model for each conv and layout-transform kernel of
 * the run (as `passlab-cli exec --predicted`): what it predicted against what
 * ran. Not on the reference backend, nor on the CUDA emulator (its
 * analytic ceilings would be measured on the emulator). */
static void
predict (RunJob *job)
{
  const PlRunReport *r = job->report;
  if (job->backend == PL_BACKEND_REFERENCE || r->emulated || r->n_kernels == 0)
    return;
  g_autoptr (PlCalibration) cal = pl_calibration_new (job->backend, false, NULL);
  if (!cal)
    return;
  pl_calibration_use_cache (cal);
  job->predicted = g_new (double, r->n_kernels);
  job->sources = g_new0 (PlCostSource, r->n_kernels);
  for (int i = 0; i < r->n_kernels; i++)
    {
      const PlNode *node = pl_graph_node_by_id (job->graph, r->kernels[i].node_id);
      PlCost c;
      const char *what;
      g_autofree char *how = NULL;
      gboolean known = node && pl_calibration_predict_kernel (cal, node, &c, &what, &how) && isfinite (c.ms);
      job->predicted[i] = known ? c.ms : NAN;
      job->sources[i] = known ? c.source : PL_COST_ANALYTIC;
    }
}

static void
run_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
  RunJob *job = data;
  GError *error = NULL;
  int n_in = (int) job->graph->inputs->len;
  PlTensor **inputs = pl_random_inputs (job->graph, 1, 1, &error);
  if (!inputs && n_in > 0)
    {
      g_task_return_error (task, error);
      return;
    }
  PlCompileOptions options;
  pl_compile_options_init (&options, job->backend);
  job->exe = pl_executable_new (job->graph, &options, &error);
  PlTensor **outputs = NULL;
  if (job->exe)
    {
      pl_quiet_wait (job->quiet, cancellable);   /* the window's own drawing would be timed too */
      outputs = pl_executable_run (job->exe, inputs, job->repeats, &job->report, &error);
      pl_quiet_end (job->quiet);
    }
  pl_interp_free_outputs (inputs, n_in);
  if (!outputs)
    {
      g_task_return_error (task, error);
      return;
    }
  pl_interp_free_outputs (outputs, (int) job->graph->outputs->len);
  predict (job);
  g_task_return_boolean (task, TRUE);
}

static void
update_sensitivity (PlRunPanel *self)
{
  PlBackend b = pl_run_panel_get_backend (self);
  gtk_widget_set_sensitive (GTK_WIDGET (self->run_button), !self->running && !self->unavailable[b]);
  gtk_widget_set_sensitive (GTK_WIDGET (self->backend_dropdown), !self->running);
  gtk_widget_set_sensitive (GTK_WIDGET (self->repeat_spin), !self->running);
}

static void
run_done (GObject *source, GAsyncResult *res, gpointer user_data)
{
  PlRunPanel *self = PL_RUN_PANEL (source);
  GTask *task = G_TASK (res);
  RunJob *job = g_task_get_task_data (task);
  g_autoptr (GError) error = NULL;
  gboolean ok = g_task_propagate_boolean (task, &error);
  if (g_cancellable_is_cancelled (g_task_get_cancellable (task)))
    {
      /* The panel went away meanwhile: touch nothing of it. */
      run_job_free (job);
      return;
    }
  self->running = FALSE;
  g_clear_pointer (&self->error, g_free);
  if (ok)
    {
      g_clear_pointer (&self->result, run_job_free);
      self->result = job;
      show_report (self);
    }
  else
    {
      run_job_free (job);
      self->error = g_strdup (error ? error->message : "the run failed");
      g_autofree char *msg = g_strdup_printf ("Run failed: %s%s", self->error,
                                              self->result ? " (the last results are kept below)" : "");
      pl_panel_set_status (self->status_label, msg, TRUE);
    }
  update_sensitivity (self);
  g_signal_emit (self, signals[SIGNAL_RUN_FINISHED], 0, self->error);
}

static gboolean
refuse (PlRunPanel *self, GError **error, const char *message)
{
  pl_panel_set_status (self->status_label, message, TRUE);
  g_set_error_literal (error, PL_ERROR, PL_ERROR_FAILED, message);
  return FALSE;
}

gboolean
pl_run_panel_run (PlRunPanel *self, GError **error)
{
  g_return_val_if_fail (PL_IS_RUN_PANEL (self), FALSE);
  if (self->running)
    return refuse (self, error, "A run is under way.");
  PlBackend b = pl_run_panel_get_backend (self);
  if (self->unavailable[b])
    {
      g_autofree char *msg = g_strdup_printf ("The %s backend cannot run here: %s", pl_backend_name (b),
                                              self->unavailable[b]);
      return refuse (self, error, msg);
    }
  const PlHistory *h = self->window ? pl_window_get_history (self->window) : NULL;
  int step = self->window ? pl_window_get_step (self->window) : -1;
  if (!h || step < 0)
    return refuse (self, error, "Open a graph first.");

  RunJob *job = g_new0 (RunJob, 1);
  job->graph = pl_graph_copy (pl_history_step (h, step)->graph);
  job->backend = b;
  job->repeats = gtk_spin_button_get_value_as_int (self->repeat_spin);
  job->step = step;
  job->quiet = pl_quiet_new (GTK_WIDGET (self));
  g_clear_pointer (&self->error, g_free);
  self->running = TRUE;
  update_sensitivity (self);
  /* No spinner (see pl-window-worker.c, set_busy): the window holds still while it measures,
   * and the timing waits for it to be still (pl-quiet.h). */
  g_autofree char *msg = g_strdup_printf ("Compiling and timing step %d on %s… (the window holds still while it "
                                          "measures)", step, pl_backend_name (b));
  pl_panel_set_status (self->status_label, msg, FALSE);

  g_autoptr (GTask) task = g_task_new (self, self->cancellable, run_done, NULL);
  g_task_set_task_data (task, job, NULL); /* run_done frees or keeps it */
  g_task_run_in_thread (task, run_thread);
  return TRUE;
}

gboolean
pl_run_panel_run_sync (PlRunPanel *self, GError **error)
{
  g_return_val_if_fail (PL_IS_RUN_PANEL (self), FALSE);
  if (!pl_run_panel_run (self, error))
    return FALSE;
  while (self->running)
    g_main_context_iteration (NULL, TRUE);
  if (self->error)
    {
      g_set_error_literal (error, PL_ERROR, PL_ERROR_EXEC, self->error);
      return FALSE;
    }
  return TRUE;
}

static void
on_run_clicked (GtkButton *button, PlRunPanel *self)
{
  pl_run_panel_run (self, NULL);
}

/* --- the backend list: cuda greyed out, with the reason, where it cannot run ----------------- */

static void
backend_setup (GtkSignalListItemFactory *f, GtkListItem *item, gpointer data)
{
  GtkWidget *label = gtk_label_new (NULL);
  gtk_label_set_xalign (GTK_LABEL (label), 0);
  gtk_list_item_set_child (item, label);
}

static void
backend_bind (GtkSignalListItemFactory *f, GtkListItem *item, PlRunPanel *self)
{
  GtkWidget *label = gtk_list_item_get_child (item);
  guint i = gtk_list_item_get_position (item);
  const char *name = pl_backend_name ((PlBackend) i);
  const char *why = i < N_BACKENDS ? self->unavailable[i] : NULL;
  g_autofree char *text = why ? g_strdup_printf ("%s (unavailable)", name) : g_strdup (name);
  gtk_label_set_text (GTK_LABEL (label), text);
  gtk_widget_set_tooltip_text (label, why);
  if (why)
    gtk_widget_add_css_class (label, "dim-label");
  else
    gtk_widget_remove_css_class (label, "dim-label");
}

static void
on_backend_changed (GtkDropDown *dd, GParamSpec *pspec, PlRunPanel *self)
{
  PlBackend b = pl_run_panel_get_backend (self);
  if (self->unavailable[b])
    {
      g_autofree char *msg = g_strdup_printf ("The %s backend cannot run here: %s", pl_backend_name (b),
                                              self->unavailable[b]);
      pl_panel_set_status (self->status_label, msg, TRUE);
    }
  else if (!self->running)
    pl_panel_set_status (self->status_label, self->summary ? self->summary : "Run the step to time its kernels.",
                         FALSE);
  update_sensitivity (self);
}

/* --- construction -------------------------------------------------------------------------- */

static GtkWidget *
titled (const char *title, GtkWidget *child, gboolean scroll)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 4);
  GtkWidget *label = gtk_label_new (title);
  gtk_label_set_xalign (GTK_LABEL (label), 0);
  gtk_widget_add_css_class (label, "heading");
  gtk_box_append (GTK_BOX (box), label);
  if (scroll)
    {
      GtkWidget *sw = gtk_scrolled_window_new ();
      gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (sw), child);
      gtk_widget_set_vexpand (sw, TRUE);
      child = sw;
    }
  gtk_box_append (GTK_BOX (box), child);
  return box;
}

static GtkWidget *
build_tool_row (PlRunPanel *self)
{
  GtkWidget *row = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 8);
  gtk_box_append (GTK_BOX (row), gtk_label_new ("Backend"));
  const char *names[N_BACKENDS + 1] = { NULL };
  for (int i = 0; i < N_BACKENDS; i++)
    {
      names[i] = pl_backend_name ((PlBackend) i);
      char *why = NULL;
      if (!pl_backend_available ((PlBackend) i, &why))
        self->unavailable[i] = why ? why : g_strdup ("not available");
      else
        g_free (why);
    }
  GtkListItemFactory *factory = gtk_signal_list_item_factory_new ();
  g_signal_connect (factory, "setup", G_CALLBACK (backend_setup), NULL);
  g_signal_connect (factory, "bind", G_CALLBACK (backend_bind), self);
  self->backend_dropdown = GTK_DROP_DOWN (gtk_drop_down_new (G_LIST_MODEL (gtk_string_list_new (names)), NULL));
  gtk_drop_down_set_factory (self->backend_dropdown, factory);
  g_object_unref (factory);
  gtk_widget_set_tooltip_text (GTK_WIDGET (self->backend_dropdown),
                               "reference: the interpreter; cpu: generated C + OpenMP; cuda: generated CUDA");
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (self->backend_dropdown));

  gtk_box_append (GTK_BOX (row), gtk_label_new ("Repeats"));
  self->repeat_spin = GTK_SPIN_BUTTON (gtk_spin_button_new_with_range (1, 1000, 1));
  gtk_spin_button_set_value (self->repeat_spin, 10);
  gtk_widget_set_tooltip_text (GTK_WIDGET (self->repeat_spin), "Timed runs after one warm-up; times are medians");
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (self->repeat_spin));

  self->run_button = GTK_BUTTON (gtk_button_new_with_mnemonic ("_Time Step"));
  gtk_widget_add_css_class (GTK_WIDGET (self->run_button), "suggested-action");
  gtk_widget_set_tooltip_text (GTK_WIDGET (self->run_button),
                               "Compile the step shown and run it on random inputs, timing each kernel");
  g_signal_connect (self->run_button, "clicked", G_CALLBACK (on_run_clicked), self);
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (self->run_button));

  self->status_label = pl_panel_status_label ("Run the step to time its kernels.");
  gtk_label_set_selectable (self->status_label, TRUE);
  gtk_widget_set_focusable (GTK_WIDGET (self->status_label), FALSE);
  gtk_box_append (GTK_BOX (row), GTK_WIDGET (self->status_label));
  return row;
}

static GtkWidget *
build_table (PlRunPanel *self)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
  const char *heading[N_COLUMNS] = { "Kernel", "Ops", "Median", "Predicted", "Bytes", "GB/s", "Kind" };
  for (int c = 0; c < N_COLUMNS; c++)
    self->column_width[c] = gtk_size_group_new (GTK_SIZE_GROUP_HORIZONTAL);
  gtk_box_append (GTK_BOX (box), table_row (self, heading, TRUE));
  self->table = GTK_LIST_BOX (gtk_list_box_new ());
  gtk_list_box_set_selection_mode (self->table, GTK_SELECTION_SINGLE);
  GtkWidget *empty = gtk_label_new ("No run yet.");
  gtk_widget_add_css_class (empty, "dim-label");
  gtk_list_box_set_placeholder (self->table, empty);
  g_signal_connect (self->table, "row-selected", G_CALLBACK (on_row_selected), self);
  GtkWidget *sw = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (sw), GTK_WIDGET (self->table));
  gtk_widget_set_vexpand (sw, TRUE);
  gtk_box_append (GTK_BOX (box), sw);
  return box;
}

static GtkWidget *
build_time_chart (PlRunPanel *self)
{
  self->time_chart = PL_CHART (pl_chart_new ());
  g_signal_connect (self->time_chart, "bar-activated", G_CALLBACK (on_bar_activated), self);
  return titled ("Kernel time (median)", GTK_WIDGET (self->time_chart), TRUE);
}

static GtkWidget *
build_memory_chart (PlRunPanel *self)
{
  self->memory_chart = PL_CHART (pl_chart_new ());
  gtk_widget_set_size_request (GTK_WIDGET (self->memory_chart), -1, 110);
  return titled ("Memory in use over the run", GTK_WIDGET (self->memory_chart), FALSE);
}

static GtkWidget *
build_timeline (PlRunPanel *self)
{
  self->timeline_chart = PL_CHART (pl_chart_new ());
  gtk_widget_set_size_request (GTK_WIDGET (self->timeline_chart), -1, 96);
  gtk_widget_set_tooltip_text (GTK_WIDGET (self->timeline_chart), NULL);
  g_signal_connect (self->timeline_chart, "span-activated", G_CALLBACK (on_span_activated), self);
  GtkWidget *box = titled ("Kernel timeline of the last run (scroll to zoom, double-click to see all)",
                           GTK_WIDGET (self->timeline_chart), FALSE);
  return box;
}

static GtkWidget *
build_code (PlRunPanel *self)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 4);
  self->code_title = GTK_LABEL (gtk_label_new ("Code"));
  gtk_label_set_xalign (self->code_title, 0);
  gtk_label_set_ellipsize (self->code_title, PANGO_ELLIPSIZE_END);
  gtk_widget_add_css_class (GTK_WIDGET (self->code_title), "heading");
  gtk_box_append (GTK_BOX (box), GTK_WIDGET (self->code_title));
  gtk_source_init ();
  GtkSourceBuffer *buffer = gtk_source_buffer_new (NULL);
  GtkSourceStyleSchemeManager *sm = gtk_source_style_scheme_manager_get_default ();
  GtkSourceStyleScheme *scheme = gtk_source_style_scheme_manager_get_scheme (sm, "Adwaita");
  if (!scheme)
    scheme = gtk_source_style_scheme_manager_get_scheme (sm, "classic");
  if (scheme)
    gtk_source_buffer_set_style_scheme (buffer, scheme);
  self->code_view = GTK_TEXT_VIEW (gtk_source_view_new_with_buffer (buffer));
  g_object_unref (buffer); /* the view holds it */
  gtk_source_view_set_show_line_numbers (GTK_SOURCE_VIEW (self->code_view), TRUE);
  gtk_text_view_set_editable (self->code_view, FALSE);
  gtk_text_view_set_monospace (self->code_view, TRUE);
  gtk_text_view_set_left_margin (self->code_view, 4);
  GtkWidget *sw = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (sw), GTK_WIDGET (self->code_view));
  gtk_widget_set_vexpand (sw, TRUE);
  gtk_box_append (GTK_BOX (box), sw);
  return box;
}

static void
pl_run_panel_init (PlRunPanel *self)
{
  self->selected = -1;
  self->cancellable = g_cancellable_new ();
  self->annotated = g_ptr_array_new_with_free_func (g_free);
  pl_panel_init_box (GTK_BOX (self));
  gtk_box_append (GTK_BOX (self), build_tool_row (self));
  gtk_box_append (GTK_BOX (self), build_timeline (self));
  /* left: the table over the bar chart; right: the memory chart over the code */
  GtkWidget *left = pl_panel_paned (GTK_ORIENTATION_VERTICAL, build_table (self), build_time_chart (self), 120);
  GtkWidget *right = pl_panel_paned (GTK_ORIENTATION_VERTICAL, build_memory_chart (self), build_code (self), 140);
  GtkWidget *all = pl_panel_paned (GTK_ORIENTATION_HORIZONTAL, left, right, 470);
  gtk_widget_set_vexpand (all, TRUE);
  gtk_box_append (GTK_BOX (self), all);
  /* The cpu backend where it can run, else the interpreter. */
  gtk_drop_down_set_selected (self->backend_dropdown, self->unavailable[PL_BACKEND_CPU] ? PL_BACKEND_REFERENCE
                                                                                          : PL_BACKEND_CPU);
  g_signal_connect (self->backend_dropdown, "notify::selected", G_CALLBACK (on_backend_changed), self);
  show_kernel_code (self, NULL);
  update_sensitivity (self);
}

static void
pl_run_panel_dispose (GObject *object)
{
  PlRunPanel *self = PL_RUN_PANEL (object);
  g_cancellable_cancel (self->cancellable);
  /* The canvas may be gone already (the window disposes first); the
   * handler is disconnected with the panel (g_signal_connect_object)
   * and does nothing without a window. */
  pl_panel_detach (&self->window);
  G_OBJECT_CLASS (pl_run_panel_parent_class)->dispose (object);
}

static void
pl_run_panel_finalize (GObject *object)
{
  PlRunPanel *self = PL_RUN_PANEL (object);
  g_clear_object (&self->cancellable);
  g_clear_pointer (&self->result, run_job_free);
  g_clear_pointer (&self->annotated, g_ptr_array_unref);
  for (int c = 0; c < N_COLUMNS; c++)
    g_clear_object (&self->column_width[c]);
  g_free (self->error);
  g_free (self->summary);
  for (int i = 0; i < N_BACKENDS; i++)
    g_free (self->unavailable[i]);
  G_OBJECT_CLASS (pl_run_panel_parent_class)->finalize (object);
}

static void
pl_run_panel_class_init (PlRunPanelClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  object_class->dispose = pl_run_panel_dispose;
  object_class->finalize = pl_run_panel_finalize;
  signals[SIGNAL_RUN_FINISHED] = g_signal_new ("run-finished", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                                               NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
}

/* --- API ----------------------------------------------------------------------------------- */

GtkWidget *
pl_run_panel_new (PlWindow *window)
{
  g_return_val_if_fail (PL_IS_WINDOW (window), NULL);
  PlRunPanel *self = g_object_new (PL_TYPE_RUN_PANEL, NULL);
  pl_panel_attach (self, window, &self->window, "pl-run-panel");
  g_signal_connect_object (pl_window_get_canvas (window), "selection-changed",
                           G_CALLBACK (on_canvas_selection_changed), self, 0);
  return GTK_WIDGET (self);
}

PlRunPanel *
pl_run_panel_get_for_window (PlWindow *window)
{
  g_return_val_if_fail (PL_IS_WINDOW (window), NULL);
  return g_object_get_data (G_OBJECT (window), "pl-run-panel");
}

void
pl_run_panel_set_backend (PlRunPanel *self, PlBackend backend)
{
  g_return_if_fail (PL_IS_RUN_PANEL (self) && (int) backend >= 0 && backend < N_BACKENDS);
  gtk_drop_down_set_selected (self->backend_dropdown, backend);
}

PlBackend
pl_run_panel_get_backend (PlRunPanel *self)
{
  g_return_val_if_fail (PL_IS_RUN_PANEL (self), PL_BACKEND_REFERENCE);
  guint i = gtk_drop_down_get_selected (self->backend_dropdown);
  return i < N_BACKENDS ? (PlBackend) i : PL_BACKEND_REFERENCE;
}

void
pl_run_panel_set_repeats (PlRunPanel *self, int repeats)
{
  g_return_if_fail (PL_IS_RUN_PANEL (self));
  gtk_spin_button_set_value (self->repeat_spin, repeats);
}

gboolean
pl_run_panel_is_running (PlRunPanel *self)
{
  g_return_val_if_fail (PL_IS_RUN_PANEL (self), FALSE);
  return self->running;
}

const PlRunReport *
pl_run_panel_get_report (PlRunPanel *self)
{
  g_return_val_if_fail (PL_IS_RUN_PANEL (self), NULL);
  return self->result ? self->result->report : NULL;
}

double
pl_run_panel_get_predicted_ms (PlRunPanel *self, int kernel)
{
  g_return_val_if_fail (PL_IS_RUN_PANEL (self), NAN);
  return predicted_at (self->result, kernel);
}

int
pl_run_panel_get_frames_while_timed (PlRunPanel *self)
{
  g_return_val_if_fail (PL_IS_RUN_PANEL (self), -1);
  return self->result ? pl_quiet_frames (self->result->quiet) : -1;
}

double
pl_run_panel_get_quiet_wait_ms (PlRunPanel *self)
{
  g_return_val_if_fail (PL_IS_RUN_PANEL (self), 0);
  return self->result ? pl_quiet_waited_ms (self->result->quiet) : 0;
}

const char *
pl_run_panel_get_error (PlRunPanel *self)
{
  g_return_val_if_fail (PL_IS_RUN_PANEL (self), NULL);
  return self->error;
}

int
pl_run_panel_get_n_rows (PlRunPanel *self)
{
  g_return_val_if_fail (PL_IS_RUN_PANEL (self), 0);
  int n = 0;
  while (gtk_list_box_get_row_at_index (self->table, n))
    n++;
  return n;
}

void
pl_run_panel_select_kernel (PlRunPanel *self, int i)
{
  g_return_if_fail (PL_IS_RUN_PANEL (self));
  select_kernel (self, i, TRUE);
}

int
pl_run_panel_kernel_of_selection (PlRunPanel *self)
{
  g_return_val_if_fail (PL_IS_RUN_PANEL (self), -1);
  PlGraphCanvas *canvas = panel_canvas (self);
  return canvas ? kernel_of_key (self, pl_graph_canvas_get_selected (canvas)) : -1;
}

int
pl_run_panel_get_selected_kernel (PlRunPanel *self)
{
  g_return_val_if_fail (PL_IS_RUN_PANEL (self), -1);
  return self->selected;
}

char *
pl_run_panel_get_code (PlRunPanel *self)
{
  g_return_val_if_fail (PL_IS_RUN_PANEL (self), NULL);
  GtkTextBuffer *b = gtk_text_view_get_buffer (self->code_view);
  GtkTextIter s, e;
  gtk_text_buffer_get_bounds (b, &s, &e);
  return gtk_text_buffer_get_text (b, &s, &e, FALSE);
}

char *
pl_run_panel_get_summary (PlRunPanel *self)
{
  g_return_val_if_fail (PL_IS_RUN_PANEL (self), NULL);
  return g_strdup (gtk_label_get_text (self->status_label));
}

PlChart *
pl_run_panel_get_time_chart (PlRunPanel *self)
{
  g_return_val_if_fail (PL_IS_RUN_PANEL (self), NULL);
  return self->time_chart;
}

PlChart *
pl_run_panel_get_memory_chart (PlRunPanel *self)
{
  g_return_val_if_fail (PL_IS_RUN_PANEL (self), NULL);
  return self->memory_chart;
}

PlChart *
pl_run_panel_get_timeline_chart (PlRunPanel *self)
{
  g_return_val_if_fail (PL_IS_RUN_PANEL (self), NULL);
  return self->timeline_chart;
}
