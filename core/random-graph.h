/* random-graph.h — random well-formed graphs, for the fuzzer and for
 * benchmarks on large graphs.
 *
 * pl_random_graph() builds a small f32 graph from the op set the passes care
 * about (broadcasting elementwise ops, reshapes, reductions, matmuls, concat,
 * slice) and the multi-node idioms they look for (reduce(reshape(x)),
 * reshape(f(reshape(x), broadcast(y))), linear + bias + activation, layer
 * norm written out) and the index ops (gathers, scatters, CumSum, TopK,
 * Einsum). Every node is shape-inferred, every tensor is small, and
 * the values stay in a numerically tame range on pl_random_inputs(), so the
 * reference interpreter runs a graph in milliseconds and a pass that keeps
 * the meaning keeps the outputs within the pass manager's check tolerance.
 * The same options and seed always give the same graph.
 *
 * pl_random_chain_graph() builds a large graph (100,000 nodes and more) in
 * linear time from repeated realistic blocks on small tensors.
 */
#pragma once

#include "graph.h"

G_BEGIN_DECLS

/* Which kinds of ops a random graph draws from. */
typedef enum {
  PL_RANDOM_ELEMENTWISE = 1 << 0, /* unary and binary elementwise ops with numpy broadcasting */
  PL_RANDOM_SHAPE       = 1 << 1, /* Reshape, Transpose, Squeeze, Unsqueeze, Flatten, Expand */
  PL_RANDOM_REDUCE      = 1 << 2, /* Reduce*, Softmax, LogSoftmax, LayerNormalization */
  PL_RANDOM_MATMUL      = 1 << 3, /* MatMul, Gemm */
  PL_RANDOM_CONCAT      = 1 << 4, /* Concat, Slice */
  PL_RANDOM_PATTERNS    = 1 << 5, /* multi-node idioms the passes rewrite */
  PL_RANDOM_INDEX       = 1 << 6, /* Gather*, GatherND, CumSum, TopK, ScatterND/Elements, Einsum (constant indices) */
  PL_RANDOM_ALL         = (1 << 7) - 1,
} PlRandomOps;

typedef struct {
  guint32 seed;
  int     n_nodes;    /* op nodes to add (an idiom may overshoot by a few); default 20 */
  int     max_rank;   /* of inputs and op outputs (weights may be 2-D), 1..PL_MAX_RANK; default 4 */
  int     max_dim;    /* largest dim of inputs and constants (>= 1); default 5 */
  int     n_inputs;   /* graph inputs, 1..8; default 2 */
  guint   ops;        /* PlRandomOps flags; 0 means all */
  int64_t max_numel;  /* no tensor gets more elements; default 1024 */
} PlRandomGraphOptions;

void     pl_random_graph_options_init (PlRandomGraphOptions *o);

/* A random graph (opset 17): f32 inputs, small constants, 1 to 4 outputs,
 * every node inferred. o may be NULL for the defaults. */
PlGraph *pl_random_graph              (const PlRandomGraphOptions *o);

/* A graph of at least n_nodes nodes (fewer than n_nodes + 16) built from
 * blocks chained through one [2, 4, 8] f32 tensor: layer norm written out,
 * a residual MLP, reshape/reduce group statistics, attention-like
 * softmax(x x^T) x, and identities a simplifier removes. seed picks the
 * order of the blocks. Linear time; constants share their data. */
PlGraph *pl_random_chain_graph        (int n_nodes, guint32 seed);

G_END_DECLS
