/* pl-report-view.h — a pass report as the inspector shows it: runs of plain
 * text, and tables where the report aligned its lines in columns (the
 * layout pass's per-layer cost table, for one), drawn as grids with a
 * heading row, numbers right-aligned, the cell of a row's chosen layout
 * marked, and layer names linking to their nodes. Parsing is separate from
 * the widgets so it can be tested headless. */
#pragma once

#include <gtk/gtk.h>

#include "graph.h"

G_BEGIN_DECLS

/* A run of the report: text (cells NULL) or a table. */
typedef struct {
  char       *text;      /* the run's lines, joined (tables too: as written) */
  int         n_rows;    /* table rows, the heading included */
  int         n_cols;
  char     ***cells;     /* cells[row][col]; NULL for text */
  bool        heading;   /* row 0 names the columns */
} PlReportBlock;

/* Cuts report into blocks: a table is two or more consecutive lines that
 * split into the same number (three or more) of cells at tabs, '|' or runs
 * of two or more spaces. A GPtrArray of PlReportBlock* (it frees them). */
GPtrArray *pl_report_parse       (const char *report);
/* The row's cell in the column whose heading starts with prefix
 * (case-insensitive), or NULL. */
const char *pl_report_block_cell (const PlReportBlock *b, int row, const char *heading_prefix);

/* Called with a node's canvas key when its link in a table is clicked. */
typedef void (*PlReportLinkFunc) (const char *key, gpointer data);

/* A widget for the report: text runs as labels (monospace, selectable),
 * tables as grids that scroll sideways when wide. A first-column cell that
 * names a node of graph (may be NULL) becomes a link. */
GtkWidget *pl_report_view_new    (const char *report, const PlGraph *graph, PlReportLinkFunc link, gpointer data);

G_END_DECLS
