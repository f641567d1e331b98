/* pl-inspector.c — the side panel that describes the selection.
 *
 * The panel is rebuilt from scratch on every pl_inspector_show(): it keeps
 * no pointers into the graph, so a history replaced under it cannot leave it
 * dangling. Sections are GtkGrids of "name | value" rows; producers, users
 * and fusion body nodes are flat link buttons carrying a canvas key.
 *
 * Canvas keys (see pl-graph-layout.h): "n<id>" a node, "i<id>" a graph
 * input, "c<id>" a constant, "o<index>" a graph output, and "n<f>/..." the
 * same inside the body of fusion node f.
 */
#define G_LOG_DOMAIN "passlab"

#include "pl-inspector.h"

#include <math.h>

#include "cost.h"
#include "fusion.h"
#include "pl-panel-util.h"
#include "pl-report-view.h"

struct _PlInspector
{
  GtkWidget  parent_instance;

  GtkWidget *scroller;
  GtkLabel  *title_label;
  GtkLabel  *subtitle_label;
  GtkLabel  *badge_label;
  GtkBox    *sections_box;
  GtkWidget *step_separator;
  GtkLabel  *step_title_label;
  GtkLabel  *step_label;
  GtkBox    *report_box;
};

G_DEFINE_FINAL_TYPE (PlInspector, pl_inspector, GTK_TYPE_WIDGET)

enum { SIGNAL_KEY_ACTIVATED, N_SIGNALS };
static guint signals[N_SIGNALS];

/* --- keys ---------------------------------------------------------------------- */

/* What a key names, inside the (possibly nested) graph `graph`. */
typedef struct {
  const PlGraph *graph;   /* the graph level the last segment lives in */
  const PlNode  *node;    /* kind 'n' */
  const PlValue *value;   /* kinds 'i', 'c', 'o' */
  int            index;   /* kind 'o': the output index */
  char           kind;
  GString       *prefix;  /* key prefix of `graph` ("" or "n5/") */
} KeyTarget;

static bool
parse_segment (const char *seg, char *kind, guint32 *id)
{
  if (!strchr ("ncio", seg[0]) || !g_ascii_isdigit (seg[1]))
    return false;
  char *end = NULL;
  guint64 v = g_ascii_strtoull (seg + 1, &end, 10);
  if (*end != '\0' && *end != '/')
    return false;
  *kind = seg[0];
  *id = (guint32) v;
  return v <= G_MAXUINT32;
}

/* Resolves key in g; false when it names nothing there. */
static bool
resolve_key (const PlGraph *g, const char *key, KeyTarget *t)
{
  *t = (KeyTarget) { .graph = g, .prefix = g_string_new ("") };
  const char *seg = key;
  for (;;)
    {
      char kind;
      guint32 id;
      if (!parse_segment (seg, &kind, &id))
        return false;
      const char *slash = strchr (seg, '/');
      if (slash)
        {
          const PlNode *f = kind == 'n' ? pl_graph_node_by_id (t->graph, id) : NULL;
          if (!f || !f->body)
            return false;
          g_string_append_len (t->prefix, seg, slash - seg + 1);
          t->graph = f->body;
          seg = slash + 1;
          continue;
        }
      t->kind = kind;
      switch (kind)
        {
        case 'n':
          t->node = pl_graph_node_by_id (t->graph, id);
          return t->node != NULL;
        case 'i':
        case 'c':
          t->value = pl_graph_value_by_id (t->graph, id);
          return t->value && (kind == 'i' ? t->value->is_input : t->value->constant != NULL);
        default:
          t->index = (int) id;
          if (id >= t->graph->outputs->len)
            return false;
          t->value = t->graph->outputs->pdata[id];
          return true;
        }
    }
}

/* The key under which a value's source is drawn: its producer, or the
 * input / constant box. */
static char *
source_key (const char *prefix, const PlValue *v)
{
  if (v->producer)
    return g_strdup_printf ("%sn%u", prefix, v->producer->id);
  return g_strdup_printf ("%s%c%u", prefix, v->constant ? 'c' : 'i', v->id);
}

static char *
find_name_in (const PlGraph *g, const char *name, const char *prefix)
{
  const PlNode *n = pl_graph_find_node (g, name);
  if (n)
    return g_strdup_printf ("%sn%u", prefix, n->id);
  const PlValue *v = pl_graph_find_value (g, name);
  if (v)
    return source_key (prefix, v);
  for (guint i = 0; i < g->nodes->len; i++)
    {
      const PlNode *f = g->nodes->pdata[i];
      if (!f->body)
        continue;
      g_autofree char *inner = g_strdup_printf ("%sn%u/", prefix, f->id);
      char *key = find_name_in (f->body, name, inner);
      if (key)
        return key;
    }
  return NULL;
}

char *
pl_graph_key_for_name (const PlGraph *graph, const char *name)
{
  g_return_val_if_fail (graph != NULL && name != NULL, NULL);
  KeyTarget t;
  bool ok = resolve_key (graph, name, &t);
  g_string_free (t.prefix, TRUE);
  if (ok)
    return g_strdup (name);
  return find_name_in (graph, name, "");
}

/* --- formatting ------------------------------------------------------------------ */

/* "f32[1, 64, 56, 56]", with " @NHWC" for a non-default layout (as the text format writes it). */
static char *
value_type (const PlValue *v)
{
  g_autofree char *shape = pl_shape_to_string (&v->shape);
  if (v->layout != PL_LAYOUT_NCHW)
    return g_strdup_printf ("%s%s @%s", pl_dtype_name (v->dtype), shape, pl_layout_name (v->layout));
  return g_strdup_printf ("%s%s", pl_dtype_name (v->dtype), shape);
}

static char *
format_bytes (int64_t b)
{
  return g_format_size_full ((guint64) MAX (b, 0), G_FORMAT_SIZE_IEC_UNITS);
}

static int64_t
value_bytes (const PlValue *v)
{
  int64_t n = pl_shape_numel (&v->shape);
  return n < 0 ? -1 : n * (int64_t) pl_dtype_size (v->dtype);
}

/* An attribute's value as one line; long lists are cut after `limit` items. */
static char *
format_attr (const PlAttr *a)
{
  const int limit = 16;
  GString *s = g_string_new (NULL);
  switch (a->type)
    {
    case PL_ATTR_INT:
      g_string_append_printf (s, "%" G_GINT64_FORMAT, a->i);
      break;
    case PL_ATTR_FLOAT:
      g_string_append_printf (s, "%g", (double) a->f);
      break;
    case PL_ATTR_STRING:
      g_string_append_printf (s, "\"%s\"", a->s);
      break;
    case PL_ATTR_INTS:
    case PL_ATTR_FLOATS:
    case PL_ATTR_STRINGS:
      {
        int n = a->type == PL_ATTR_INTS ? a->ints.n : a->type == PL_ATTR_FLOATS ? a->floats.n : a->strings.n;
        g_string_append_c (s, '[');
        for (int i = 0; i < n && i < limit; i++)
          {
            if (i)
              g_string_append (s, ", ");
            if (a->type == PL_ATTR_INTS)
              g_string_append_printf (s, "%" G_GINT64_FORMAT, a->ints.v[i]);
            else if (a->type == PL_ATTR_FLOATS)
              g_string_append_printf (s, "%g", (double) a->floats.v[i]);
            else
              g_string_append_printf (s, "\"%s\"", a->strings.v[i]);
          }
        if (n > limit)
          g_string_append_printf (s, ", … (%d)", n);
        g_string_append_c (s, ']');
        break;
      }
    case PL_ATTR_TENSOR:
      {
        g_autofree char *sum = pl_tensor_summary (a->t, 6);
        g_string_append (s, sum);
        break;
      }
    case PL_ATTR_GRAPH:
      g_string_append_printf (s, "graph '%s' (%u nodes)", a->g->name ? a->g->name : "", a->g->nodes->len);
      break;
    }
  return g_string_free (s, FALSE);
}

static bool
id_in (const GArray *ids, guint32 id)
{
  for (guint i = 0; ids && i < ids->len; i++)
    if (g_array_index (ids, guint32, i) == id)
      return true;
  return false;
}

/* --- building the panel ------------------------------------------------------------ */

static void
clear_box (GtkBox *box)
{
  GtkWidget *child;
  while ((child = gtk_widget_get_first_child (GTK_WIDGET (box))))
    gtk_box_remove (box, child);
}

/* A section: a heading and a grid that rows are added to. */
static GtkGrid *
add_section (PlInspector *self, const char *title)
{
  GtkWidget *heading = gtk_label_new (title);
  gtk_label_set_xalign (GTK_LABEL (heading), 0);
  gtk_widget_add_css_class (heading, "inspector-heading");
  gtk_box_append (self->sections_box, heading);
  GtkWidget *grid = gtk_grid_new ();
  gtk_grid_set_column_spacing (GTK_GRID (grid), 10);
  gtk_grid_set_row_spacing (GTK_GRID (grid), 3);
  gtk_box_append (self->sections_box, grid);
  return GTK_GRID (grid);
}

static int
grid_rows (GtkGrid *grid)
{
  int rows = 0;
  for (GtkWidget *c = gtk_widget_get_first_child (GTK_WIDGET (grid)); c; c = gtk_widget_get_next_sibling (c))
    {
      int row, height;
      gtk_grid_query_child (grid, c, NULL, &row, NULL, &height);
      rows = MAX (rows, row + height);
    }
  return rows;
}

/* Appends a row: a dim name, then value (a widget, owned by the grid). */
static void
add_row_widget (GtkGrid *grid, const char *name, GtkWidget *value)
{
  int row = grid_rows (grid);
  GtkWidget *n = gtk_label_new (name);
  gtk_label_set_xalign (GTK_LABEL (n), 0);
  gtk_widget_set_valign (n, GTK_ALIGN_START);
  gtk_widget_add_css_class (n, "dim-label");
  gtk_grid_attach (grid, n, 0, row, 1, 1);
  gtk_widget_set_hexpand (value, TRUE);
  gtk_grid_attach (grid, value, 1, row, 1, 1);
}

static void
add_row (GtkGrid *grid, const char *name, const char *value)
{
  add_row_widget (grid, name, pl_panel_text_label (value, NULL));
}

static void
on_link_clicked (GtkButton *button, PlInspector *self)
{
  const char *key = g_object_get_data (G_OBJECT (button), "pl-key");
  g_signal_emit (self, signals[SIGNAL_KEY_ACTIVATED], 0, key);
}

static GtkWidget *
link_button (PlInspector *self, const char *text, const char *key)
{
  return pl_panel_link_button (text, key, TRUE, G_CALLBACK (on_link_clicked), self);
}

/* A link to whatever produces v ("← name (Op)", "← graph input x"). */
static GtkWidget *
producer_link (PlInspector *self, const char *prefix, const PlValue *v)
{
  g_autofree char *key = source_key (prefix, v);
  g_autofree char *text = v->producer ? g_strdup_printf ("← %s (%s)", v->producer->name, v->producer->op_type)
                          : v->constant ? g_strdup_printf ("← constant %s", v->name)
                                        : g_strdup_printf ("← graph input %s", v->name);
  return link_button (self, text, key);
}

/* One row per value: its name and type, then links (producer or users). */
static GtkWidget *
value_cell (const PlValue *v)
{
  g_autofree char *type = value_type (v);
  g_autofree char *markup = g_markup_printf_escaped ("%s  <span alpha='60%%'>%s</span>", v->name, type);
  GtkWidget *l = pl_panel_text_label (NULL, "monospace");
  gtk_label_set_markup (GTK_LABEL (l), markup);
  return l;
}

static void
add_users (PlInspector *self, GtkBox *box, const KeyTarget *t, const PlValue *v)
{
  for (int u = 0; u < v->n_uses; u++)
    {
      const PlNode *user = v->uses[u].node;
      g_autofree char *key = g_strdup_printf ("%sn%u", t->prefix->str, user->id);
      g_autofree char *text = g_strdup_printf ("→ %s (%s)", user->name, user->op_type);
      gtk_box_append (box, link_button (self, text, key));
    }
  for (guint o = 0; o < t->graph->outputs->len; o++)
    if (t->graph->outputs->pdata[o] == v)
      {
        g_autofree char *key = g_strdup_printf ("%so%u", t->prefix->str, o);
        g_autofree char *text = g_strdup_printf ("→ graph output %u", o);
        /* Inside a fusion body, outputs are the fusion node's own outputs. */
        if (t->prefix->len > 0)
          gtk_box_append (box, pl_panel_text_label ("→ output of the fusion", "dim-label"));
        else
          gtk_box_append (box, link_button (self, text, key));
      }
  if (v->n_uses == 0 && !pl_value_is_output (v))
    gtk_box_append (box, pl_panel_text_label ("(unused)", "dim-label"));
}

static GtkWidget *
vbox (void)
{
  return gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
}

static void
show_inputs (PlInspector *self, const KeyTarget *t, const PlNode *node)
{
  if (node->n_inputs == 0)
    return;
  GtkGrid *grid = add_section (self, "Inputs");
  for (int i = 0; i < node->n_inputs; i++)
    {
      g_autofree char *idx = g_strdup_printf ("%d", i);
      const PlValue *v = node->inputs[i];
      if (!v)
        {
          add_row_widget (grid, idx, pl_panel_text_label ("(omitted)", "dim-label"));
          continue;
        }
      GtkWidget *cell = vbox ();
      gtk_box_append (GTK_BOX (cell), value_cell (v));
      gtk_box_append (GTK_BOX (cell), producer_link (self, t->prefix->str, v));
      add_row_widget (grid, idx, cell);
    }
}

static void
show_outputs (PlInspector *self, const KeyTarget *t, const PlNode *node)
{
  GtkGrid *grid = add_section (self, "Outputs");
  for (int i = 0; i < node->n_outputs; i++)
    {
      g_autofree char *idx = g_strdup_printf ("%d", i);
      const PlValue *v = node->outputs[i];
      if (!v)
        {
          add_row_widget (grid, idx, pl_panel_text_label ("(omitted)", "dim-label"));
          continue;
        }
      GtkWidget *cell = vbox ();
      gtk_box_append (GTK_BOX (cell), value_cell (v));
      add_users (self, GTK_BOX (cell), t, v);
      add_row_widget (grid, idx, cell);
    }
  for (int c = 0; c < node->n_controls; c++)
    {
      const PlControl *ctl = &node->controls[c];
      g_autofree char *key = g_strdup_printf ("%sn%u", t->prefix->str, ctl->node->id);
      g_autofree char *text = g_strdup_printf ("after %s (%s)", ctl->node->name,
                                               ctl->kind == PL_CONTROL_SERIALIZE ? "serialize" : "prefetch");
      add_row_widget (grid, "control", link_button (self, text, key));
    }
}

static void
show_fusion (PlInspector *self, const KeyTarget *t, const PlNode *node)
{
  GtkGrid *grid = add_section (self, "Fusion");
  const char *kind = pl_node_attr_string (node, "kind", "?");
  const char *what = g_str_equal (kind, PL_FUSION_KIND_LOOP)     ? "one loop nest"
                     : g_str_equal (kind, PL_FUSION_KIND_INPUT)  ? "a loop nest ending in reductions"
                     : g_str_equal (kind, PL_FUSION_KIND_OUTPUT) ? "a library call with an epilogue"
                     : g_str_equal (kind, PL_FUSION_KIND_LIBRARY) ? "one library call"
                                                                   : "";
  g_autofree char *kind_text = *what ? g_strdup_printf ("%s — %s", kind, what) : g_strdup (kind);
  add_row (grid, "kind", kind_text);
  const char *library = pl_node_attr_string (node, "library", NULL);
  if (library)
    add_row (grid, "library", library);
  const PlAttr *epi = pl_node_attr (node, "epilogue");
  if (epi)
    {
      g_autofree char *e = format_attr (epi);
      add_row (grid, "epilogue", e);
    }
  g_autofree char *count = g_strdup_printf ("%u nodes", node->body->nodes->len);
  add_row (grid, "body", count);

  /* The body, in topological order, each node a link into the expanded fusion. */
  GtkGrid *body = add_section (self, "Fused body");
  int n = 0;
  g_autofree PlNode **order = pl_graph_topo_order (node->body, &n, NULL);
  for (int i = 0; i < n; i++)
    {
      g_autofree char *key = g_strdup_printf ("%sn%u/n%u", t->prefix->str, node->id, order[i]->id);
      g_autofree char *text = g_strdup_printf ("%s (%s)", order[i]->name, order[i]->op_type);
      g_autofree char *idx = g_strdup_printf ("%d", i);
      add_row_widget (body, idx, link_button (self, text, key));
    }
}

/* What the cost model and this step's report say about the node. */
static void
show_analysis (PlInspector *self, const PlNode *node, const PlStep *step)
{
  GtkGrid *grid = add_section (self, "Analysis");
  int64_t in_bytes = 0, out_bytes = 0;
  for (int i = 0; i < node->n_inputs; i++)
    if (node->inputs[i])
      in_bytes += MAX (value_bytes (node->inputs[i]), 0);
  for (int i = 0; i < node->n_outputs; i++)
    if (node->outputs[i])
      out_bytes += MAX (value_bytes (node->outputs[i]), 0);
  bool meta = pl_node_is_metadata_only (node);
  add_row (grid, "kernel", meta ? "none (a view: metadata only)" : node->body ? "one fused kernel" : "one kernel");
  if (!meta)
    {
      g_autofree char *r = format_bytes (in_bytes);
      g_autofree char *w = format_bytes (out_bytes);
      g_autofree char *rw = g_strdup_printf ("reads %s, writes %s", r, w);
      add_row (grid, "memory", rw);
    }
  else
    {
      g_autofree char *w = format_bytes (out_bytes);
      add_row (grid, "output", w);
    }
  /* Lines of the step's report that name this node, but for its row of a
   * table: show_report_row has shown that. */
  if (!step || !step->report || !*step->report)
    return;
  g_autoptr (GPtrArray) blocks = pl_report_parse (step->report);
  for (guint b = 0; b < blocks->len; b++)
    {
      const PlReportBlock *block = blocks->pdata[b];
      g_auto (GStrv) lines = g_strsplit (block->text, "\n", -1);
      for (int i = 0; lines[i]; i++)
        if (*lines[i] && strstr (lines[i], node->name)
            && !(block->cells && block->heading && i > 0 && g_str_equal (block->cells[i][0], node->name)))
          add_row_widget (grid, "report", pl_panel_text_label (lines[i], "monospace"));
    }
}

/* The node's row of a table in the step's report (the layout pass's costs
 * per conv), heading by heading, the chosen layout's time marked. */
static void
show_report_row (PlInspector *self, const PlNode *node, const PlStep *step)
{
  if (!step || !step->report || !*step->report)
    return;
  g_autoptr (GPtrArray) blocks = pl_report_parse (step->report);
  for (guint b = 0; b < blocks->len; b++)
    {
      const PlReportBlock *t = blocks->pdata[b];
      for (int r = 1; t->cells && t->heading && r < t->n_rows; r++)
        {
          if (!g_str_equal (t->cells[r][0], node->name))
            continue;
          const char *plan = pl_report_block_cell (t, r, "plan");
          if (!plan)
            plan = pl_report_block_cell (t, r, "chosen");
          GtkGrid *grid = add_section (self, "In this step's report");
          for (int c = 1; c < t->n_cols; c++)
            {
              const char *head = t->cells[0][c], *value = t->cells[r][c];
              PlLayout l;
              bool chosen = plan && pl_layout_parse (head, &l) && g_str_has_prefix (plan, head);
              g_autofree char *text = chosen ? g_strdup_printf ("%s  ← chosen", value) : g_strdup (value);
              add_row_widget (grid, head, pl_panel_text_label (text, chosen ? "report-chosen" : NULL));
            }
          /* A cheaper layout above may not be chosen: the pass kept one layout
           * for every conv when a mixed plan gained less than layout.min_gain */
          g_auto (GStrv) lines = g_strsplit (step->report, "\n", -1);
          for (int i = 0; lines[i]; i++)
            {
              const char *line = g_strchug (lines[i]);
              if (g_str_has_prefix (line, "kept ") && strstr (line, "layout.min_gain"))
                add_row_widget (grid, "why", pl_panel_text_label (line, NULL));
            }
          return;
        }
    }
}

/* --- data layouts ------------------------------------------------------------------ */

static const char *
layout_meaning (PlLayout layout)
{
  switch (layout)
    {
    case PL_LAYOUT_NHWC: return "channels last";
    case PL_LAYOUT_CHWN: return "batch innermost";
    case PL_LAYOUT_NCHW:
    case PL_LAYOUT_COUNT:
    default:             return "row-major in logical order, the default";
    }
}

/* "NHWC — channels last". */
static char *
layout_text (PlLayout layout)
{
  return g_strdup_printf ("%s — %s", pl_layout_name (layout), layout_meaning (layout));
}

/* Rows for v's layout: what it is and, for a static shape, the element
 * stride of each logical dim ("N 200704 · C 1 · H 3584 · W 64"). Only for
 * values that could have another layout (rank 4) or have one. */
static void
add_layout_rows (GtkGrid *grid, const PlValue *v)
{
  g_autofree char *what = layout_text (v->layout);
  add_row (grid, "layout", what);
  int64_t dims[PL_MAX_RANK], strides[PL_MAX_RANK];
  if (v->shape.rank != 4 || !pl_shape_get_dims (&v->shape, dims))
    return;
  pl_layout_strides (v->layout, 4, dims, strides);
  g_autofree char *text = g_strdup_printf ("N %" G_GINT64_FORMAT " · C %" G_GINT64_FORMAT " · H %" G_GINT64_FORMAT
                                           " · W %" G_GINT64_FORMAT, strides[0], strides[1], strides[2], strides[3]);
  add_row_widget (grid, "strides", pl_panel_text_label (text, "monospace"));
}

static void
show_value_layout (PlInspector *self, const PlValue *v)
{
  if (v->layout == PL_LAYOUT_NCHW && v->shape.rank != 4)
    return;
  add_layout_rows (add_section (self, "Memory layout"), v);
}

/* A Conv: the layout it runs in and the kernel the layout pass chose
 * (attributes impl and tile; kernels/kernel-plan.c reads them). A
 * LayoutTransform: what it converts. */
static void
show_node_layout (PlInspector *self, const PlNode *node, const PlStep *step)
{
  const PlValue *x = node->n_inputs > 0 ? node->inputs[0] : NULL;
  const PlValue *y = node->n_outputs > 0 ? node->outputs[0] : NULL;
  if (!x || !y)
    return;
  if (node->op == PL_OP_LayoutTransform)
    {
      GtkGrid *grid = add_section (self, "Layout transform");
      g_autofree char *text = g_strdup_printf ("%s → %s", pl_layout_name (x->layout), pl_layout_name (y->layout));
      add_row (grid, "converts", text);
      g_autofree char *bytes = format_bytes (value_bytes (y));
      g_autofree char *moved = g_strdup_printf ("reads and writes %s (a transpose)", bytes);
      add_row (grid, "memory", moved);
      return;
    }
  if (node->op != PL_OP_Conv)
    return;
  GtkGrid *grid = add_section (self, "Layout and kernel");
  g_autofree char *lay = layout_text (y->layout);
  add_row (grid, "layout", lay);
  if (x->layout != y->layout)
    {
      g_autofree char *in = layout_text (x->layout);
      add_row (grid, "input layout", in);
    }
  const char *impl = pl_node_attr_string (node, "impl", NULL);
  add_row (grid, "impl", impl ? (g_str_equal (impl, "direct") ? "direct — the generated tiled convolution"
                                 : g_str_equal (impl, "gemm") ? "gemm — im2col and a matrix product" : impl)
                              : "gemm (the default: no impl attribute)");
  const int64_t *t;
  int n;
  if (pl_node_attr_ints (node, "tile", &t, &n) && n == 3)
    {
      g_autofree char *tile = g_strdup_printf ("%" G_GINT64_FORMAT " × %" G_GINT64_FORMAT " × %" G_GINT64_FORMAT
                                               "  (width × height × output channels)", t[0], t[1], t[2]);
      add_row (grid, "tile", tile);
    }
  /* Tiles are what the tuning page searches. */
  GtkWidget *tune = gtk_button_new_with_mnemonic ("_Tune Its Tile…");
  gtk_actionable_set_action_name (GTK_ACTIONABLE (tune), "win.tune-conv");
  gtk_widget_set_halign (tune, GTK_ALIGN_START);
  gtk_widget_set_tooltip_text (tune, "Time the direct kernel's tiles for this convolution on the Tuning page (Ctrl+T)");
  add_row_widget (grid, "", tune);
  show_report_row (self, node, step);
}

static void
show_node (PlInspector *self, const KeyTarget *t, const PlStep *step)
{
  const PlNode *node = t->node;
  PlOpCategory cat = pl_op_info (node->op)->category;
  gtk_label_set_text (self->title_label, node->name);
  const char *domain = node->domain && *node->domain ? node->domain : NULL;
  g_autofree char *sub = node->body
                           ? g_strdup_printf ("%s (%s) · id %u", node->op_type,
                                              pl_node_attr_string (node, "kind", "?"), node->id)
                           : g_strdup_printf ("%s%s%s · %s · id %u", domain ? domain : "", domain ? "." : "",
                                              node->op_type, pl_op_category_name (cat), node->id);
  gtk_label_set_text (self->subtitle_label, sub);

  /* Diff status of top-level nodes against the previous step. */
  if (step && step->diff && t->prefix->len == 0)
    {
      const char *badge = id_in (step->diff->added, node->id)     ? "added by this step"
                          : id_in (step->diff->changed, node->id) ? "changed by this step"
                                                                  : NULL;
      if (badge)
        {
          gtk_label_set_text (self->badge_label, badge);
          gtk_widget_set_visible (GTK_WIDGET (self->badge_label), TRUE);
        }
    }
  if (t->prefix->len > 0)
    {
      gtk_label_set_text (self->badge_label, "inside a fusion body");
      gtk_widget_set_visible (GTK_WIDGET (self->badge_label), TRUE);
    }

  GtkGrid *attrs = NULL;
  for (int i = 0; i < node->n_attrs; i++)
    {
      /* A fusion's own section shows these. */
      const char *name = node->attrs[i].name;
      if (node->body && (g_str_equal (name, "kind") || g_str_equal (name, "library") || g_str_equal (name, "epilogue")))
        continue;
      if (!attrs)
        attrs = add_section (self, "Attributes");
      g_autofree char *v = format_attr (&node->attrs[i]);
      add_row_widget (attrs, name, pl_panel_text_label (v, "monospace"));
    }
  show_node_layout (self, node, step);
  show_inputs (self, t, node);
  show_outputs (self, t, node);
  if (node->body)
    show_fusion (self, t, node);
  show_analysis (self, node, step);
}

static void
show_value (PlInspector *self, const KeyTarget *t)
{
  const PlValue *v = t->value;
  g_autofree char *type = value_type (v);
  g_autofree char *bytes = format_bytes (value_bytes (v));
  const char *what = t->kind == 'i' ? "graph input" : t->kind == 'c' ? "constant" : "graph output";
  g_autofree char *title = t->kind == 'o' ? g_strdup_printf ("output %d: %s", t->index, v->name) : g_strdup (v->name);
  gtk_label_set_text (self->title_label, title);
  g_autofree char *sub = g_strdup_printf ("%s · %s · %s", what, type, bytes);
  gtk_label_set_text (self->subtitle_label, sub);
  show_value_layout (self, v);

  if (v->constant)
    {
      GtkGrid *grid = add_section (self, "Data");
      g_autofree char *sum = pl_tensor_summary (v->constant, 8);
      add_row_widget (grid, "values", pl_panel_text_label (sum, "monospace"));
    }
  if (t->kind == 'o')
    {
      GtkGrid *grid = add_section (self, "Produced by");
      add_row_widget (grid, "", producer_link (self, t->prefix->str, v));
      return;
    }
  GtkGrid *grid = add_section (self, "Used by");
  GtkWidget *cell = vbox ();
  add_users (self, GTK_BOX (cell), t, v);
  add_row_widget (grid, "", cell);
}

static int
by_count_desc (gconstpointer a, gconstpointer b, gpointer counts)
{
  int ca = GPOINTER_TO_INT (g_hash_table_lookup (counts, *(const char **) a));
  int cb = GPOINTER_TO_INT (g_hash_table_lookup (counts, *(const char **) b));
  return ca != cb ? cb - ca : strcmp (*(const char **) a, *(const char **) b);
}

/* Nothing selected: what the whole version is. */
static void
show_graph (PlInspector *self, const PlGraph *g, const PlStep *step)
{
  gtk_label_set_text (self->title_label, g->name && *g->name ? g->name : "Graph");
  g_autofree char *sub = g_strdup_printf ("%u nodes · opset %d · click a node to inspect it", g->nodes->len, g->opset);
  gtk_label_set_text (self->subtitle_label, sub);

  GtkGrid *io = add_section (self, "Inputs and outputs");
  for (guint i = 0; i < g->inputs->len; i++)
    {
      const PlValue *v = g->inputs->pdata[i];
      g_autofree char *type = value_type (v);
      g_autofree char *key = g_strdup_printf ("i%u", v->id);
      g_autofree char *text = g_strdup_printf ("%s  %s", v->name, type);
      add_row_widget (io, "input", link_button (self, text, key));
    }
  for (guint i = 0; i < g->outputs->len; i++)
    {
      const PlValue *v = g->outputs->pdata[i];
      g_autofree char *type = value_type (v);
      g_autofree char *key = g_strdup_printf ("o%u", i);
      g_autofree char *text = g_strdup_printf ("%s  %s", v->name, type);
      add_row_widget (io, "output", link_button (self, text, key));
    }

  if (step)
    {
      GtkGrid *cost = add_section (self, "Cost estimate");
      g_autofree char *kernels = g_strdup_printf ("%" G_GINT64_FORMAT, step->stats.kernels);
      g_autofree char *moved = format_bytes (step->stats.bytes_moved);
      g_autofree char *peak = format_bytes (step->stats.peak_bytes);
      g_autofree char *reshape = format_bytes (step->stats.reshape_bytes);
      g_autofree char *params = format_bytes (pl_graph_param_bytes (g));
      g_autofree char *flops = g_strdup_printf ("%.3g", (double) step->stats.flops);
      add_row (cost, "kernels", kernels);
      add_row (cost, "bytes moved", moved);
      add_row (cost, "reshape bytes", reshape);
      add_row (cost, "peak memory", peak);
      add_row (cost, "FLOPs", flops);
      add_row (cost, "parameters", params);
    }

  /* Ops by how often they occur. */
  g_autoptr (GHashTable) counts = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint i = 0; i < g->nodes->len; i++)
    {
      const char *op = ((PlNode *) g->nodes->pdata[i])->op_type;
      g_hash_table_insert (counts, (gpointer) op, GINT_TO_POINTER (GPOINTER_TO_INT (g_hash_table_lookup (counts, op)) + 1));
    }
  g_autoptr (GPtrArray) ops = g_ptr_array_new ();
  GHashTableIter it;
  gpointer op;
  g_hash_table_iter_init (&it, counts);
  while (g_hash_table_iter_next (&it, &op, NULL))
    g_ptr_array_add (ops, op);
  g_ptr_array_sort_with_data (ops, by_count_desc, counts);
  if (ops->len > 0)
    {
      GtkGrid *grid = add_section (self, "Ops");
      for (guint i = 0; i < ops->len && i < 16; i++)
        {
          g_autofree char *n = g_strdup_printf ("%d", GPOINTER_TO_INT (g_hash_table_lookup (counts, ops->pdata[i])));
          add_row (grid, n, ops->pdata[i]);
        }
      if (ops->len > 16)
        {
          g_autofree char *more = g_strdup_printf ("and %u more", ops->len - 16);
          add_row (grid, "", more);
        }
    }
}

static void
on_report_link (const char *key, gpointer data)
{
  g_signal_emit (data, signals[SIGNAL_KEY_ACTIVATED], 0, key);
}

static void
show_step (PlInspector *self, const PlGraph *graph, const PlStep *step, int index)
{
  gtk_widget_set_visible (self->step_separator, step != NULL);
  clear_box (self->report_box);
  if (!step)
    {
      gtk_label_set_text (self->step_title_label, "");
      gtk_label_set_text (self->step_label, "");
      return;
    }
  g_autofree char *title = index == 0 ? g_strdup ("Step 0 · the loaded graph")
                           : g_strdup_printf ("Step %d · %s", index, step->pass_name);
  gtk_label_set_text (self->step_title_label, title);

  GString *s = g_string_new (NULL);
  if (step->args_text && *step->args_text)
    g_string_append_printf (s, "parameters: %s\n", step->args_text);
  if (step->diff && step->changed)
    g_string_append_printf (s, "%u added, %u removed, %u changed\n", step->diff->added->len,
                            step->diff->removed->len, step->diff->changed->len);
  if (index > 0 && !step->changed)
    g_string_append (s, "changed nothing\n");
  if (step->checked && !step->check_failed)
    g_string_append_printf (s, "✓ numerical check: max relative error %.2g\n", step->max_rel_error);
  else if (step->checked)
    g_string_append_printf (s, "✗ %s\n", step->check_message ? step->check_message : "numerical check failed");
  if (s->len > 0 && s->str[s->len - 1] == '\n')
    g_string_truncate (s, s->len - 1);
  gtk_label_set_text (self->step_label, s->str);
  g_string_free (s, TRUE);

  /* Text, and tables where the report aligned columns (the layout pass's
   * per-layer costs): layer names link to their nodes. */
  if (step->report && *step->report)
    gtk_box_append (self->report_box, pl_report_view_new (step->report, graph, on_report_link, self));
}

void
pl_inspector_show (PlInspector *self, const PlGraph *graph, const char *key, const PlStep *step, int step_index)
{
  g_return_if_fail (PL_IS_INSPECTOR (self));
  clear_box (self->sections_box);
  gtk_widget_set_visible (GTK_WIDGET (self->badge_label), FALSE);
  gtk_widget_remove_css_class (GTK_WIDGET (self->subtitle_label), "error");
  show_step (self, graph, step, step_index);

  KeyTarget t = { .prefix = NULL };
  bool found = graph && key && resolve_key (graph, key, &t);
  if (found && t.kind == 'n')
    show_node (self, &t, step);
  else if (found)
    show_value (self, &t);
  else if (key && graph)
    {
      /* A ghost: a node this step removed (drawn from the previous version). */
      guint32 id = 0;
      char kind = 0;
      bool removed = parse_segment (key, &kind, &id) && kind == 'n' && step && step->diff
                     && id_in (step->diff->removed, id) && !strchr (key, '/');
      gtk_label_set_text (self->title_label, key);
      gtk_label_set_text (self->subtitle_label, removed ? "removed by this step: it is not in this version"
                                                        : "not in this version of the graph");
    }
  else if (graph)
    show_graph (self, graph, step);
  else
    {
      gtk_label_set_text (self->title_label, "No graph");
      gtk_label_set_text (self->subtitle_label, "Open one to inspect its nodes here.");
    }
  if (t.prefix)
    g_string_free (t.prefix, TRUE);
}

void
pl_inspector_clear (PlInspector *self)
{
  pl_inspector_show (self, NULL, NULL, NULL, 0);
}

const char *
pl_inspector_get_title (PlInspector *self)
{
  g_return_val_if_fail (PL_IS_INSPECTOR (self), NULL);
  return gtk_label_get_text (self->title_label);
}

/* --- GObject ------------------------------------------------------------------------ */

static void
pl_inspector_dispose (GObject *object)
{
  gtk_widget_dispose_template (GTK_WIDGET (object), PL_TYPE_INSPECTOR);
  G_OBJECT_CLASS (pl_inspector_parent_class)->dispose (object);
}

static void
pl_inspector_class_init (PlInspectorClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = pl_inspector_dispose;

  signals[SIGNAL_KEY_ACTIVATED] = g_signal_new ("key-activated", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                                                NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_STRING);

  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name (widget_class, "inspector");
  gtk_widget_class_set_template_from_resource (widget_class, "/org/passlab/Passlab/pl-inspector.ui");
  gtk_widget_class_bind_template_child (widget_class, PlInspector, scroller);
  gtk_widget_class_bind_template_child (widget_class, PlInspector, title_label);
  gtk_widget_class_bind_template_child (widget_class, PlInspector, subtitle_label);
  gtk_widget_class_bind_template_child (widget_class, PlInspector, badge_label);
  gtk_widget_class_bind_template_child (widget_class, PlInspector, sections_box);
  gtk_widget_class_bind_template_child (widget_class, PlInspector, step_separator);
  gtk_widget_class_bind_template_child (widget_class, PlInspector, step_title_label);
  gtk_widget_class_bind_template_child (widget_class, PlInspector, step_label);
  gtk_widget_class_bind_template_child (widget_class, PlInspector, report_box);
}

static void
pl_inspector_init (PlInspector *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
  pl_inspector_clear (self);
}

GtkWidget *
pl_inspector_new (void)
{
  return g_object_new (PL_TYPE_INSPECTOR, NULL);
}
