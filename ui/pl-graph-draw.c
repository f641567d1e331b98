/* pl-graph-draw.c — cairo drawing of a PlGraphScene, shared by the canvas
 * and by PNG/SVG export.
 *
 * What the picture shows:
 *   op nodes      rounded boxes filled by op category (light tints of the
 *                 Okabe–Ito colour-blind-safe palette), name in bold, op below
 *   fusions       collapsed: a box with a double border; expanded: a cluster
 *                 (a light rounded panel titled with the fusion's name)
 *   inputs        white pills; constants: small grey pills; outputs: pills
 *                 with a thick border
 *   edges         dot's bezier routes with arrow heads, labelled "f32[2, 64]"
 *                 in small grey type; control edges dashed red
 *   layouts       an edge carrying a value in a non-default data layout is
 *                 drawn thicker in that layout's colour (NHWC teal, CHWN
 *                 reddish purple) with the layout name in bold colour after
 *                 its label; a LayoutTransform is a hexagon in the colour of
 *                 the layout it makes, "→ NHWC" under its op; a Conv shows its
 *                 layout and implementation on a third line
 *   diff          added: green outline and glow; changed: amber; removed:
 *                 a dashed grey ghost
 *   selection     thick blue outline; hover: the node's input edges and
 *                 producers in orange, its output edges and consumers in
 *                 purple (an orange/purple pair reads for most colour-blind
 *                 viewers)
 *
 * PNG and SVG files of a scene: pl-graph-export.c.
 *
 * Only what intersects the visible rectangle is drawn, and the level of
 * detail drops with the zoom: no text when it would be unreadable, and far
 * out, plain boxes and straight edges batched into one path per colour so a
 * 10,000-node overview costs a few fills and one stroke.
 */
#define G_LOG_DOMAIN "passlab"

#include "pl-graph-draw.h"

#include <math.h>
#include <pango/pangocairo.h>
#include <string.h>

#define LOD_TEXT    0.45   /* below: no text */
#define LOD_LABELS  0.7    /* below: no edge labels */
#define LOD_SIMPLE  0.2    /* below: batched boxes and straight edges */
#define CORNER      6.0

typedef struct { double r, g, b; } Rgb;

#define HEX(h) { ((h) >> 16 & 0xff) / 255.0, ((h) >> 8 & 0xff) / 255.0, ((h) & 0xff) / 255.0 }

/* Fill and border per PlOpCategory. */
static const Rgb cat_fill[PL_CAT_COUNT] = {
  [PL_CAT_ELEMENTWISE] = HEX (0xd7eaf8),  /* sky blue */
  [PL_CAT_BROADCAST]   = HEX (0xe6def4),  /* lilac */
  [PL_CAT_REDUCE]      = HEX (0xfde4c3),  /* orange */
  [PL_CAT_SHAPE]       = HEX (0xd3eee3),  /* bluish green */
  [PL_CAT_COMPUTE]     = HEX (0xf8d2c2),  /* vermillion */
  [PL_CAT_MEMORY]      = HEX (0xf8f1b8),  /* yellow */
  [PL_CAT_CONTROL]     = HEX (0xf3dbe9),  /* reddish purple */
  [PL_CAT_FUSION]      = HEX (0xe6e9f0),  /* slate */
  [PL_CAT_OPAQUE]      = HEX (0xe3e3e3),  /* grey */
};
static const Rgb cat_border[PL_CAT_COUNT] = {
  [PL_CAT_ELEMENTWISE] = HEX (0x4a9bd1),
  [PL_CAT_BROADCAST]   = HEX (0x8e74c4),
  [PL_CAT_REDUCE]      = HEX (0xd48a00),
  [PL_CAT_SHAPE]       = HEX (0x2a9a74),
  [PL_CAT_COMPUTE]     = HEX (0xc8561c),
  [PL_CAT_MEMORY]      = HEX (0xb9a800),
  [PL_CAT_CONTROL]     = HEX (0xb8679a),
  [PL_CAT_FUSION]      = HEX (0x66708a),
  [PL_CAT_OPAQUE]      = HEX (0x8a8a8a),
};

static const Rgb c_text = HEX (0x1e1e1e), c_subtext = HEX (0x5a5a5a), c_edge = HEX (0x8c8c8c),
                 c_edge_const = HEX (0xbdbdbd), c_control = HEX (0xc01c28), c_ghost = HEX (0x9a9a9a),
                 c_added = HEX (0x26a269), c_changed = HEX (0xe5a50a), c_select = HEX (0x1c71d8),
                 c_lit_in = HEX (0xe66100), c_lit_out = HEX (0x5e3c99), c_cluster = HEX (0xf4f5f8),
                 c_cluster_border = HEX (0xa3a9b8), c_badge = HEX (0x3d3846);

/* Per PlLayout: the edge colour (NCHW: the plain edge's) and a light tint
 * for the fill of the transform that makes it. */
G_STATIC_ASSERT (PL_LAYOUT_COUNT == 3);
static const Rgb layout_line[PL_LAYOUT_COUNT] = {
  [PL_LAYOUT_NCHW] = HEX (0x8c8c8c),
  [PL_LAYOUT_NHWC] = HEX (0x00897b),  /* teal (Okabe–Ito bluish green, darker) */
  [PL_LAYOUT_CHWN] = HEX (0xb0528f),  /* reddish purple */
};
static const Rgb layout_tint[PL_LAYOUT_COUNT] = {
  [PL_LAYOUT_NCHW] = HEX (0xeeeeee),
  [PL_LAYOUT_NHWC] = HEX (0xcdeee9),
  [PL_LAYOUT_CHWN] = HEX (0xf3d9ea),
};

static void
set_rgb (cairo_t *cr, Rgb c, double alpha)
{
  cairo_set_source_rgba (cr, c.r, c.g, c.b, alpha);
}

static PlLayout
layout_index (guint8 layout)
{
  return layout < PL_LAYOUT_COUNT ? (PlLayout) layout : PL_LAYOUT_NCHW;
}

void
pl_graph_layout_colour (PlLayout layout, double *r, double *g, double *b)
{
  Rgb c = layout_line[layout_index (layout)];
  *r = c.r;
  *g = c.g;
  *b = c.b;
}

static PlOpCategory
category_of (const PlLayoutNode *n)
{
  return n->category < PL_CAT_COUNT ? n->category : PL_CAT_OPAQUE;
}

/* --- scene ------------------------------------------------------------------ */

PlGraphScene *
pl_graph_scene_new (PlGraphLayout *layout)
{
  g_return_val_if_fail (layout != NULL, NULL);
  PlGraphScene *s = g_new0 (PlGraphScene, 1);
  int nn = MAX (layout->n_nodes, 1), ne = MAX (layout->n_edges, 1), nc = MAX (layout->n_clusters, 1);
  s->layout = pl_graph_layout_ref (layout);
  s->node_state = g_malloc (nn);
  memset (s->node_state, PL_DRAW_NORMAL, nn);
  s->edge_state = g_malloc (ne);
  memset (s->edge_state, PL_DRAW_NORMAL, ne);
  s->cluster_state = g_malloc (nc);
  memset (s->cluster_state, PL_DRAW_NORMAL, nc);
  s->title = g_new0 (const char *, nn);
  s->subtitle = g_new0 (const char *, nn);
  s->cluster_subtitle = g_new0 (const char *, nc);
  s->edge_label = g_new0 (const char *, ne);
  s->detail = g_new0 (const char *, nn);
  s->node_layout = g_new0 (guint8, nn);
  s->node_transform = g_new0 (guint8, nn);
  s->edge_layout = g_new0 (guint8, ne);
  for (int i = 0; i < layout->n_nodes; i++)
    {
      s->detail[i] = layout->nodes[i].detail;
      s->node_layout[i] = layout->nodes[i].data_layout;
      s->node_transform[i] = layout->nodes[i].transform;
    }
  for (int i = 0; i < layout->n_edges; i++)
    s->edge_layout[i] = layout->edges[i].data_layout;
  s->annotation = g_new0 (char *, nn);
  s->node_lit = g_new0 (guint8, nn);
  s->edge_lit = g_new0 (guint8, ne);
  s->edge_bbox = g_new (float, 4 * ne);
  for (int i = 0; i < layout->n_edges; i++)
    {
      const PlLayoutEdge *e = &layout->edges[i];
      float *bb = &s->edge_bbox[4 * i];
      bb[0] = bb[1] = G_MAXFLOAT;
      bb[2] = bb[3] = -G_MAXFLOAT;
      for (int k = 0; k <= e->n_points; k++)
        {
          double x = k < e->n_points ? e->points[2 * k] : e->arrow_x;
          double y = k < e->n_points ? e->points[2 * k + 1] : e->arrow_y;
          if (k == e->n_points && !e->has_arrow)
            break;
          bb[0] = MIN (bb[0], x);
          bb[1] = MIN (bb[1], y);
          bb[2] = MAX (bb[2], x);
          bb[3] = MAX (bb[3], y);
        }
    }
  s->cluster_index = g_hash_table_new (g_str_hash, g_str_equal);  /* keys owned by the layout */
  for (int i = 0; i < layout->n_clusters; i++)
    g_hash_table_insert (s->cluster_index, layout->clusters[i].key, GINT_TO_POINTER (i + 1));
  s->selected = s->selected_cluster = s->hover = -1;
  return s;
}

void
pl_graph_scene_free (PlGraphScene *s)
{
  if (s == NULL)
    return;
  for (int i = 0; i < s->layout->n_nodes; i++)
    g_free (s->annotation[i]);
  g_free (s->annotation);
  g_free (s->node_state);
  g_free (s->edge_state);
  g_free (s->cluster_state);
  g_free (s->title);
  g_free (s->subtitle);
  g_free (s->cluster_subtitle);
  g_free (s->edge_label);
  g_free (s->detail);
  g_free (s->node_layout);
  g_free (s->node_transform);
  g_free (s->edge_layout);
  g_free (s->node_lit);
  g_free (s->edge_lit);
  g_free (s->edge_bbox);
  g_hash_table_unref (s->cluster_index);
  pl_graph_layout_unref (s->layout);
  g_free (s);
}

void
pl_graph_scene_set_hover (PlGraphScene *s, int node)
{
  const PlGraphLayout *l = s->layout;
  memset (s->node_lit, 0, MAX (l->n_nodes, 1));
  memset (s->edge_lit, 0, MAX (l->n_edges, 1));
  s->hover = node;
  if (node < 0)
    return;
  for (int i = 0; i < l->n_edges; i++)
    {
      const PlLayoutEdge *e = &l->edges[i];
      /* A live node's neighbourhood is live; a ghost's is what it had. */
      if (s->edge_state[i] == PL_DRAW_HIDDEN
          || (s->edge_state[i] == PL_DRAW_REMOVED) != (s->node_state[node] == PL_DRAW_REMOVED))
        continue;
      if (e->to == node)
        {
          s->edge_lit[i] |= PL_LIT_INPUT;
          s->node_lit[e->from] |= PL_LIT_INPUT;
        }
      if (e->from == node)
        {
          s->edge_lit[i] |= PL_LIT_OUTPUT;
          s->node_lit[e->to] |= PL_LIT_OUTPUT;
        }
    }
}

int
pl_graph_scene_hit (const PlGraphScene *s, double x, double y, int *cluster)
{
  const PlGraphLayout *l = s->layout;
  int hit = -1;
  for (int i = l->n_nodes - 1; i >= 0 && hit < 0; i--)
    {
      const PlLayoutNode *n = &l->nodes[i];
      if (s->node_state[i] != PL_DRAW_HIDDEN && fabs (x - n->x) <= n->width / 2
          && fabs (y - n->y) <= n->height / 2)
        hit = i;
    }
  if (cluster != NULL)
    {
      *cluster = -1;
      /* Later clusters nest inside earlier ones: the last hit is innermost. */
      for (int i = 0; i < l->n_clusters; i++)
        {
          const PlLayoutCluster *c = &l->clusters[i];
          if (s->cluster_state[i] != PL_DRAW_HIDDEN && x >= c->x && x <= c->x + c->width
              && y >= c->y && y <= c->y + c->height)
            *cluster = i;
        }
    }
  return hit;
}

/* --- which version the scene shows ------------------------------------------------ */

/* A layout edge is found by its box pair: (from << 32) | to. */
typedef struct {
  guint64     pair;
  const char *label;
  PlLayout    layout;
} EdgeRef;

static int
edge_ref_cmp (const void *a, const void *b)
{
  guint64 x = ((const EdgeRef *) a)->pair, y = ((const EdgeRef *) b)->pair;
  return x < y ? -1 : x > y;
}

/* The layout box (or cluster, as -2 - index) that sketch entry j shows as. */
static int
box_of_entry (const PlGraphScene *sc, const PlGraphSketch *sk, int j)
{
  int v = pl_graph_sketch_visible (sk, j, sc->layout->collapsed);
  const char *key = g_array_index (sk->nodes, PlSketchNode, v).key;
  int i = pl_graph_layout_find (sc->layout, key);
  if (i >= 0)
    return i;
  int c = pl_graph_scene_find_cluster (sc, key);
  return c >= 0 ? -2 - c : -1;
}

/* The box an edge ends at: a control edge naming an expanded fusion ends
 * at its first box, as in the layout. b: a box, or a cluster as -2 - c. */
static int
edge_end (const PlGraphScene *sc, int b)
{
  if (b >= -1)
    return b;
  int c = -2 - b;
  for (int i = 0; i < sc->layout->n_nodes; i++)
    for (int p = sc->layout->nodes[i].cluster; p >= 0; p = sc->layout->clusters[p].parent)
      if (p == c)
        return i;
  return -1;
}

/* Marks boxes and clusters of sketch sk with state (texts from sk), and
 * returns its edges as sorted box pairs. */
static GArray *
mark_sketch (PlGraphScene *sc, const PlGraphSketch *sk, guint8 state, bool only_hidden)
{
  g_autofree int *box = g_new (int, MAX (sk->nodes->len, 1));
  for (guint j = 0; j < sk->nodes->len; j++)
    {
      const PlSketchNode *sn = &g_array_index (sk->nodes, PlSketchNode, j);
      int b = box[j] = box_of_entry (sc, sk, (int) j);
      if (b >= 0 && (!only_hidden || sc->node_state[b] == PL_DRAW_HIDDEN))
        {
          sc->node_state[b] = state;
          if (pl_graph_sketch_visible (sk, (int) j, sc->layout->collapsed) == (int) j)
            {
              sc->title[b] = sn->title;
              sc->subtitle[b] = sn->subtitle;
              sc->detail[b] = sn->detail;
              sc->node_layout[b] = sn->data_layout;
              sc->node_transform[b] = sn->transform;
            }
        }
      else if (b <= -2 && (!only_hidden || sc->cluster_state[-2 - b] == PL_DRAW_HIDDEN))
        {
          sc->cluster_state[-2 - b] = state;
          sc->cluster_subtitle[-2 - b] = sn->subtitle;
        }
    }
  GArray *edges = g_array_new (FALSE, FALSE, sizeof (EdgeRef));
  for (guint k = 0; k < sk->edges->len; k++)
    {
      const PlSketchEdge *e = &g_array_index (sk->edges, PlSketchEdge, k);
      int a = edge_end (sc, box[e->from]), b = edge_end (sc, box[e->to]);
      if (a < 0 || b < 0 || a == b)
        continue;
      EdgeRef r = { ((guint64) a << 32) | (guint) b, e->label, e->data_layout };
      g_array_append_val (edges, r);
    }
  g_array_sort (edges, edge_ref_cmp);
  return edges;
}

static const EdgeRef *
find_edge (GArray *edges, const PlLayoutEdge *e)
{
  EdgeRef key = { ((guint64) e->from << 32) | (guint) e->to, NULL, PL_LAYOUT_NCHW };
  return edges != NULL ? bsearch (&key, edges->data, edges->len, sizeof (EdgeRef), edge_ref_cmp) : NULL;
}

void
pl_graph_scene_show (PlGraphScene *sc, const PlGraphSketch *shown, const PlGraphSketch *prev,
                     GHashTable *changed_ids)
{
  g_return_if_fail (sc != NULL);
  const PlGraphLayout *l = sc->layout;
  int nn = MAX (l->n_nodes, 1), ne = MAX (l->n_edges, 1), nc = MAX (l->n_clusters, 1);
  guint8 base = shown != NULL ? PL_DRAW_HIDDEN : PL_DRAW_NORMAL;
  memset (sc->node_state, base, nn);
  memset (sc->edge_state, base, ne);
  memset (sc->cluster_state, base, nc);
  memset (sc->title, 0, sizeof (char *) * nn);
  memset (sc->subtitle, 0, sizeof (char *) * nn);
  memset (sc->edge_label, 0, sizeof (char *) * ne);
  memset (sc->cluster_subtitle, 0, sizeof (char *) * nc);
  if (shown == NULL)
    {
      /* The layout's own texts and layouts. */
      for (int i = 0; i < l->n_nodes; i++)
        {
          sc->detail[i] = l->nodes[i].detail;
          sc->node_layout[i] = l->nodes[i].data_layout;
          sc->node_transform[i] = l->nodes[i].transform;
        }
      for (int i = 0; i < l->n_edges; i++)
        sc->edge_layout[i] = l->edges[i].data_layout;
      return;
    }
  memset (sc->detail, 0, sizeof (char *) * nn);
  memset (sc->node_layout, 0, nn);
  memset (sc->node_transform, 0, nn);
  memset (sc->edge_layout, 0, ne);

  g_autoptr (GArray) cur = mark_sketch (sc, shown, PL_DRAW_NORMAL, false);
  g_autoptr (GArray) old = NULL;
  if (prev != NULL)
    {
      /* Keys only the previous version has: ghosts. */
      old = mark_sketch (sc, prev, PL_DRAW_REMOVED, true);
      /* Keys only the shown version has: added. */
      for (guint j = 0; j < shown->nodes->len; j++)
        {
          const PlSketchNode *sn = &g_array_index (shown->nodes, PlSketchNode, j);
          if (pl_graph_sketch_find (prev, sn->key) >= 0)
            continue;
          int b = box_of_entry (sc, shown, (int) j);
          if (b >= 0)
            sc->node_state[b] = PL_DRAW_ADDED;
          else if (b <= -2)
            sc->cluster_state[-2 - b] = PL_DRAW_ADDED;
        }
    }
  /* Changed: top-level op boxes ("n<id>") whose id the diff names. */
  if (changed_ids != NULL)
    for (int i = 0; i < l->n_nodes; i++)
      if (sc->node_state[i] == PL_DRAW_NORMAL && l->nodes[i].key[0] == 'n'
          && strchr (l->nodes[i].key, '/') == NULL
          && g_hash_table_contains (changed_ids, GUINT_TO_POINTER (l->nodes[i].id)))
        sc->node_state[i] = PL_DRAW_CHANGED;

  for (int i = 0; i < l->n_edges; i++)
    {
      const PlLayoutEdge *e = &l->edges[i];
      const EdgeRef *r = find_edge (cur, e);
      if (r != NULL && sc->node_state[e->from] != PL_DRAW_HIDDEN && sc->node_state[e->to] != PL_DRAW_HIDDEN)
        {
          sc->edge_state[i] = PL_DRAW_NORMAL;
          sc->edge_label[i] = r->label;
          sc->edge_layout[i] = r->layout;
        }
      else if ((r = find_edge (old, e)) != NULL)
        {
          sc->edge_state[i] = PL_DRAW_REMOVED;
          sc->edge_label[i] = r->label;
        }
    }
}

int
pl_graph_scene_find_cluster (const PlGraphScene *s, const char *key)
{
  if (s == NULL || key == NULL)
    return -1;
  return GPOINTER_TO_INT (g_hash_table_lookup (s->cluster_index, key)) - 1;
}

/* --- shapes and text ---------------------------------------------------------- */

static void
rounded_rect (cairo_t *cr, double x, double y, double w, double h, double r)
{
  r = MIN (r, MIN (w, h) / 2);
  cairo_new_sub_path (cr);
  cairo_arc (cr, x + w - r, y + r, r, -G_PI / 2, 0);
  cairo_arc (cr, x + w - r, y + h - r, r, 0, G_PI / 2);
  cairo_arc (cr, x + r, y + h - r, r, G_PI / 2, G_PI);
  cairo_arc (cr, x + r, y + r, r, G_PI, 3 * G_PI / 2);
  cairo_close_path (cr);
}

/* A box with pointed left and right ends: a LayoutTransform. */
static void
hexagon (cairo_t *cr, double x, double y, double w, double h)
{
  double tip = MIN (h * 0.3, w / 4);
  cairo_new_sub_path (cr);
  cairo_move_to (cr, x + tip, y);
  cairo_line_to (cr, x + w - tip, y);
  cairo_line_to (cr, x + w, y + h / 2);
  cairo_line_to (cr, x + w - tip, y + h);
  cairo_line_to (cr, x + tip, y + h);
  cairo_line_to (cr, x, y + h / 2);
  cairo_close_path (cr);
}

/* The path of node i's shape, grown by `grow` on every side. */
static void
node_path (cairo_t *cr, const PlGraphScene *s, int i, double grow)
{
  const PlLayoutNode *n = &s->layout->nodes[i];
  double x = n->x - n->width / 2 - grow, y = n->y - n->height / 2 - grow;
  double w = n->width + 2 * grow, h = n->height + 2 * grow;
  bool pill = n->kind != PL_LAYOUT_NODE_OP && n->kind != PL_LAYOUT_NODE_FUSION;
  if (s->node_transform[i] && n->kind == PL_LAYOUT_NODE_OP)
    hexagon (cr, x, y, w, h);
  else
    rounded_rect (cr, x, y, w, h, pill ? h / 2 : CORNER + grow);
}

typedef struct {
  PangoLayout          *layout;
  PangoFontDescription *title, *subtitle, *small, *small_bold, *edge, *edge_bold, *cluster;
} Text;

static PangoFontDescription *
font (double size, PangoWeight weight)
{
  PangoFontDescription *d = pango_font_description_from_string ("Sans");
  pango_font_description_set_absolute_size (d, size * PANGO_SCALE);
  pango_font_description_set_weight (d, weight);
  return d;
}

static void
text_init (Text *t, cairo_t *cr)
{
  t->layout = pango_cairo_create_layout (cr);
  /* Metrics that scale smoothly with the zoom (no hinting jumps). */
  cairo_font_options_t *fo = cairo_font_options_create ();
  cairo_font_options_set_hint_metrics (fo, CAIRO_HINT_METRICS_OFF);
  cairo_font_options_set_hint_style (fo, CAIRO_HINT_STYLE_NONE);
  pango_cairo_context_set_font_options (pango_layout_get_context (t->layout), fo);
  cairo_font_options_destroy (fo);
  pango_layout_context_changed (t->layout);
  t->title = font (PL_LAYOUT_TITLE_SIZE, PANGO_WEIGHT_BOLD);
  t->subtitle = font (PL_LAYOUT_SUBTITLE_SIZE, PANGO_WEIGHT_NORMAL);
  t->small = font (PL_LAYOUT_SMALL_SIZE, PANGO_WEIGHT_NORMAL);
  t->small_bold = font (PL_LAYOUT_SMALL_SIZE, PANGO_WEIGHT_BOLD);
  t->edge = font (PL_LAYOUT_EDGE_LABEL_SIZE, PANGO_WEIGHT_NORMAL);
  t->edge_bold = font (PL_LAYOUT_EDGE_LABEL_SIZE, PANGO_WEIGHT_BOLD);
  t->cluster = font (10.0, PANGO_WEIGHT_BOLD);
}

static void
text_clear (Text *t)
{
  g_object_unref (t->layout);
  pango_font_description_free (t->title);
  pango_font_description_free (t->subtitle);
  pango_font_description_free (t->small);
  pango_font_description_free (t->small_bold);
  pango_font_description_free (t->edge);
  pango_font_description_free (t->edge_bold);
  pango_font_description_free (t->cluster);
}

/* Shows text centred on (cx, cy) — or left-aligned at cx when left — at most
 * max_w wide (ellipsized in the middle); returns its logical size. */
static void
show_text (cairo_t *cr, Text *t, const char *s, PangoFontDescription *fd, double cx, double cy,
           double max_w, bool left, double *out_w, double *out_h)
{
  PangoRectangle logical;
  pango_layout_set_font_description (t->layout, fd);
  pango_layout_set_text (t->layout, s != NULL ? s : "", -1);
  pango_layout_set_width (t->layout, -1);
  pango_layout_get_extents (t->layout, NULL, &logical);
  double w = (double) logical.width / PANGO_SCALE, h = (double) logical.height / PANGO_SCALE;
  if (max_w > 0 && w > max_w)
    {
      pango_layout_set_width (t->layout, (int) (max_w * PANGO_SCALE));
      pango_layout_set_ellipsize (t->layout, PANGO_ELLIPSIZE_MIDDLE);
      w = max_w;
    }
  cairo_move_to (cr, left ? cx : cx - w / 2, cy - h / 2);
  pango_cairo_show_layout (cr, t->layout);
  if (out_w != NULL)
    *out_w = w;
  if (out_h != NULL)
    *out_h = h;
}

/* --- nodes ------------------------------------------------------------------------ */

const char *
pl_graph_scene_node_title (const PlGraphScene *s, int i)
{
  return s->title[i] != NULL ? s->title[i] : s->layout->nodes[i].title;
}

const char *
pl_graph_scene_node_subtitle (const PlGraphScene *s, int i)
{
  return s->subtitle[i] != NULL ? s->subtitle[i] : s->layout->nodes[i].subtitle;
}

static void
node_colors (const PlGraphScene *s, int i, Rgb *fill, Rgb *border)
{
  const PlLayoutNode *n = &s->layout->nodes[i];
  switch (n->kind)
    {
    case PL_LAYOUT_NODE_INPUT:    *fill = (Rgb) HEX (0xffffff); *border = (Rgb) HEX (0x6f7a8c); break;
    case PL_LAYOUT_NODE_CONSTANT: *fill = (Rgb) HEX (0xf3f3f3); *border = (Rgb) HEX (0xb5b5b5); break;
    case PL_LAYOUT_NODE_OUTPUT:   *fill = (Rgb) HEX (0xffffff); *border = (Rgb) HEX (0x3d3846); break;
    case PL_LAYOUT_NODE_OP:
    case PL_LAYOUT_NODE_FUSION:
    default:
      if (s->node_transform[i])
        {
          *fill = layout_tint[layout_index (s->node_layout[i])];
          *border = layout_line[layout_index (s->node_layout[i])];
          break;
        }
      *fill = cat_fill[category_of (n)];
      *border = cat_border[category_of (n)];
    }
}

/* An outline around the node: diff state, selection, hover neighbourhood. */
static void
node_halo (const PlGraphScene *s, cairo_t *cr, int i, double zoom)
{
  guint8 st = s->node_state[i];
  double px = 1.0 / zoom;  /* one screen pixel, so halos stay visible far out */
  if (st == PL_DRAW_ADDED || st == PL_DRAW_CHANGED)
    {
      Rgb c = st == PL_DRAW_ADDED ? c_added : c_changed;
      node_path (cr, s, i, MAX (4.0, 3 * px));
      set_rgb (cr, c, 0.28);
      cairo_fill (cr);
      node_path (cr, s, i, 1.0);
      set_rgb (cr, c, 1.0);
      cairo_set_line_width (cr, MAX (2.5, 2 * px));
      cairo_stroke (cr);
    }
  if (s->node_lit[i] != 0 && i != s->hover)
    {
      node_path (cr, s, i, 1.5);
      set_rgb (cr, (s->node_lit[i] & PL_LIT_INPUT) ? c_lit_in : c_lit_out, 1.0);
      cairo_set_line_width (cr, MAX (2.0, 2 * px));
      cairo_stroke (cr);
    }
  if (i == s->selected || i == s->hover)
    {
      node_path (cr, s, i, i == s->selected ? 2.5 : 1.5);
      set_rgb (cr, i == s->selected ? c_select : c_badge, i == s->selected ? 1.0 : 0.7);
      cairo_set_line_width (cr, MAX (i == s->selected ? 3.0 : 2.0, 2 * px));
      cairo_stroke (cr);
    }
}

static void
draw_badge (cairo_t *cr, Text *t, const PlLayoutNode *n, const char *text)
{
  PangoRectangle logical;
  pango_layout_set_font_description (t->layout, t->edge);
  pango_layout_set_width (t->layout, -1);
  pango_layout_set_text (t->layout, text, -1);
  pango_layout_get_extents (t->layout, NULL, &logical);
  double w = (double) logical.width / PANGO_SCALE + 8, h = (double) logical.height / PANGO_SCALE + 2;
  double x = n->x + n->width / 2 - w + 4, y = n->y - n->height / 2 - h / 2 - 1;
  rounded_rect (cr, x, y, w, h, h / 2);
  set_rgb (cr, c_badge, 0.92);
  cairo_fill (cr);
  cairo_set_source_rgb (cr, 1, 1, 1);
  cairo_move_to (cr, x + 4, y + 1);
  pango_cairo_show_layout (cr, t->layout);
}

static void
draw_node (const PlGraphScene *s, cairo_t *cr, Text *t, int i, double zoom)
{
  const PlLayoutNode *n = &s->layout->nodes[i];
  guint8 st = s->node_state[i];
  bool ghost = st == PL_DRAW_REMOVED;
  Rgb fill, border;
  node_colors (s, i, &fill, &border);

  node_halo (s, cr, i, zoom);
  node_path (cr, s, i, 0);
  if (ghost)
    {
      cairo_set_source_rgba (cr, 1, 1, 1, 0.5);
      cairo_fill_preserve (cr);
      static const double dash[] = { 4.0, 3.0 };
      cairo_set_dash (cr, dash, 2, 0);
      set_rgb (cr, c_ghost, 1.0);
      cairo_set_line_width (cr, 1.2);
      cairo_stroke (cr);
      cairo_set_dash (cr, NULL, 0, 0);
    }
  else
    {
      set_rgb (cr, fill, 1.0);
      cairo_fill_preserve (cr);
      set_rgb (cr, border, 1.0);
      cairo_set_line_width (cr, n->kind == PL_LAYOUT_NODE_OUTPUT || s->node_transform[i] ? 2.0 : 1.0);
      if (category_of (n) == PL_CAT_OPAQUE && n->kind == PL_LAYOUT_NODE_OP)
        {
          static const double dash[] = { 3.0, 2.0 };
          cairo_set_dash (cr, dash, 2, 0);
        }
      cairo_stroke (cr);
      cairo_set_dash (cr, NULL, 0, 0);
      if (n->kind == PL_LAYOUT_NODE_FUSION)
        {
          /* A collapsed fusion: a second border says "there is more inside". */
          node_path (cr, s, i, -3.0);
          cairo_set_line_width (cr, 0.8);
          cairo_stroke (cr);
        }
    }
  if (zoom < LOD_TEXT)
    return;

  double alpha = ghost ? 0.55 : 1.0;
  double max_w = n->width - (s->node_transform[i] ? 18 : 10);
  bool box = n->kind == PL_LAYOUT_NODE_OP || n->kind == PL_LAYOUT_NODE_FUSION;
  const char *detail = box ? s->detail[i] : NULL;
  double up = detail != NULL ? 6.0 : 0.0;  /* room for the third line */
  set_rgb (cr, c_text, alpha);
  show_text (cr, t, pl_graph_scene_node_title (s, i), box ? t->title : t->small_bold, n->x,
             n->y - (box ? 7.0 : 6.0) - up, max_w, false, NULL, NULL);
  set_rgb (cr, c_subtext, alpha);
  show_text (cr, t, pl_graph_scene_node_subtitle (s, i), box ? t->subtitle : t->small, n->x,
             n->y + (box ? 8.0 : 6.5) - up, max_w, false, NULL, NULL);
  if (detail != NULL)
    {
      /* A default-layout detail (an NCHW conv's impl) in the plain text colour. */
      PlLayout lay = layout_index (s->node_layout[i]);
      set_rgb (cr, lay == PL_LAYOUT_NCHW ? c_subtext : layout_line[lay], alpha);
      show_text (cr, t, detail, t->small_bold, n->x, n->y + 20.0 - up, max_w, false, NULL, NULL);
    }
  if (s->annotation[i] != NULL && !ghost)
    draw_badge (cr, t, n, s->annotation[i]);
}

/* --- edges ----------------------------------------------------------------------- */

/* STYLE_NHWC, STYLE_CHWN: data in that layout (STYLE_DATA - 1 + layout). */
typedef enum { STYLE_DATA, STYLE_NHWC, STYLE_CHWN, STYLE_CONST, STYLE_CONTROL, STYLE_GHOST, STYLE_IN, STYLE_OUT,
               N_STYLES } EdgeStyle;
G_STATIC_ASSERT (STYLE_DATA + PL_LAYOUT_NHWC == STYLE_NHWC && STYLE_DATA + PL_LAYOUT_CHWN == STYLE_CHWN);

static EdgeStyle
edge_style (const PlGraphScene *s, int i)
{
  const PlLayoutEdge *e = &s->layout->edges[i];
  if (s->edge_lit[i] & PL_LIT_INPUT)
    return STYLE_IN;
  if (s->edge_lit[i] & PL_LIT_OUTPUT)
    return STYLE_OUT;
  if (s->edge_state[i] == PL_DRAW_REMOVED)
    return STYLE_GHOST;
  if (e->control)
    return STYLE_CONTROL;
  if (s->edge_layout[i] != PL_LAYOUT_NCHW)
    return STYLE_DATA + layout_index (s->edge_layout[i]);
  if (s->layout->nodes[e->from].kind == PL_LAYOUT_NODE_CONSTANT)
    return STYLE_CONST;
  return STYLE_DATA;
}

static void
style_stroke (cairo_t *cr, EdgeStyle st, double zoom)
{
  static const double dash[] = { 5.0, 3.0 };
  double px = 1.0 / zoom;
  cairo_set_dash (cr, NULL, 0, 0);
  switch (st)
    {
    case STYLE_IN:      set_rgb (cr, c_lit_in, 1.0);  cairo_set_line_width (cr, MAX (2.2, 2 * px)); break;
    case STYLE_OUT:     set_rgb (cr, c_lit_out, 1.0); cairo_set_line_width (cr, MAX (2.2, 2 * px)); break;
    case STYLE_GHOST:   set_rgb (cr, c_ghost, 0.8);   cairo_set_line_width (cr, 1.0);
                        cairo_set_dash (cr, dash, 2, 0); break;
    case STYLE_CONTROL: set_rgb (cr, c_control, 0.9); cairo_set_line_width (cr, 1.2);
                        cairo_set_dash (cr, dash, 2, 0); break;
    case STYLE_CONST:   set_rgb (cr, c_edge_const, 1.0); cairo_set_line_width (cr, MAX (1.0, 0.6 * px)); break;
    case STYLE_NHWC:
    case STYLE_CHWN:    set_rgb (cr, layout_line[st - STYLE_DATA], 1.0);
                        cairo_set_line_width (cr, MAX (2.0, 1.5 * px)); break;
    case STYLE_DATA:
    case N_STYLES:
    default:            set_rgb (cr, c_edge, 1.0);    cairo_set_line_width (cr, MAX (1.2, 0.8 * px)); break;
    }
}

static bool
edge_visible (const PlGraphScene *s, int i, double x0, double y0, double x1, double y1)
{
  const float *bb = &s->edge_bbox[4 * i];
  return s->edge_state[i] != PL_DRAW_HIDDEN && bb[2] >= x0 && bb[0] <= x1 && bb[3] >= y0 && bb[1] <= y1;
}

static void
arrow_path (cairo_t *cr, const PlLayoutEdge *e, double size)
{
  int last = e->n_points - 1;
  double bx = e->points[2 * last], by = e->points[2 * last + 1];
  double tx = e->arrow_x, ty = e->arrow_y;
  if (!e->has_arrow)
    {
      /* No arrow from dot: a small one pointing along the last piece. */
      tx = bx;
      ty = by;
      double px = e->points[2 * (last - 1)], py = e->points[2 * (last - 1) + 1];
      double d = hypot (tx - px, ty - py);
      if (d < 1e-6)
        return;
      bx = tx - (tx - px) / d * size;
      by = ty - (ty - py) / d * size;
    }
  double dx = tx - bx, dy = ty - by, d = hypot (dx, dy);
  if (d < 1e-6)
    return;
  double nx = -dy / d * d * 0.4, ny = dx / d * d * 0.4;
  cairo_move_to (cr, tx, ty);
  cairo_line_to (cr, bx + nx, by + ny);
  cairo_line_to (cr, bx - nx, by - ny);
  cairo_close_path (cr);
}

/* Edges batched by style: one stroke (and one arrow fill) per style. */
static void
draw_edges (const PlGraphScene *s, cairo_t *cr, double x0, double y0, double x1, double y1,
            double zoom, bool simple)
{
  const PlGraphLayout *l = s->layout;
  for (int st = 0; st < N_STYLES; st++)
    {
      bool any = false;
      for (int i = 0; i < l->n_edges; i++)
        {
          if (!edge_visible (s, i, x0, y0, x1, y1) || (int) edge_style (s, i) != st)
            continue;
          const PlLayoutEdge *e = &l->edges[i];
          any = true;
          cairo_move_to (cr, e->points[0], e->points[1]);
          if (simple)
            {
              int last = e->n_points - 1;
              cairo_line_to (cr, e->points[2 * last], e->points[2 * last + 1]);
              continue;
            }
          for (int k = 1; k + 2 < e->n_points; k += 3)
            cairo_curve_to (cr, e->points[2 * k], e->points[2 * k + 1], e->points[2 * k + 2],
                            e->points[2 * k + 3], e->points[2 * k + 4], e->points[2 * k + 5]);
        }
      if (!any)
        continue;
      style_stroke (cr, st, zoom);
      cairo_stroke (cr);
      if (simple)
        continue;
      for (int i = 0; i < l->n_edges; i++)
        if (edge_visible (s, i, x0, y0, x1, y1) && (int) edge_style (s, i) == st)
          arrow_path (cr, &l->edges[i], 7.0);
      cairo_set_dash (cr, NULL, 0, 0);
      cairo_fill (cr);
    }
}

/* Sets the text of t's layout (len bytes of s, -1: all) and returns its size. */
static double
set_text (Text *t, PangoFontDescription *fd, const char *s, int len, double *h)
{
  PangoRectangle r;
  pango_layout_set_font_description (t->layout, fd);
  pango_layout_set_width (t->layout, -1);
  pango_layout_set_text (t->layout, s, len);
  pango_layout_get_extents (t->layout, NULL, &r);
  *h = (double) r.height / PANGO_SCALE;
  return (double) r.width / PANGO_SCALE;
}

/* "f32[1, 64, 56, 56]" in grey, then for a non-default layout its name in
 * white on the layout's colour (the sketch's " @NHWC" suffix, or alone
 * where the layout has no labels). */
static void
draw_edge_label (const PlGraphScene *s, cairo_t *cr, Text *t, int i, const char *label)
{
  const PlLayoutEdge *e = &s->layout->edges[i];
  PlLayout lay = layout_index (s->edge_layout[i]);
  const char *suffix = lay != PL_LAYOUT_NCHW ? pl_layout_name (lay) : NULL;
  int len = label != NULL ? (int) strlen (label) : 0;
  const char *at = suffix != NULL && label != NULL ? g_strrstr (label, " @") : NULL;
  if (at != NULL)
    len = (int) (at - label);
  double h = 0, hs = 0;
  double wp = len > 0 ? set_text (t, t->edge, label, len, &h) : 0;
  double ws = suffix != NULL ? set_text (t, t->edge_bold, suffix, -1, &hs) + 6 : 0;
  double gap = wp > 0 && ws > 0 ? 3 : 0, w = wp + gap + ws;
  h = MAX (h, hs);
  double x = e->label_x - w / 2, y = e->label_y - h / 2;
  /* A halo of the background keeps labels readable over edges. */
  rounded_rect (cr, x - 1.5, y, w + 3, h, 2);
  cairo_set_source_rgba (cr, 0.973, 0.976, 0.984, 0.8);
  cairo_fill (cr);
  if (wp > 0)
    {
      set_text (t, t->edge, label, len, &h);
      set_rgb (cr, s->edge_lit[i] ? c_subtext : c_ghost, s->edge_state[i] == PL_DRAW_REMOVED ? 0.5 : 1.0);
      cairo_move_to (cr, x, e->label_y - h / 2);
      pango_cairo_show_layout (cr, t->layout);
    }
  if (suffix != NULL)
    {
      double xs = x + wp + gap;
      rounded_rect (cr, xs, e->label_y - hs / 2 - 0.5, ws, hs + 1, (hs + 1) / 2);
      set_rgb (cr, layout_line[lay], 1.0);
      cairo_fill (cr);
      set_text (t, t->edge_bold, suffix, -1, &hs);
      cairo_set_source_rgb (cr, 1, 1, 1);
      cairo_move_to (cr, xs + 3, e->label_y - hs / 2);
      pango_cairo_show_layout (cr, t->layout);
    }
}

static void
draw_edge_labels (const PlGraphScene *s, cairo_t *cr, Text *t, double x0, double y0, double x1,
                  double y1)
{
  const PlGraphLayout *l = s->layout;
  for (int i = 0; i < l->n_edges; i++)
    {
      const PlLayoutEdge *e = &l->edges[i];
      const char *label = s->edge_label[i] != NULL ? s->edge_label[i] : e->label;
      if ((label == NULL && s->edge_layout[i] == PL_LAYOUT_NCHW) || s->edge_state[i] == PL_DRAW_HIDDEN
          || e->label_x < x0 - 60 || e->label_x > x1 + 60 || e->label_y < y0 - 10 || e->label_y > y1 + 10)
        continue;
      draw_edge_label (s, cr, t, i, label);
    }
}

/* --- clusters -------------------------------------------------------------------- */

static void
draw_clusters (const PlGraphScene *s, cairo_t *cr, Text *t, double x0, double y0, double x1,
               double y1, double zoom)
{
  const PlGraphLayout *l = s->layout;
  for (int i = 0; i < l->n_clusters; i++)
    {
      const PlLayoutCluster *c = &l->clusters[i];
      guint8 st = s->cluster_state[i];
      if (st == PL_DRAW_HIDDEN || c->x > x1 || c->x + c->width < x0 || c->y > y1
          || c->y + c->height < y0)
        continue;
      rounded_rect (cr, c->x, c->y, c->width, c->height, 10);
      if (st == PL_DRAW_REMOVED)
        cairo_set_source_rgba (cr, 1, 1, 1, 0.3);
      else
        set_rgb (cr, c_cluster, 0.85);
      cairo_fill_preserve (cr);
      Rgb border = st == PL_DRAW_ADDED ? c_added : st == PL_DRAW_CHANGED ? c_changed
                   : st == PL_DRAW_REMOVED ? c_ghost : c_cluster_border;
      if (i == s->selected_cluster)
        border = c_select;
      set_rgb (cr, border, 1.0);
      cairo_set_line_width (cr, i == s->selected_cluster || st == PL_DRAW_ADDED || st == PL_DRAW_CHANGED
                                  ? MAX (2.5, 2 / zoom) : 1.0);
      if (st == PL_DRAW_REMOVED)
        {
          static const double dash[] = { 4.0, 3.0 };
          cairo_set_dash (cr, dash, 2, 0);
        }
      cairo_stroke (cr);
      cairo_set_dash (cr, NULL, 0, 0);
      if (zoom < LOD_TEXT)
        continue;
      double w;
      set_rgb (cr, c_text, st == PL_DRAW_REMOVED ? 0.5 : 0.9);
      show_text (cr, t, c->title, t->cluster, c->x + 8, c->y + 10, c->width - 16, true, &w, NULL);
      if (s->cluster_subtitle[i] != NULL && w + 24 < c->width - 16)
        {
          set_rgb (cr, c_subtext, 1.0);
          show_text (cr, t, s->cluster_subtitle[i], t->subtitle, c->x + 8 + w + 8, c->y + 10,
                     c->width - 24 - w, true, NULL, NULL);
        }
    }
}

/* --- the whole picture ----------------------------------------------------------- */

static bool
node_visible (const PlLayoutNode *n, double x0, double y0, double x1, double y1);

bool
pl_graph_scene_node_visible (const PlGraphScene *s, int i, double x0, double y0, double x1, double y1)
{
  return s->node_state[i] != PL_DRAW_HIDDEN && node_visible (&s->layout->nodes[i], x0, y0, x1, y1);
}

static bool
node_visible (const PlLayoutNode *n, double x0, double y0, double x1, double y1)
{
  return n->x + n->width / 2 + 8 >= x0 && n->x - n->width / 2 - 8 <= x1
         && n->y + n->height / 2 + 12 >= y0 && n->y - n->height / 2 - 8 <= y1;
}

/* Far out: boxes as plain rectangles, one fill per category. */
static void
draw_nodes_simple (const PlGraphScene *s, cairo_t *cr, double x0, double y0, double x1, double y1,
                   double zoom)
{
  const PlGraphLayout *l = s->layout;
  double min = 1.5 / zoom;  /* at least ~1.5 px, so a far overview still shows every node */
  for (int pass = 0; pass <= PL_CAT_COUNT + PL_LAYOUT_COUNT; pass++)
    {
      bool any = false;
      for (int i = 0; i < l->n_nodes; i++)
        {
          const PlLayoutNode *n = &l->nodes[i];
          guint8 st = s->node_state[i];
          if (st == PL_DRAW_HIDDEN || !node_visible (n, x0, y0, x1, y1))
            continue;
          /* Passes 0..COUNT-1: op categories; pass COUNT: pills and ghosts;
           * then one per layout: the transforms into it. */
          bool pill = n->kind != PL_LAYOUT_NODE_OP && n->kind != PL_LAYOUT_NODE_FUSION;
          int want = pill || st == PL_DRAW_REMOVED ? PL_CAT_COUNT
                     : s->node_transform[i] ? PL_CAT_COUNT + 1 + (int) layout_index (s->node_layout[i])
                                    : (int) category_of (n);
          if (want != pass)
            continue;
          double w = MAX (n->width, min), h = MAX (n->height, min);
          cairo_rectangle (cr, n->x - w / 2, n->y - h / 2, w, h);
          any = true;
        }
      if (!any)
        continue;
      if (pass == PL_CAT_COUNT)
        set_rgb (cr, c_ghost, 0.8);
      else if (pass > PL_CAT_COUNT)
        set_rgb (cr, layout_line[pass - PL_CAT_COUNT - 1], 1.0);
      else
        set_rgb (cr, cat_border[pass], 1.0);
      cairo_fill (cr);
    }
  /* Diff states, selection and hover still show far out. */
  for (int i = 0; i < l->n_nodes; i++)
    {
      const PlLayoutNode *n = &l->nodes[i];
      guint8 st = s->node_state[i];
      if ((st == PL_DRAW_NORMAL || st == PL_DRAW_HIDDEN || st == PL_DRAW_REMOVED)
          && i != s->selected && i != s->hover && s->node_lit[i] == 0)
        continue;
      if (node_visible (n, x0, y0, x1, y1))
        node_halo (s, cr, i, zoom);
    }
}

void
pl_graph_scene_draw (const PlGraphScene *s, cairo_t *cr, double x0, double y0, double x1,
                     double y1, double zoom)
{
  g_return_if_fail (s != NULL && cr != NULL);
  const PlGraphLayout *l = s->layout;
  bool simple = zoom < LOD_SIMPLE;
  Text t;
  text_init (&t, cr);
  cairo_save (cr);
  cairo_set_line_join (cr, CAIRO_LINE_JOIN_ROUND);
  if (simple)
    cairo_set_antialias (cr, CAIRO_ANTIALIAS_FAST);

  draw_clusters (s, cr, &t, x0, y0, x1, y1, zoom);
  draw_edges (s, cr, x0, y0, x1, y1, zoom, simple);
  if (simple)
    draw_nodes_simple (s, cr, x0, y0, x1, y1, zoom);
  else
    {
      for (int i = 0; i < l->n_nodes; i++)
        if (s->node_state[i] != PL_DRAW_HIDDEN && node_visible (&l->nodes[i], x0, y0, x1, y1))
          draw_node (s, cr, &t, i, zoom);
      if (zoom >= LOD_LABELS)
        draw_edge_labels (s, cr, &t, x0, y0, x1, y1);
    }
  cairo_restore (cr);
  text_clear (&t);
}

/* --- the layout legend ------------------------------------------------------------ */

guint
pl_graph_scene_layouts_shown (const PlGraphScene *s, bool *transforms)
{
  g_return_val_if_fail (s != NULL, 0);
  const PlGraphLayout *l = s->layout;
  guint bits = 0;
  for (int i = 0; i < l->n_edges; i++)
    if (s->edge_state[i] != PL_DRAW_HIDDEN && s->edge_state[i] != PL_DRAW_REMOVED
        && s->edge_layout[i] != PL_LAYOUT_NCHW)
      bits |= 1u << layout_index (s->edge_layout[i]);
  bool any = false;
  for (int i = 0; i < l->n_nodes && !any; i++)
    any = s->node_transform[i] && s->node_state[i] != PL_DRAW_HIDDEN && s->node_state[i] != PL_DRAW_REMOVED;
  if (transforms != NULL)
    *transforms = any;
  return bits;
}

/* One legend entry at x: a swatch then text; returns the x after it. */
static double
legend_entry (cairo_t *cr, PangoLayout *pl, double x, double cy, PlLayout lay, bool hexagon_swatch,
              const char *text, bool draw)
{
  if (draw)
    {
      if (hexagon_swatch)
        {
          hexagon (cr, x, cy - 6, 22, 12);
          set_rgb (cr, layout_tint[lay], 1.0);
          cairo_fill_preserve (cr);
          set_rgb (cr, layout_line[lay], 1.0);
          cairo_set_line_width (cr, 1.5);
          cairo_stroke (cr);
        }
      else
        {
          cairo_move_to (cr, x, cy);
          cairo_line_to (cr, x + 22, cy);
          set_rgb (cr, layout_line[lay], 1.0);
          cairo_set_line_width (cr, 2.5);
          cairo_stroke (cr);
        }
    }
  pango_layout_set_text (pl, text, -1);
  int tw, th;
  pango_layout_get_pixel_size (pl, &tw, &th);
  if (draw)
    {
      set_rgb (cr, c_text, 0.9);
      cairo_move_to (cr, x + 27, cy - th / 2.0);
      pango_cairo_show_layout (cr, pl);
    }
  return x + 27 + tw + 14;
}

/* The entries in a row starting at x; returns the row's width. */
static double
legend_row (const PlGraphScene *s, cairo_t *cr, PangoLayout *pl, double x, double cy, bool draw)
{
  bool transforms;
  guint bits = pl_graph_scene_layouts_shown (s, &transforms);
  double x0 = x;
  for (int lay = PL_LAYOUT_NHWC; lay < PL_LAYOUT_COUNT; lay++)
    if (bits & (1u << lay))
      {
        g_autofree char *text = g_strdup_printf ("%s data", pl_layout_name (lay));
        x = legend_entry (cr, pl, x, cy, lay, false, text, draw);
      }
  if (transforms)
    {
      /* The swatch takes the first layout shown (most graphs use one). */
      PlLayout lay = PL_LAYOUT_NHWC;
      for (int k = PL_LAYOUT_COUNT - 1; k > PL_LAYOUT_NCHW; k--)
        if (bits & (1u << k))
          lay = k;
      x = legend_entry (cr, pl, x, cy, lay, true, "layout transform", draw);
    }
  return x - x0 - 14;
}

void
pl_graph_scene_draw_legend (const PlGraphScene *s, cairo_t *cr, double x, double y)
{
  g_return_if_fail (s != NULL && cr != NULL);
  bool transforms;
  if (pl_graph_scene_layouts_shown (s, &transforms) == 0 && !transforms)
    return;
  PangoLayout *pl = pango_cairo_create_layout (cr);
  PangoFontDescription *fd = font (11.0, PANGO_WEIGHT_NORMAL);
  pango_layout_set_font_description (pl, fd);
  double w = legend_row (s, cr, pl, 0, 0, false) + 20, h = 26;
  cairo_save (cr);
  rounded_rect (cr, x - w, y - h, w, h, 6);
  cairo_set_source_rgba (cr, 1, 1, 1, 0.92);
  cairo_fill_preserve (cr);
  cairo_set_source_rgba (cr, 0, 0, 0, 0.15);
  cairo_set_line_width (cr, 1);
  cairo_stroke (cr);
  legend_row (s, cr, pl, x - w + 10, y - h / 2, true);
  cairo_restore (cr);
  pango_font_description_free (fd);
  g_object_unref (pl);
}
