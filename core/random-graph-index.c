/* random-graph-index.c — the random graph generator's index ops: Gather,
 * GatherElements, GatherND, CumSum, TopK (its values), ScatterND,
 * ScatterElements and two-operand Einsum.
 *
 * Indices are constants in range (some written negative, as exporters
 * do). A scatter with reduction "none" never writes a place twice, so its
 * result does not hang on the order of the writes and its gradient is a
 * gather; the other scatters add. Every output keeps a bound on |element|
 * like the other ops (random-graph.c).
 */
#define G_LOG_DOMAIN "passlab"

#include "random-graph-private.h"

#include <string.h>

/* An index into a dim of n, written negative with some chance. */
static int64_t
index_in (Gen *G, int64_t n, int64_t i)
{
  return pl_rg_chance (G, 0.2) ? i - n : i;
}

/* The first m of a random permutation of 0..n-1 (m <= n). */
static void
distinct (Gen *G, int64_t n, int64_t m, int64_t *out)
{
  g_autofree int64_t *p = g_new (int64_t, n);
  pl_rg_random_perm (G, p, (int) n);
  memcpy (out, p, sizeof (int64_t) * m);
}

/* An f32 operand of dims d: a pool value of that shape, or a new constant. */
static bool
same_dims (Gen *G, const PlValue *v, gconstpointer data)
{
  (void) G;
  const Dims *d = data, vd = pl_rg_dims_of (v);
  return vd.rank == d->rank && memcmp (vd.d, d->d, sizeof (int64_t) * d->rank) == 0;
}

static Entry
operand_of (Gen *G, const Dims *d)
{
  Entry e = pl_rg_find_partner (G, same_dims, d);
  return e.v ? e : (Entry) { pl_rg_const_f32 (G, d, -1, 1), 1.0 };
}

static PlValue *
gather (Gen *G, Entry x, const Dims *d)
{
  int a = pl_rg_rnd (G, 0, d->rank - 1);
  Dims q = { pl_rg_rnd (G, 1, 2) };
  for (int i = 0; i < q.rank; i++)
    q.d[i] = pl_rg_rnd (G, 1, 3);
  int64_t v[16];
  for (int64_t i = 0; i < pl_rg_dims_numel (&q); i++)
    v[i] = index_in (G, d->d[a], pl_rg_rnd (G, 0, (int) d->d[a] - 1));
  PlNode *n = pl_rg_node_begin (G, "Gather", 2, (PlValue *[]) { x.v, pl_rg_const_i64 (G, &q, v) });
  if (n)
    pl_node_set_attr_int (n, "axis", pl_rg_chance (G, 0.3) ? a - d->rank : a);
  return pl_rg_node_end (G, n, x.bound);
}

static PlValue *
gather_elements (Gen *G, Entry x, const Dims *d)
{
  int a = pl_rg_rnd (G, 0, d->rank - 1);
  Dims q = *d;
  q.d[a] = pl_rg_rnd (G, 1, 4);
  if (pl_rg_dims_numel (&q) > G->o.max_numel)
    return NULL;
  g_autofree int64_t *v = g_new (int64_t, pl_rg_dims_numel (&q));
  for (int64_t i = 0; i < pl_rg_dims_numel (&q); i++)
    v[i] = index_in (G, d->d[a], pl_rg_rnd (G, 0, (int) d->d[a] - 1));
  PlNode *n = pl_rg_node_begin (G, "GatherElements", 2, (PlValue *[]) { x.v, pl_rg_const_i64 (G, &q, v) });
  if (n)
    pl_node_set_attr_int (n, "axis", a);
  return pl_rg_node_end (G, n, x.bound);
}

/* 1 to 4 distinct index tuples over the first k dims of d (k random,
 * *k_out), as a [m, k] constant (*m_out = m). */
static PlValue *
nd_indices (Gen *G, const Dims *d, int *k_out, int64_t *m_out)
{
  const int k = pl_rg_rnd (G, 1, d->rank);
  Dims lead = { k };
  memcpy (lead.d, d->d, sizeof (int64_t) * k);
  const int64_t count = pl_rg_dims_numel (&lead), m = pl_rg_rnd (G, 1, (int) MIN (4, count));
  g_autofree int64_t *flat = g_new (int64_t, m), *v = g_new (int64_t, m * k);
  distinct (G, count, m, flat);
  for (int64_t i = 0; i < m; i++)
    for (int j = k - 1; j >= 0; j--)
      {
        v[i * k + j] = index_in (G, d->d[j], flat[i] % d->d[j]);
        flat[i] /= d->d[j];
      }
  Dims q = { 2, { m, k } };
  *k_out = k;
  *m_out = m;
  return pl_rg_const_i64 (G, &q, v);
}

static PlValue *
gather_nd (Gen *G, Entry x, const Dims *d)
{
  int k;
  int64_t m;
  PlValue *idx = nd_indices (G, d, &k, &m);
  return pl_rg_node_end (G, pl_rg_node_begin (G, "GatherND", 2, (PlValue *[]) { x.v, idx }), x.bound);
}

static PlValue *
cumsum (Gen *G, Entry x, const Dims *d)
{
  int a = pl_rg_rnd (G, 0, d->rank - 1);
  const Dims scalar = { 0 };
  const int64_t axis = pl_rg_chance (G, 0.3) ? a - d->rank : a;
  PlNode *n = pl_rg_node_begin (G, "CumSum", 2, (PlValue *[]) { x.v, pl_rg_const_i64 (G, &scalar, &axis) });
  if (n)
    {
      if (pl_rg_chance (G, 0.4))
        pl_node_set_attr_int (n, "exclusive", 1);
      if (pl_rg_chance (G, 0.4))
        pl_node_set_attr_int (n, "reverse", 1);
    }
  return pl_rg_node_end (G, n, x.bound * (double) d->d[a]);
}

/* TopK's values (its indices are read by no one). */
static PlValue *
topk (Gen *G, Entry x, const Dims *d)
{
  int a = pl_rg_rnd (G, 0, d->rank - 1);
  const int64_t k = pl_rg_rnd (G, 1, (int) d->d[a]);
  const Dims one = { 1, { 1 } };
  g_autofree char *name = g_strdup_printf ("topk_%u", ++G->counter);
  g_autofree char *idx = g_strdup_printf ("%s_indices", name);
  PlNode *n = pl_graph_add_node (G->g, "TopK", NULL, name, 2, (PlValue *[]) { x.v, pl_rg_const_i64 (G, &one, &k) },
                                 2, (const char *const[]) { name, idx }, NULL);
  if (n)
    {
      pl_node_set_attr_int (n, "axis", pl_rg_chance (G, 0.5) ? a - d->rank : a);
      if (pl_rg_chance (G, 0.4))
        pl_node_set_attr_int (n, "largest", 0);
    }
  return pl_rg_node_end (G, n, x.bound);
}

/* reduction "none" or "add", and the bound of the result. */
static const char *
scatter_reduction (Gen *G, double xb, double ub, double *bound)
{
  bool add = pl_rg_chance (G, 0.4);
  *bound = add ? xb + ub : MAX (xb, ub);
  return add ? "add" : "none";
}

static PlValue *
scatter_nd (Gen *G, Entry x, const Dims *d)
{
  int k;
  int64_t m;
  PlValue *idx = nd_indices (G, d, &k, &m);
  Dims ud = { 1 + d->rank - k, { m } };
  memcpy (ud.d + 1, d->d + k, sizeof (int64_t) * (d->rank - k));
  Entry u = operand_of (G, &ud);
  double bound;
  const char *reduction = scatter_reduction (G, x.bound, u.bound, &bound);
  PlNode *n = pl_rg_node_begin (G, "ScatterND", 3, (PlValue *[]) { x.v, idx, u.v });
  if (n)
    pl_node_set_attr_string (n, "reduction", reduction);
  return pl_rg_node_end (G, n, bound);
}

static PlValue *
scatter_elements (Gen *G, Entry x, const Dims *d)
{
  int a = pl_rg_rnd (G, 0, d->rank - 1);
  Dims q = *d;
  q.d[a] = pl_rg_rnd (G, 1, (int) d->d[a]);
  /* line by line along the axis, distinct places */
  const int64_t lines = pl_rg_dims_numel (&q) / q.d[a];
  g_autofree int64_t *v = g_new (int64_t, pl_rg_dims_numel (&q)), *places = g_new (int64_t, q.d[a]);
  int64_t stride = 1;
  for (int i = a + 1; i < q.rank; i++)
    stride *= q.d[i];
  for (int64_t l = 0; l < lines; l++)
    {
      distinct (G, d->d[a], q.d[a], places);
      const int64_t outer = l / stride, in = l % stride;
      for (int64_t j = 0; j < q.d[a]; j++)
        v[(outer * q.d[a] + j) * stride + in] = index_in (G, d->d[a], places[j]);
    }
  Entry u = operand_of (G, &q);
  double bound;
  const char *reduction = scatter_reduction (G, x.bound, u.bound, &bound);
  PlNode *n = pl_rg_node_begin (G, "ScatterElements", 3, (PlValue *[]) { x.v, pl_rg_const_i64 (G, &q, v), u.v });
  if (n)
    {
      pl_node_set_attr_int (n, "axis", a);
      pl_node_set_attr_string (n, "reduction", reduction);
    }
  return pl_rg_node_end (G, n, bound);
}

/* x (rank <= 3, letters a b c) times a new constant over some of x's
 * letters (in a random order) and a new one, z; each of x's letters is
 * kept in the output or summed over (a contraction where the constant has
 * it too), z is kept. */
static PlValue *
einsum (Gen *G, Entry x, const Dims *d)
{
  if (d->rank > 3)
    return NULL;
  char xl[4] = { 0 }, yl[5] = { 0 }, ol[5] = { 0 };
  Dims yd = { 0 };
  int no = 0;
  double bound = x.bound;   /* the constant's elements are at most 1 */
  int64_t order[3];
  pl_rg_random_perm (G, order, d->rank);
  for (int i = 0; i < d->rank; i++)
    xl[i] = (char) ('a' + i);
  for (int i = 0; i < d->rank; i++)
    if (pl_rg_chance (G, 0.6))
      yl[yd.rank] = xl[order[i]], yd.d[yd.rank++] = d->d[order[i]];
  yl[yd.rank] = 'z', yd.d[yd.rank++] = pl_rg_rnd (G, 1, 4);
  for (int i = 0; i < d->rank; i++)
    if (pl_rg_chance (G, 0.6))
      ol[no++] = xl[i];
    else
      bound *= (double) d->d[i];
  ol[no] = 'z';
  g_autofree char *eq = g_strdup_printf ("%s,%s->%s", xl, yl, ol);
  PlNode *n = pl_rg_node_begin (G, "Einsum", 2, (PlValue *[]) { x.v, pl_rg_const_f32 (G, &yd, -1, 1) });
  if (n)
    pl_node_set_attr_string (n, "equation", eq);
  return pl_rg_node_end (G, n, bound);
}

bool
pl_rg_gen_index (Gen *G)
{
  Entry x = pl_rg_pick (G);
  Dims d = pl_rg_dims_of (x.v);
  if (d.rank < 1)
    return false;
  switch (pl_rg_rnd (G, 0, 7))
    {
    case 0: return gather (G, x, &d) != NULL;
    case 1: return gather_elements (G, x, &d) != NULL;
    case 2: return gather_nd (G, x, &d) != NULL;
    case 3: return cumsum (G, x, &d) != NULL;
    case 4: return topk (G, x, &d) != NULL;
    case 5: return scatter_nd (G, x, &d) != NULL;
    case 6: return scatter_elements (G, x, &d) != NULL;
    default: return einsum (G, x, &d) != NULL;
    }
}
