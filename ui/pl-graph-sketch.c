/* pl-graph-sketch.c — what graph versions show, before any geometry.
 *
 * A walk over each version lists what the canvas draws — op nodes, graph
 * inputs, constants, graph outputs, fusion entries with their bodies — keyed
 * by stable ids (see pl-graph-layout.h for the key scheme), and the data and
 * control edges between them. Edges are resolved through fusion bodies the
 * way core/dot-export.c does it: a body input stands for the fusion node's
 * input slot, a fusion output for the body output behind it, so data flows
 * through an expanded cluster. The union of several versions merges by key,
 * so a node removed later still has a place. Sketches are cheap (linear)
 * and built on the main thread; the layout thread and the canvas only read
 * them, applying a collapse set (pl_graph_sketch_visible).
 *
 * Box sizes come from the texts with a fixed average character width per
 * text size (PL_LAYOUT_*_SIZE); the canvas ellipsizes what still overflows.
 *
 * Data layouts (core/layout.h): an edge carrying a value in a non-default
 * layout says so in its label ("f32[1, 64, 56, 56] @NHWC", as the text
 * format writes it) and in data_layout; a Conv gets a third line with its
 * layout and implementation ("NHWC · direct 8×4×16"), a LayoutTransform
 * "→ NHWC" and its own shape.
 */
#define G_LOG_DOMAIN "passlab"

#include "pl-graph-layout.h"

/* Average advance of one character, by text size: a fixed estimate for a
 * sans font (the canvas ellipsizes what still does not fit). */
#define CHAR_W_TITLE    6.9
#define CHAR_W_SUBTITLE 5.2
#define CHAR_W_SMALL    5.0
#define MAX_NODE_WIDTH  280.0

/* Where a walk is: which graph, the key prefix of its nodes, the fusion
 * entry it is the body of (and that fusion node), and the enclosing walk. */
typedef struct WalkCtx {
  const PlGraph        *g;
  const char           *prefix;
  int                   parent;
  const PlNode         *fusion;
  const struct WalkCtx *outer;
} WalkCtx;

typedef struct {
  PlGraphSketch *s;
  GHashTable    *edge_keys;     /* "from>to#slot" -> edge index + 1 */
  bool           show_constants;
} SketchBuilder;

static void
sketch_node_clear (gpointer p)
{
  PlSketchNode *n = p;
  g_free (n->key);
  g_free (n->title);
  g_free (n->subtitle);
  g_free (n->detail);
}

static void
sketch_edge_clear (gpointer p)
{
  PlSketchEdge *e = p;
  g_free (e->label);
}

static double
text_width (const char *s, double char_w)
{
  return s != NULL ? g_utf8_strlen (s, -1) * char_w : 0.0;
}

static void
estimate_size (PlLayoutNodeKind kind, const char *title, const char *subtitle, const char *detail,
               double *w, double *h)
{
  if (kind == PL_LAYOUT_NODE_OP || kind == PL_LAYOUT_NODE_FUSION)
    {
      *w = MAX (text_width (title, CHAR_W_TITLE), text_width (subtitle, CHAR_W_SUBTITLE));
      *w = MAX (*w, text_width (detail, CHAR_W_SMALL)) + 24.0;
      *w = CLAMP (*w, 64.0, MAX_NODE_WIDTH);
      *h = detail != NULL ? 50.0 : 38.0;
    }
  else
    {
      *w = MAX (text_width (title, CHAR_W_SMALL), text_width (subtitle, CHAR_W_SMALL)) + 26.0;
      *w = CLAMP (*w, 48.0, MAX_NODE_WIDTH);
      *h = 30.0;
    }
}

/* "f32[2, N]"; "?[*]" when nothing is known; " @NHWC" after it for a
 * non-default layout. */
static char *
type_string (const PlValue *v)
{
  g_autofree char *shape = pl_shape_to_string (&v->shape);
  const char *dt = v->dtype == PL_DTYPE_UNDEFINED ? "?" : pl_dtype_name (v->dtype);
  if (v->layout != PL_LAYOUT_NCHW)
    return g_strdup_printf ("%s%s @%s", dt, shape, pl_layout_name (v->layout));
  return g_strdup_printf ("%s%s", dt, shape);
}

/* The third line of an op box (see the top), or NULL; sets *layout to the
 * layout it speaks of and *transform for a LayoutTransform. */
static char *
node_detail (const PlNode *node, PlLayout *layout, bool *transform)
{
  const PlValue *y = node->n_outputs > 0 ? node->outputs[0] : NULL;
  *layout = y != NULL ? y->layout : PL_LAYOUT_NCHW;
  *transform = node->op == PL_OP_LayoutTransform;
  if (*transform)
    {
      PlLayout to;
      const char *name = pl_node_attr_string (node, "to", "?");
      if (pl_layout_parse (name, &to))
        *layout = to;
      return g_strdup_printf ("→ %s", name);
    }
  if (node->op != PL_OP_Conv)
    return NULL;
  /* Without an impl attribute a conv runs as im2col + GEMM (kernel-plan.c);
   * say so once a layout was chosen. */
  const char *impl = pl_node_attr_string (node, "impl", NULL);
  if (impl == NULL && *layout == PL_LAYOUT_NCHW)
    return NULL;
  GString *s = g_string_new (pl_layout_name (*layout));
  g_string_append_printf (s, " · %s", impl != NULL ? impl : "gemm");
  const int64_t *t;
  int n;
  if (pl_node_attr_ints (node, "tile", &t, &n) && n == 3)
    g_string_append_printf (s, " %" G_GINT64_FORMAT "×%" G_GINT64_FORMAT "×%" G_GINT64_FORMAT, t[0], t[1], t[2]);
  return g_string_free (s, FALSE);
}

/* Adds an entry or, when the key exists (another version), refreshes its
 * texts and grows its size. Takes ownership of key, title and subtitle. */
static int
sketch_add_node (SketchBuilder *b, char *key, PlLayoutNodeKind kind, guint32 id,
                 char *title, char *subtitle, PlOpCategory cat, int parent, bool has_body)
{
  PlGraphSketch *s = b->s;
  double w, h;
  estimate_size (kind, title, subtitle, NULL, &w, &h);
  int idx = pl_graph_sketch_find (s, key);
  if (idx >= 0)
    {
      PlSketchNode *n = &g_array_index (s->nodes, PlSketchNode, idx);
      g_free (key);
      g_free (n->title);
      g_free (n->subtitle);
      n->title = title;
      n->subtitle = subtitle;
      n->kind = kind;
      n->category = cat;
      n->parent = parent;
      n->has_body = has_body;
      n->width = MAX (n->width, w);
      n->height = MAX (n->height, h);
      return idx;
    }
  PlSketchNode n = { key, kind, id, title, subtitle, cat, parent, has_body, w, h, NULL, PL_LAYOUT_NCHW, false };
  g_array_append_val (s->nodes, n);
  idx = (int) s->nodes->len - 1;
  g_hash_table_insert (s->index, key, GINT_TO_POINTER (idx + 1));
  return idx;
}

/* Sets entry idx's third line (taking detail; NULL clears it) and grows
 * the box to fit it. */
static void
sketch_set_detail (SketchBuilder *b, int idx, char *detail, PlLayout layout, bool transform)
{
  PlSketchNode *n = &g_array_index (b->s->nodes, PlSketchNode, idx);
  g_free (n->detail);
  n->detail = detail;
  n->data_layout = layout;
  n->transform = transform;
  double w, h;
  estimate_size (n->kind, n->title, n->subtitle, detail, &w, &h);
  if (transform)
    w = MIN (w + 16.0, MAX_NODE_WIDTH);  /* the hexagon's pointed ends */
  n->width = MAX (n->width, w);
  n->height = MAX (n->height, h);
}

static void
sketch_add_edge (SketchBuilder *b, int from, int to, int slot, char *label, bool control,
                 PlLayout layout)
{
  if (from < 0 || to < 0 || from == to)
    {
      g_free (label);
      return;
    }
  char ekey[64];
  g_snprintf (ekey, sizeof ekey, "%d>%d#%d%s", from, to, slot, control ? "c" : "");
  gpointer found = g_hash_table_lookup (b->edge_keys, ekey);
  if (found != NULL)
    {
      PlSketchEdge *e = &g_array_index (b->s->edges, PlSketchEdge, GPOINTER_TO_INT (found) - 1);
      g_free (e->label);
      e->label = label;
      e->data_layout = layout;
      return;
    }
  PlSketchEdge e = { from, to, label, control, layout };
  g_array_append_val (b->s->edges, e);
  g_hash_table_insert (b->edge_keys, g_strdup (ekey), GINT_TO_POINTER (b->s->edges->len));
}

static bool
constant_shown (const SketchBuilder *b, const PlValue *v)
{
  if (b->show_constants)
    return true;
  int64_t numel = pl_shape_numel (&v->shape);
  return numel < 0 || numel > 16;
}

static bool
is_expandable (const PlNode *node)
{
  return node->body != NULL && node->body->nodes->len > 0;
}

static int
find_key (const PlGraphSketch *s, const char *prefix, char tag, guint32 id)
{
  char key[32];
  g_autofree char *full = NULL;
  g_snprintf (key, sizeof key, "%c%u", tag, id);
  if (prefix[0] == '\0')
    return pl_graph_sketch_find (s, key);
  full = g_strconcat (prefix, key, NULL);
  return pl_graph_sketch_find (s, full);
}

/* The entry an edge carrying v starts from, or -1 (a hidden constant, a
 * dangling body input). */
static int
source_of (const SketchBuilder *b, const WalkCtx *ctx, const PlValue *v)
{
  const PlNode *p = v->producer;
  if (p == NULL)
    {
      if (v->constant != NULL)
        return find_key (b->s, ctx->prefix, 'c', v->id);
      if (ctx->fusion == NULL)
        return find_key (b->s, ctx->prefix, 'i', v->id);
      /* A body input stands for the fusion node's input slot. */
      for (guint k = 0; k < ctx->g->inputs->len; k++)
        if (g_ptr_array_index (ctx->g->inputs, k) == v)
          {
            if ((int) k < ctx->fusion->n_inputs && ctx->fusion->inputs[k] != NULL)
              return source_of (b, ctx->outer, ctx->fusion->inputs[k]);
            return -1;
          }
      return -1;
    }
  if (is_expandable (p) && v->producer_index >= 0
      && (guint) v->producer_index < p->body->outputs->len)
    {
      g_autofree char *inner = g_strdup_printf ("%sn%u/", ctx->prefix, p->id);
      WalkCtx body = { p->body, inner, find_key (b->s, ctx->prefix, 'n', p->id), p, ctx };
      int r = source_of (b, &body, g_ptr_array_index (p->body->outputs, v->producer_index));
      if (r >= 0)
        return r;
    }
  return find_key (b->s, ctx->prefix, 'n', p->id);
}

static char *
fusion_subtitle (const PlNode *node)
{
  const char *kind = pl_node_attr_string (node, "kind", NULL);
  guint n = node->body != NULL ? node->body->nodes->len : 0;
  if (kind != NULL)
    return g_strdup_printf ("%s · %s · %u op%s", node->op_type, kind, n, n == 1 ? "" : "s");
  return g_strdup_printf ("%s · %u op%s", node->op_type, n, n == 1 ? "" : "s");
}

static void sketch_walk (SketchBuilder *b, const WalkCtx *ctx);

static void
sketch_add_op (SketchBuilder *b, const WalkCtx *ctx, const PlNode *node)
{
  char *key = g_strdup_printf ("%sn%u", ctx->prefix, node->id);
  const PlOpInfo *info = pl_op_info (node->op);
  PlOpCategory cat = info != NULL ? info->category : PL_CAT_OPAQUE;
  if (node->body != NULL)
    {
      cat = PL_CAT_FUSION;
      int idx = sketch_add_node (b, key, PL_LAYOUT_NODE_FUSION, node->id, g_strdup (node->name),
                                 fusion_subtitle (node), cat, ctx->parent, is_expandable (node));
      if (is_expandable (node))
        {
          g_autofree char *inner = g_strdup_printf ("%sn%u/", ctx->prefix, node->id);
          WalkCtx body = { node->body, inner, idx, node, ctx };
          sketch_walk (b, &body);
        }
      return;
    }
  char *op = node->domain != NULL && node->domain[0] != '\0'
               ? g_strdup_printf ("%s.%s", node->domain, node->op_type)
               : g_strdup (node->op_type);
  int idx = sketch_add_node (b, key, PL_LAYOUT_NODE_OP, node->id, g_strdup (node->name), op, cat,
                             ctx->parent, false);
  PlLayout layout;
  bool transform;
  char *detail = node_detail (node, &layout, &transform);
  sketch_set_detail (b, idx, detail, layout, transform);
}

/* Adds the entries and edges of one graph (a version or a fusion body). */
static void
sketch_walk (SketchBuilder *b, const WalkCtx *ctx)
{
  const PlGraph *g = ctx->g;
  for (guint i = 0; i < g->values->len; i++)
    {
      const PlValue *v = g_ptr_array_index (g->values, i);
      if (v->producer != NULL)
        continue;
      bool constant = v->constant != NULL;
      if (constant ? !constant_shown (b, v) : (ctx->fusion != NULL || !v->is_input))
        continue;
      char *key = g_strdup_printf ("%s%c%u", ctx->prefix, constant ? 'c' : 'i', v->id);
      sketch_add_node (b, key, constant ? PL_LAYOUT_NODE_CONSTANT : PL_LAYOUT_NODE_INPUT, v->id,
                       g_strdup (v->name), type_string (v), PL_CAT_OPAQUE, ctx->parent, false);
    }
  for (guint i = 0; i < g->nodes->len; i++)
    sketch_add_op (b, ctx, g_ptr_array_index (g->nodes, i));

  /* Data edges into leaves; an expanded fusion's inputs arrive inside it. */
  for (guint i = 0; i < g->nodes->len; i++)
    {
      const PlNode *node = g_ptr_array_index (g->nodes, i);
      if (is_expandable (node))
        continue;
      int to = find_key (b->s, ctx->prefix, 'n', node->id);
      for (int k = 0; k < node->n_inputs; k++)
        if (node->inputs[k] != NULL)
          sketch_add_edge (b, source_of (b, ctx, node->inputs[k]), to, k,
                           type_string (node->inputs[k]), false, node->inputs[k]->layout);
    }
  for (guint i = 0; i < g->nodes->len; i++)
    {
      const PlNode *node = g_ptr_array_index (g->nodes, i);
      int to = find_key (b->s, ctx->prefix, 'n', node->id);
      for (int k = 0; k < node->n_controls; k++)
        {
          const PlNode *after = node->controls[k].node;
          if (after == NULL)
            continue;
          const char *kind = node->controls[k].kind == PL_CONTROL_PREFETCH ? "prefetch" : "serialize";
          sketch_add_edge (b, find_key (b->s, ctx->prefix, 'n', after->id), to, -1 - k,
                           g_strdup (kind), true, PL_LAYOUT_NCHW);
        }
    }
}

/* Graph outputs: one small sink per slot (a value may be listed twice). */
static void
sketch_outputs (SketchBuilder *b, const WalkCtx *ctx)
{
  for (guint i = 0; i < ctx->g->outputs->len; i++)
    {
      const PlValue *v = g_ptr_array_index (ctx->g->outputs, i);
      if (v == NULL)
        continue;
      int to = sketch_add_node (b, g_strdup_printf ("o%u", i), PL_LAYOUT_NODE_OUTPUT, i,
                                g_strdup (v->name), type_string (v), PL_CAT_OPAQUE, -1, false);
      sketch_add_edge (b, source_of (b, ctx, v), to, 0, type_string (v), false, v->layout);
    }
}

PlGraphSketch *
pl_graph_sketch_new (const PlGraph *const *graphs, int n_graphs, bool show_constants)
{
  g_return_val_if_fail (graphs != NULL || n_graphs == 0, NULL);

  PlGraphSketch *s = g_new0 (PlGraphSketch, 1);
  s->ref_count = 1;
  s->nodes = g_array_new (FALSE, TRUE, sizeof (PlSketchNode));
  g_array_set_clear_func (s->nodes, sketch_node_clear);
  s->edges = g_array_new (FALSE, TRUE, sizeof (PlSketchEdge));
  g_array_set_clear_func (s->edges, sketch_edge_clear);
  s->index = g_hash_table_new (g_str_hash, g_str_equal);  /* keys owned by nodes */

  SketchBuilder b = { s, g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL),
                      show_constants };
  for (int i = 0; i < n_graphs; i++)
    {
      if (graphs[i] == NULL)
        continue;
      WalkCtx top = { graphs[i], "", -1, NULL, NULL };
      sketch_walk (&b, &top);
      sketch_outputs (&b, &top);
    }
  g_hash_table_unref (b.edge_keys);
  return s;
}

PlGraphSketch *
pl_graph_sketch_ref (PlGraphSketch *s)
{
  g_return_val_if_fail (s != NULL, NULL);
  g_atomic_int_inc (&s->ref_count);
  return s;
}

void
pl_graph_sketch_unref (PlGraphSketch *s)
{
  if (s == NULL || !g_atomic_int_dec_and_test (&s->ref_count))
    return;
  g_hash_table_unref (s->index);
  g_array_unref (s->nodes);
  g_array_unref (s->edges);
  g_free (s);
}

int
pl_graph_sketch_find (const PlGraphSketch *s, const char *key)
{
  g_return_val_if_fail (s != NULL && key != NULL, -1);
  return GPOINTER_TO_INT (g_hash_table_lookup (s->index, key)) - 1;
}

int
pl_graph_sketch_visible (const PlGraphSketch *s, int i, GHashTable *collapsed)
{
  g_return_val_if_fail (s != NULL && i >= 0 && (guint) i < s->nodes->len, i);
  if (collapsed == NULL || g_hash_table_size (collapsed) == 0)
    return i;
  int r = i;
  for (int p = g_array_index (s->nodes, PlSketchNode, i).parent; p >= 0;
       p = g_array_index (s->nodes, PlSketchNode, p).parent)
    if (g_hash_table_contains (collapsed, g_array_index (s->nodes, PlSketchNode, p).key))
      r = p;
  return r;
}

/* Boxes the layout would draw: leaves and collapsed fusions, not clusters. */
static int
count_boxes (const PlGraphSketch *s, GHashTable *collapsed)
{
  int n = 0;
  for (guint i = 0; i < s->nodes->len; i++)
    {
      const PlSketchNode *sn = &g_array_index (s->nodes, PlSketchNode, i);
      if (pl_graph_sketch_visible (s, (int) i, collapsed) != (int) i)
        continue;
      if (sn->has_body && (collapsed == NULL || !g_hash_table_contains (collapsed, sn->key)))
        continue;
      n++;
    }
  return n;
}

GHashTable *
pl_graph_sketch_collapsed (const PlGraphSketch *s, const PlLayoutOptions *o, bool *simplified)
{
  GHashTable *set = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < s->nodes->len; i++)
    {
      const PlSketchNode *sn = &g_array_index (s->nodes, PlSketchNode, i);
      if (sn->has_body && o->collapsed != NULL && g_hash_table_contains (o->collapsed, sn->key))
        g_hash_table_add (set, g_strdup (sn->key));
    }
  bool simple = o->simplify_above > 0 && count_boxes (s, set) > o->simplify_above;
  if (simple)
    for (guint i = 0; i < s->nodes->len; i++)
      {
        const PlSketchNode *sn = &g_array_index (s->nodes, PlSketchNode, i);
        if (sn->has_body && (o->expanded == NULL || !g_hash_table_contains (o->expanded, sn->key)))
          g_hash_table_add (set, g_strdup (sn->key));
      }
  if (simplified != NULL)
    *simplified = simple;
  return set;
}

