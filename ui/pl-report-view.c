/* pl-report-view.c — pass reports as text and tables (see pl-report-view.h).
 *
 * Reports are text for people, one line per action; a pass that reports a
 * table (the layout pass: conv, shape, plan, predicted ms, each layout's
 * ms, source) aligns it in columns with printf widths. Columns are found the
 * way a reader finds them:
 *   - cells are separated by a tab, a '|' or two or more spaces (one space
 *     stays inside a cell: "NHWC direct", "1x64x56x56 -> 64 k3x3");
 *   - a table is two or more consecutive lines of three or more cells; a
 *     first line without numbers is its heading;
 *   - a value wider than its printf width leaves one space before the next
 *     column, so its row has too few cells: the cell that runs across where
 *     a heading word starts is cut at the space nearest to it;
 *   - rows that still disagree: the columns are the runs of character
 *     positions blank in no line, and runs under no heading word join the
 *     run before. */
#define G_LOG_DOMAIN "passlab"

#include "pl-report-view.h"

#include <string.h>

#include "pl-inspector.h"
#include "pl-panel-util.h"

static void
block_free (gpointer p)
{
  PlReportBlock *b = p;
  for (int r = 0; b->cells && r < b->n_rows; r++)
    g_strfreev (b->cells[r]);
  g_free (b->cells);
  g_free (b->text);
  g_free (b);
}

/* --- one line -------------------------------------------------------------------- */

typedef struct {
  glong start, end;   /* characters [start, end), trimmed */
} Span;

typedef struct {
  gunichar *u;
  glong     len;
  GArray   *cells;    /* Span */
} Line;

static bool
is_separator (const Line *l, glong p)
{
  gunichar c = l->u[p];
  return c == '\t' || c == '|' || (c == ' ' && p + 1 < l->len && (l->u[p + 1] == ' ' || l->u[p + 1] == '|'));
}

/* Cuts a line into cells (see the top). */
static void
line_init (Line *l, const char *text)
{
  l->u = g_utf8_to_ucs4_fast (text, -1, &l->len);
  l->cells = g_array_new (FALSE, FALSE, sizeof (Span));
  glong start = -1, last = -1;  /* the open cell, and its last non-blank character */
  for (glong p = 0; p <= l->len; p++)
    {
      if (p == l->len || is_separator (l, p))
        {
          if (start >= 0)
            g_array_append_val (l->cells, ((Span) { start, last + 1 }));
          start = -1;
          continue;
        }
      if (g_unichar_isspace (l->u[p]))
        continue;
      if (start < 0)
        start = p;
      last = p;
    }
}

static void
line_clear (Line *l)
{
  g_free (l->u);
  g_array_unref (l->cells);
}

static char *
char_range (const Line *l, glong from, glong to)
{
  GString *out = g_string_new (NULL);
  for (glong p = from; p < MIN (to, l->len); p++)
    g_string_append_unichar (out, l->u[p]);
  return g_strstrip (g_string_free (out, FALSE));
}

static int
n_cells (const Line *l)
{
  return (int) l->cells->len;
}

static Span
cell_span (const Line *l, int c)
{
  return g_array_index (l->cells, Span, c);
}

/* A number, perhaps with a unit ("12.1128", "1.3x", "97%", "0.2 ms"), not a
 * shape or a name that starts with a digit ("1x64x56x56 -> 64 k3x3"). */
static bool
looks_numeric (const char *cell)
{
  char *end = NULL;
  g_ascii_strtod (cell, &end);
  if (end == cell)
    return false;
  while (*end == ' ')
    end++;
  return *end == '\0' || g_str_equal (end, "ms") || g_str_equal (end, "%") || g_str_equal (end, "x")
         || g_str_equal (end, "×");
}

/* Right-aligned in a table: numbers, and "-" or "n/a" in their place. */
static bool
aligns_right (const char *cell)
{
  return looks_numeric (cell) || g_str_equal (cell, "-") || g_str_equal (cell, "n/a");
}

static bool
has_number (const Line *l)
{
  for (int c = 0; c < n_cells (l); c++)
    {
      g_autofree char *text = char_range (l, cell_span (l, c).start, cell_span (l, c).end);
      if (looks_numeric (text))
        return true;
    }
  return false;
}

/* A row short of cells: cuts the cell that runs across where heading cell j
 * starts at its space nearest to there, for each j, until the row has as
 * many cells as the heading. */
static void
repair_row (Line *row, const Line *head)
{
  for (int j = 1; j < n_cells (head) && n_cells (row) < n_cells (head); j++)
    {
      glong b = cell_span (head, j).start;
      for (int c = 0; c < n_cells (row); c++)
        {
          Span s = cell_span (row, c);
          if (s.start >= b || s.end <= b)
            continue;
          glong cut = -1;
          for (glong p = s.start + 1; p < s.end - 1; p++)
            if (row->u[p] == ' ' && (cut < 0 || ABS (p - b) < ABS (cut - b)))
              cut = p;
          if (cut < 0)
            break;
          Span right = { cut + 1, s.end };
          g_array_index (row->cells, Span, c).end = cut;
          g_array_insert_val (row->cells, c + 1, right);
          break;
        }
    }
}

/* --- blocks ---------------------------------------------------------------------- */

static PlReportBlock *
text_block (GString *text)
{
  PlReportBlock *b = g_new0 (PlReportBlock, 1);
  if (text->len > 0 && text->str[text->len - 1] == '\n')
    g_string_truncate (text, text->len - 1);
  b->text = g_strdup (text->str);
  g_string_truncate (text, 0);
  return b;
}

/* Columns by character position (see the top): their spans. */
static GArray *
positional_columns (const Line *lines, int n, bool heading)
{
  glong width = 0;
  for (int r = 0; r < n; r++)
    width = MAX (width, lines[r].len);
  GArray *cols = g_array_new (FALSE, FALSE, sizeof (Span));
  glong start = -1;
  for (glong p = 0; p <= width; p++)
    {
      bool filled = false;
      for (int r = 0; p < width && r < n && !filled; r++)
        filled = p < lines[r].len && !g_unichar_isspace (lines[r].u[p]);
      if (filled && start < 0)
        start = p;
      else if (!filled && start >= 0)
        {
          g_autofree char *head = char_range (&lines[0], start, p);
          if (heading && cols->len > 0 && head[0] == '\0')
            g_array_index (cols, Span, cols->len - 1).end = p;  /* under no heading word */
          else
            g_array_append_val (cols, ((Span) { start, p }));
          start = -1;
        }
    }
  return cols;
}

/* Lines [0, n) as a table. */
static PlReportBlock *
table_block (char **text, Line *lines, int n)
{
  PlReportBlock *b = g_new0 (PlReportBlock, 1);
  b->n_rows = n;
  b->cells = g_new0 (char **, n);
  b->heading = !has_number (&lines[0]);
  b->text = g_strjoinv ("\n", text);
  bool agree = true;
  for (int r = 1; r < n; r++)
    {
      if (b->heading && n_cells (&lines[r]) < n_cells (&lines[0]))
        repair_row (&lines[r], &lines[0]);
      agree = agree && n_cells (&lines[r]) == n_cells (&lines[0]);
    }
  g_autoptr (GArray) cols = agree ? NULL : positional_columns (lines, n, b->heading);
  b->n_cols = agree ? n_cells (&lines[0]) : (int) cols->len;
  for (int r = 0; r < n; r++)
    {
      b->cells[r] = g_new0 (char *, b->n_cols + 1);
      for (int c = 0; c < b->n_cols; c++)
        {
          Span s = agree ? cell_span (&lines[r], c) : g_array_index (cols, Span, c);
          b->cells[r][c] = char_range (&lines[r], s.start, s.end);
        }
    }
  return b;
}

GPtrArray *
pl_report_parse (const char *report)
{
  GPtrArray *blocks = g_ptr_array_new_with_free_func (block_free);
  if (!report)
    return blocks;
  g_auto (GStrv) text = g_strsplit (report, "\n", -1);
  int n = (int) g_strv_length (text);
  Line *lines = g_new0 (Line, MAX (n, 1));
  for (int i = 0; i < n; i++)
    line_init (&lines[i], text[i]);
  g_autoptr (GString) run = g_string_new (NULL);
  for (int i = 0; i < n;)
    {
      int j = i;
      while (j < n && n_cells (&lines[j]) >= 3)
        j++;
      if (j - i >= 2)
        {
          if (run->len > 0)
            g_ptr_array_add (blocks, text_block (run));
          g_autofree char **part = g_new0 (char *, j - i + 1);
          memcpy (part, text + i, sizeof (char *) * (j - i));
          g_ptr_array_add (blocks, table_block (part, lines + i, j - i));
          i = j;
          continue;
        }
      g_string_append_printf (run, "%s\n", text[i]);
      i++;
    }
  /* No empty trailing run (reports end in a newline). */
  while (run->len > 0 && g_ascii_isspace (run->str[run->len - 1]))
    g_string_truncate (run, run->len - 1);
  if (run->len > 0)
    g_ptr_array_add (blocks, text_block (run));
  for (int i = 0; i < n; i++)
    line_clear (&lines[i]);
  g_free (lines);
  return blocks;
}

const char *
pl_report_block_cell (const PlReportBlock *b, int row, const char *heading_prefix)
{
  g_return_val_if_fail (b != NULL && heading_prefix != NULL, NULL);
  if (!b->cells || !b->heading || row < 0 || row >= b->n_rows)
    return NULL;
  size_t len = strlen (heading_prefix);
  for (int c = 0; c < b->n_cols; c++)
    if (g_ascii_strncasecmp (b->cells[0][c], heading_prefix, len) == 0)
      return b->cells[row][c];
  return NULL;
}

/* --- widgets ----------------------------------------------------------------------- */

typedef struct {
  PlReportLinkFunc func;
  gpointer         data;
} Link;

static GtkWidget *
text_label (const char *text)
{
  GtkWidget *l = pl_panel_text_label (text, "monospace");
  gtk_widget_add_css_class (l, "inspector-report");
  return l;
}

static void
on_link_clicked (GtkButton *button, Link *link)
{
  link->func (g_object_get_data (G_OBJECT (button), "pl-key"), link->data);
}


/* Which column holds each layout's time (-1 none): headings that start
 * with a layout name ("NHWC", "NHWC ms"). */
static void
layout_columns (const PlReportBlock *b, int col[PL_LAYOUT_COUNT])
{
  for (int l = 0; l < PL_LAYOUT_COUNT; l++)
    col[l] = -1;
  for (int c = 0; b->heading && c < b->n_cols; c++)
    for (int l = 0; l < PL_LAYOUT_COUNT; l++)
      if (g_str_has_prefix (b->cells[0][c], pl_layout_name (l)) && col[l] < 0)
        col[l] = c;
}

/* The layout a row chose (the first word of its "chosen" or "plan" cell), or -1. */
static int
chosen_layout (const PlReportBlock *b, int row)
{
  const char *chosen = pl_report_block_cell (b, row, "chosen");
  if (!chosen)
    chosen = pl_report_block_cell (b, row, "plan");
  for (int l = 0; chosen && l < PL_LAYOUT_COUNT; l++)
    if (g_str_has_prefix (chosen, pl_layout_name (l)))
      return l;
  return -1;
}

static GtkWidget *
table_widget (const PlReportBlock *b, const PlGraph *graph, Link *link)
{
  GtkWidget *grid = gtk_grid_new ();
  gtk_grid_set_column_spacing (GTK_GRID (grid), 12);
  gtk_grid_set_row_spacing (GTK_GRID (grid), 2);
  gtk_widget_add_css_class (grid, "report-table");
  int col[PL_LAYOUT_COUNT];
  layout_columns (b, col);
  /* A column of numbers has its heading over them, on the right. */
  g_autofree bool *numbers = g_new (bool, MAX (b->n_cols, 1));
  for (int c = 0; c < b->n_cols; c++)
    {
      numbers[c] = b->n_rows > (b->heading ? 1 : 0);
      for (int r = b->heading ? 1 : 0; r < b->n_rows; r++)
        numbers[c] = numbers[c] && aligns_right (b->cells[r][c]);
    }
  for (int r = 0; r < b->n_rows; r++)
    {
      bool head = r == 0 && b->heading;
      int chosen = head ? -1 : chosen_layout (b, r);
      for (int c = 0; c < b->n_cols; c++)
        {
          const char *text = b->cells[r][c];
          g_autofree char *key = !head && c == 0 && graph && link->func ? pl_graph_key_for_name (graph, text) : NULL;
          GtkWidget *cell = key ? pl_panel_link_button (text, key, FALSE, G_CALLBACK (on_link_clicked), link)
                                : gtk_label_new (text);
          if (!key)
            {
              gtk_label_set_xalign (GTK_LABEL (cell), (head ? numbers[c] : aligns_right (text)) ? 1.0 : 0.0);
              gtk_label_set_selectable (GTK_LABEL (cell), TRUE);
              gtk_widget_set_focusable (cell, FALSE);
            }
          if (head)
            gtk_widget_add_css_class (cell, "report-heading");
          else if (chosen >= 0 && c == col[chosen])
            {
              gtk_widget_add_css_class (cell, "report-chosen");
              gtk_widget_set_tooltip_text (cell, "the layout chosen for this layer");
            }
          gtk_grid_attach (GTK_GRID (grid), cell, c, r, 1, 1);
        }
    }
  GtkWidget *sw = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (sw), GTK_POLICY_AUTOMATIC, GTK_POLICY_NEVER);
  gtk_scrolled_window_set_propagate_natural_height (GTK_SCROLLED_WINDOW (sw), TRUE);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (sw), grid);
  gtk_widget_add_css_class (sw, "inspector-report");
  return sw;
}

GtkWidget *
pl_report_view_new (const char *report, const PlGraph *graph, PlReportLinkFunc func, gpointer data)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 4);
  Link *link = g_new (Link, 1);
  *link = (Link) { func, data };
  g_object_set_data_full (G_OBJECT (box), "pl-link", link, g_free);
  g_autoptr (GPtrArray) blocks = pl_report_parse (report);
  for (guint i = 0; i < blocks->len; i++)
    {
      const PlReportBlock *b = blocks->pdata[i];
      gtk_box_append (GTK_BOX (box), b->cells ? table_widget (b, graph, link) : text_label (b->text));
    }
  return box;
}
