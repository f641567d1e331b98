/* stitch-private.h — what the two halves of the stitch pass share:
 * stitch.c (classifying ops, finding regions, absorbing earlier fusions,
 * writing the plan onto the fusion node and into the report, the pass
 * itself) and stitch-plan.c (groups, thread mapping, phases, data reuse and
 * shared-memory offsets of one region). Not part of the public API.
 */
#pragma once

#include "graph.h"

G_BEGIN_DECLS

#define WARP         32
#define REGS_PER_SM  65536  /* 32-bit registers per multiprocessor (every NVIDIA GPU since Kepler) */
#define MAX_LISTED   16     /* names or edges listed per report line */

typedef enum {
  K_OUT,        /* not stitched: cuts regions */
  K_ELEM,       /* elementwise (numpy broadcasting) */
  K_EXPAND,     /* Expand with a constant shape */
  K_VIEW,       /* Reshape, Squeeze, Unsqueeze, Flatten with constant operands */
  K_TRANSPOSE,
  K_REDUCE,     /* a row reduction: a backbone, one result per row */
  K_COMPOSITE,  /* Softmax, LogSoftmax, Hardmax, LayerNormalization: a backbone with a row-shaped result */
} Kind;

typedef enum { L_NONE, L_REGISTER, L_SHARED, L_GLOBAL } Level;

/* A backbone's input dims without the unit ones, each reduced or kept. */
typedef struct {
  int     n;
  int64_t dims[PL_MAX_RANK];
  guint8  reduced[PL_MAX_RANK];
  int64_t rows, row_len;
} RowSpace;

typedef struct {
  int64_t rows, row_len, block, rows_per_block, blocks_per_row, grid;
} Mapping;

typedef struct {
  bool    cuda;
  int64_t units;          /* free multiprocessors, or cores */
  int64_t max_threads;    /* per block, after the register limit */
  int64_t threads_per_sm;
  int64_t regs;           /* per thread, 0: not limiting */
  int64_t shared_limit;
} Device;

/* Per graph (the outer graph, then each fusion body): what each node is. */
typedef struct {
  const Device  *dev;
  guint32  n_ids;
  guint8  *kind;       /* Kind by node id */
  guint8  *barriers;   /* backbones: block barriers inside (reduction 1, softmax/layer norm 2) */
  int     *space;      /* backbones: index into spaces, else -1 */
  GArray  *spaces;     /* RowSpace */
  int     *loc;        /* member index in the region being planned, by node id */
  guint   *loc_stamp;
  guint    stamp;
} Ctx;

/* --- a region being planned ---------------------------------------------------- */

typedef struct {
  int      parent;     /* union-find */
  int      primary;    /* member index of its first backbone, -1: none */
  RowSpace space;
  Mapping  map;
  bool     capped;     /* fewer blocks than its rows need: blocks loop over rows */
  int      order;      /* index in the attributes (0: the kernel's mapping) */
} Group;

typedef struct {
  PlValue *v;
  Level    level;
  int      def, end;   /* member positions: produced (or first read), last read */
  int      producer;   /* member index; -1: a region input cached in shared memory */
  int64_t  bytes;      /* shared: per block */
  int64_t  offset;     /* shared: offset in the block's shared memory */
  bool     demoted;    /* shared memory was full: global instead */
} Val;

typedef struct {
  int   from, to;
  Level level;
} Edge;

typedef struct {
  int       n;
  PlNode  **m;          /* members (the body's nodes), topological order */
  int      *grp;        /* group of each member (a root after assign_groups) */
  bool     *aligned;    /* row-aligned with its group's backbone */
  bool     *input_view; /* a view/Expand/Transpose of region inputs: readers re-read the inputs */
  int      *phase, *phase_out;
  int      *grid_before; /* by phase: grid barriers up to it (prefix count) */
  GArray   *groups;     /* Group */
  int       n_groups;
  int      *by_order;   /* group roots in attribute order */
  GArray   *vals;       /* Val, in order of definition */
  GArray   *edges;      /* the first edges, for the report */
  int64_t   edge_count[4];
  bool      barrier;
  int64_t   grid, shared_bytes;
  int       n_buffers, n_demoted;
} Region;

static inline Kind
kind_of (const Ctx *c, const PlNode *node)
{
  return (Kind) c->kind[node->id];
}

static inline bool
is_backbone (const Ctx *c, const PlNode *node)
{
  return kind_of (c, node) == K_REDUCE || kind_of (c, node) == K_COMPOSITE;
}

/* node's index among the stamped members, or -1. */
static inline int
member (const Ctx *c, const PlNode *node)
{
  return node && node->id < c->n_ids && c->loc_stamp[node->id] == c->stamp ? c->loc[node->id] : -1;
}

static inline Group *
group_at (Region *r, int i)
{
  return &g_array_index (r->groups, Group, i);
}

/* stitch.c: stamps nodes[0..n) as the members of the region being looked at. */
void pl_stitch_stamp_members (Ctx *c, PlNode *const *nodes, int n);

/* stitch-plan.c: plans the region r->m[0..n) (r zeroed but for n and m):
 * groups, mappings, phases, reuse, shared memory, grid. */
void pl_stitch_plan_region   (Ctx *c, Region *r);
void pl_stitch_region_clear  (Region *r);

G_END_DECLS
