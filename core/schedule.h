/* schedule.h — a schedule (topological order honouring control edges),
 * liveness of every value in it, and the memory-over-time curve and peak.
 *
 * Device and host memory: the output of a SwapOut node (ops-memory.c) lives
 * in host memory (pl_value_on_host); every other value is device memory.
 * live_bytes / peak_bytes count device memory only; host values have their
 * own curve (host_live_bytes, host_peak_bytes).
 *
 * In-place sharing: an elementwise node may write its output over an input
 * that it reads for the last time (pl_in_place_input). The runtime's memory
 * plan (kernels/runtime.c) and this profile follow that one rule, so that
 * the planned peak is the runtime's: such an output adds no bytes. */
#pragma once

#include "graph.h"

G_BEGIN_DECLS

typedef struct {
  int       n_steps;          /* = number of nodes in the schedule */
  PlNode  **order;            /* the schedule */
  int64_t  *live_bytes;       /* device bytes live while step i runs (its inputs, its outputs, everything still needed) */
  int64_t   peak_bytes;       /* max of live_bytes, and of the graph inputs alone */
  int       peak_step;        /* step where the peak is reached */
  int64_t   input_bytes;      /* graph inputs */
  int64_t   param_bytes;      /* constants (not counted in live_bytes) */
  bool      assumed_sizes;    /* some dims were symbolic/unknown and took sym_size */
  int64_t  *host_live_bytes;  /* host-memory bytes live while step i runs (swapped-out tensors) */
  int64_t   host_peak_bytes;  /* max of host_live_bytes */
  int       n_in_place;       /* outputs written over an input (pl_in_place_input): no bytes of their own */
} PlMemoryProfile;

/* Bytes of a value's tensor, with symbolic/unknown dims taken as sym_size;
 * sets *assumed when it had to assume. */
int64_t          pl_value_bytes          (const PlValue *v, int64_t sym_size, bool *assumed);
/* Whether v lives in host memory: the output of a SwapOut node. */
bool             pl_value_on_host        (const PlValue *v);
/* In-place sharing, the one rule of this profile and of the runtime's
 * memory plan: the input of node whose device memory its output `out` may
 * take over (each element written over the element it was computed from),
 * or -1. node is elementwise — an op of category elementwise, or a fusion
 * whose body holds nothing else — and the input has out's shape, element
 * size and layout; it is last read by node (dies[k] for input k: the
 * caller's schedule says so) and is neither a graph input or output, a
 * constant nor a host value (nor is out). Of several, the first; a value
 * goes to one output only (the earlier outputs choose first). */
int              pl_in_place_input       (const PlNode *node, int out, const bool *dies);
/* Schedules g and computes its memory curve. Graph inputs are live until
 * their last use; outputs until the end; intermediates from the step that
 * produces them to their last use, except that an output written in place
 * over an input (pl_in_place_input) adds nothing at the step that writes
 * it. Constants are reported separately. */
PlMemoryProfile *pl_memory_profile       (const PlGraph *g, int64_t sym_size, GError **error);
void             pl_memory_profile_free  (PlMemoryProfile *p);
/* The values live while step runs in p, the profile of g: device and host
 * alike (pl_value_on_host tells them apart), constants left out, in g's
 * value order; an output written in place over an input is not listed at
 * its own step (its input is: it is that memory). The device ones' bytes
 * sum to p->live_bytes[step] (with the same sym_size). Empty when step is
 * out of range. g_ptr_array_unref it. */
GPtrArray       *pl_memory_profile_live_at (const PlMemoryProfile *p, const PlGraph *g, int step);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PlMemoryProfile, pl_memory_profile_free)

G_END_DECLS
