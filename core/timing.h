/* timing.h — timing analysis of a dataflow graph (seed 004, IBM Large Model
 * Support; DESIGN.md §1.5): when each tensor arrives, when each node needs
 * its inputs, and how long each input waits in between. The swap pass picks
 * the tensors to move out of device memory from the waits.
 *
 *   latency(n)   from the cost model (bytes moved / bandwidth + flops / peak
 *                rate + a fixed launch cost) or from measured per-node times
 *   TAT(v)       tensor arrival time: 0 for graph inputs and constants,
 *                else TRT(producer) + latency(producer)
 *   TRT(n)       tensor required time of node n (= its start): the latest
 *                TAT of its inputs and finish of its control predecessors
 *   TTS(v, n)    tensor timing slack of the input edge: TRT(n) - TAT(v)
 *
 * Two models. The seed's (serial = false): unbounded parallelism, every
 * node starts as soon as its inputs are there. One GPU (serial = true):
 * kernels run one at a time in schedule order on a compute stream, SwapOut
 * copies on a device-to-host stream and SwapIn copies on a host-to-device
 * stream, each in order; a node starts when its inputs are there and its
 * stream is free. Views (Reshape, Squeeze, ...) take no time and no stream.
 *
 * One pass over the schedule: linear in nodes + edges. Times are in
 * milliseconds.
 */
#pragma once

#include "graph.h"

G_BEGIN_DECLS

typedef struct {
  double         device_gbps;    /* device memory bandwidth, GB/s (default 2000) */
  double         device_tflops;  /* peak arithmetic rate, TFLOP/s (default 50) */
  double         link_gbps;      /* host link of SwapOut / SwapIn copies, GB/s (default 25) */
  double         launch_us;      /* fixed cost of every kernel and copy, µs (default 5) */
  bool           serial;         /* one compute stream + two copy streams (default false: the seed's dataflow) */
  int64_t        sym_size;       /* size of symbolic dims (default 1) */
  /* Measured times (e.g. a run report's per-kernel medians): node ids and
   * milliseconds; nodes not listed use the cost model. Not owned. */
  const guint32 *measured_ids;
  const double  *measured_ms;
  int            n_measured;
} PlTimingOptions;

/* One input edge (value, consumer) of the hypergraph — or, with consumer
 * NULL, a graph output, which is required at the end (TRT = makespan). */
typedef struct {
  const PlValue *value;     /* NULL for an omitted optional input */
  const PlNode  *consumer;  /* NULL for a graph output */
  int            index;     /* consumer's input slot; for a graph output, its position */
  int64_t        bytes;     /* size of value */
  double         tat;       /* arrival time of value */
  double         trt;       /* required time: the consumer's start (graph outputs: the makespan) */
  double         tts;       /* slack: trt - tat */
} PlTimingEdge;

typedef struct {
  const PlGraph *graph;        /* the analysed graph (not owned; do not change it while in use) */
  PlTimingOptions options;     /* a copy (measured_* cleared: they may not outlive the call) */
  int            n_steps;
  PlNode       **order;        /* the schedule (pl_graph_topo_order) */
  guint32        n_node_ids;   /* the by-node-id arrays' length */
  guint32        n_value_ids;  /* the by-value-id arrays' length */
  int           *step;         /* by node id: position in order; -1 for ids not in the graph */
  double        *latency;      /* by node id, ms; NAN for ids not in the graph */
  double        *trt;          /* by node id: start time (the seed's TRT), ms */
  double        *finish;       /* by node id: trt + latency */
  double        *tat;          /* by value id: arrival time, ms; NAN for ids not in the graph */
  PlTimingEdge  *edges;        /* every input slot of every node in schedule order, then the graph outputs */
  int            n_edges;
  int            n_output_edges;  /* the last n_output_edges of edges */
  int           *first_edge;   /* by node id: index in edges of its input 0 */
  double         makespan;     /* the latest finish */
  int            n_measured;   /* nodes whose latency came from measurements */
  bool           assumed_sizes;/* symbolic dims took sym_size */
} PlTimingAnalysis;

void              pl_timing_options_init   (PlTimingOptions *o);
/* Analyses g. Fails only when g cannot be scheduled (a cycle). o may be NULL
 * for the defaults. */
PlTimingAnalysis *pl_timing_analyze        (const PlGraph *g, const PlTimingOptions *o, GError **error);
void              pl_timing_analysis_free  (PlTimingAnalysis *t);

/* Lookups by id; NAN (or NULL) for ids not in the graph. */
double              pl_timing_tat      (const PlTimingAnalysis *t, guint32 value_id);
double              pl_timing_trt      (const PlTimingAnalysis *t, guint32 node_id);
double              pl_timing_latency  (const PlTimingAnalysis *t, guint32 node_id);
double              pl_timing_finish   (const PlTimingAnalysis *t, guint32 node_id);
double              pl_timing_tts      (const PlTimingAnalysis *t, guint32 node_id, int input_index);
const PlTimingEdge *pl_timing_edge     (const PlTimingAnalysis *t, guint32 node_id, int input_index);

/* The cost model's latency of one node, ms (SwapOut/SwapIn: a copy over the
 * host link; views: 0). */
double   pl_timing_model_latency  (const PlNode *node, const PlTimingOptions *o, bool *assumed);
/* Time of copying bytes over the host link, ms, launch cost included. */
double   pl_timing_copy_ms        (int64_t bytes, const PlTimingOptions *o);

/* A size as the table prints it: "262144 bytes" -> "256.0 KiB" (IEC units,
 * plain spaces). g_free it. */
char    *pl_timing_size_text      (int64_t bytes);
/* A text table: a summary line, then the top edges by slack, largest first
 * (value, size, dev/host, producer, consumer, TAT, TRT, TTS); top <= 0: every edge. */
char    *pl_timing_table          (const PlTimingAnalysis *t, int top);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PlTimingAnalysis, pl_timing_analysis_free)

G_END_DECLS
