/* pl-graph-layout.c — a sketch (pl-graph-sketch.c) through Graphviz `dot`
 * into plain geometry.
 *
 * Runs in any thread: apply the collapse set, build a cgraph graph
 * (fixed-size boxes sized by the sketch, `cluster_<key>` subgraphs for
 * expanded fusions), run `dot`, copy ND_coord / ED_spl / GD_bb out with y
 * flipped to point down, free the Graphviz graph; no Graphviz pointer
 * outlives the call. cgraph and gvc keep global state, so every Graphviz
 * call happens under one lock.
 *
 * Big graphs are laid out in bands (see "bands" below), and more than
 * simplify_above boxes get a simplified layout: every fusion collapsed, no
 * edge labels (dot makes each label a virtual node and doubles the ranks)
 * and bounded network-simplex and mincross work (nslimit, mclimit,
 * searchsize). tests/bench/bench-canvas.c measures both.
 */
#define G_LOG_DOMAIN "passlab"

#include "pl-graph-layout.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#include <string.h>

/* --- layout ----------------------------------------------------------------- */

void
pl_layout_options_init (PlLayoutOptions *o)
{
  g_return_if_fail (o != NULL);
  memset (o, 0, sizeof *o);
  o->show_constants = true;
  o->simplify_above = 2000;
}

static GMutex gv_lock;  /* cgraph and gvc have global state */
static GVC_t *gv_context;

/* Built per layout: which sketch entry became which box or cluster. */
typedef struct {
  const PlGraphSketch *s;
  GHashTable          *collapsed;
  int                 *visible;    /* sketch index -> representative */
  int                 *box;        /* sketch index -> layout node index, or -1 */
  int                 *cluster;    /* sketch index -> cluster index, or -1 */
  int                  n_boxes, n_clusters;
  GArray              *edges;      /* PlSketchEdge (borrowed labels) between boxes */
  bool                 simplified;
  int                 *band;       /* box -> band */
  int                 *cluster_band; /* cluster -> band */
  guint8              *box_kind;   /* box -> PlLayoutNodeKind */
  int                 *rank;       /* box -> longest-path rank */
  bool                *spine;      /* box on the spine (drawn straight) */
  int                  n_bands;
} LayoutPlan;

static bool
entry_is_cluster (const LayoutPlan *p, int i)
{
  const PlSketchNode *sn = &g_array_index (p->s->nodes, PlSketchNode, i);
  return sn->has_body && !g_hash_table_contains (p->collapsed, sn->key);
}

/* The box an edge endpoint lands on: control edges may name an expanded
 * fusion; they attach to its first box. */
static int
endpoint_box (const LayoutPlan *p, int i)
{
  int v = p->visible[i];
  if (p->box[v] >= 0)
    return p->box[v];
  for (guint j = v + 1; j < p->s->nodes->len; j++)
    {
      int a = g_array_index (p->s->nodes, PlSketchNode, j).parent;
      while (a >= 0 && a != v)
        a = g_array_index (p->s->nodes, PlSketchNode, a).parent;
      if (a == v && p->box[j] >= 0)
        return p->box[j];
    }
  return -1;
}

static void
plan_init (LayoutPlan *p, const PlGraphSketch *s, GHashTable *collapsed)
{
  guint n = s->nodes->len;
  memset (p, 0, sizeof *p);
  p->s = s;
  p->collapsed = collapsed;
  p->visible = g_new (int, n);
  p->box = g_new (int, n);
  p->cluster = g_new (int, n);
  p->box_kind = g_new0 (guint8, MAX (n, 1));
  for (guint i = 0; i < n; i++)
    {
      p->visible[i] = pl_graph_sketch_visible (s, (int) i, collapsed);
      p->box[i] = p->cluster[i] = -1;
      if (p->visible[i] != (int) i)
        continue;
      if (entry_is_cluster (p, (int) i))
        p->cluster[i] = p->n_clusters++;
      else
        {
          p->box_kind[p->n_boxes] = g_array_index (s->nodes, PlSketchNode, i).kind;
          p->box[i] = p->n_boxes++;
        }
    }

  /* Edges between boxes; the ones collapsing folded onto one box pair are
   * merged (several body nodes reading one fusion input are one edge). */
  p->edges = g_array_new (FALSE, FALSE, sizeof (PlSketchEdge));
  g_autoptr (GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < s->edges->len; i++)
    {
      const PlSketchEdge *e = &g_array_index (s->edges, PlSketchEdge, i);
      int a = endpoint_box (p, e->from), b = endpoint_box (p, e->to);
      if (a < 0 || b < 0 || a == b)
        continue;
      if (p->visible[e->from] != e->from || p->visible[e->to] != e->to)
        {
          char *k = g_strdup_printf ("%d>%d:%s", a, b, e->label != NULL ? e->label : "");
          if (!g_hash_table_add (seen, k))
            continue;
        }
      PlSketchEdge pe = { a, b, e->label, e->control, e->data_layout };
      g_array_append_val (p->edges, pe);
    }
}

static void
plan_clear (LayoutPlan *p)
{
  g_free (p->band);
  g_free (p->cluster_band);
  g_free (p->box_kind);
  g_free (p->rank);
  g_free (p->spine);
  g_free (p->visible);
  g_free (p->box);
  g_free (p->cluster);
  g_array_unref (p->edges);
}

static void
layout_free (PlGraphLayout *l)
{
  for (int i = 0; i < l->n_nodes; i++)
    {
      g_free (l->nodes[i].key);
      g_free (l->nodes[i].title);
      g_free (l->nodes[i].subtitle);
      g_free (l->nodes[i].detail);
    }
  for (int i = 0; i < l->n_edges; i++)
    {
      g_free (l->edges[i].points);
      g_free (l->edges[i].label);
    }
  for (int i = 0; i < l->n_clusters; i++)
    {
      g_free (l->clusters[i].key);
      g_free (l->clusters[i].title);
    }
  g_free (l->nodes);
  g_free (l->edges);
  g_free (l->clusters);
  g_clear_pointer (&l->index, g_hash_table_unref);
  g_clear_pointer (&l->collapsed, g_hash_table_unref);
  g_free (l);
}

/* --- bands -------------------------------------------------------------------
 * dot's network simplex (ranking and x placement) grows faster than linearly
 * in Graphviz 2.42/2.43: a 1,400-box chain takes about a second, 14,000
 * boxes several minutes. Big graphs are therefore cut into bands of
 * consecutive ranks (never through a cluster) and each band is laid out on
 * its own, stacked along the rank axis. An edge from an earlier band enters
 * its band through a small proxy node pinned to the band's first rank; the
 * band is shifted sideways so its proxies sit under their real sources, and
 * the edge is drawn as a straight piece from the source to the proxy
 * followed by dot's route. Time is then linear in the number of bands, and
 * the bands give real progress and a place to cancel. */

#define BAND_BOXES 250   /* boxes per band: dot's time per box grows with the band
                          * (10,000 ops: ~1 s with 200, ~1.6 s with 400, ~9 s
                          * with 1,600); smaller bands drift more sideways */
#define BAND_GAP   36.0  /* between bands without incoming edges */

/* Longest-path ranks over the box edges, sources pulled down next to their
 * first consumer (constants sit by the op that reads them). */
static int *
box_ranks (const LayoutPlan *p)
{
  int n = p->n_boxes;
  int *rank = g_new0 (int, n), *indeg = g_new0 (int, n), *queue = g_new (int, n);
  int *first = g_new (int, n + 1), *succ = g_new (int, MAX (p->edges->len, 1));
  memset (first, 0, sizeof (int) * (n + 1));
  g_autofree bool *has_pred = g_new0 (bool, MAX (n, 1));
  for (guint i = 0; i < p->edges->len; i++)
    {
      const PlSketchEdge *e = &g_array_index (p->edges, PlSketchEdge, i);
      first[e->from + 1]++;
      indeg[e->to]++;
      has_pred[e->to] = true;
    }
  for (int v = 0; v < n; v++)
    first[v + 1] += first[v];
  g_autofree int *fill = g_memdup2 (first, sizeof (int) * n);
  for (guint i = 0; i < p->edges->len; i++)
    {
      const PlSketchEdge *e = &g_array_index (p->edges, PlSketchEdge, i);
      succ[fill[e->from]++] = e->to;
    }
  int head = 0, tail = 0;
  for (int v = 0; v < n; v++)
    if (indeg[v] == 0)
      queue[tail++] = v;
  while (head < tail)
    {
      int v = queue[head++];
      for (int k = first[v]; k < first[v + 1]; k++)
        {
          int w = succ[k];
          rank[w] = MAX (rank[w], rank[v] + 1);
          if (--indeg[w] == 0)
            queue[tail++] = w;
        }
    }
  for (int v = 0; v < n; v++)
    {
      if (indeg[v] > 0)  /* on a cycle (a bad graph): after everything else */
        rank[v] = n;
      else if (has_pred[v] || first[v] == first[v + 1])
        continue;
      else
        {
          /* A source: just above its earliest consumer. */
          int m = G_MAXINT;
          for (int k = first[v]; k < first[v + 1]; k++)
            m = MIN (m, rank[succ[k]]);
          rank[v] = MAX (0, m - 1);
        }
    }
  g_free (indeg);
  g_free (queue);
  g_free (first);
  g_free (succ);
  return rank;
}

/* The spine: a longest path, walked back from the deepest box through op
 * boxes one rank up. dot draws it straight (group=spine); without it, every
 * side branch that merges back pulls the rest of a deep model sideways and
 * a 1,000-block chain drifts thousands of points to one side. */
static void
find_spine (LayoutPlan *p)
{
  int n = p->n_boxes;
  p->spine = g_new0 (bool, MAX (n, 1));
  int end = -1;
  for (int v = 0; v < n; v++)
    if (end < 0 || p->rank[v] > p->rank[end])
      end = v;
  g_autofree int *pred = g_new (int, MAX (n, 1));
  for (int v = 0; v < n; v++)
    pred[v] = -1;
  for (guint i = 0; i < p->edges->len; i++)
    {
      const PlSketchEdge *e = &g_array_index (p->edges, PlSketchEdge, i);
      int u = e->from, v = e->to;
      bool op = p->box_kind[u] == PL_LAYOUT_NODE_OP || p->box_kind[u] == PL_LAYOUT_NODE_FUSION;
      if (!e->control && op && p->rank[u] == p->rank[v] - 1 && pred[v] < 0)
        pred[v] = u;
    }
  for (int v = end; v >= 0 && !p->spine[v]; v = pred[v])
    p->spine[v] = true;
}

/* Cuts the ranks into bands of about BAND_BOXES boxes; a cut never falls
 * inside a cluster's span of ranks. Sets p->band (per box) and p->n_bands. */
static void
assign_bands (LayoutPlan *p, int band_boxes)
{
  int n = p->n_boxes;
  p->band = g_new0 (int, MAX (n, 1));
  p->cluster_band = g_new0 (int, MAX (p->n_clusters, 1));
  p->n_bands = 1;
  if (n <= band_boxes * 3 / 2)
    return;

  const int *rank = p->rank;
  int max_rank = 0;
  for (int v = 0; v < n; v++)
    max_rank = MAX (max_rank, rank[v]);
  g_autofree int *per_rank = g_new0 (int, max_rank + 2);
  g_autofree int *open = g_new0 (int, max_rank + 2);  /* clusters spanning rank r..r+1 */
  for (int v = 0; v < n; v++)
    per_rank[rank[v]]++;

  /* Span of each top-level cluster, from its boxes. */
  guint ns = p->s->nodes->len;
  g_autofree int *lo = g_new (int, ns), *hi = g_new (int, ns);
  for (guint i = 0; i < ns; i++)
    lo[i] = G_MAXINT, hi[i] = -1;
  for (guint i = 0; i < ns; i++)
    {
      if (p->box[i] < 0)
        continue;
      int top = -1;
      for (int a = g_array_index (p->s->nodes, PlSketchNode, i).parent; a >= 0;
           a = g_array_index (p->s->nodes, PlSketchNode, a).parent)
        top = a;
      if (top >= 0)
        {
          lo[top] = MIN (lo[top], rank[p->box[i]]);
          hi[top] = MAX (hi[top], rank[p->box[i]]);
        }
    }
  for (guint i = 0; i < ns; i++)
    if (hi[i] > lo[i])
      {
        open[lo[i]]++;
        open[hi[i]]--;
      }
  g_autofree int *band_of_rank = g_new0 (int, max_rank + 1);
  int band = 0, count = 0, inside = 0;
  for (int r = 0; r <= max_rank; r++)
    {
      band_of_rank[r] = band;
      count += per_rank[r];
      inside += open[r];
      if (count >= band_boxes && inside == 0 && r < max_rank)
        {
          band++;
          count = 0;
        }
    }
  p->n_bands = band + 1;
  for (int v = 0; v < n; v++)
    p->band[v] = band_of_rank[rank[v]];
  /* A source (a constant, an input) goes with its first consumer: left in
   * the band before, it would sit alone at that band's top. */
  g_autofree bool *has_pred = g_new0 (bool, n);
  g_autofree int *first_use = g_new (int, n);
  for (int v = 0; v < n; v++)
    first_use[v] = G_MAXINT;
  for (guint i = 0; i < p->edges->len; i++)
    {
      const PlSketchEdge *e = &g_array_index (p->edges, PlSketchEdge, i);
      has_pred[e->to] = true;
      first_use[e->from] = MIN (first_use[e->from], p->band[e->to]);
    }
  for (int v = 0; v < n; v++)
    if (!has_pred[v] && first_use[v] != G_MAXINT)
      p->band[v] = first_use[v];
  for (guint i = 0; i < ns; i++)
    if (p->box[i] >= 0)
      for (int a = g_array_index (p->s->nodes, PlSketchNode, i).parent; a >= 0;
           a = g_array_index (p->s->nodes, PlSketchNode, a).parent)
        p->cluster_band[p->cluster[a]] = p->band[p->box[i]];
}

/* --- one band through Graphviz ------------------------------------------------ */

/* Numbers for Graphviz attributes, locale-independent. */
static void
set_num (void *obj, Agsym_t *sym, double v)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd (buf, sizeof buf, "%.3f", v);
  agxset (obj, sym, buf);
}

/* The Graphviz objects of the band being laid out (valid until agclose). */
typedef struct {
  int        band;
  Agraph_t  *g;
  Agnode_t **node;    /* per box, NULL outside the band */
  Agnode_t **proxy;   /* per box of an earlier band feeding this one */
  Agedge_t **edge;    /* per plan edge arriving in this band */
  Agraph_t **sub;     /* per sketch entry: its cluster subgraph */
} BandGraph;

static void
declare_graph_attrs (Agraph_t *g, const LayoutPlan *p, const PlLayoutOptions *o)
{
  agattr (g, AGRAPH, (char *) "rankdir", (char *) (o->left_to_right ? "LR" : "TB"));
  agattr (g, AGRAPH, (char *) "nodesep", (char *) "0.25");
  agattr (g, AGRAPH, (char *) "ranksep", (char *) (p->simplified ? "0.3" : "0.4"));
  agattr (g, AGRAPH, (char *) "fontname", (char *) "Helvetica");
  agattr (g, AGRAPH, (char *) "fontsize", (char *) "10");
  agattr (g, AGRAPH, (char *) "labeljust", (char *) "l");
  agattr (g, AGRAPH, (char *) "margin", (char *) "0");
  if (p->simplified)
    {
      /* Bounded work: network simplex and mincross iterations scale with these. */
      agattr (g, AGRAPH, (char *) "nslimit", (char *) "0.5");
      agattr (g, AGRAPH, (char *) "nslimit1", (char *) "0.5");
      agattr (g, AGRAPH, (char *) "mclimit", (char *) "0.3");
      agattr (g, AGRAPH, (char *) "searchsize", (char *) "10");
      agattr (g, AGRAPH, (char *) "remincross", (char *) "false");
    }
}

static void
build_band (BandGraph *bg, const LayoutPlan *p, const PlLayoutOptions *o)
{
  Agraph_t *g = agopen ((char *) "passlab", Agdirected, NULL);
  bg->g = g;
  declare_graph_attrs (g, p, o);
  Agsym_t *glabel = agattr (g, AGRAPH, (char *) "label", (char *) "");
  Agsym_t *grank = agattr (g, AGRAPH, (char *) "rank", (char *) "");
  agattr (g, AGNODE, (char *) "shape", (char *) "box");
  agattr (g, AGNODE, (char *) "fixedsize", (char *) "true");
  agattr (g, AGNODE, (char *) "label", (char *) "");
  Agsym_t *nw = agattr (g, AGNODE, (char *) "width", (char *) "1");
  Agsym_t *nh = agattr (g, AGNODE, (char *) "height", (char *) "0.5");
  Agsym_t *ngroup = agattr (g, AGNODE, (char *) "group", (char *) "");
  Agsym_t *elabel = agattr (g, AGEDGE, (char *) "label", (char *) "");
  agattr (g, AGEDGE, (char *) "fontname", (char *) "Helvetica");
  agattr (g, AGEDGE, (char *) "fontsize", (char *) "7.5");
  Agsym_t *eweight = agattr (g, AGEDGE, (char *) "weight", (char *) "1");

  /* Clusters nest like the sketch (parents come before their bodies). */
  guint n = p->s->nodes->len;
  for (guint i = 0; i < n; i++)
    {
      const PlSketchNode *sn = &g_array_index (p->s->nodes, PlSketchNode, i);
      Agraph_t *container = sn->parent >= 0 && bg->sub[sn->parent] != NULL ? bg->sub[sn->parent] : g;
      if (p->cluster[i] >= 0 && p->cluster_band[p->cluster[i]] == bg->band)
        {
          g_autofree char *name = g_strconcat ("cluster_", sn->key, NULL);
          bg->sub[i] = agsubg (container, name, 1);
          g_autofree char *label = g_strdup_printf ("%s  %s", sn->title, sn->subtitle);
          agxset (bg->sub[i], glabel, label);
        }
      else if (p->box[i] >= 0 && p->band[p->box[i]] == bg->band)
        {
          Agnode_t *an = agnode (container, sn->key, 1);
          set_num (an, nw, sn->width / 72.0);
          set_num (an, nh, sn->height / 72.0);
          if (p->spine[p->box[i]])
            agxset (an, ngroup, "spine");
          bg->node[p->box[i]] = an;
        }
    }

  Agraph_t *top = NULL;
  for (guint i = 0; i < p->edges->len; i++)
    {
      const PlSketchEdge *e = &g_array_index (p->edges, PlSketchEdge, i);
      if (p->band[e->to] != bg->band)
        continue;
      Agnode_t *from = bg->node[e->from];
      if (p->band[e->from] != bg->band)
        {
          if (bg->proxy[e->from] == NULL)
            {
              if (top == NULL)
                {
                  top = agsubg (g, (char *) "proxies", 1);
                  agxset (top, grank, "source");
                }
              char name[32];
              g_snprintf (name, sizeof name, "proxy %d", e->from);
              bg->proxy[e->from] = agnode (top, name, 1);
              set_num (bg->proxy[e->from], nw, 0.1);
              set_num (bg->proxy[e->from], nh, 0.1);
            }
          from = bg->proxy[e->from];
        }
      Agedge_t *ae = agedge (g, from, bg->node[e->to], NULL, 1);
      if (!p->simplified && e->label != NULL)
        agxset (ae, elabel, e->label);
      if (e->control)
        agxset (ae, eweight, "0");  /* control edges should not bend the data flow */
      else if (p->box_kind[e->from] == PL_LAYOUT_NODE_OP || p->box_kind[e->from] == PL_LAYOUT_NODE_FUSION)
        agxset (ae, eweight, "3");  /* data paths stay straight; constants may bend */
      bg->edge[i] = ae;
    }
}

/* Graphviz points (y up) → ours (y down, from the band's top-left) plus the
 * band's offset. */
typedef struct {
  double x0, y1, dx, dy;
  double shear;   /* cross-axis correction per unit along the rank axis */
  bool   lr;
} Place;

/* Where a Graphviz point lies along the rank axis, from the band's start. */
static double
local_main (const Place *f, pointf pt)
{
  return f->lr ? pt.x - f->x0 : f->y1 - pt.y;
}

/* Places pt, shearing it as a point at `anchor` along the rank axis (local). */
static void
place_at (const Place *f, pointf pt, double anchor, double *x, double *y)
{
  double lx = pt.x - f->x0, ly = f->y1 - pt.y;
  if (f->lr)
    ly -= f->shear * anchor;
  else
    lx -= f->shear * anchor;
  *x = lx + f->dx;
  *y = ly + f->dy;
}

static void
place (const Place *f, pointf pt, double *x, double *y)
{
  place_at (f, pt, local_main (f, pt), x, y);
}

/* The shear moves a box as a whole (by its anchor, see box_anchor); an edge
 * end at `along` moved by its own position: move it back by the difference,
 * so the edge stays attached. anchor and along are local. */
static void
unshear_end (const Place *f, double anchor, double along, double *x, double *y)
{
  if (f->lr)
    *y += f->shear * (along - anchor);
  else
    *x += f->shear * (along - anchor);
}

static void
copy_edge (PlGraphLayout *l, int i, const PlSketchEdge *se, Agedge_t *ae, const Place *f,
           const double *lead, const double *anchor)
{
  PlLayoutEdge *e = &l->edges[i];
  e->from = se->from;
  e->to = se->to;
  e->control = se->control;
  e->data_layout = se->data_layout;
  e->label = !l->simplified && se->label != NULL ? g_strdup (se->label) : NULL;

  splines *spl = ED_spl (ae);
  GArray *pts = g_array_new (FALSE, FALSE, sizeof (double));
  if (lead != NULL)
    g_array_append_vals (pts, lead, 2);
  for (int b = 0; spl != NULL && b < spl->size; b++)
    {
      bezier *bz = &spl->list[b];
      /* A piece that does not start where the last ended joins it with a
       * straight cubic (the lead from another band, or a split route). */
      for (int k = 0; k < bz->size; k++)
        {
          double x, y;
          place (f, bz->list[k], &x, &y);
          if (k == 0 && pts->len > 0)
            {
              double px = g_array_index (pts, double, pts->len - 2);
              double py = g_array_index (pts, double, pts->len - 1);
              if (px == x && py == y)
                continue;
              double line[4] = { px + (x - px) / 3, py + (y - py) / 3,
                                 px + 2 * (x - px) / 3, py + 2 * (y - py) / 3 };
              g_array_append_vals (pts, line, 4);
            }
          double xy[2] = { x, y };
          g_array_append_vals (pts, xy, 2);
        }
      if (bz->eflag)
        {
          e->has_arrow = true;
          place (f, bz->ep, &e->arrow_x, &e->arrow_y);
        }
    }
  if (pts->len < 8 || (pts->len / 2 - 1) % 3 != 0)
    {
      /* No usable route from dot: a straight line between the centres. */
      const PlLayoutNode *a = &l->nodes[e->from], *b = &l->nodes[e->to];
      double line[8] = { a->x, a->y, a->x + (b->x - a->x) / 3, a->y + (b->y - a->y) / 3,
                         a->x + 2 * (b->x - a->x) / 3, a->y + 2 * (b->y - a->y) / 3, b->x, b->y };
      g_array_set_size (pts, 0);
      g_array_append_vals (pts, line, 8);
      e->has_arrow = false;
    }
  e->n_points = (int) pts->len / 2;
  e->points = (double *) g_array_free (pts, FALSE);
  if (f->shear != 0)
    {
      /* Local positions along the rank axis of the ends, then back. */
      double off = f->lr ? f->dx : f->dy;
      int last = e->n_points - 1;
      double *p = e->points;
      if (lead == NULL)
        {
          double a = (f->lr ? p[0] : p[1]) - off;
          unshear_end (f, anchor[e->from], a, &p[0], &p[1]);
          unshear_end (f, anchor[e->from], a, &p[2], &p[3]);
        }
      double a = (f->lr ? p[2 * last] : p[2 * last + 1]) - off;
      unshear_end (f, anchor[e->to], a, &p[2 * last], &p[2 * last + 1]);
      unshear_end (f, anchor[e->to], a, &p[2 * last - 2], &p[2 * last - 1]);
      if (e->has_arrow)
        unshear_end (f, anchor[e->to], (f->lr ? e->arrow_x : e->arrow_y) - off, &e->arrow_x, &e->arrow_y);
    }
  textlabel_t *lab = ED_label (ae);
  if (e->label != NULL && lab != NULL && lab->set)
    place (f, lab->pos, &e->label_x, &e->label_y);
  else
    {
      /* The middle of the curve, for labels dot did not place. */
      int mid = (e->n_points - 1) / 6 * 3;
      e->label_x = e->points[2 * mid];
      e->label_y = e->points[2 * mid + 1];
    }
}

/* Cluster boxes: walk the subgraph tree (clusters may nest). A cluster
 * moves as a whole with its outermost cluster (anchor < 0: not inside one). */
static void
copy_clusters (PlGraphLayout *l, const LayoutPlan *p, Agraph_t *sg, const Place *f, double anchor)
{
  for (Agraph_t *c = agfstsubg (sg); c != NULL; c = agnxtsubg (c))
    {
      const char *name = agnameof (c);
      int i = g_str_has_prefix (name, "cluster_")
                ? pl_graph_sketch_find (p->s, name + strlen ("cluster_")) : -1;
      double a = anchor;
      if (i >= 0 && p->cluster[i] >= 0)
        {
          PlLayoutCluster *lc = &l->clusters[p->cluster[i]];
          boxf bb = GD_bb (c);
          if (a < 0)
            a = local_main (f, (pointf) { (bb.LL.x + bb.UR.x) / 2, (bb.LL.y + bb.UR.y) / 2 });
          double x1, y0, y1;
          place_at (f, bb.LL, a, &lc->x, &y1);
          place_at (f, bb.UR, a, &x1, &y0);
          lc->y = y0;
          lc->width = x1 - lc->x;
          lc->height = y1 - y0;
        }
      copy_clusters (l, p, c, f, a);
    }
}

/* Where box v moves with the shear: its own centre, or the centre of its
 * outermost cluster, so a cluster's content moves rigidly with it and stays
 * inside. Local, along the rank axis. */
static double
box_anchor (const LayoutPlan *p, const BandGraph *bg, const Place *f, int entry)
{
  int top = -1;
  for (int a = g_array_index (p->s->nodes, PlSketchNode, entry).parent; a >= 0;
       a = g_array_index (p->s->nodes, PlSketchNode, a).parent)
    top = a;
  if (top >= 0 && bg->sub[top] != NULL)
    {
      boxf bb = GD_bb (bg->sub[top]);
      return local_main (f, (pointf) { (bb.LL.x + bb.UR.x) / 2, (bb.LL.y + bb.UR.y) / 2 });
    }
  return local_main (f, ND_coord (bg->node[p->box[entry]]));
}

/* The band's drift: the least-squares slope of its spine's cross position
 * along the rank axis. dot lets every side branch that merges back pull the
 * rest of a deep model a little sideways; shearing the band by the slope
 * (beziers stay exact under an affine map, and points of one rank move
 * together, so nothing new overlaps) puts the spine back upright. */
static double
band_shear (const BandGraph *bg, const LayoutPlan *p, bool lr)
{
  double sm = 0, sc = 0, smm = 0, smc = 0;
  int n = 0;
  for (int v = 0; v < p->n_boxes; v++)
    if (bg->node[v] != NULL && p->spine[v])
      {
        pointf c = ND_coord (bg->node[v]);
        double m = lr ? c.x : -c.y, x = lr ? -c.y : c.x;
        sm += m;
        sc += x;
        smm += m * m;
        smc += m * x;
        n++;
      }
  if (n < 3)
    return 0;
  double var = smm - sm * sm / n;
  if (var < 1e-6)
    return 0;
  /* A cluster moves rigidly (box_anchor) while the boxes beside it shear:
   * keep that slip within two points, well inside dot's cluster margin. */
  double limit = 2.0;
  for (guint i = 0; i < p->s->nodes->len; i++)
    if (bg->sub[i] != NULL && g_array_index (p->s->nodes, PlSketchNode, i).parent < 0)
      {
        boxf bb = GD_bb (bg->sub[i]);
        double half = (lr ? bb.UR.x - bb.LL.x : bb.UR.y - bb.LL.y) / 2;
        limit = MIN (limit, 2.0 / MAX (half, 1.0));
      }
  return CLAMP ((smc - sm * sc / n) / var, -limit, limit);
}

/* Where the band goes: its proxies under their sources across the ranks,
 * its first rank right after the previous band. *end is the previous band's
 * far edge along the rank axis, and becomes this band's. */
static void
band_offset (const BandGraph *bg, const LayoutPlan *p, PlGraphLayout *l, bool lr, double *end,
             double *cross_centre, Place *f)
{
  boxf bb = GD_bb (bg->g);
  *f = (Place) { bb.LL.x, bb.UR.y, 0, 0, band_shear (bg, p, lr), lr };
  double sum = 0;
  int n = 0;
  for (int v = 0; v < p->n_boxes; v++)
    if (bg->proxy[v] != NULL)
      {
        double x, y;
        place (f, ND_coord (bg->proxy[v]), &x, &y);
        sum += lr ? l->nodes[v].y - y : l->nodes[v].x - x;
        n++;
      }
  double extent_main = lr ? bb.UR.x - bb.LL.x : bb.UR.y - bb.LL.y;
  double extent_cross = lr ? bb.UR.y - bb.LL.y : bb.UR.x - bb.LL.x;
  double d_cross = n > 0 ? sum / n : *cross_centre - extent_cross / 2;
  double d_main = *end + (n > 0 || bg->band == 0 ? 0 : BAND_GAP);
  f->dx = lr ? d_main : d_cross;
  f->dy = lr ? d_cross : d_main;
  *end = d_main + extent_main;
  if (bg->band == 0)
    *cross_centre = extent_cross / 2;
}

/* Each cluster's key, title and parent: once, not per band (every band
 * walks every sketch node, and would copy them again). */
static void
name_clusters (PlGraphLayout *l, const LayoutPlan *p)
{
  for (guint i = 0; i < p->s->nodes->len; i++)
    {
      const PlSketchNode *sn = &g_array_index (p->s->nodes, PlSketchNode, i);
      if (p->cluster[i] < 0)
        continue;
      PlLayoutCluster *c = &l->clusters[p->cluster[i]];
      c->key = g_strdup (sn->key);
      c->title = g_strdup (sn->title);
      c->parent = sn->parent >= 0 ? p->cluster[sn->parent] : -1;
    }
}

static void
copy_band (PlGraphLayout *l, const LayoutPlan *p, const BandGraph *bg, const Place *f, bool lr)
{
  g_autofree double *anchor = g_new0 (double, MAX (p->n_boxes, 1));
  for (guint i = 0; i < p->s->nodes->len; i++)
    {
      const PlSketchNode *sn = &g_array_index (p->s->nodes, PlSketchNode, i);
      int v = p->box[i];
      if (v < 0 || bg->node[v] == NULL)
        continue;
      PlLayoutNode *ln = &l->nodes[v];
      ln->key = g_strdup (sn->key);
      ln->kind = sn->kind;
      ln->id = sn->id;
      anchor[v] = box_anchor (p, bg, f, (int) i);
      place_at (f, ND_coord (bg->node[v]), anchor[v], &ln->x, &ln->y);
      ln->width = ND_width (bg->node[v]) * 72.0;
      ln->height = ND_height (bg->node[v]) * 72.0;
      ln->title = g_strdup (sn->title);
      ln->subtitle = g_strdup (sn->subtitle);
      ln->detail = g_strdup (sn->detail);
      ln->data_layout = sn->data_layout;
      ln->transform = sn->transform;
      ln->category = sn->category;
      ln->cluster = sn->parent >= 0 ? p->cluster[sn->parent] : -1;
      g_hash_table_insert (l->index, ln->key, GINT_TO_POINTER (v + 1));
    }
  for (guint i = 0; i < p->edges->len; i++)
    {
      if (bg->edge[i] == NULL)
        continue;
      const PlSketchEdge *e = &g_array_index (p->edges, PlSketchEdge, i);
      double lead[2];
      bool proxied = p->band[e->from] != bg->band;
      if (proxied)
        {
          /* From the source's side that faces the band. */
          const PlLayoutNode *src = &l->nodes[e->from];
          lead[0] = src->x + (lr ? src->width / 2 : 0);
          lead[1] = src->y + (lr ? 0 : src->height / 2);
        }
      copy_edge (l, (int) i, e, bg->edge[i], f, proxied ? lead : NULL, anchor);
    }
  copy_clusters (l, p, bg->g, f, -1);
}

/* Moves everything so the drawing starts at (margin, margin). */
static void
normalize (PlGraphLayout *l, double margin)
{
  double x0 = G_MAXDOUBLE, y0 = G_MAXDOUBLE, x1 = -G_MAXDOUBLE, y1 = -G_MAXDOUBLE;
#define GROW(x, y) G_STMT_START { x0 = MIN (x0, x); y0 = MIN (y0, y); x1 = MAX (x1, x); y1 = MAX (y1, y); } G_STMT_END
  for (int i = 0; i < l->n_nodes; i++)
    {
      const PlLayoutNode *n = &l->nodes[i];
      GROW (n->x - n->width / 2, n->y - n->height / 2);
      GROW (n->x + n->width / 2, n->y + n->height / 2);
    }
  for (int i = 0; i < l->n_clusters; i++)
    {
      const PlLayoutCluster *c = &l->clusters[i];
      GROW (c->x, c->y);
      GROW (c->x + c->width, c->y + c->height);
    }
  for (int i = 0; i < l->n_edges; i++)
    for (int k = 0; k < l->edges[i].n_points; k++)
      GROW (l->edges[i].points[2 * k], l->edges[i].points[2 * k + 1]);
#undef GROW
  double dx = margin - x0, dy = margin - y0;
  for (int i = 0; i < l->n_nodes; i++)
    {
      l->nodes[i].x += dx;
      l->nodes[i].y += dy;
    }
  for (int i = 0; i < l->n_clusters; i++)
    {
      l->clusters[i].x += dx;
      l->clusters[i].y += dy;
    }
  for (int i = 0; i < l->n_edges; i++)
    {
      PlLayoutEdge *e = &l->edges[i];
      for (int k = 0; k < e->n_points; k++)
        {
          e->points[2 * k] += dx;
          e->points[2 * k + 1] += dy;
        }
      e->arrow_x += dx;
      e->arrow_y += dy;
      e->label_x += dx;
      e->label_y += dy;
    }
  l->width = x1 - x0 + 2 * margin;
  l->height = y1 - y0 + 2 * margin;
}

static GVC_t *
gv_context_get (void)
{
  if (gv_context == NULL)
    {
      agseterr (AGERR);  /* warnings stay quiet; errors are reported */
      gv_context = gvContext ();
    }
  return gv_context;
}

/* Lays out every band in order; false with error on failure or cancel. */
static bool
layout_bands (PlGraphLayout *l, const LayoutPlan *p, const PlLayoutOptions *o,
              GCancellable *cancellable, GError **error)
{
  bool lr = o->left_to_right;
  double end = 0, cross_centre = 0;
  int done = 0;
  BandGraph bg = { 0 };
  bg.node = g_new0 (Agnode_t *, p->n_boxes);
  bg.proxy = g_new0 (Agnode_t *, p->n_boxes);
  bg.edge = g_new0 (Agedge_t *, MAX (p->edges->len, 1));
  bg.sub = g_new0 (Agraph_t *, p->s->nodes->len);
  bool ok = true;
  for (int b = 0; ok && b < p->n_bands; b++)
    {
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        {
          ok = false;
          break;
        }
      bg.band = b;
      memset (bg.node, 0, sizeof (Agnode_t *) * p->n_boxes);
      memset (bg.proxy, 0, sizeof (Agnode_t *) * p->n_boxes);
      memset (bg.edge, 0, sizeof (Agedge_t *) * MAX (p->edges->len, 1));
      memset (bg.sub, 0, sizeof (Agraph_t *) * p->s->nodes->len);

      g_mutex_lock (&gv_lock);
      GVC_t *gvc = gv_context_get ();
      build_band (&bg, p, o);
      if (gvLayout (gvc, bg.g, "dot") != 0)
        {
          const char *msg = aglasterr ();
          g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "Graphviz dot layout failed: %s",
                       msg != NULL && msg[0] != '\0' ? msg : "no message");
          ok = false;
        }
      else
        {
          Place f;
          band_offset (&bg, p, l, lr, &end, &cross_centre, &f);
          copy_band (l, p, &bg, &f, lr);
          gvFreeLayout (gvc, bg.g);
        }
      agclose (bg.g);
      g_mutex_unlock (&gv_lock);

      for (int v = 0; v < p->n_boxes; v++)
        done += bg.node[v] != NULL;
      if (ok && o->progress != NULL)
        o->progress ((double) done / p->n_boxes, o->progress_data);
    }
  g_free (bg.node);
  g_free (bg.proxy);
  g_free (bg.edge);
  g_free (bg.sub);
  return ok;
}

PlGraphLayout *
pl_graph_layout_compute_sketch (PlGraphSketch *s, const PlLayoutOptions *options,
                                GCancellable *cancellable, GError **error)
{
  g_return_val_if_fail (s != NULL, NULL);
  PlLayoutOptions defaults;
  if (options == NULL)
    {
      pl_layout_options_init (&defaults);
      options = &defaults;
    }
  if (g_cancellable_set_error_if_cancelled (cancellable, error))
    return NULL;

  gint64 t0 = g_get_monotonic_time ();
  PlGraphLayout *l = g_new0 (PlGraphLayout, 1);
  l->ref_count = 1;
  l->index = g_hash_table_new (g_str_hash, g_str_equal);  /* keys owned by nodes */
  l->show_constants = options->show_constants;
  l->n_sketch_nodes = (int) s->nodes->len;
  l->collapsed = pl_graph_sketch_collapsed (s, options, &l->simplified);

  LayoutPlan p;
  plan_init (&p, s, l->collapsed);
  p.simplified = l->simplified;
  p.rank = box_ranks (&p);
  find_spine (&p);
  assign_bands (&p, options->band_boxes > 0 ? options->band_boxes : BAND_BOXES);
  l->n_bands = p.n_bands;
  l->n_nodes = p.n_boxes;
  l->n_edges = (int) p.edges->len;
  l->n_clusters = p.n_clusters;
  l->nodes = g_new0 (PlLayoutNode, MAX (l->n_nodes, 1));
  l->edges = g_new0 (PlLayoutEdge, MAX (l->n_edges, 1));
  l->clusters = g_new0 (PlLayoutCluster, MAX (l->n_clusters, 1));
  name_clusters (l, &p);

  bool ok = l->n_nodes == 0 || layout_bands (l, &p, options, cancellable, error);
  plan_clear (&p);
  if (!ok)
    {
      layout_free (l);
      return NULL;
    }
  if (l->n_nodes > 0)
    normalize (l, 8.0);
  l->seconds = (g_get_monotonic_time () - t0) / 1e6;
  return l;
}

PlGraphLayout *
pl_graph_layout_compute (const PlGraph *const *graphs, int n_graphs, const PlLayoutOptions *options,
                         GCancellable *cancellable, GError **error)
{
  g_return_val_if_fail (graphs != NULL && n_graphs > 0, NULL);
  bool show_constants = options != NULL ? options->show_constants : true;
  g_autoptr (PlGraphSketch) s = pl_graph_sketch_new (graphs, n_graphs, show_constants);
  return pl_graph_layout_compute_sketch (s, options, cancellable, error);
}

PlGraphLayout *
pl_graph_layout_ref (PlGraphLayout *l)
{
  g_return_val_if_fail (l != NULL, NULL);
  g_atomic_int_inc (&l->ref_count);
  return l;
}

void
pl_graph_layout_unref (PlGraphLayout *l)
{
  if (l != NULL && g_atomic_int_dec_and_test (&l->ref_count))
    layout_free (l);
}

int
pl_graph_layout_find (const PlGraphLayout *l, const char *key)
{
  g_return_val_if_fail (l != NULL && key != NULL, -1);
  return GPOINTER_TO_INT (g_hash_table_lookup (l->index, key)) - 1;
}
