/* pl-memory-view.c — the memory page (see pl-memory-view.h). Built in code:
 * a summary line over a pane with the chart on the left and the tensors
 * live at the selected step on the right.
 *
 * Both curves are planned, not measured: pl_memory_profile of the two
 * versions in the window's history (sizes from shapes, symbolic dims as 1,
 * constants apart, host values apart), the curve the swap pass itself
 * plans with. The versions have different schedules — the swap pass adds
 * copy nodes — so the x axis counts compute nodes: the k-th compute node of
 * either schedule sits at x = k, and the memory nodes (swap-out / in,
 * compress / decompress) between two compute nodes share the unit after the
 * first. The curves line up where the computation is the same, and the
 * memory nodes are marked under the axis where they run.
 */
#define G_LOG_DOMAIN "passlab"

#include "pl-memory-view.h"

#include "pass-manager.h"
#include "pl-inspector.h"
#include "pl-panel-util.h"
#include "pl-run-panel.h"

/* Symbolic dims count as this, as in the pass manager's statistics and the swap pass. */
#define SYM_SIZE 1

typedef struct {
  int              step;      /* history step, -1: not shown */
  const PlGraph   *graph;     /* that step's graph (the window's history owns it) */
  PlMemoryProfile *profile;
  int              series;    /* in the chart */
} Curve;

struct _PlMemoryView
{
  GtkBox       parent_instance;

  PlWindow    *window;        /* weak */
  GtkLabel    *summary;
  PlChart     *chart;
  GtkLabel    *live_title;
  GtkListBox  *live_list;

  Curve        curves[2];     /* PlMemoryCurve */
  int64_t      budget;
  GPtrArray   *live;          /* PlValue*, largest first */
  int          live_curve, live_step;
  gboolean     dirty;         /* the window changed while the view was hidden */
  gboolean     syncing;       /* a selection being passed on: ignore the echo */
  int64_t      run_budget;    /* what the budget came from, to notice changes */
};

G_DEFINE_FINAL_TYPE (PlMemoryView, pl_memory_view, GTK_TYPE_BOX)

static gboolean
is_memory_node (const PlNode *n)
{
  return n->op == PL_OP_SwapOut || n->op == PL_OP_SwapIn || n->op == PL_OP_CompressFp16
         || n->op == PL_OP_DecompressFp16;
}

static char *
format_mib (int64_t bytes)
{
  return g_strdup_printf ("%.2f MiB", (double) bytes / 1048576.0);
}

static void
curve_clear (Curve *c)
{
  g_clear_pointer (&c->profile, pl_memory_profile_free);
  *c = (Curve) { .step = -1, .series = -1 };
}

/* --- what is compared ---------------------------------------------------------------------- */

/* The latest swap step at or before step, or -1. */
static int
latest_swap (const PlHistory *h, int step)
{
  for (int k = step; k >= 1; k--)
    if (g_strcmp0 (pl_history_step (h, k)->pass_name, "swap") == 0)
      return k;
  return -1;
}

/* The swap pass's budget in bytes (its "budget" counter), else the last
 * run's device budget, else 0. */
static int64_t
find_budget (PlMemoryView *self, const PlHistory *h, int swap_step)
{
  if (swap_step >= 0)
    {
      const PlStep *s = pl_history_step (h, swap_step);
      int64_t b = s->counters ? pl_pass_report_get (s->counters, "budget") : 0;
      if (b > 0)
        return b;
    }
  return self->run_budget;
}

static int64_t
current_run_budget (PlMemoryView *self)
{
  PlRunPanel *run = self->window ? pl_run_panel_get_for_window (self->window) : NULL;
  const PlRunReport *r = run ? pl_run_panel_get_report (run) : NULL;
  return r ? r->device_budget : 0;
}

static char *
step_title (const PlHistory *h, int step)
{
  const PlStep *s = pl_history_step (h, step);
  return step == 0 ? g_strdup ("step 0, loaded") : g_strdup_printf ("step %d, %s", step, s->pass_name);
}

/* x of every schedule step: compute nodes at 0, 1, 2, ...; the memory nodes
 * after compute node k spread over (k, k + 1). *x_end: where the last ends. */
static double *
schedule_xs (const PlMemoryProfile *p, double *x_end)
{
  double *xs = g_new (double, MAX (p->n_steps, 1));
  int i = 0, compute = 0;
  while (i < p->n_steps)
    {
      if (!is_memory_node (p->order[i]))
        {
          xs[i++] = compute++;
          continue;
        }
      int run = i;
      while (run < p->n_steps && is_memory_node (p->order[run]))
        run++;
      /* memory nodes before any compute node sit before x = 0 */
      double base = compute > 0 ? compute - 1 : -1;
      for (int k = i; k < run; k++)
        xs[k] = base + (double) (k - i + 1) / (run - i + 1);
      i = run;
    }
  *x_end = MAX (compute, 1);
  return xs;
}

/* --- the chart ----------------------------------------------------------------------------- */

static void
add_curve (PlMemoryView *self, const PlHistory *h, PlMemoryCurve which)
{
  Curve *c = &self->curves[which];
  const PlMemoryProfile *p = c->profile;
  double x_end;
  g_autofree double *xs = schedule_xs (p, &x_end);
  g_autofree double *ys = g_new (double, MAX (p->n_steps, 1));
  g_autoptr (GPtrArray) labels = g_ptr_array_new_with_free_func (g_free);
  for (int i = 0; i < p->n_steps; i++)
    {
      ys[i] = (double) p->live_bytes[i];
      g_ptr_array_add (labels, g_strdup_printf ("schedule step %d: %s (%s)", i, p->order[i]->name,
                                                p->order[i]->op_type));
    }
  g_ptr_array_add (labels, NULL);
  /* short: the summary line names the steps */
  const char *pass = c->step > 0 ? pl_history_step (h, c->step)->pass_name : "loaded";
  g_autofree char *name = g_strdup_printf ("%s (%s)", which == PL_MEMORY_BEFORE ? "before" : "after", pass);
  c->series = pl_chart_add_series (self->chart, name, xs, ys, p->n_steps, x_end,
                                   which == PL_MEMORY_BEFORE ? PL_CHART_COLOR_MUTED : PL_CHART_COLOR_ACCENT, TRUE,
                                   (const char *const *) labels->pdata);
  if (which != PL_MEMORY_AFTER)
    return;
  for (int i = 0; i < p->n_steps; i++)
    {
      const PlNode *n = p->order[i];
      if (!is_memory_node (n))
        continue;
      gboolean out = n->op == PL_OP_SwapOut || n->op == PL_OP_CompressFp16;
      gboolean swap = n->op == PL_OP_SwapOut || n->op == PL_OP_SwapIn;
      const char *kind = n->op == PL_OP_SwapOut ? "swap-out" : n->op == PL_OP_SwapIn ? "swap-in"
                         : n->op == PL_OP_CompressFp16 ? "compress" : "decompress";
      const PlValue *v = n->n_inputs > 0 ? n->inputs[0] : NULL;
      g_autofree char *size = v ? g_format_size_full ((guint64) pl_value_bytes (v, SYM_SIZE, NULL),
                                                      G_FORMAT_SIZE_IEC_UNITS) : g_strdup ("?");
      g_autofree char *label = g_strdup_printf ("%s '%s' (%s of %s) at schedule step %d", kind, n->name, size,
                                                v ? v->name : "?", i);
      pl_chart_add_x_mark (self->chart, xs[i], swap ? (out ? PL_CHART_COLOR_ORANGE : PL_CHART_COLOR_GREEN)
                                                    : PL_CHART_COLOR_PURPLE,
                           !out, kind, label);
    }
}

static void
show_summary (PlMemoryView *self, const PlHistory *h)
{
  g_autoptr (GString) text = g_string_new ("Planned device memory over the schedule");
  for (int which = PL_MEMORY_BEFORE; which <= PL_MEMORY_AFTER; which++)
    {
      const Curve *c = &self->curves[which];
      if (!c->profile)
        continue;
      g_autofree char *title = step_title (h, c->step);
      g_autofree char *peak = format_mib (c->profile->peak_bytes);
      g_string_append_printf (text, "  ·  <b>%s</b> (%s): peak %s at schedule step %d",
                              which == PL_MEMORY_BEFORE ? "before" : "after", title, peak, c->profile->peak_step);
      if (c->profile->host_peak_bytes > 0)
        {
          g_autofree char *host = format_mib (c->profile->host_peak_bytes);
          g_string_append_printf (text, ", host %s", host);
        }
    }
  const Curve *after = &self->curves[PL_MEMORY_AFTER];
  if (self->budget > 0 && after->profile)
    {
      g_autofree char *b = format_mib (self->budget);
      g_string_append_printf (text, "  ·  budget %s: %s", b,
                              after->profile->peak_bytes <= self->budget ? "met" : "<b>not met</b>");
    }
  gtk_label_set_markup (self->summary, text->str);
}

/* --- the live tensors ----------------------------------------------------------------------- */

static int
compare_bytes_desc (gconstpointer a, gconstpointer b)
{
  const PlValue *x = *(PlValue *const *) a, *y = *(PlValue *const *) b;
  int64_t bx = pl_value_bytes (x, SYM_SIZE, NULL), by = pl_value_bytes (y, SYM_SIZE, NULL);
  return bx < by ? 1 : bx > by ? -1 : g_strcmp0 (x->name, y->name);
}

static GtkWidget *
live_row (const char *name, const char *shape, const char *bytes, const char *producer, const char *where,
          gboolean header, gboolean host)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 8);
  gtk_widget_set_margin_start (box, 6);
  gtk_widget_set_margin_end (box, 6);
  GtkWidget *name_cell = pl_panel_cell (name, 12, 0, FALSE);
  gtk_label_set_max_width_chars (GTK_LABEL (name_cell), 40);
  gtk_widget_set_hexpand (name_cell, TRUE);
  gtk_box_append (GTK_BOX (box), name_cell);
  gtk_box_append (GTK_BOX (box), pl_panel_cell (shape, 15, 0, !header));
  gtk_box_append (GTK_BOX (box), pl_panel_cell (bytes, 9, 1, FALSE));
  gtk_box_append (GTK_BOX (box), pl_panel_cell (producer, 12, 0, !header));
  GtkWidget *w = pl_panel_cell (where, 6, 0, FALSE);
  if (host)
    gtk_widget_add_css_class (w, "memory-host");
  gtk_box_append (GTK_BOX (box), w);
  if (header)
    gtk_widget_add_css_class (box, "heading");
  else if (host)
    gtk_widget_add_css_class (box, "memory-host-row");
  return box;
}

static void
clear_live (PlMemoryView *self, const char *title)
{
  g_ptr_array_set_size (self->live, 0);
  self->live_curve = self->live_step = -1;
  GtkWidget *child;
  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self->live_list))))
    gtk_list_box_remove (self->live_list, child);
  gtk_label_set_text (self->live_title, title);
}

/* Lists the values live at step of a curve, largest first. */
static void
show_live (PlMemoryView *self, PlMemoryCurve which, int step)
{
  const Curve *c = &self->curves[which];
  clear_live (self, "");
  g_autoptr (GPtrArray) live = pl_memory_profile_live_at (c->profile, c->graph, step);
  g_ptr_array_sort (live, compare_bytes_desc);
  int64_t device = 0, host = 0;
  for (guint i = 0; i < live->len; i++)
    {
      const PlValue *v = live->pdata[i];
      gboolean on_host = pl_value_on_host (v);
      int64_t b = pl_value_bytes (v, SYM_SIZE, NULL);
      *(on_host ? &host : &device) += b;
      g_autofree char *shape = pl_shape_to_string (&v->shape);
      g_autofree char *type = g_strdup_printf ("%s%s", pl_dtype_name (v->dtype), shape);
      g_autofree char *size = g_format_size_full ((guint64) b, G_FORMAT_SIZE_IEC_UNITS);
      /* a node's output mostly bears its name: then the op says enough */
      g_autofree char *producer = !v->producer ? g_strdup (v->is_input ? "graph input" : "—")
                                  : g_str_has_prefix (v->name, v->producer->name) ? g_strdup (v->producer->op_type)
                                  : g_strdup_printf ("%s (%s)", v->producer->name, v->producer->op_type);
      g_autofree char *made_by = v->producer ? g_strdup_printf ("%s (%s)", v->producer->name, v->producer->op_type)
                                             : g_strdup (producer);
      GtkWidget *row = live_row (v->name, type, size, producer, on_host ? "host" : "", FALSE, on_host);
      g_autofree char *tip = g_strdup_printf ("%s %s, %s, made by %s%s", v->name, type, size, made_by,
                                              on_host ? "\nswapped out: in host memory, not counted on the device"
                                                      : "");
      gtk_widget_set_tooltip_text (row, tip);
      gtk_list_box_append (self->live_list, row);
      g_ptr_array_add (self->live, (gpointer) v);
    }
  self->live_curve = which;
  self->live_step = step;
  const PlNode *n = c->profile->order[step];
  g_autofree char *d = format_mib (device);
  g_autofree char *hb = format_mib (host);
  g_autofree char *title = g_strdup_printf ("Live at schedule step %d of %s, '%s' (%s): %u tensors, %s on the "
                                            "device%s%s%s",
                                            step, which == PL_MEMORY_BEFORE ? "before" : "after", n->name,
                                            n->op_type, live->len, d, host > 0 ? ", " : "", host > 0 ? hb : "",
                                            host > 0 ? " on the host" : "");
  gtk_label_set_text (self->live_title, title);
  gtk_widget_set_tooltip_text (GTK_WIDGET (self->live_title), title);
}

/* Selects step of a curve: the chart's point, the live list, and the
 * step's node on the canvas when select_node. */
static gboolean
select_point (PlMemoryView *self, PlMemoryCurve which, int step, gboolean select_node)
{
  const Curve *c = &self->curves[which];
  if (!c->profile || step < 0 || step >= c->profile->n_steps)
    return FALSE;
  self->syncing = TRUE;
  pl_chart_select_point (self->chart, c->series, step);
  show_live (self, which, step);
  if (select_node && self->window)
    pl_window_select (self->window, c->profile->order[step]->name);
  self->syncing = FALSE;
  return TRUE;
}

/* --- following the window ------------------------------------------------------------------ */

static void
show_empty (PlMemoryView *self, const char *why)
{
  pl_chart_clear (self->chart);
  gtk_label_set_text (self->summary, why);
  clear_live (self, "Click the chart to see the tensors live at a step.");
}

void
pl_memory_view_refresh (PlMemoryView *self)
{
  g_return_if_fail (PL_IS_MEMORY_VIEW (self));
  self->dirty = FALSE;
  curve_clear (&self->curves[PL_MEMORY_BEFORE]);
  curve_clear (&self->curves[PL_MEMORY_AFTER]);
  self->budget = 0;
  self->run_budget = current_run_budget (self);
  const PlHistory *h = self->window ? pl_window_get_history (self->window) : NULL;
  int step = self->window ? pl_window_get_step (self->window) : -1;
  if (!h || step < 0)
    {
      show_empty (self, "Open a graph to see its memory over the schedule.");
      return;
    }
  int swap = latest_swap (h, step);
  int steps[2] = { swap > 0 ? swap - 1 : step > 0 ? 0 : -1, step };
  for (int which = PL_MEMORY_BEFORE; which <= PL_MEMORY_AFTER; which++)
    {
      if (steps[which] < 0)
        continue;
      Curve *c = &self->curves[which];
      c->step = steps[which];
      c->graph = pl_history_step (h, c->step)->graph;
      g_autoptr (GError) error = NULL;
      c->profile = pl_memory_profile (c->graph, SYM_SIZE, &error);
      if (!c->profile)
        {
          g_autofree char *msg = g_strdup_printf ("No schedule for step %d: %s", c->step, error->message);
          curve_clear (&self->curves[PL_MEMORY_BEFORE]);
          curve_clear (&self->curves[PL_MEMORY_AFTER]);
          show_empty (self, msg);
          return;
        }
    }
  self->budget = find_budget (self, h, swap);
  pl_chart_set_lines (self->chart, "schedule step (compute nodes; swap nodes in between)", TRUE, NULL);
  for (int which = PL_MEMORY_BEFORE; which <= PL_MEMORY_AFTER; which++)
    if (self->curves[which].profile)
      add_curve (self, h, which);
  if (self->budget > 0)
    {
      g_autofree char *b = format_mib (self->budget);
      g_autofree char *label = g_strdup_printf ("budget %s", b);
      pl_chart_add_y_line (self->chart, (double) self->budget, label);
    }
  show_summary (self, h);
  /* Start with the tensors live at the peak: what a reader wants first. */
  select_point (self, PL_MEMORY_AFTER, self->curves[PL_MEMORY_AFTER].profile->peak_step, FALSE);
}

/* Whether what the view shows is out of date. */
static gboolean
changed (PlMemoryView *self)
{
  const PlHistory *h = self->window ? pl_window_get_history (self->window) : NULL;
  int step = self->window ? pl_window_get_step (self->window) : -1;
  const PlGraph *g = h && step >= 0 ? pl_history_step (h, step)->graph : NULL;
  return g != self->curves[PL_MEMORY_AFTER].graph || (g && current_run_budget (self) != self->run_budget);
}

static void
on_window_changed (PlWindow *window, GParamSpec *pspec, PlMemoryView *self)
{
  if (!changed (self))
    return;
  if (gtk_widget_get_mapped (GTK_WIDGET (self)))
    {
      pl_memory_view_refresh (self);
      return;
    }
  /* Hidden: let go of the old versions now (the window may free them next)
   * and catch up when shown. */
  curve_clear (&self->curves[PL_MEMORY_BEFORE]);
  curve_clear (&self->curves[PL_MEMORY_AFTER]);
  self->budget = 0;
  show_empty (self, "");
  self->dirty = TRUE;
}

static void
on_map (GtkWidget *widget, PlMemoryView *self)
{
  if (self->dirty || changed (self))
    pl_memory_view_refresh (self);
}

static void
on_point_activated (PlChart *chart, int series, int i, PlMemoryView *self)
{
  for (int which = PL_MEMORY_BEFORE; which <= PL_MEMORY_AFTER; which++)
    if (self->curves[which].profile && self->curves[which].series == series)
      select_point (self, which, i, TRUE);
}

/* A node selected on the canvas: its step on the after curve. */
static void
on_canvas_selection_changed (PlGraphCanvas *canvas, const char *key, PlMemoryView *self)
{
  const Curve *c = &self->curves[PL_MEMORY_AFTER];
  guint64 id;
  if (self->syncing || !c->profile || !key || key[0] != 'n'
      || !g_ascii_string_to_unsigned (key + 1, 10, 0, G_MAXUINT32, &id, NULL))
    return;
  for (int i = 0; i < c->profile->n_steps; i++)
    if (c->profile->order[i]->id == id)
      {
        select_point (self, PL_MEMORY_AFTER, i, FALSE);
        return;
      }
}

/* A row of the live list: its value on the canvas. */
static void
on_live_row_activated (GtkListBox *box, GtkListBoxRow *row, PlMemoryView *self)
{
  int i = gtk_list_box_row_get_index (row);
  if (self->syncing || !self->window || i < 0 || i >= (int) self->live->len)
    return;
  const PlValue *v = self->live->pdata[i];
  self->syncing = TRUE;
  pl_window_select (self->window, v->name);
  self->syncing = FALSE;
}

/* --- construction -------------------------------------------------------------------------- */

static GtkWidget *
build_live (PlMemoryView *self)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 4);
  self->live_title = GTK_LABEL (gtk_label_new (NULL));
  gtk_label_set_xalign (self->live_title, 0);
  gtk_label_set_wrap (self->live_title, TRUE);
  gtk_widget_add_css_class (GTK_WIDGET (self->live_title), "heading");
  gtk_box_append (GTK_BOX (box), GTK_WIDGET (self->live_title));
  gtk_widget_add_css_class (box, "memory-live");
  gtk_box_append (GTK_BOX (box), live_row ("Tensor", "Shape", "Bytes", "Producer", "Where", TRUE, FALSE));
  self->live_list = GTK_LIST_BOX (gtk_list_box_new ());
  gtk_list_box_set_selection_mode (self->live_list, GTK_SELECTION_SINGLE);
  gtk_list_box_set_activate_on_single_click (self->live_list, TRUE);
  GtkWidget *empty = gtk_label_new ("Nothing selected.");
  gtk_widget_add_css_class (empty, "dim-label");
  gtk_list_box_set_placeholder (self->live_list, empty);
  g_signal_connect (self->live_list, "row-activated", G_CALLBACK (on_live_row_activated), self);
  GtkWidget *sw = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (sw), GTK_WIDGET (self->live_list));
  gtk_widget_set_vexpand (sw, TRUE);
  gtk_box_append (GTK_BOX (box), sw);
  return box;
}

static void
pl_memory_view_init (PlMemoryView *self)
{
  self->live = g_ptr_array_new ();
  curve_clear (&self->curves[PL_MEMORY_BEFORE]);
  curve_clear (&self->curves[PL_MEMORY_AFTER]);
  pl_panel_init_box (GTK_BOX (self));

  self->summary = GTK_LABEL (gtk_label_new (NULL));
  gtk_label_set_xalign (self->summary, 0);
  gtk_label_set_wrap (self->summary, TRUE);
  gtk_label_set_selectable (self->summary, TRUE);
  gtk_widget_set_focusable (GTK_WIDGET (self->summary), FALSE);
  gtk_box_append (GTK_BOX (self), GTK_WIDGET (self->summary));

  self->chart = PL_CHART (pl_chart_new ());
  gtk_widget_set_hexpand (GTK_WIDGET (self->chart), TRUE);
  gtk_widget_set_vexpand (GTK_WIDGET (self->chart), TRUE);
  g_signal_connect (self->chart, "point-activated", G_CALLBACK (on_point_activated), self);
  /* at 560 px; a wider window widens the chart */
  GtkWidget *paned = pl_panel_paned (GTK_ORIENTATION_HORIZONTAL, GTK_WIDGET (self->chart), build_live (self), 560);
  gtk_paned_set_resize_end_child (GTK_PANED (paned), FALSE);
  gtk_widget_set_vexpand (paned, TRUE);
  gtk_box_append (GTK_BOX (self), paned);

  g_signal_connect (self, "map", G_CALLBACK (on_map), self);
  show_empty (self, "Open a graph to see its memory over the schedule.");
}

static void
pl_memory_view_dispose (GObject *object)
{
  PlMemoryView *self = PL_MEMORY_VIEW (object);
  pl_panel_detach (&self->window);
  G_OBJECT_CLASS (pl_memory_view_parent_class)->dispose (object);
}

static void
pl_memory_view_finalize (GObject *object)
{
  PlMemoryView *self = PL_MEMORY_VIEW (object);
  curve_clear (&self->curves[PL_MEMORY_BEFORE]);
  curve_clear (&self->curves[PL_MEMORY_AFTER]);
  g_ptr_array_unref (self->live);
  G_OBJECT_CLASS (pl_memory_view_parent_class)->finalize (object);
}

static void
pl_memory_view_class_init (PlMemoryViewClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  object_class->dispose = pl_memory_view_dispose;
  object_class->finalize = pl_memory_view_finalize;
}

/* --- API ----------------------------------------------------------------------------------- */

GtkWidget *
pl_memory_view_new (PlWindow *window)
{
  g_return_val_if_fail (PL_IS_WINDOW (window), NULL);
  PlMemoryView *self = g_object_new (PL_TYPE_MEMORY_VIEW, NULL);
  pl_panel_attach (self, window, &self->window, "pl-memory-view");
  /* The window notifies its state whenever the step shown changes. */
  g_signal_connect_object (window, "notify::has-graph", G_CALLBACK (on_window_changed), self, 0);
  g_signal_connect_object (pl_window_get_canvas (window), "selection-changed",
                           G_CALLBACK (on_canvas_selection_changed), self, 0);
  return GTK_WIDGET (self);
}

PlMemoryView *
pl_memory_view_get_for_window (PlWindow *window)
{
  g_return_val_if_fail (PL_IS_WINDOW (window), NULL);
  return g_object_get_data (G_OBJECT (window), "pl-memory-view");
}

int
pl_memory_view_get_n_curves (PlMemoryView *self)
{
  g_return_val_if_fail (PL_IS_MEMORY_VIEW (self), 0);
  return (self->curves[PL_MEMORY_BEFORE].profile != NULL) + (self->curves[PL_MEMORY_AFTER].profile != NULL);
}

const PlMemoryProfile *
pl_memory_view_get_profile (PlMemoryView *self, PlMemoryCurve curve)
{
  g_return_val_if_fail (PL_IS_MEMORY_VIEW (self) && curve <= PL_MEMORY_AFTER, NULL);
  return self->curves[curve].profile;
}

int
pl_memory_view_get_history_step (PlMemoryView *self, PlMemoryCurve curve)
{
  g_return_val_if_fail (PL_IS_MEMORY_VIEW (self) && curve <= PL_MEMORY_AFTER, -1);
  return self->curves[curve].step;
}

int64_t
pl_memory_view_get_budget (PlMemoryView *self)
{
  g_return_val_if_fail (PL_IS_MEMORY_VIEW (self), 0);
  return self->budget;
}

PlChart *
pl_memory_view_get_chart (PlMemoryView *self)
{
  g_return_val_if_fail (PL_IS_MEMORY_VIEW (self), NULL);
  return self->chart;
}

int
pl_memory_view_get_series (PlMemoryView *self, PlMemoryCurve curve)
{
  g_return_val_if_fail (PL_IS_MEMORY_VIEW (self) && curve <= PL_MEMORY_AFTER, -1);
  return self->curves[curve].series;
}

gboolean
pl_memory_view_select_point (PlMemoryView *self, PlMemoryCurve curve, int step)
{
  g_return_val_if_fail (PL_IS_MEMORY_VIEW (self) && curve <= PL_MEMORY_AFTER, FALSE);
  return select_point (self, curve, step, TRUE);
}

int
pl_memory_view_get_n_live (PlMemoryView *self)
{
  g_return_val_if_fail (PL_IS_MEMORY_VIEW (self), 0);
  return (int) self->live->len;
}

const PlValue *
pl_memory_view_get_live (PlMemoryView *self, int i)
{
  g_return_val_if_fail (PL_IS_MEMORY_VIEW (self), NULL);
  return i >= 0 && i < (int) self->live->len ? self->live->pdata[i] : NULL;
}
