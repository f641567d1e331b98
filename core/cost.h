/* cost.h — the static cost model: what a version of a graph would cost to
 * run, estimated without running it. Used by the pass manager's per-step
 * statistics and, later, by the layout and swap passes. */
#pragma once

#include "graph.h"

G_BEGIN_DECLS

typedef struct {
  int64_t nodes;          /* top-level nodes */
  int64_t kernels;        /* estimated kernel launches: one per top-level node that computes
                           * (a fusion node is one); metadata-only ops (Reshape, Squeeze,
                           * Unsqueeze, Flatten, Identity, Shape, Size, Constant) launch none */
  int64_t reshape_bytes;  /* bytes that Reshape/Flatten nodes move (their output size): on hardware
                           * with vector memory a reshape is a copy (seed 000) */
  int64_t bytes_moved;    /* bytes each kernel reads and writes through memory, summed */
  int64_t flops;          /* floating-point operations (MatMul/Gemm/Conv: 2 per MAC; others 1 per output element) */
  int64_t peak_bytes;     /* peak of the memory estimate (schedule.h) */
  bool    assumed_sizes;  /* symbolic dims took sym_size */
} PlGraphStats;

/* Whether a node launches no kernel when run on its own (a view or metadata). */
bool  pl_node_is_metadata_only (const PlNode *node);
void  pl_graph_stats           (const PlGraph *g, int64_t sym_size, PlGraphStats *stats);
/* FLOPs of one node: 2 per multiply-accumulate for MatMul/Gemm/Conv/
 * ConvTranspose, one per output element for other computing ops, 0 for
 * metadata-only ones. Sets *assumed when symbolic dims took sym_size. */
int64_t pl_node_flops          (const PlNode *node, int64_t sym_size, bool *assumed);

/* Bytes one node must move through memory at least: each input read once
 * and each output written once (what bytes_moved sums). Sets *assumed (may
 * be NULL) when symbolic dims took sym_size. */
int64_t pl_node_bytes          (const PlNode *node, int64_t sym_size, bool *assumed);

G_END_DECLS
