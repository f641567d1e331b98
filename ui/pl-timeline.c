/* pl-timeline.c — the pass timeline: a GtkColumnView over the steps of a
 * history.
 *
 * Model chain: GListStore of PlStepRow (one per step, pointing into the
 * history) → GtkFilterListModel (drops unchanged steps when "hide-unchanged"
 * is on) → GtkSingleSelection → the column view. Each column is one entry
 * of `columns[]`; one setup and one bind function serve them all.
 */
#define G_LOG_DOMAIN "passlab"

#include "pl-timeline.h"

#include <math.h>

/* --- PlStepRow: one step as a list item -------------------------------------------- */

#define PL_TYPE_STEP_ROW (pl_step_row_get_type ())
G_DECLARE_FINAL_TYPE (PlStepRow, pl_step_row, PL, STEP_ROW, GObject)

struct _PlStepRow
{
  GObject       parent_instance;
  int           index;
  const PlStep *step;   /* owned by the history */
  const PlStep *prev;   /* the step before, NULL for step 0 */
};

G_DEFINE_FINAL_TYPE (PlStepRow, pl_step_row, G_TYPE_OBJECT)

static void pl_step_row_class_init (PlStepRowClass *klass) {}
static void pl_step_row_init (PlStepRow *self) {}

static PlStepRow *
pl_step_row_new (int index, const PlStep *step, const PlStep *prev)
{
  PlStepRow *row = g_object_new (PL_TYPE_STEP_ROW, NULL);
  row->index = index;
  row->step = step;
  row->prev = prev;
  return row;
}

/* --- the widget ------------------------------------------------------------------------ */

struct _PlTimeline
{
  GtkWidget           parent_instance;

  GtkColumnView      *column_view;
  GtkLabel           *summary_label;
  GtkToggleButton    *hide_button;

  GListStore         *store;
  GtkFilterListModel *filtered;
  GtkCustomFilter    *filter;
  GtkSingleSelection *selection;
  gboolean            hide_unchanged;
  gboolean            updating;       /* selection set from code: do not emit */
};

G_DEFINE_FINAL_TYPE (PlTimeline, pl_timeline, GTK_TYPE_WIDGET)

enum { PROP_0, PROP_HIDE_UNCHANGED, N_PROPS };
static GParamSpec *properties[N_PROPS];

enum { SIGNAL_STEP_SELECTED, N_SIGNALS };
static guint signals[N_SIGNALS];

typedef enum {
  COL_STEP,
  COL_PASS,
  COL_DIFF,
  COL_NODES,
  COL_KERNELS,
  COL_MOVED,
  COL_PEAK,
  COL_TIME,
  COL_CHECK,
} ColumnId;

static const struct {
  ColumnId    id;
  const char *title;
  float       xalign;
  gboolean    expand;
} columns[] = {
  { COL_STEP, "#", 1.0f, FALSE },
  { COL_PASS, "Pass", 0.0f, TRUE },
  { COL_DIFF, "Changes", 0.0f, FALSE },
  { COL_NODES, "Nodes", 1.0f, FALSE },
  { COL_KERNELS, "Kernels", 1.0f, FALSE },
  { COL_MOVED, "Bytes moved", 1.0f, FALSE },
  { COL_PEAK, "Peak memory", 1.0f, FALSE },
  { COL_TIME, "Time", 1.0f, FALSE },
  { COL_CHECK, "Check", 0.0f, FALSE },
};

static char *
format_bytes (int64_t b)
{
  return g_format_size_full ((guint64) MAX (b, 0), G_FORMAT_SIZE_IEC_UNITS);
}

/* "value" plus a dim delta against the previous step when it differs. */
static char *
count_markup (int64_t now, const int64_t *before)
{
  if (!before || *before == now)
    return g_strdup_printf ("%" G_GINT64_FORMAT, now);
  return g_strdup_printf ("%" G_GINT64_FORMAT " <span alpha='55%%'>%s%" G_GINT64_FORMAT "</span>", now,
                          now > *before ? "+" : "−", now > *before ? now - *before : *before - now);
}

static char *
bytes_markup (int64_t now, const int64_t *before)
{
  g_autofree char *v = format_bytes (now);
  if (!before || *before == now || *before <= 0)
    return g_markup_escape_text (v, -1);
  double pct = 100.0 * (double) (now - *before) / (double) *before;
  return g_markup_printf_escaped ("%s <span alpha='55%%'>%s%.0f%%</span>", v, pct > 0 ? "+" : "−", fabs (pct));
}

static char *
diff_markup (const PlStepRow *row)
{
  const PlStep *s = row->step;
  if (row->index == 0)
    return g_strdup ("<span alpha='55%'>input</span>");
  if (!s->changed || !s->diff)
    return g_strdup ("<span alpha='55%'>no change</span>");
  return g_strdup_printf ("<span foreground='#26a269'>+%u</span>  <span foreground='#c01c28'>−%u</span>  "
                          "<span foreground='#c88800'>~%u</span>",
                          s->diff->added->len, s->diff->removed->len, s->diff->changed->len);
}

static char *
check_markup (const PlStep *s, char **tooltip)
{
  if (!s->checked)
    return g_strdup ("<span alpha='55%'>–</span>");
  if (s->check_failed)
    {
      *tooltip = g_strdup (s->check_message);
      if (isfinite (s->max_rel_error))
        return g_strdup_printf ("<span foreground='#c01c28' weight='bold'>✗ %.1e</span>", s->max_rel_error);
      return g_strdup ("<span foreground='#c01c28' weight='bold'>✗ failed</span>");
    }
  *tooltip = g_strdup_printf ("numerical check passed: worst relative error over the outputs %.3g",
                              s->max_rel_error);
  if (s->max_rel_error == 0)
    return g_strdup ("<span foreground='#26a269'>✓</span> exact");
  return g_strdup_printf ("<span foreground='#26a269'>✓</span> %.1e", s->max_rel_error);
}

static void
setup_cell (GtkSignalListItemFactory *factory, GtkListItem *item, gpointer user_data)
{
  int c = GPOINTER_TO_INT (user_data);
  GtkWidget *label = gtk_label_new (NULL);
  gtk_label_set_xalign (GTK_LABEL (label), columns[c].xalign);
  gtk_widget_add_css_class (label, "timeline-cell");
  if (columns[c].id != COL_PASS)
    gtk_widget_add_css_class (label, "numeric");
  gtk_list_item_set_child (item, label);
}

static void
bind_cell (GtkSignalListItemFactory *factory, GtkListItem *item, gpointer user_data)
{
  int c = GPOINTER_TO_INT (user_data);
  PlStepRow *row = gtk_list_item_get_item (item);
  GtkLabel *label = GTK_LABEL (gtk_list_item_get_child (item));
  const PlStep *s = row->step, *p = row->prev;
  g_autofree char *markup = NULL;
  g_autofree char *tooltip = NULL;

  switch (columns[c].id)
    {
    case COL_STEP:
      markup = g_strdup_printf ("%d", row->index);
      break;
    case COL_PASS:
      markup = row->index == 0 ? g_strdup ("(loaded graph)")
               : *s->args_text ? g_markup_printf_escaped ("%s <span alpha='55%%'>%s</span>", s->pass_name, s->args_text)
                               : g_markup_escape_text (s->pass_name, -1);
      break;
    case COL_DIFF:
      markup = diff_markup (row);
      if (s->diff && s->changed)
        tooltip = g_strdup_printf ("%u nodes added, %u removed, %u changed", s->diff->added->len,
                                   s->diff->removed->len, s->diff->changed->len);
      break;
    case COL_NODES:
      markup = count_markup (s->stats.nodes, p ? &p->stats.nodes : NULL);
      break;
    case COL_KERNELS:
      markup = count_markup (s->stats.kernels, p ? &p->stats.kernels : NULL);
      break;
    case COL_MOVED:
      markup = bytes_markup (s->stats.bytes_moved, p ? &p->stats.bytes_moved : NULL);
      break;
    case COL_PEAK:
      markup = bytes_markup (s->stats.peak_bytes, p ? &p->stats.peak_bytes : NULL);
      break;
    case COL_TIME:
      markup = row->index == 0 ? g_strdup ("<span alpha='55%'>–</span>") : g_strdup_printf ("%.2f ms", s->time_ms);
      break;
    case COL_CHECK:
      markup = check_markup (s, &tooltip);
      break;
    }
  gtk_label_set_markup (label, markup);
  gtk_widget_set_tooltip_text (GTK_WIDGET (label), tooltip);
  /* Steps that changed nothing are greyed; a failed check is red everywhere. */
  if (row->index > 0 && !s->changed)
    gtk_widget_add_css_class (GTK_WIDGET (label), "unchanged");
  else
    gtk_widget_remove_css_class (GTK_WIDGET (label), "unchanged");
}

static gboolean
filter_row (gpointer item, gpointer user_data)
{
  PlTimeline *self = user_data;
  PlStepRow *row = item;
  return !self->hide_unchanged || row->index == 0 || row->step->changed;
}

static PlStepRow *
row_at (PlTimeline *self, guint position)
{
  g_autoptr (PlStepRow) row = g_list_model_get_item (G_LIST_MODEL (self->filtered), position);
  return row; /* the model keeps it alive */
}

static guint
position_of_step (PlTimeline *self, int step)
{
  guint n = g_list_model_get_n_items (G_LIST_MODEL (self->filtered));
  for (guint i = 0; i < n; i++)
    if (row_at (self, i)->index == step)
      return i;
  return GTK_INVALID_LIST_POSITION;
}

static void
on_selection_changed (GtkSingleSelection *selection, GParamSpec *pspec, PlTimeline *self)
{
  if (self->updating)
    return;
  guint pos = gtk_single_selection_get_selected (selection);
  if (pos != GTK_INVALID_LIST_POSITION)
    g_signal_emit (self, signals[SIGNAL_STEP_SELECTED], 0, row_at (self, pos)->index);
}

static void
update_summary (PlTimeline *self)
{
  guint n = g_list_model_get_n_items (G_LIST_MODEL (self->store));
  int changed = 0, failed = 0;
  for (guint i = 1; i < n; i++)
    {
      g_autoptr (PlStepRow) row = g_list_model_get_item (G_LIST_MODEL (self->store), i);
      changed += row->step->changed;
      failed += row->step->check_failed;
    }
  g_autofree char *text = n == 0 ? g_strdup ("")
                          : n == 1 ? g_strdup ("no pipeline run yet — Ctrl+R runs one")
                                   : g_strdup_printf ("%u passes, %d changed the graph%s", n - 1, changed,
                                                      failed ? ", a numerical check FAILED" : "");
  gtk_label_set_text (self->summary_label, text);
  if (failed)
    gtk_widget_add_css_class (GTK_WIDGET (self->summary_label), "error");
  else
    gtk_widget_remove_css_class (GTK_WIDGET (self->summary_label), "error");
}

/* --- API ------------------------------------------------------------------------------ */

void
pl_timeline_set_history (PlTimeline *self, const PlHistory *history)
{
  g_return_if_fail (PL_IS_TIMELINE (self));
  self->updating = TRUE;
  int n = history ? pl_history_n_steps (history) : 0;
  g_autoptr (GPtrArray) rows = g_ptr_array_new_with_free_func (g_object_unref);
  for (int i = 0; i < n; i++)
    g_ptr_array_add (rows, pl_step_row_new (i, pl_history_step (history, i), i ? pl_history_step (history, i - 1) : NULL));
  g_list_store_splice (self->store, 0, g_list_model_get_n_items (G_LIST_MODEL (self->store)), rows->pdata, rows->len);
  gtk_single_selection_set_selected (self->selection, GTK_INVALID_LIST_POSITION);
  self->updating = FALSE;
  update_summary (self);
}

void
pl_timeline_set_selected_step (PlTimeline *self, int i)
{
  g_return_if_fail (PL_IS_TIMELINE (self));
  self->updating = TRUE;
  gtk_single_selection_set_selected (self->selection, i < 0 ? GTK_INVALID_LIST_POSITION : position_of_step (self, i));
  self->updating = FALSE;
}

int
pl_timeline_get_selected_step (PlTimeline *self)
{
  g_return_val_if_fail (PL_IS_TIMELINE (self), -1);
  guint pos = gtk_single_selection_get_selected (self->selection);
  return pos == GTK_INVALID_LIST_POSITION ? -1 : row_at (self, pos)->index;
}

void
pl_timeline_set_hide_unchanged (PlTimeline *self, gboolean hide)
{
  g_return_if_fail (PL_IS_TIMELINE (self));
  hide = !!hide;
  if (self->hide_unchanged == hide)
    return;
  /* Keep the highlighted step highlighted if it stays visible. */
  int selected = pl_timeline_get_selected_step (self);
  self->hide_unchanged = hide;
  self->updating = TRUE;
  gtk_filter_changed (GTK_FILTER (self->filter), hide ? GTK_FILTER_CHANGE_MORE_STRICT : GTK_FILTER_CHANGE_LESS_STRICT);
  self->updating = FALSE;
  pl_timeline_set_selected_step (self, selected);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_HIDE_UNCHANGED]);
}

gboolean
pl_timeline_get_hide_unchanged (PlTimeline *self)
{
  g_return_val_if_fail (PL_IS_TIMELINE (self), FALSE);
  return self->hide_unchanged;
}

int
pl_timeline_get_n_rows (PlTimeline *self)
{
  g_return_val_if_fail (PL_IS_TIMELINE (self), 0);
  return (int) g_list_model_get_n_items (G_LIST_MODEL (self->filtered));
}

int
pl_timeline_get_row_step (PlTimeline *self, int row)
{
  g_return_val_if_fail (PL_IS_TIMELINE (self), -1);
  if (row < 0 || row >= pl_timeline_get_n_rows (self))
    return -1;
  return row_at (self, (guint) row)->index;
}

int
pl_timeline_next_step (PlTimeline *self, int i)
{
  int n = pl_timeline_get_n_rows (self);
  for (int r = 0; r < n; r++)
    if (row_at (self, (guint) r)->index > i)
      return row_at (self, (guint) r)->index;
  return -1;
}

int
pl_timeline_prev_step (PlTimeline *self, int i)
{
  for (int r = pl_timeline_get_n_rows (self) - 1; r >= 0; r--)
    if (row_at (self, (guint) r)->index < i)
      return row_at (self, (guint) r)->index;
  return -1;
}

/* --- GObject --------------------------------------------------------------------------- */

static void
pl_timeline_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  PlTimeline *self = PL_TIMELINE (object);
  switch (prop_id)
    {
    case PROP_HIDE_UNCHANGED:
      g_value_set_boolean (value, self->hide_unchanged);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
pl_timeline_set_property (GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
  PlTimeline *self = PL_TIMELINE (object);
  switch (prop_id)
    {
    case PROP_HIDE_UNCHANGED:
      pl_timeline_set_hide_unchanged (self, g_value_get_boolean (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
pl_timeline_dispose (GObject *object)
{
  PlTimeline *self = PL_TIMELINE (object);
  gtk_widget_dispose_template (GTK_WIDGET (self), PL_TYPE_TIMELINE);
  g_clear_object (&self->selection);
  g_clear_object (&self->store);
  G_OBJECT_CLASS (pl_timeline_parent_class)->dispose (object);
}

static void
pl_timeline_class_init (PlTimelineClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->get_property = pl_timeline_get_property;
  object_class->set_property = pl_timeline_set_property;
  object_class->dispose = pl_timeline_dispose;

  properties[PROP_HIDE_UNCHANGED] =
    g_param_spec_boolean ("hide-unchanged", NULL, NULL, FALSE,
                          G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  signals[SIGNAL_STEP_SELECTED] = g_signal_new ("step-selected", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                                                NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_INT);

  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name (widget_class, "timeline");
  gtk_widget_class_set_template_from_resource (widget_class, "/org/passlab/Passlab/pl-timeline.ui");
  gtk_widget_class_bind_template_child (widget_class, PlTimeline, column_view);
  gtk_widget_class_bind_template_child (widget_class, PlTimeline, summary_label);
  gtk_widget_class_bind_template_child (widget_class, PlTimeline, hide_button);
}

static void
pl_timeline_init (PlTimeline *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));

  self->store = g_list_store_new (PL_TYPE_STEP_ROW);
  self->filter = gtk_custom_filter_new (filter_row, self, NULL);
  /* The filter model takes the store and the filter; the selection takes the filter model. */
  self->filtered = gtk_filter_list_model_new (G_LIST_MODEL (g_object_ref (self->store)), GTK_FILTER (self->filter));
  self->selection = gtk_single_selection_new (G_LIST_MODEL (self->filtered));
  gtk_single_selection_set_autoselect (self->selection, FALSE);
  gtk_single_selection_set_can_unselect (self->selection, TRUE);
  g_signal_connect (self->selection, "notify::selected", G_CALLBACK (on_selection_changed), self);
  gtk_column_view_set_model (self->column_view, GTK_SELECTION_MODEL (self->selection));

  for (guint c = 0; c < G_N_ELEMENTS (columns); c++)
    {
      GtkListItemFactory *factory = gtk_signal_list_item_factory_new ();
      g_signal_connect (factory, "setup", G_CALLBACK (setup_cell), GINT_TO_POINTER (c));
      g_signal_connect (factory, "bind", G_CALLBACK (bind_cell), GINT_TO_POINTER (c));
      GtkColumnViewColumn *col = gtk_column_view_column_new (columns[c].title, factory);
      gtk_column_view_column_set_expand (col, columns[c].expand);
      gtk_column_view_column_set_resizable (col, TRUE);
      gtk_column_view_append_column (self->column_view, col);
      g_object_unref (col);
    }

  g_object_bind_property (self, "hide-unchanged", self->hide_button, "active",
                          G_BINDING_BIDIRECTIONAL | G_BINDING_SYNC_CREATE);
  update_summary (self);
}

GtkWidget *
pl_timeline_new (void)
{
  return g_object_new (PL_TYPE_TIMELINE, NULL);
}
