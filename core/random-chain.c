/* random-chain.c — large chain graphs for the benchmarks (see
 * random-graph.h): pl_random_chain_graph() repeats realistic blocks (layer
 * norm written out, a residual MLP, group statistics through reshapes,
 * attention-like softmax, identities a simplifier removes, GELU) on one
 * small [2, 4, 8] tensor, in an order the seed picks, until the graph has
 * enough nodes. Every block has fixed shapes, so it costs linear time and
 * its constants share their data.
 */
#define G_LOG_DOMAIN "passlab"

#include "random-graph.h"

#include <string.h>

typedef struct {
  PlGraph  *g;
  int       block;     /* current block number, for names */
  PlTensor *w88, *v8, *one, *zero, *eps, *half, *c1, *c2, *scale;
  PlTensor *shape_group, *shape_stats, *shape_x;
} Chain;

/* A node of the chain; the chain's shapes are fixed, so inference failing is a bug. */
static PlValue *
chain_op (Chain *C, const char *op_type, const char *suffix, int n_inputs, PlValue *const *inputs)
{
  g_autofree char *name = g_strdup_printf ("b%d_%s", C->block, suffix);
  g_autoptr (GError) error = NULL;
  PlNode *n = pl_graph_add_node (C->g, op_type, NULL, name, n_inputs, inputs, 1,
                                 (const char *const[]) { name }, &error);
  if (!n || !pl_node_infer (n, &error))
    g_error ("chain graph: %s", error->message);
  return n->outputs[0];
}

static PlValue *
chain_attr_op (Chain *C, const char *op_type, const char *suffix, PlValue *x, const char *attr,
               const int64_t *v, int n, int keepdims)
{
  g_autofree char *name = g_strdup_printf ("b%d_%s", C->block, suffix);
  g_autoptr (GError) error = NULL;
  PlNode *node = pl_graph_add_node (C->g, op_type, NULL, name, 1, &x, 1, (const char *const[]) { name }, &error);
  if (node && attr)
    pl_node_set_attr_ints (node, attr, v, n);
  if (node && keepdims >= 0)
    pl_node_set_attr_int (node, "keepdims", keepdims);
  if (!node || !pl_node_infer (node, &error))
    g_error ("chain graph: %s", error->message);
  return node->outputs[0];
}

/* A constant of the block sharing t's data. */
static PlValue *
chain_const (Chain *C, const char *suffix, PlTensor *t)
{
  g_autofree char *name = g_strdup_printf ("b%d_%s", C->block, suffix);
  return pl_graph_add_constant (C->g, name, t, NULL);
}

#define OP(op, suffix, ...) \
  chain_op (C, op, suffix, G_N_ELEMENTS (((PlValue *[]) { __VA_ARGS__ })), (PlValue *[]) { __VA_ARGS__ })

static PlValue *
block_layer_norm (Chain *C, PlValue *x)   /* 9 nodes */
{
  int64_t last = -1;
  PlValue *mean = chain_attr_op (C, "ReduceMean", "mean", x, "axes", &last, 1, 1);
  PlValue *d = OP ("Sub", "d", x, mean);
  PlValue *d2 = OP ("Mul", "d2", d, d);
  PlValue *var = chain_attr_op (C, "ReduceMean", "var", d2, "axes", &last, 1, 1);
  PlValue *ve = OP ("Add", "ve", var, chain_const (C, "eps", C->eps));
  PlValue *sd = OP ("Sqrt", "sd", ve);
  PlValue *nm = OP ("Div", "nm", d, sd);
  PlValue *sc = OP ("Mul", "sc", nm, chain_const (C, "gamma", C->v8));
  return OP ("Add", "ln", sc, chain_const (C, "beta", C->v8));
}

static PlValue *
block_mlp (Chain *C, PlValue *x)   /* 4 nodes */
{
  PlValue *h = OP ("MatMul", "mm", x, chain_const (C, "w", C->w88));
  PlValue *hb = OP ("Add", "bias", h, chain_const (C, "b", C->v8));
  PlValue *r = OP ("Relu", "relu", hb);
  return OP ("Add", "res", x, r);
}

static PlValue *
block_group (Chain *C, PlValue *x)   /* 5 nodes: group statistics through reshapes */
{
  int64_t axes[] = { 1, 3 };
  PlValue *r = OP ("Reshape", "grp", x, chain_const (C, "gshape", C->shape_group));
  PlValue *m = chain_attr_op (C, "ReduceMean", "gmean", r, "axes", axes, 2, 0);
  PlValue *mr = OP ("Reshape", "gstat", m, chain_const (C, "sshape", C->shape_stats));
  PlValue *c = OP ("Sub", "gc", r, mr);
  return OP ("Reshape", "gout", c, chain_const (C, "xshape", C->shape_x));
}

static PlValue *
block_attention (Chain *C, PlValue *x)   /* 6 nodes */
{
  int64_t perm[] = { 0, 2, 1 };
  PlValue *t = chain_attr_op (C, "Transpose", "kt", x, "perm", perm, 3, -1);
  PlValue *s = OP ("MatMul", "qk", x, t);
  PlValue *sc = OP ("Mul", "scaled", s, chain_const (C, "scale", C->scale));
  PlValue *p = chain_op (C, "Softmax", "p", 1, &sc);
  PlValue *o = OP ("MatMul", "pv", p, x);
  return OP ("Add", "att", x, o);
}

static PlValue *
block_identities (Chain *C, PlValue *x)   /* 6 nodes a simplifier removes */
{
  int64_t perm[] = { 0, 2, 1 };
  PlValue *a = OP ("Mul", "one", x, chain_const (C, "k1", C->one));
  PlValue *b = OP ("Add", "zero", a, chain_const (C, "k0", C->zero));
  PlValue *t1 = chain_attr_op (C, "Transpose", "t1", b, "perm", perm, 3, -1);
  PlValue *t2 = chain_attr_op (C, "Transpose", "t2", t1, "perm", perm, 3, -1);
  PlValue *r = OP ("Reshape", "same", t2, chain_const (C, "xshape", C->shape_x));
  return chain_op (C, "Identity", "id", 1, &r);
}

static PlValue *
block_gelu (Chain *C, PlValue *x)   /* 8 nodes: tanh-approximated GELU, elementwise */
{
  PlValue *x2 = OP ("Mul", "x2", x, x);
  PlValue *x3 = OP ("Mul", "x3", x2, x);
  PlValue *k = OP ("Mul", "k", x3, chain_const (C, "c1", C->c1));
  PlValue *in = OP ("Add", "in", x, k);
  PlValue *u = OP ("Mul", "u", in, chain_const (C, "c2", C->c2));
  PlValue *t = chain_op (C, "Tanh", "tanh", 1, &u);
  PlValue *t1 = OP ("Add", "t1", t, chain_const (C, "one", C->one));
  PlValue *hx = OP ("Mul", "hx", x, chain_const (C, "half", C->half));
  return OP ("Mul", "gelu", hx, t1);
}

#undef OP

static PlTensor *
chain_tensor (int rank, const int64_t *dims, GRand *rand, double lo, double hi)
{
  PlTensor *t = pl_tensor_new (PL_DTYPE_F32, rank, dims, NULL);
  pl_tensor_fill_random (t, rand, lo, hi);
  return t;
}

static PlTensor *
chain_ints (int n, const int64_t *v)
{
  PlTensor *t = pl_tensor_new (PL_DTYPE_I64, 1, (int64_t[]) { n }, NULL);
  memcpy (t->data, v, sizeof (int64_t) * n);
  return t;
}

PlGraph *
pl_random_chain_graph (int n_nodes, guint32 seed)
{
  pl_ops_init ();
  g_autoptr (GRand) rand = g_rand_new_with_seed (seed);
  Chain c = { .g = pl_graph_new ("chain") }, *C = &c;
  C->g->opset = 17;
  C->w88 = chain_tensor (2, (int64_t[]) { 8, 8 }, rand, -0.1, 0.1);
  C->v8 = chain_tensor (1, (int64_t[]) { 8 }, rand, 0.5, 1.0);
  C->one = pl_tensor_new_scalar (PL_DTYPE_F32, 1.0);
  C->zero = pl_tensor_new_scalar (PL_DTYPE_F32, 0.0);
  C->eps = pl_tensor_new_scalar (PL_DTYPE_F32, 1e-5);
  C->half = pl_tensor_new_scalar (PL_DTYPE_F32, 0.5);
  C->c1 = pl_tensor_new_scalar (PL_DTYPE_F32, 0.044715);
  C->c2 = pl_tensor_new_scalar (PL_DTYPE_F32, 0.7978845608);
  C->scale = pl_tensor_new_scalar (PL_DTYPE_F32, 0.35);
  C->shape_group = chain_ints (4, (int64_t[]) { 2, 4, 2, 4 });
  C->shape_stats = chain_ints (4, (int64_t[]) { 2, 1, 2, 1 });
  C->shape_x = chain_ints (3, (int64_t[]) { 2, 4, 8 });

  PlShape s = pl_shape_from_dims (3, (int64_t[]) { 2, 4, 8 });
  PlValue *x = pl_graph_add_input (C->g, "x", PL_DTYPE_F32, &s, NULL);
  PlValue *(*const blocks[]) (Chain *, PlValue *) = {
    block_layer_norm, block_mlp, block_group, block_attention, block_identities, block_gelu,
  };
  while ((int) C->g->nodes->len < n_nodes)
    {
      x = blocks[g_rand_int_range (rand, 0, G_N_ELEMENTS (blocks))] (C, x);
      C->block++;
    }
  pl_graph_add_output (C->g, x);

  PlTensor *shared[] = { C->w88, C->v8, C->one, C->zero, C->eps, C->half, C->c1, C->c2, C->scale,
                         C->shape_group, C->shape_stats, C->shape_x };
  for (guint i = 0; i < G_N_ELEMENTS (shared); i++)
    pl_tensor_unref (shared[i]);
  return C->g;
}
