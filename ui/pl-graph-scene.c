/* pl-graph-scene.c — a PlGraphScene's state (see pl-graph-draw.h): per
 * node, edge and cluster of a layout, whether and how the version on screen
 * shows it (hidden, normal, added, changed, a removed ghost), the texts and
 * data layouts of that version, the hovered node's lit neighbourhood, and
 * hit tests. Nothing here draws; pl-graph-draw*.c read this state.
 *
 * Which layout boxes a version has is found through its sketch: each sketch
 * entry, mapped through the layout's collapse set, names the box or cluster
 * it shows as; the sketch's edges become sorted box pairs that layout edges
 * are looked up in. */
#define G_LOG_DOMAIN "passlab"

#include "pl-graph-draw-private.h"

#include <math.h>
#include <string.h>

/* Per node and edge: the detail, data layout and transform flag the layout
 * itself has (what a scene shows when no version is given). */
static void
use_layout_texts (PlGraphScene *s)
{
  const PlGraphLayout *l = s->layout;
  for (int i = 0; i < l->n_nodes; i++)
    {
      s->detail[i] = l->nodes[i].detail;
      s->node_layout[i] = l->nodes[i].data_layout;
      s->node_transform[i] = l->nodes[i].transform;
    }
  for (int i = 0; i < l->n_edges; i++)
    s->edge_layout[i] = l->edges[i].data_layout;
}

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
  use_layout_texts (s);
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
      use_layout_texts (sc);   /* the layout's own texts and layouts */
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

/* --- lookups ------------------------------------------------------------------------- */

int
pl_graph_scene_find_cluster (const PlGraphScene *s, const char *key)
{
  if (s == NULL || key == NULL)
    return -1;
  return GPOINTER_TO_INT (g_hash_table_lookup (s->cluster_index, key)) - 1;
}

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

bool
pl_graph_scene_node_visible (const PlGraphScene *s, int i, double x0, double y0, double x1, double y1)
{
  return s->node_state[i] != PL_DRAW_HIDDEN && pl_draw_node_visible (&s->layout->nodes[i], x0, y0, x1, y1);
}
