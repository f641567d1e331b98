/* random-graph-build.c — the random graph generator's building blocks:
 * dims arithmetic, constants, adding a node (and taking it out again when
 * it does not fit), and drawing operands from the pool with their bounds
 * kept in check. The op and idiom generators (random-graph-ops.c,
 * random-graph-idioms.c) build everything from these; the design is
 * explained in random-graph.c.
 */
#define G_LOG_DOMAIN "passlab"

#include "random-graph-private.h"

#include <math.h>
#include <string.h>

/* --- dims ------------------------------------------------------------------------ */

Dims
pl_rg_dims_of (const PlValue *v)
{
  Dims d = { .rank = v->shape.rank };
  for (int i = 0; i < d.rank; i++)
    d.d[i] = v->shape.dims[i].size;
  return d;
}

int64_t
pl_rg_dims_numel (const Dims *d)
{
  return pl_dims_product (d->rank, d->d);
}

bool
pl_rg_dims_fit (Gen *G, const Dims *d)
{
  if (d->rank < 0 || d->rank > G->o.max_rank)
    return false;
  for (int i = 0; i < d->rank; i++)
    if (d->d[i] < 1)
      return false;
  return pl_rg_dims_numel (d) <= G->o.max_numel;
}

/* A random permutation of 0..n-1. */
void
pl_rg_random_perm (Gen *G, int64_t *v, int n)
{
  for (int i = 0; i < n; i++)
    v[i] = i;
  for (int i = n - 1; i > 0; i--)
    {
      int j = pl_rg_rnd (G, 0, i);
      int64_t t = v[i];
      v[i] = v[j];
      v[j] = t;
    }
}

void
pl_rg_dims_insert (Dims *d, int i, int64_t size)
{
  memmove (d->d + i + 1, d->d + i, sizeof (int64_t) * (d->rank - i));
  d->d[i] = size;
  d->rank++;
}

/* Dims i and i + 1 become one. */
void
pl_rg_dims_merge (Dims *d, int i)
{
  d->d[i] *= d->d[i + 1];
  memmove (d->d + i + 1, d->d + i + 2, sizeof (int64_t) * (d->rank - i - 2));
  d->rank--;
}

/* A random nonempty subset of 0..rank-1 in increasing order; returns its size. */
int
pl_rg_random_axes (Gen *G, int rank, int64_t *axes)
{
  int n = 0;
  while (n == 0)
    for (int i = 0; i < rank; i++)
      if (pl_rg_chance (G, 0.4))
        axes[n++] = i;
  return n;
}

/* Writes some axes in their negative form, as exporters do. */
void
pl_rg_maybe_negative (Gen *G, int64_t *axes, int n, int rank)
{
  for (int i = 0; i < n; i++)
    if (pl_rg_chance (G, 0.3))
      axes[i] -= rank;
}

/* A divisor f with 1 < f < n, or 0. */
int64_t
pl_rg_some_divisor (Gen *G, int64_t n)
{
  int64_t divs[64];
  int k = 0;
  for (int64_t f = 2; f < n && k < 64; f++)
    if (n % f == 0)
      divs[k++] = f;
  return k ? divs[pl_rg_rnd (G, 0, k - 1)] : 0;
}

/* Splits dim i of d into (f, d[i] / f); false if it has no proper divisor or no room. */
bool
pl_rg_split_dim (Gen *G, Dims *d, int i)
{
  int64_t f = pl_rg_some_divisor (G, d->d[i]);
  if (!f || d->rank >= G->o.max_rank)
    return false;
  pl_rg_dims_insert (d, i + 1, d->d[i] / f);
  d->d[i] = f;
  return true;
}

/* --- constants ------------------------------------------------------------------- */

static char *
fresh_name (Gen *G, const char *base)
{
  return g_strdup_printf ("%s_%u", base, ++G->counter);
}

/* A random f32 constant; values rounded to two decimals so printed graphs stay readable. */
PlValue *
pl_rg_const_f32 (Gen *G, const Dims *d, double lo, double hi)
{
  g_autoptr (PlTensor) t = pl_tensor_new (PL_DTYPE_F32, d->rank, d->d, NULL);
  for (int64_t i = 0; i < t->numel; i++)
    pl_tensor_set_f64 (t, i, round ((lo + (hi - lo) * g_rand_double (G->rand)) * 100) / 100);
  g_autofree char *name = fresh_name (G, "c");
  return pl_graph_add_constant (G->g, name, t, NULL);
}

PlValue *
pl_rg_const_scalar (Gen *G, double v)
{
  g_autoptr (PlTensor) t = pl_tensor_new_scalar (PL_DTYPE_F32, v);
  g_autofree char *name = fresh_name (G, "k");
  return pl_graph_add_constant (G->g, name, t, NULL);
}

PlValue *
pl_rg_const_ints (Gen *G, const int64_t *v, int n)
{
  const Dims d = { 1, { n } };
  return pl_rg_const_i64 (G, &d, v);
}

PlValue *
pl_rg_const_i64 (Gen *G, const Dims *d, const int64_t *v)
{
  g_autoptr (PlTensor) t = pl_tensor_new (PL_DTYPE_I64, d->rank, d->d, NULL);
  if (t->numel)
    memcpy (t->data, v, sizeof (int64_t) * t->numel);
  g_autofree char *name = fresh_name (G, "s");
  return pl_graph_add_constant (G->g, name, t, NULL);
}

/* --- adding nodes ----------------------------------------------------------------- */

/* A node named after its op; set attributes on it, then call pl_rg_node_end. */
PlNode *
pl_rg_node_begin (Gen *G, const char *op_type, int n_inputs, PlValue *const *inputs)
{
  g_autofree char *lower = g_ascii_strdown (op_type, -1);
  g_autofree char *name = fresh_name (G, lower);
  return pl_graph_add_node (G->g, op_type, NULL, name, n_inputs, inputs, 1,
                            (const char *const[]) { name }, NULL);
}

/* Takes out a node that did not work, and constants only it read. */
static void
discard (Gen *G, PlNode *node)
{
  int n = node->n_inputs;
  g_autofree PlValue **inputs = g_memdup2 (node->inputs, sizeof (PlValue *) * MAX (n, 1));
  pl_graph_remove_node (G->g, node);
  for (int i = 0; i < n; i++)
    {
      bool seen = false;
      for (int j = 0; j < i; j++)
        seen |= inputs[j] == inputs[i];
      if (!seen && inputs[i] && inputs[i]->constant && inputs[i]->n_uses == 0)
        pl_graph_remove_value (G->g, inputs[i]);
    }
}

/* Infers node; keeps it (adding its output to the pool with bound) when its
 * output is static, nonempty and small enough. */
PlValue *
pl_rg_node_end (Gen *G, PlNode *node, double bound)
{
  if (!node)
    return NULL;
  g_autoptr (GError) error = NULL;
  if (!pl_node_infer (node, &error))
    {
      g_warning ("random graph (seed %u): %s", G->o.seed, error->message);
      discard (G, node);
      return NULL;
    }
  PlValue *y = node->outputs[0];
  int64_t numel = pl_shape_numel (&y->shape);
  if (!pl_shape_is_static (&y->shape) || y->shape.rank > G->o.max_rank || numel < 1 || numel > G->o.max_numel)
    {
      discard (G, node);
      return NULL;
    }
  G->n_ops++;
  if (y->dtype == PL_DTYPE_F32)   /* the pool holds f32 values only (not Greater's bools) */
    {
      Entry e = { y, bound };
      g_array_append_val (G->pool, e);
    }
  return y;
}

/* A one-input node with no attributes. */
PlValue *
pl_rg_op1 (Gen *G, const char *op_type, PlValue *x, double bound)
{
  return pl_rg_node_end (G, pl_rg_node_begin (G, op_type, 1, &x), bound);
}

PlValue *
pl_rg_op2 (Gen *G, const char *op_type, PlValue *a, PlValue *b, double bound)
{
  return pl_rg_node_end (G, pl_rg_node_begin (G, op_type, 2, (PlValue *[]) { a, b }), bound);
}

/* Reshape(x, dims) with the target written as given (it may hold -1 and 0). */
PlValue *
pl_rg_reshape_to (Gen *G, PlValue *x, const int64_t *target, int rank, double bound)
{
  return pl_rg_op2 (G, "Reshape", x, pl_rg_const_ints (G, target, rank), bound);
}

PlValue *
pl_rg_reduce_op (Gen *G, const char *op_type, PlValue *x, const int64_t *axes, int n_axes, int keepdims,
                 double bound)
{
  /* ReduceSum takes its axes as an input from opset 13, the others as an attribute until 18. */
  bool axes_input = strcmp (op_type, "ReduceSum") == 0;
  PlNode *n = axes_input && n_axes > 0
            ? pl_rg_node_begin (G, op_type, 2, (PlValue *[]) { x, pl_rg_const_ints (G, axes, n_axes) })
            : pl_rg_node_begin (G, op_type, 1, &x);
  if (n && !axes_input && n_axes > 0)
    pl_node_set_attr_ints (n, "axes", axes, n_axes);
  if (n && keepdims >= 0)
    pl_node_set_attr_int (n, "keepdims", keepdims);
  return pl_rg_node_end (G, n, bound);
}

/* |x| + 1: a guarded operand for Log, Div and Reciprocal. */
PlValue *
pl_rg_abs_plus_one (Gen *G, PlValue *x, double bound)
{
  PlValue *a = pl_rg_op1 (G, "Abs", x, bound);
  return a ? pl_rg_op2 (G, "Add", a, pl_rg_const_scalar (G, 1.0), bound + 1) : NULL;
}

/* Transpose with perm (rank entries), or without the attribute (reversed dims) when NULL. */
PlValue *
pl_rg_transpose (Gen *G, PlValue *x, const int64_t *perm, double bound)
{
  PlNode *n = pl_rg_node_begin (G, "Transpose", 1, &x);
  if (n && perm)
    pl_node_set_attr_ints (n, "perm", perm, x->shape.rank);
  return pl_rg_node_end (G, n, bound);
}

/* A one-input node with one integer attribute. */
PlValue *
pl_rg_op1_int (Gen *G, const char *op_type, PlValue *x, const char *attr, int64_t v, double bound)
{
  PlNode *n = pl_rg_node_begin (G, op_type, 1, &x);
  if (n)
    pl_node_set_attr_int (n, attr, v);
  return pl_rg_node_end (G, n, bound);
}

/* --- operands ---------------------------------------------------------------------- */

/* Brings a value with a large bound back to about [-1, 1]. */
static Entry
squash (Gen *G, Entry e)
{
  PlValue *y;
  double bound;
  if (pl_rg_chance (G, 0.5))
    y = pl_rg_op1 (G, "Tanh", e.v, bound = 1.0);
  else
    {
      double s = 1.0 / ceil (e.bound);
      y = pl_rg_op2 (G, "Mul", e.v, pl_rg_const_scalar (G, s), bound = e.bound * s);
    }
  return y ? (Entry) { y, bound } : e;
}

/* An operand: with some chance a value nobody reads yet, else a recent one. */
Entry
pl_rg_pick (Gen *G)
{
  GArray *pool = G->pool;
  int idx = -1;
  if (pl_rg_chance (G, 0.6))
    {
      int unused[64], n = 0;
      for (int i = (int) pool->len - 1; i >= 0 && n < 64; i--)
        if (g_array_index (pool, Entry, i).v->n_uses == 0)
          unused[n++] = i;
      if (n > 0)
        idx = unused[pl_rg_rnd (G, 0, n - 1)];
    }
  if (idx < 0)
    {
      double u = g_rand_double (G->rand);
      idx = (int) pool->len - 1 - (int) (pool->len * u * u);
    }
  Entry e = g_array_index (pool, Entry, CLAMP (idx, 0, (int) pool->len - 1));
  return e.bound > BOUND_LIMIT ? squash (G, e) : e;
}

/* A pool value (squashed if needed) for which ok(candidate, data) holds, or
 * {NULL} after a few tries. */
Entry
pl_rg_find_partner (Gen *G, bool (*ok) (Gen *G, const PlValue *v, gconstpointer data), gconstpointer data)
{
  for (int t = 0; t < 12; t++)
    {
      Entry e = g_array_index (G->pool, Entry, pl_rg_rnd (G, 0, (int) G->pool->len - 1));
      if (ok (G, e.v, data))
        return e.bound > BOUND_LIMIT ? squash (G, e) : e;
    }
  return (Entry) { NULL, 0 };
}

static bool
broadcasts_with (Gen *G, const PlValue *v, gconstpointer data)
{
  const PlShape *a = data;
  PlShape out;
  if (!pl_shape_broadcast (a, &v->shape, &out, NULL))
    return false;
  int64_t n = pl_shape_numel (&out);
  return out.rank <= G->o.max_rank && n >= 1 && n <= G->o.max_numel;
}

/* A shape that broadcasts with d: leading dims dropped, some dims 1, some
 * of d's 1s widened, sometimes a new leading dim or a scalar. */
static Dims
broadcast_partner_dims (Gen *G, const Dims *d)
{
  Dims p = { 0 };
  if (pl_rg_chance (G, 0.12))
    return p;
  int drop = d->rank > 0 && pl_rg_chance (G, 0.4) ? pl_rg_rnd (G, 1, d->rank) : 0;
  for (int i = drop; i < d->rank; i++)
    {
      int64_t s = d->d[i];
      if (s == 1 && pl_rg_chance (G, 0.3))
        s = pl_rg_rnd (G, 2, MAX (G->o.max_dim, 2));
      else if (pl_rg_chance (G, 0.35))
        s = 1;
      p.d[p.rank++] = s;
    }
  /* a new leading dim (only where no dim was dropped: it must align with nothing) */
  if (drop == 0 && p.rank < G->o.max_rank && pl_rg_chance (G, 0.15))
    pl_rg_dims_insert (&p, 0, pl_rg_rnd (G, 1, G->o.max_dim));
  return p;
}

/* An operand to combine with a value of shape a by broadcasting: another
 * pool value or a new constant. */
Entry
pl_rg_broadcast_partner (Gen *G, const PlShape *a)
{
  if (pl_rg_chance (G, 0.5))
    {
      Entry e = pl_rg_find_partner (G, broadcasts_with, a);
      if (e.v)
        return e;
    }
  /* Sometimes a constant that other nodes read too. */
  for (guint i = 0; i < G->g->values->len && pl_rg_chance (G, 0.2); i++)
    {
      PlValue *c = G->g->values->pdata[pl_rg_rnd (G, 0, (int) G->g->values->len - 1)];
      if (c->constant && c->dtype == PL_DTYPE_F32 && broadcasts_with (G, c, a))
        return (Entry) { c, 1.5 };
    }
  for (int t = 0; t < 8; t++)
    {
      Dims a_dims = { a->rank };
      for (int i = 0; i < a->rank; i++)
        a_dims.d[i] = a->dims[i].size;
      Dims p = broadcast_partner_dims (G, &a_dims);
      Dims out = a_dims.rank >= p.rank ? a_dims : p;
      for (int i = 0; i < MIN (a_dims.rank, p.rank); i++)
        out.d[out.rank - 1 - i] = MAX (a_dims.d[a_dims.rank - 1 - i], p.d[p.rank - 1 - i]);
      if (pl_rg_dims_fit (G, &out))
        return (Entry) { pl_rg_const_f32 (G, &p, -1, 1), 1.0 };
    }
  return (Entry) { pl_rg_const_f32 (G, &(Dims) { 0 }, -1, 1), 1.0 };
}
