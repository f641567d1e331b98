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
 *
 * This file holds the driver; the building blocks (dims, constants, nodes,
 * operands) are in random-graph-build.c, the single ops in
 * random-graph-ops.c and random-graph-index.c, and the multi-node idioms in
 * random-graph-idioms.c.
 */
#define G_LOG_DOMAIN "passlab"

#include "random-graph-private.h"

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
      Dims d = { pl_rg_rnd (G, 1, G->o.max_rank) };
      for (int k = 0; k < d.rank; k++)
        d.d[k] = pl_rg_chance (G, 0.2) ? 1 : pl_rg_rnd (G, 1, G->o.max_dim);
      while (pl_rg_dims_numel (&d) > G->o.max_numel)
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
  int want = pl_rg_rnd (G, 1, 4);
  if (want > 1 && pl_rg_chance (G, 0.3))
    {
      PlValue *v = g_array_index (G->pool, Entry, pl_rg_rnd (G, 0, (int) G->pool->len - 1)).v;
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
      pl_graph_add_output (G->g, pl_rg_op1 (G, "Relu", x.v, x.bound));
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
    { PL_RANDOM_ELEMENTWISE, 3, pl_rg_gen_unary },
    { PL_RANDOM_ELEMENTWISE, 4, pl_rg_gen_binary },
    { PL_RANDOM_SHAPE, 3, pl_rg_gen_shape },
    { PL_RANDOM_REDUCE, 3, pl_rg_gen_reduce },
    { PL_RANDOM_MATMUL, 2, pl_rg_gen_matmul },
    { PL_RANDOM_CONCAT, 2, pl_rg_gen_concat_slice },
    { PL_RANDOM_PATTERNS, 3, pl_rg_gen_idiom },
    { PL_RANDOM_INDEX, 2, pl_rg_gen_index },
  };
  int total = 0;
  for (guint k = 0; k < G_N_ELEMENTS (kinds); k++)
    if (G.o.ops & kinds[k].kind)
      total += kinds[k].weight;
  for (int attempt = 0; G.n_ops < G.o.n_nodes && attempt < 50 * G.o.n_nodes; attempt++)
    {
      int w = pl_rg_rnd (&G, 0, total - 1);
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
