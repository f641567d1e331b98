/* random-graph.c — random well-formed graphs for the fuzzer (the large
 * chain graphs for the benchmarks are in random-chain.c).
 *
 * pl_random_graph() grows a graph one op (or one multi-node idiom) at a
 * time. A pool holds every value an op may read (graph inputs and op
 * outputs); operands are drawn from it with a bias towards values nobody
 * reads yet, so the graph stays connected and ends in few sinks. Every node
 * is inferred as it is added; one whose output would be too large is taken
 * out again, and one that fails inference is a bug (of this generator or of
 * the op) and is reported with g_warning.
 *
 * Numerical tameness: each pool value carries a bound on |element| given
 * inputs in [-1, 1). A value whose bound exceeds BOUND_LIMIT is squashed
 * (Tanh, or a scale by a constant) before it is read again; Exp only sees
 * small values; Log, Sqrt, Div and Reciprocal only see guarded operands
 * (|x| + 1, x*x + 1); discontinuous ops (Round, Sign, comparisons feeding
 * arbitrary selects) are left out, so a rewrite that changes rounding cannot
 * flip an output.
 */
#define G_LOG_DOMAIN "passlab"

#include "random-graph.h"

#include <math.h>
#include <string.h>

#define BOUND_LIMIT 4.0

typedef struct {
  int     rank;
  int64_t d[PL_MAX_RANK];
} Dims;

typedef struct {
  PlValue *v;
  double   bound;   /* upper bound on |element| for inputs in [-1, 1) */
} Entry;

typedef struct {
  PlGraph             *g;
  GRand               *rand;
  PlRandomGraphOptions o;
  GArray              *pool;     /* Entry */
  int                  n_ops;    /* op nodes added */
  guint                counter;  /* makes names unique without searching */
} Gen;

/* --- small helpers -------------------------------------------------------------- */

static int
rnd (Gen *G, int lo, int hi)   /* inclusive */
{
  return hi <= lo ? lo : g_rand_int_range (G->rand, lo, hi + 1);
}

static bool
chance (Gen *G, double p)
{
  return g_rand_double (G->rand) < p;
}

static Dims
dims_of (const PlValue *v)
{
  Dims d = { .rank = v->shape.rank };
  for (int i = 0; i < d.rank; i++)
    d.d[i] = v->shape.dims[i].size;
  return d;
}

static int64_t
dims_numel (const Dims *d)
{
  int64_t n = 1;
  for (int i = 0; i < d->rank; i++)
    n *= d->d[i];
  return n;
}

static bool
dims_fit (Gen *G, const Dims *d)
{
  if (d->rank < 0 || d->rank > G->o.max_rank)
    return false;
  for (int i = 0; i < d->rank; i++)
    if (d->d[i] < 1)
      return false;
  return dims_numel (d) <= G->o.max_numel;
}

/* A random permutation of 0..n-1. */
static void
random_perm (Gen *G, int64_t *v, int n)
{
  for (int i = 0; i < n; i++)
    v[i] = i;
  for (int i = n - 1; i > 0; i--)
    {
      int j = rnd (G, 0, i);
      int64_t t = v[i];
      v[i] = v[j];
      v[j] = t;
    }
}

static void
dims_insert (Dims *d, int i, int64_t size)
{
  memmove (d->d + i + 1, d->d + i, sizeof (int64_t) * (d->rank - i));
  d->d[i] = size;
  d->rank++;
}

/* Dims i and i + 1 become one. */
static void
dims_merge (Dims *d, int i)
{
  d->d[i] *= d->d[i + 1];
  memmove (d->d + i + 1, d->d + i + 2, sizeof (int64_t) * (d->rank - i - 2));
  d->rank--;
}

/* A random nonempty subset of 0..rank-1 in increasing order; returns its size. */
static int
random_axes (Gen *G, int rank, int64_t *axes)
{
  int n = 0;
  while (n == 0)
    for (int i = 0; i < rank; i++)
      if (chance (G, 0.4))
        axes[n++] = i;
  return n;
}

/* Writes some axes in their negative form, as exporters do. */
static void
maybe_negative (Gen *G, int64_t *axes, int n, int rank)
{
  for (int i = 0; i < n; i++)
    if (chance (G, 0.3))
      axes[i] -= rank;
}

/* --- constants ------------------------------------------------------------------- */

static char *
fresh_name (Gen *G, const char *base)
{
  return g_strdup_printf ("%s_%u", base, ++G->counter);
}

/* A random f32 constant; values rounded to two decimals so printed graphs stay readable. */
static PlValue *
const_f32 (Gen *G, const Dims *d, double lo, double hi)
{
  g_autoptr (PlTensor) t = pl_tensor_new (PL_DTYPE_F32, d->rank, d->d, NULL);
  for (int64_t i = 0; i < t->numel; i++)
    pl_tensor_set_f64 (t, i, round ((lo + (hi - lo) * g_rand_double (G->rand)) * 100) / 100);
  g_autofree char *name = fresh_name (G, "c");
  return pl_graph_add_constant (G->g, name, t, NULL);
}

static PlValue *
const_scalar (Gen *G, double v)
{
  g_autoptr (PlTensor) t = pl_tensor_new_scalar (PL_DTYPE_F32, v);
  g_autofree char *name = fresh_name (G, "k");
  return pl_graph_add_constant (G->g, name, t, NULL);
}

static PlValue *
const_ints (Gen *G, const int64_t *v, int n)
{
  g_autoptr (PlTensor) t = pl_tensor_new (PL_DTYPE_I64, 1, (int64_t[]) { n }, NULL);
  for (int i = 0; i < n; i++)
    ((int64_t *) t->data)[i] = v[i];
  g_autofree char *name = fresh_name (G, "s");
  return pl_graph_add_constant (G->g, name, t, NULL);
}

/* --- adding nodes ----------------------------------------------------------------- */

/* A node named after its op; set attributes on it, then call node_end. */
static PlNode *
node_begin (Gen *G, const char *op_type, int n_inputs, PlValue *const *inputs)
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
static PlValue *
node_end (Gen *G, PlNode *node, double bound)
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
static PlValue *
op1 (Gen *G, const char *op_type, PlValue *x, double bound)
{
  return node_end (G, node_begin (G, op_type, 1, &x), bound);
}

static PlValue *
op2 (Gen *G, const char *op_type, PlValue *a, PlValue *b, double bound)
{
  return node_end (G, node_begin (G, op_type, 2, (PlValue *[]) { a, b }), bound);
}

/* Reshape(x, dims) with the target written as given (it may hold -1 and 0). */
static PlValue *
reshape_to (Gen *G, PlValue *x, const int64_t *target, int rank, double bound)
{
  return op2 (G, "Reshape", x, const_ints (G, target, rank), bound);
}

static PlValue *
reduce_op (Gen *G, const char *op_type, PlValue *x, const int64_t *axes, int n_axes, int keepdims,
           double bound)
{
  /* ReduceSum takes its axes as an input from opset 13, the others as an attribute until 18. */
  bool axes_input = strcmp (op_type, "ReduceSum") == 0;
  PlNode *n = axes_input && n_axes > 0
            ? node_begin (G, op_type, 2, (PlValue *[]) { x, const_ints (G, axes, n_axes) })
            : node_begin (G, op_type, 1, &x);
  if (n && !axes_input && n_axes > 0)
    pl_node_set_attr_ints (n, "axes", axes, n_axes);
  if (n && keepdims >= 0)
    pl_node_set_attr_int (n, "keepdims", keepdims);
  return node_end (G, n, bound);
}

/* |x| + 1: a guarded operand for Log, Div and Reciprocal. */
static PlValue *
abs_plus_one (Gen *G, PlValue *x, double bound)
{
  PlValue *a = op1 (G, "Abs", x, bound);
  return a ? op2 (G, "Add", a, const_scalar (G, 1.0), bound + 1) : NULL;
}

/* Transpose with perm (rank entries), or without the attribute (reversed dims) when NULL. */
static PlValue *
transpose (Gen *G, PlValue *x, const int64_t *perm, double bound)
{
  PlNode *n = node_begin (G, "Transpose", 1, &x);
  if (n && perm)
    pl_node_set_attr_ints (n, "perm", perm, x->shape.rank);
  return node_end (G, n, bound);
}

/* A one-input node with one integer attribute. */
static PlValue *
op1_int (Gen *G, const char *op_type, PlValue *x, const char *attr, int64_t v, double bound)
{
  PlNode *n = node_begin (G, op_type, 1, &x);
  if (n)
    pl_node_set_attr_int (n, attr, v);
  return node_end (G, n, bound);
}

/* --- operands ---------------------------------------------------------------------- */

/* Brings a value with a large bound back to about [-1, 1]. */
static Entry
squash (Gen *G, Entry e)
{
  PlValue *y;
  double bound;
  if (chance (G, 0.5))
    y = op1 (G, "Tanh", e.v, bound = 1.0);
  else
    {
      double s = 1.0 / ceil (e.bound);
      y = op2 (G, "Mul", e.v, const_scalar (G, s), bound = e.bound * s);
    }
  return y ? (Entry) { y, bound } : e;
}

/* An operand: with some chance a value nobody reads yet, else a recent one. */
static Entry
pick (Gen *G)
{
  GArray *pool = G->pool;
  int idx = -1;
  if (chance (G, 0.6))
    {
      int unused[64], n = 0;
      for (int i = (int) pool->len - 1; i >= 0 && n < 64; i--)
        if (g_array_index (pool, Entry, i).v->n_uses == 0)
          unused[n++] = i;
      if (n > 0)
        idx = unused[rnd (G, 0, n - 1)];
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
static Entry
find_partner (Gen *G, bool (*ok) (Gen *G, const PlValue *v, gconstpointer data), gconstpointer data)
{
  for (int t = 0; t < 12; t++)
    {
      Entry e = g_array_index (G->pool, Entry, rnd (G, 0, (int) G->pool->len - 1));
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
  if (chance (G, 0.12))
    return p;
  int drop = d->rank > 0 && chance (G, 0.4) ? rnd (G, 1, d->rank) : 0;
  for (int i = drop; i < d->rank; i++)
    {
      int64_t s = d->d[i];
      if (s == 1 && chance (G, 0.3))
        s = rnd (G, 2, MAX (G->o.max_dim, 2));
      else if (chance (G, 0.35))
        s = 1;
      p.d[p.rank++] = s;
    }
  /* a new leading dim (only where no dim was dropped: it must align with nothing) */
  if (drop == 0 && p.rank < G->o.max_rank && chance (G, 0.15))
    dims_insert (&p, 0, rnd (G, 1, G->o.max_dim));
  return p;
}

/* An operand to combine with a value of shape a by broadcasting: another
 * pool value or a new constant. */
static Entry
broadcast_partner (Gen *G, const PlShape *a)
{
  if (chance (G, 0.5))
    {
      Entry e = find_partner (G, broadcasts_with, a);
      if (e.v)
        return e;
    }
  /* Sometimes a constant that other nodes read too. */
  for (guint i = 0; i < G->g->values->len && chance (G, 0.2); i++)
    {
      PlValue *c = G->g->values->pdata[rnd (G, 0, (int) G->g->values->len - 1)];
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
      if (dims_fit (G, &out))
        return (Entry) { const_f32 (G, &p, -1, 1), 1.0 };
    }
  return (Entry) { const_f32 (G, &(Dims) { 0 }, -1, 1), 1.0 };
}

/* --- elementwise ----------------------------------------------------------------- */

static bool
gen_unary (Gen *G)
{
  /* Ops that keep the input's bound, or bound their output by 1. */
  static const struct {
    const char *op;
    bool        keep;
  } simple[] = {
    { "Abs", true }, { "Neg", true }, { "Relu", true }, { "Relu", true }, { "Gelu", true },
    { "Identity", true }, { "Elu", true }, { "HardSwish", true }, { "Mish", true },
    { "Sigmoid", false }, { "Erf", false }, { "Softsign", false }, { "HardSigmoid", false },
    { "Sin", false }, { "Cos", false },
  };
  Entry x = pick (G);
  double b = x.bound;
  int k = rnd (G, 0, G_N_ELEMENTS (simple) + 7);
  if (k < (int) G_N_ELEMENTS (simple))
    return op1 (G, simple[k].op, x.v, simple[k].keep ? b : 1);
  PlValue *a;
  switch (k - G_N_ELEMENTS (simple))
    {
    case 0: return op1 (G, "Tanh", x.v, MIN (b, 1));
    case 1: return b <= 2 ? op1 (G, "Exp", x.v, exp (b)) : op1 (G, "Tanh", x.v, 1);
    case 2: return op1 (G, "Softplus", x.v, b + 1);
    case 3:
      {
        PlNode *n = node_begin (G, "LeakyRelu", 1, &x.v);
        if (n)
          pl_node_set_attr_float (n, "alpha", 0.1f);
        return node_end (G, n, b);
      }
    case 4:
      return node_end (G, node_begin (G, "Clip", 3, (PlValue *[]) { x.v, const_scalar (G, -0.5),
                                                                   const_scalar (G, 0.5) }), 0.5);
    case 5:
      /* sqrt(x*x + 1) */
      a = op2 (G, "Mul", x.v, x.v, b * b);
      a = a ? op2 (G, "Add", a, const_scalar (G, 1.0), b * b + 1) : NULL;
      return a && op1 (G, "Sqrt", a, sqrt (b * b + 1));
    case 6:
      a = abs_plus_one (G, x.v, b);
      return a && op1 (G, "Log", a, log (b + 1));
    default:
      a = abs_plus_one (G, x.v, b);
      return a && op1 (G, "Reciprocal", a, 1);
    }
}

static bool
gen_binary (Gen *G)
{
  Entry a = pick (G);
  Entry c = broadcast_partner (G, &a.v->shape);
  if (chance (G, 0.3))
    {
      Entry t = a;
      a = c;
      c = t;
    }
  double ba = a.bound, bc = c.bound;
  switch (rnd (G, 0, 10))
    {
    case 0: case 1: return op2 (G, "Add", a.v, c.v, ba + bc);
    case 2: return op2 (G, "Sub", a.v, c.v, ba + bc);
    case 3: case 4: return op2 (G, "Mul", a.v, c.v, ba * bc);
    case 5: return op2 (G, "Max", a.v, c.v, MAX (ba, bc));
    case 6: return op2 (G, "Min", a.v, c.v, MAX (ba, bc));
    case 7:
      {
        PlValue *d = abs_plus_one (G, c.v, bc);
        return d && op2 (G, "Div", a.v, d, ba);
      }
    case 8: return op2 (G, "Pow", a.v, const_scalar (G, 2.0), ba * ba);
    case 9:
      {
        /* Where(a > c, a, c) is max(a, c): a select that stays continuous. */
        PlValue *cond = op2 (G, "Greater", a.v, c.v, 1);
        return cond && node_end (G, node_begin (G, "Where", 3, (PlValue *[]) { cond, a.v, c.v }), MAX (ba, bc));
      }
    default:
      {
        PlShape ac;
        if (!pl_shape_broadcast (&a.v->shape, &c.v->shape, &ac, NULL))
          return false;
        Entry e = broadcast_partner (G, &ac);
        bool mean = chance (G, 0.5);
        PlValue *s = node_end (G, node_begin (G, mean ? "Mean" : "Sum", 3, (PlValue *[]) { a.v, c.v, e.v }),
                               mean ? MAX (MAX (ba, bc), e.bound) : ba + bc + e.bound);
        return s != NULL;
      }
    }
}

/* --- shapes ------------------------------------------------------------------------ */

static int64_t
some_divisor (Gen *G, int64_t n)   /* a divisor f with 1 < f < n, or 0 */
{
  int64_t divs[64];
  int k = 0;
  for (int64_t f = 2; f < n && k < 64; f++)
    if (n % f == 0)
      divs[k++] = f;
  return k ? divs[rnd (G, 0, k - 1)] : 0;
}

/* Splits dim i of d into (f, d[i] / f); false if it has no proper divisor or no room. */
static bool
split_dim (Gen *G, Dims *d, int i)
{
  int64_t f = some_divisor (G, d->d[i]);
  if (!f || d->rank >= G->o.max_rank)
    return false;
  dims_insert (d, i + 1, d->d[i] / f);
  d->d[i] = f;
  return true;
}

/* Dims with the same element count as in: adjacent dims merged, dims split,
 * 1s inserted or removed, or everything flattened. */
static Dims
reshape_dims (Gen *G, const Dims *in)
{
  Dims d = *in;
  int edits = rnd (G, 1, 2);
  for (int e = 0; e < edits; e++)
    switch (rnd (G, 0, 5))
      {
      case 0: case 1:
        if (d.rank >= 2)
          dims_merge (&d, rnd (G, 0, d.rank - 2));
        break;
      case 2: case 3:
        if (d.rank > 0)
          split_dim (G, &d, rnd (G, 0, d.rank - 1));
        break;
      case 4:
        if (d.rank < G->o.max_rank)
          dims_insert (&d, rnd (G, 0, d.rank), 1);
        else
          for (int i = 0; i < d.rank && d.rank > 1; i++)
            if (d.d[i] == 1)
              {
                dims_merge (&d, i == d.rank - 1 ? i - 1 : i);   /* drops the 1 */
                break;
              }
        break;
      default:
        d.d[0] = dims_numel (&d);
        d.rank = 1;
        break;
      }
  if (d.rank == 0)
    d.d[d.rank++] = 1;
  return d;
}

/* Reshape(x) to reshape_dims, the target sometimes written with a -1 or a 0. */
static PlValue *
gen_reshape_of (Gen *G, Entry x, Dims *out_dims)
{
  Dims in = dims_of (x.v);
  Dims out = reshape_dims (G, &in);
  if (out_dims)
    *out_dims = out;
  int64_t target[PL_MAX_RANK];
  memcpy (target, out.d, sizeof target);
  if (chance (G, 0.2))
    target[rnd (G, 0, out.rank - 1)] = -1;
  else if (chance (G, 0.15))
    for (int i = 0; i < MIN (in.rank, out.rank); i++)
      if (in.d[i] == out.d[i])
        {
          target[i] = 0;
          break;
        }
  return reshape_to (G, x.v, target, out.rank, x.bound);
}

static bool
gen_transpose (Gen *G, Entry x)
{
  int64_t perm[PL_MAX_RANK];
  random_perm (G, perm, x.v->shape.rank);
  return x.v->shape.rank >= 2 && transpose (G, x.v, chance (G, 0.85) ? perm : NULL, x.bound);
}

static bool
gen_unsqueeze (Gen *G, Entry x)
{
  int r = x.v->shape.rank;
  if (r >= G->o.max_rank)
    return false;
  int n_new = r + 2 <= G->o.max_rank && chance (G, 0.3) ? 2 : 1;
  int64_t axes[PL_MAX_RANK];   /* the first n_new of a permutation of the output's axes */
  random_perm (G, axes, r + n_new);
  maybe_negative (G, axes, n_new, r + n_new);
  return op2 (G, "Unsqueeze", x.v, const_ints (G, axes, n_new), x.bound);
}

static bool
gen_squeeze (Gen *G, Entry x)
{
  Dims d = dims_of (x.v);
  int64_t ones[PL_MAX_RANK];
  int n = 0;
  for (int i = 0; i < d.rank; i++)
    if (d.d[i] == 1)
      ones[n++] = i;
  if (n == 0 || n == d.rank)   /* keep rank >= 1: many ops need it */
    return false;
  if (chance (G, 0.3))
    return op1 (G, "Squeeze", x.v, x.bound);
  int64_t axes[PL_MAX_RANK];
  int k = 0;
  for (int i = 0; i < n; i++)
    if (k == 0 || chance (G, 0.5))
      axes[k++] = ones[i];
  maybe_negative (G, axes, k, d.rank);
  return op2 (G, "Squeeze", x.v, const_ints (G, axes, k), x.bound);
}

static bool
gen_expand (Gen *G, Entry x)
{
  Dims d = dims_of (x.v);
  Dims t = d;
  for (int i = 0; i < t.rank; i++)
    if (t.d[i] == 1 && chance (G, 0.6))
      t.d[i] = rnd (G, 2, MAX (G->o.max_dim, 2));
    else if (chance (G, 0.15))
      t.d[i] = 1;   /* broadcasting keeps x's dim */
  if (t.rank < G->o.max_rank && chance (G, 0.3))
    dims_insert (&t, 0, rnd (G, 1, G->o.max_dim));
  return op2 (G, "Expand", x.v, const_ints (G, t.d, t.rank), x.bound);
}

static bool
gen_shape (Gen *G)
{
  Entry x = pick (G);
  switch (rnd (G, 0, 9))
    {
    case 0: case 1: case 2: return gen_reshape_of (G, x, NULL) != NULL;
    case 3: case 4: return gen_transpose (G, x);
    case 5: return gen_unsqueeze (G, x);
    case 6: return gen_squeeze (G, x);
    case 7: return x.v->shape.rank >= 1 && op1_int (G, "Flatten", x.v, "axis", rnd (G, -x.v->shape.rank, x.v->shape.rank), x.bound);
    default: return gen_expand (G, x);
    }
}

/* --- reductions -------------------------------------------------------------------- */

static bool
gen_reduction (Gen *G, Entry x)
{
  Dims d = dims_of (x.v);
  int64_t axes[PL_MAX_RANK];
  int n = chance (G, 0.1) ? 0 : random_axes (G, d.rank, axes);
  double count = 1;
  for (int i = 0; i < (n ? n : d.rank); i++)
    count *= d.d[n ? axes[i] : i];
  maybe_negative (G, axes, n, d.rank);
  int keepdims = chance (G, 0.4) ? 0 : chance (G, 0.5) ? 1 : -1;
  double b = x.bound;
  switch (rnd (G, 0, 9))
    {
    case 0: case 1: return reduce_op (G, "ReduceSum", x.v, axes, n, keepdims, b * count);
    case 2: case 3: return reduce_op (G, "ReduceMean", x.v, axes, n, keepdims, b);
    case 4: return reduce_op (G, "ReduceMax", x.v, axes, n, keepdims, b);
    case 5: return reduce_op (G, "ReduceMin", x.v, axes, n, keepdims, b);
    case 6: return reduce_op (G, "ReduceL2", x.v, axes, n, keepdims, b * sqrt (count));
    case 7: return reduce_op (G, "ReduceSumSquare", x.v, axes, n, keepdims, b * b * count);
    case 8: return reduce_op (G, "ReduceL1", x.v, axes, n, keepdims, b * count);
    default:
      return reduce_op (G, "ReduceLogSumExp", x.v, axes, n, keepdims, b + log (count));
    }
}

static bool
gen_softmax (Gen *G, Entry x, bool log_softmax)
{
  int r = x.v->shape.rank, axis = rnd (G, -r, r - 1);
  const char *op = log_softmax ? "LogSoftmax" : "Softmax";
  double bound = log_softmax ? 2 * x.bound + log (G->o.max_numel) : 1;
  return axis == -1 && chance (G, 0.7) ? op1 (G, op, x.v, bound) : op1_int (G, op, x.v, "axis", axis, bound);
}

static bool
gen_layer_norm (Gen *G, Entry x)
{
  Dims d = dims_of (x.v);
  int axis = rnd (G, 0, d.rank - 1);
  Dims p = { .rank = d.rank - axis };
  memcpy (p.d, d.d + axis, sizeof (int64_t) * p.rank);
  bool with_bias = chance (G, 0.7);
  PlValue *scale = const_f32 (G, &p, 0.5, 1.5);
  PlValue *ins[3] = { x.v, scale, with_bias ? const_f32 (G, &p, -0.5, 0.5) : NULL };
  PlNode *n = node_begin (G, "LayerNormalization", with_bias ? 3 : 2, ins);
  if (n && (axis != d.rank - 1 || chance (G, 0.5)))
    pl_node_set_attr_int (n, "axis", chance (G, 0.5) ? axis - d.rank : axis);
  static const float eps[] = { 1e-5f, 1e-3f, 1e-2f };
  if (n)
    pl_node_set_attr_float (n, "epsilon", eps[rnd (G, 0, 2)]);
  return node_end (G, n, 1.5 * sqrt (dims_numel (&p)) + 0.5);
}

static bool
gen_reduce (Gen *G)
{
  Entry x = pick (G);
  if (x.v->shape.rank < 1)
    return false;
  switch (rnd (G, 0, 9))
    {
    case 0: case 1: return gen_softmax (G, x, false);
    case 2: return gen_softmax (G, x, true);
    case 3: case 4: return gen_layer_norm (G, x);
    default: return gen_reduction (G, x);
    }
}

/* --- matmul and gemm ------------------------------------------------------------------ */

static bool
matmul_right_ok (Gen *G, const PlValue *v, gconstpointer data)
{
  const Dims *x = data;
  Dims y = dims_of (v);
  if (y.rank < 2 || y.d[y.rank - 2] != x->d[x->rank - 1])
    return false;
  PlShape xb = pl_shape_from_dims (MAX (x->rank - 2, 0), x->d);
  PlShape yb = pl_shape_from_dims (y.rank - 2, y.d);
  PlShape out;
  if (!pl_shape_broadcast (&xb, &yb, &out, NULL))
    return false;
  int64_t n = pl_shape_numel (&out) * (x->rank >= 2 ? x->d[x->rank - 2] : 1) * y.d[y.rank - 1];
  return out.rank + 2 <= G->o.max_rank && n <= G->o.max_numel;
}

static bool
gen_matmul_op (Gen *G, Entry x)
{
  Dims d = dims_of (x.v);
  if (d.rank < 1)
    return false;
  int64_t K = d.d[d.rank - 1];
  if (chance (G, 0.35))
    {
      Entry y = find_partner (G, matmul_right_ok, &d);
      if (y.v)
        return op2 (G, "MatMul", x.v, y.v, x.bound * y.bound * K);
    }
  if (d.rank >= 2 && chance (G, 0.15))
    {
      /* A constant on the left: [M, K'] x [..., K', N] */
      Dims a = { 2, { rnd (G, 1, G->o.max_dim), d.d[d.rank - 2] } };
      return op2 (G, "MatMul", const_f32 (G, &a, -1, 1), x.v, x.bound * a.d[1]);
    }
  Dims w = { 2, { K, rnd (G, 1, G->o.max_dim) } };
  if (chance (G, 0.15))
    w = (Dims) { 1, { K } };
  else if (d.rank >= 3 && chance (G, 0.2))
    {
      /* batched weights whose batch dims broadcast against x's */
      w.rank = 3;
      w.d[2] = w.d[1];
      w.d[1] = K;
      w.d[0] = chance (G, 0.5) ? 1 : d.d[d.rank - 3];
    }
  return op2 (G, "MatMul", x.v, const_f32 (G, &w, -1, 1), x.bound * K);
}

static bool
gen_gemm (Gen *G, Entry x)
{
  int r = x.v->shape.rank;
  if (r != 2)
    {
      PlValue *f = r >= 1 ? op1_int (G, "Flatten", x.v, "axis", rnd (G, 1, r), x.bound) : NULL;
      if (!f)
        return false;
      x.v = f;
    }
  Dims d = dims_of (x.v);
  bool trans_a = chance (G, 0.3), trans_b = chance (G, 0.3);
  int64_t M = trans_a ? d.d[1] : d.d[0], K = trans_a ? d.d[0] : d.d[1];
  int64_t N = rnd (G, 1, G->o.max_dim);
  Dims b = { 2, { trans_b ? N : K, trans_b ? K : N } };
  PlValue *ins[3] = { x.v, const_f32 (G, &b, -1, 1), NULL };
  switch (rnd (G, 0, 5))
    {
    case 0: break;
    case 1: ins[2] = const_f32 (G, &(Dims) { 1, { N } }, -1, 1); break;
    case 2: ins[2] = const_f32 (G, &(Dims) { 2, { 1, N } }, -1, 1); break;
    case 3: ins[2] = const_f32 (G, &(Dims) { 2, { M, N } }, -1, 1); break;
    case 4: ins[2] = const_f32 (G, &(Dims) { 2, { M, 1 } }, -1, 1); break;
    default: ins[2] = const_scalar (G, 0.25); break;
    }
  PlNode *n = node_begin (G, "Gemm", ins[2] ? 3 : 2, ins);
  static const float factors[] = { 1.0f, 0.5f, 2.0f };
  float alpha = factors[rnd (G, 0, 2)], beta = factors[rnd (G, 0, 2)];
  if (n)
    {
      if (trans_a)
        pl_node_set_attr_int (n, "transA", 1);
      if (trans_b)
        pl_node_set_attr_int (n, "transB", 1);
      if (alpha != 1.0f)
        pl_node_set_attr_float (n, "alpha", alpha);
      if (beta != 1.0f && ins[2])
        pl_node_set_attr_float (n, "beta", beta);
    }
  return node_end (G, n, alpha * x.bound * K + beta);
}

static bool
gen_matmul (Gen *G)
{
  Entry x = pick (G);
  return chance (G, 0.65) ? gen_matmul_op (G, x) : gen_gemm (G, x);
}

/* --- concat and slice -------------------------------------------------------------------- */

typedef struct {
  Dims d;
  int  axis;
} ConcatWant;

static bool
concat_ok (Gen *G, const PlValue *v, gconstpointer data)
{
  const ConcatWant *w = data;
  Dims y = dims_of (v);
  if (y.rank != w->d.rank)
    return false;
  for (int i = 0; i < y.rank; i++)
    if (i != w->axis && y.d[i] != w->d.d[i])
      return false;
  return true;
}

static bool
gen_concat (Gen *G, Entry x)
{
  ConcatWant w = { dims_of (x.v), 0 };
  if (w.d.rank < 1)
    return false;
  w.axis = rnd (G, 0, w.d.rank - 1);
  int n = chance (G, 0.25) ? 3 : 2;
  PlValue *ins[3] = { x.v };
  double bound = x.bound;
  for (int i = 1; i < n; i++)
    {
      Entry p = { NULL, 0 };
      if (chance (G, 0.2))
        p = x;
      else if (chance (G, 0.5))
        p = find_partner (G, concat_ok, &w);
      if (!p.v)
        {
          Dims c = w.d;
          c.d[w.axis] = rnd (G, 1, G->o.max_dim);
          p = (Entry) { const_f32 (G, &c, -1, 1), 1 };
        }
      ins[i] = p.v;
      bound = MAX (bound, p.bound);
    }
  PlNode *node = node_begin (G, "Concat", n, ins);
  if (node)
    pl_node_set_attr_int (node, "axis", chance (G, 0.3) ? w.axis - w.d.rank : w.axis);
  return node_end (G, node, bound);
}

static bool
gen_slice (Gen *G, Entry x)
{
  Dims d = dims_of (x.v);
  if (d.rank < 1)
    return false;
  int64_t axes[PL_MAX_RANK], starts[PL_MAX_RANK], ends[PL_MAX_RANK], steps[PL_MAX_RANK];
  int n = random_axes (G, d.rank, axes);
  bool all_steps_one = true;
  for (int i = 0; i < n; i++)
    {
      int64_t dim = d.d[axes[i]];
      int64_t s = rnd (G, 0, (int) dim - 1);
      int k = rnd (G, 0, 9);
      if (k == 0)
        {
          /* backwards from s to e (exclusive); e = -1 written as "before the start" */
          int64_t e = rnd (G, -1, (int) s - 1);
          starts[i] = s;
          ends[i] = e < 0 ? -dim - 1 : e;
          steps[i] = -1;
          all_steps_one = false;
          continue;
        }
      int64_t e = rnd (G, (int) s + 1, (int) dim);
      steps[i] = k == 1 ? 2 : 1;
      all_steps_one &= steps[i] == 1;
      starts[i] = chance (G, 0.2) ? s - dim : s;
      ends[i] = e == dim && chance (G, 0.3) ? G_MAXINT64 : chance (G, 0.2) && e < dim ? e - dim : e;
    }
  bool write_axes = !(n == d.rank && chance (G, 0.5)) || !all_steps_one;
  maybe_negative (G, axes, n, d.rank);
  PlValue *ins[5] = { x.v, const_ints (G, starts, n), const_ints (G, ends, n), NULL, NULL };
  int n_in = 3;
  if (write_axes)
    {
      ins[3] = const_ints (G, axes, n);
      n_in = 4;
      if (!all_steps_one || chance (G, 0.2))
        ins[4] = const_ints (G, steps, n), n_in = 5;
    }
  return node_end (G, node_begin (G, "Slice", n_in, ins), x.bound);
}

static bool
gen_concat_slice (Gen *G)
{
  Entry x = pick (G);
  return chance (G, 0.5) ? gen_concat (G, x) : gen_slice (G, x);
}

/* --- idioms ------------------------------------------------------------------------------ */

/* x reshaped with one of its dims split in two (as group norm splits
 * channels into groups) or two adjacent dims merged; NULL if neither fits. */
static PlValue *
regroup_reshape (Gen *G, Entry x, Dims *out)
{
  Dims d = dims_of (x.v);
  int split[PL_MAX_RANK], n_split = 0, merge[PL_MAX_RANK], n_merge = 0;
  for (int i = 0; i < d.rank; i++)
    {
      if (d.rank < G->o.max_rank && some_divisor (G, d.d[i]))
        split[n_split++] = i;
      if (i + 1 < d.rank && d.d[i] > 1 && d.d[i + 1] > 1)
        merge[n_merge++] = i;
    }
  if (n_split + n_merge == 0)
    return NULL;
  *out = d;
  int k = rnd (G, 0, n_split + n_merge - 1);
  if (k < n_split)
    split_dim (G, out, split[k]);
  else
    dims_merge (out, merge[k - n_split]);
  return reshape_to (G, x.v, out->d, out->rank, x.bound);
}

/* reduce(reshape(x)): the group statistics of seed 000's pattern A. */
static bool
idiom_reduce_reshape (Gen *G, Entry x)
{
  Dims s;
  PlValue *r = regroup_reshape (G, x, &s);
  if (!r)
    return false;
  int64_t axes[PL_MAX_RANK];
  int n = random_axes (G, s.rank, axes);
  double count = 1;
  for (int i = 0; i < n; i++)
    count *= s.d[axes[i]];
  static const char *const ops[] = { "ReduceMean", "ReduceSum", "ReduceMax" };
  int k = rnd (G, 0, 2);
  return reduce_op (G, ops[k], r, axes, n, chance (G, 0.5) ? 0 : 1, k == 1 ? x.bound * count : x.bound);
}

/* reshape(f(reshape(x), broadcast(y))) with the outer reshape restoring x's
 * shape: seed 000's pattern B (group norm's normalization). */
static bool
idiom_reshape_broadcast (Gen *G, Entry x)
{
  Dims s;
  PlValue *r = regroup_reshape (G, x, &s);
  if (!r)
    return false;
  PlValue *y;
  double yb = x.bound;
  int64_t axes[PL_MAX_RANK];
  int n = random_axes (G, s.rank, axes);
  Dims kept = s;   /* the statistics' shape with keepdims */
  for (int i = 0; i < n; i++)
    kept.d[axes[i]] = 1;
  switch (rnd (G, 0, 2))
    {
    case 0:
      y = reduce_op (G, "ReduceMean", r, axes, n, 1, x.bound);
      break;
    case 1:
      {
        /* keepdims=0, then a reshape back to the kept shape, as group_norm.graph does */
        PlValue *m = reduce_op (G, "ReduceMean", r, axes, n, 0, x.bound);
        y = m ? reshape_to (G, m, kept.d, kept.rank, x.bound) : NULL;
        break;
      }
    default:
      y = const_f32 (G, &kept, 0.5, 1.5);
      yb = 1.5;
      break;
    }
  if (!y)
    return false;
  if (chance (G, 0.5))
    y = op2 (G, "Expand", y, const_ints (G, s.d, s.rank), yb);
  if (!y)
    return false;
  static const char *const ops[] = { "Sub", "Mul", "Add", "Div" };
  int k = rnd (G, 0, 3);
  PlValue *f;
  if (k == 3)
    {
      PlValue *den = abs_plus_one (G, y, yb);
      f = den ? op2 (G, "Div", r, den, x.bound) : NULL;
    }
  else
    f = chance (G, 0.8) ? op2 (G, ops[k], r, y, k == 1 ? x.bound * yb : x.bound + yb)
                         : op2 (G, ops[k], y, r, k == 1 ? x.bound * yb : x.bound + yb);
  if (!f)
    return false;
  Dims xd = dims_of (x.v);
  return reshape_to (G, f, xd.d, xd.rank, x.bound + yb) != NULL;
}

/* MatMul + bias + activation, sometimes with a transposed operand: what
 * library fusion turns into one GEMM call with an epilogue. */
static bool
idiom_linear (Gen *G, Entry x)
{
  Dims d = dims_of (x.v);
  if (d.rank < 1)
    return false;
  PlValue *a = x.v;
  if (d.rank == 2 && chance (G, 0.3))
    {
      if (!(a = transpose (G, a, (int64_t[]) { 1, 0 }, x.bound)))
        return false;
      d = dims_of (a);
    }
  int64_t K = d.d[d.rank - 1], N = rnd (G, 1, G->o.max_dim);
  /* sometimes a transposed constant [N, K]: dot(A, transpose(B)) */
  PlValue *w = chance (G, 0.3) ? transpose (G, const_f32 (G, &(Dims) { 2, { N, K } }, -1, 1), NULL, 1)
                               : const_f32 (G, &(Dims) { 2, { K, N } }, -1, 1);
  PlValue *m = w ? op2 (G, "MatMul", a, w, x.bound * K) : NULL;
  PlValue *b = m ? op2 (G, "Add", m, const_f32 (G, &(Dims) { 1, { N } }, -0.5, 0.5), x.bound * K + 0.5) : NULL;
  if (!b)
    return false;
  static const char *const acts[] = { "Relu", "Gelu", "Tanh", "Sigmoid" };
  int k = rnd (G, 0, 4);
  return k == 4 || op1 (G, acts[k], b, x.bound * K + 0.5);
}

/* Layer norm over the last axis in primitive ops (layer_norm.graph). */
static bool
idiom_layer_norm (Gen *G, Entry x)
{
  Dims d = dims_of (x.v);
  if (d.rank < 1)
    return false;
  int64_t last = -1, n = d.d[d.rank - 1];
  double b = x.bound;
  PlValue *mean = reduce_op (G, "ReduceMean", x.v, &last, 1, 1, b);
  PlValue *dv = mean ? op2 (G, "Sub", x.v, mean, 2 * b) : NULL;
  PlValue *d2 = !dv ? NULL : chance (G, 0.5) ? op2 (G, "Mul", dv, dv, 4 * b * b)
                                             : op2 (G, "Pow", dv, const_scalar (G, 2.0), 4 * b * b);
  PlValue *var = d2 ? reduce_op (G, "ReduceMean", d2, &last, 1, 1, 4 * b * b) : NULL;
  PlValue *ve = var ? op2 (G, "Add", var, const_scalar (G, 1e-3), 4 * b * b + 1) : NULL;
  PlValue *sd = ve ? op1 (G, "Sqrt", ve, 2 * b + 1) : NULL;
  double nb = sqrt ((double) n);
  PlValue *nm = sd ? op2 (G, "Div", dv, sd, nb) : NULL;
  PlValue *sc = nm ? op2 (G, "Mul", nm, const_f32 (G, &(Dims) { 1, { n } }, 0.5, 1.5), 1.5 * nb) : NULL;
  return sc && op2 (G, "Add", sc, const_f32 (G, &(Dims) { 1, { n } }, -0.5, 0.5), 1.5 * nb + 0.5);
}

/* Softmax written out: exp(x - max) / sum. */
static bool
idiom_softmax (Gen *G, Entry x)
{
  int r = x.v->shape.rank;
  if (r < 1)
    return false;
  int64_t axis = rnd (G, -r, r - 1);
  PlValue *m = reduce_op (G, "ReduceMax", x.v, &axis, 1, 1, x.bound);
  PlValue *s = m ? op2 (G, "Sub", x.v, m, 2 * x.bound) : NULL;
  PlValue *e = s ? op1 (G, "Exp", s, 1) : NULL;
  PlValue *z = e ? reduce_op (G, "ReduceSum", e, &axis, 1, 1, G->o.max_numel) : NULL;
  return z && op2 (G, "Div", e, z, 1);
}

/* Things a simplifier removes: x*1, x+0, x/1, transpose then its inverse,
 * reshape then reshape back, Identity. */
static bool
idiom_identity (Gen *G, Entry x)
{
  switch (rnd (G, 0, 4))
    {
    case 0: return op2 (G, "Mul", x.v, const_scalar (G, 1.0), x.bound);
    case 1: return op2 (G, chance (G, 0.5) ? "Add" : "Sub", x.v, const_scalar (G, 0.0), x.bound);
    case 2: return op2 (G, "Div", x.v, const_scalar (G, 1.0), x.bound);
    case 3:
      {
        int r = x.v->shape.rank;
        if (r < 2)
          return op1 (G, "Identity", x.v, x.bound);
        int64_t perm[PL_MAX_RANK], inv[PL_MAX_RANK];
        random_perm (G, perm, r);
        for (int i = 0; i < r; i++)
          inv[perm[i]] = i;
        PlValue *y = transpose (G, x.v, perm, x.bound);
        return y && transpose (G, y, inv, x.bound);
      }
    default:
      {
        Dims d = dims_of (x.v);
        PlValue *y = gen_reshape_of (G, x, NULL);
        return y && reshape_to (G, y, d.d, d.rank, x.bound);
      }
    }
}

static bool
gen_idiom (Gen *G)
{
  Entry x = pick (G);
  switch (rnd (G, 0, 9))
    {
    case 0: case 1: return idiom_reduce_reshape (G, x);
    case 2: case 3: case 4: return idiom_reshape_broadcast (G, x);
    case 5: case 6: return idiom_linear (G, x);
    case 7: return idiom_layer_norm (G, x);
    case 8: return idiom_softmax (G, x);
    default: return idiom_identity (G, x);
    }
}

/* --- the graph ------------------------------------------------------------------------------ */

void
pl_random_graph_options_init (PlRandomGraphOptions *o)
{
  *o = (PlRandomGraphOptions) {
    .seed = 1, .n_nodes = 20, .max_rank = 4, .max_dim = 5, .n_inputs = 2, .ops = PL_RANDOM_ALL,
    .max_numel = 1024,
  };
}

static void
add_inputs (Gen *G)
{
  for (int i = 0; i < G->o.n_inputs; i++)
    {
      Dims d = { rnd (G, 1, G->o.max_rank) };
      for (int k = 0; k < d.rank; k++)
        d.d[k] = chance (G, 0.2) ? 1 : rnd (G, 1, G->o.max_dim);
      while (dims_numel (&d) > G->o.max_numel)
        if (d.rank > 1)
          d.rank--;
        else
          d.d[0] = G->o.max_numel;
      PlShape s = pl_shape_from_dims (d.rank, d.d);
      g_autofree char *name = g_strdup_printf ("x%d", i);
      Entry e = { pl_graph_add_input (G->g, name, PL_DTYPE_F32, &s, NULL), 1.0 };
      g_array_append_val (G->pool, e);
    }
}

/* Outputs: up to n values nobody reads (the newest first), at least one;
 * sometimes also a value that other nodes read on. */
static void
choose_outputs (Gen *G)
{
  int want = rnd (G, 1, 4);
  if (want > 1 && chance (G, 0.3))
    {
      PlValue *v = g_array_index (G->pool, Entry, rnd (G, 0, (int) G->pool->len - 1)).v;
      if (v->producer && v->n_uses > 0)
        pl_graph_add_output (G->g, v);
    }
  for (int i = (int) G->pool->len - 1; i >= 0 && (int) G->g->outputs->len < want; i--)
    {
      PlValue *v = g_array_index (G->pool, Entry, i).v;
      if (v->producer && v->n_uses == 0)
        pl_graph_add_output (G->g, v);
    }
  if (G->g->outputs->len == 0)
    {
      /* Every op output is read (or there are none): add one that reads the newest. */
      Entry x = g_array_index (G->pool, Entry, G->pool->len - 1);
      pl_graph_add_output (G->g, op1 (G, "Relu", x.v, x.bound));
    }
}

PlGraph *
pl_random_graph (const PlRandomGraphOptions *options)
{
  pl_ops_init ();
  Gen G = { 0 };
  pl_random_graph_options_init (&G.o);
  if (options)
    G.o = *options;
  G.o.max_rank = CLAMP (G.o.max_rank, 1, PL_MAX_RANK);
  G.o.max_dim = MAX (G.o.max_dim, 1);
  G.o.n_inputs = CLAMP (G.o.n_inputs, 1, 8);
  G.o.n_nodes = MAX (G.o.n_nodes, 1);
  G.o.max_numel = MAX (G.o.max_numel, 16);
  if ((G.o.ops & PL_RANDOM_ALL) == 0)
    G.o.ops = PL_RANDOM_ALL;

  g_autofree char *name = g_strdup_printf ("random_%u", G.o.seed);
  G.g = pl_graph_new (name);
  G.g->opset = 17;
  G.rand = g_rand_new_with_seed (G.o.seed);
  G.pool = g_array_new (FALSE, FALSE, sizeof (Entry));
  add_inputs (&G);

  static const struct {
    guint kind;
    int weight;
    bool (*gen) (Gen *G);
  } kinds[] = {
    { PL_RANDOM_ELEMENTWISE, 3, gen_unary },
    { PL_RANDOM_ELEMENTWISE, 4, gen_binary },
    { PL_RANDOM_SHAPE, 3, gen_shape },
    { PL_RANDOM_REDUCE, 3, gen_reduce },
    { PL_RANDOM_MATMUL, 2, gen_matmul },
    { PL_RANDOM_CONCAT, 2, gen_concat_slice },
    { PL_RANDOM_PATTERNS, 3, gen_idiom },
  };
  int total = 0;
  for (guint k = 0; k < G_N_ELEMENTS (kinds); k++)
    if (G.o.ops & kinds[k].kind)
      total += kinds[k].weight;
  for (int attempt = 0; G.n_ops < G.o.n_nodes && attempt < 50 * G.o.n_nodes; attempt++)
    {
      int w = rnd (&G, 0, total - 1);
      for (guint k = 0; k < G_N_ELEMENTS (kinds); k++)
        if ((G.o.ops & kinds[k].kind) && (w -= kinds[k].weight) < 0)
          {
            kinds[k].gen (&G);
            break;
          }
    }
  choose_outputs (&G);

  g_array_unref (G.pool);
  g_rand_free (G.rand);
  return G.g;
}
