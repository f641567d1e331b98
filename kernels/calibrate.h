/* calibrate.h — the cost of a convolution and of a pool in each layout and
 * of the transforms between layouts, for the `layout` pass (seed 003).
 *
 * Measured: a calibration run times, on the chosen backend, the generated
 * and library kernels of each conv shape in each layout (and each transform),
 * and caches the medians per machine in $XDG_CACHE_HOME/passlab/calibration.txt
 * (PASSLAB_CACHE_DIR overrides the directory). Analytic fallback, when
 * nothing is measured: bytes and FLOPs of the kernel against this machine's
 * measured ceilings (memcpy bandwidth, GEMM FLOP/s; measured once, cached).
 */
#pragma once

#include "graph.h"
#include "kernel-plan.h"
#include "runtime.h"

G_BEGIN_DECLS

typedef enum {
  PL_COST_MEASURED,   /* from a calibration run (this run or the cache) */
  PL_COST_ANALYTIC,   /* from bytes / FLOPs and the ceilings */
  PL_COST_TABLE,      /* given: pl_calibration_set / pl_calibration_load_table (tests, what-ifs) */
} PlCostSource;

/* "measured", "analytic", "table" */
const char    *pl_cost_source_name (PlCostSource source);

typedef struct {
  double       ms;
  PlCostSource source;
} PlCost;

typedef struct _PlCalibration PlCalibration;

/* measure: run calibrations for what the cache lacks (else analytic).
 * backend: PL_BACKEND_CPU or PL_BACKEND_CUDA (cuda without a GPU: error). */
PlCalibration *pl_calibration_new     (PlBackend backend, bool measure, GError **error);
void           pl_calibration_free    (PlCalibration *cal);
/* Without measuring: use what the cache holds from earlier calibrations
 * (analytic for the rest) — for comparing predictions with a run. */
void           pl_calibration_use_cache (PlCalibration *cal);
/* Measures, in one batch, every (conv, layout, impl) of the graph's convs, every
 * (pool, layout) of its pools and every transform their values may need that
 * the cache lacks; saves the cache. */
bool           pl_calibration_prepare (PlCalibration *cal, const PlGraph *g, GError **error);
/* Cost of the Conv node in layout (X and Y) with impl (tile: the best known).
 * INFINITY: it cannot run so (direct unsupported, or measured as a fallback).
 * A conv that is not 2-d with static shapes: 0 in NCHW gemm, INFINITY otherwise. */
PlCost         pl_calibration_conv    (PlCalibration *cal, const PlNode *conv, PlLayout layout, PlConvImpl impl);
/* Cost of a pooling node (MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool: pool.h)
 * with X and Y in layout. A pool the runtime cannot generate or that is not 2-d with static
 * shapes: 0 in NCHW, INFINITY otherwise. Analytic: its bytes at the memcpy bandwidth. */
PlCost         pl_calibration_pool    (PlCalibration *cal, const PlNode *pool, PlLayout layout);
/* Cost of transforming value v (rank 4) from one layout to another (0 when equal). */
PlCost         pl_calibration_transform (PlCalibration *cal, const PlValue *v, PlLayout from, PlLayout to);
/* "cpu <model>, <n> threads" — what the cache is keyed by. */
const char    *pl_calibration_machine (const PlCalibration *cal);

/* --- beyond the contract: what the layout pass and the tests use ------------------------ */

/* The cache file (PASSLAB_CACHE_DIR or $XDG_CACHE_HOME/passlab, /calibration.txt). */
const char    *pl_calibration_path    (const PlCalibration *cal);
/* Which layouts (bit per PlLayout) and impls (bit per PlConvImpl) prepare measures (default: all). */
void           pl_calibration_restrict (PlCalibration *cal, guint layouts, guint impls);
/* Cache keys: "conv 1x64x56x56 k64x3x3 s1,1 p1,1,1,1 d1,1 g1 f32 NHWC gemm" (NULL unless a 2-d
 * conv with static shapes); "transform 1x64x56x56 f32 NCHW>NHWC" (NULL unless v is static rank 4). */
char          *pl_calibration_conv_key      (const PlNode *conv, PlLayout layout, PlConvImpl impl);
char          *pl_calibration_transform_key (const PlValue *v, PlLayout from, PlLayout to);
/* "pool max 1x64x112x112 k3x3 s2,2 p1,1,1,1 d1,1 o56x56 f32 NHWC" ("avg", "avg-pads" for
 * count_include_pad; "pool global-avg 1x512x7x7 f32 NHWC"); NULL unless a 2-d pool with static
 * shapes that the runtime generates. */
char          *pl_calibration_pool_key      (const PlNode *pool, PlLayout layout);
/* Sets an entry (ms may be INFINITY: unsupported). Entries of source TABLE are used in
 * both modes and never written to the cache. */
void           pl_calibration_set     (PlCalibration *cal, const char *key, double ms, PlCostSource source);
/* Reads `key<TAB>ms` lines ('#' comments, "inf" allowed) as TABLE entries. */
bool           pl_calibration_load_table (PlCalibration *cal, const char *path, GError **error);
/* The cost of moving bytes (read + written) at the memcpy ceiling (analytic). */
PlCost         pl_calibration_bytes   (PlCalibration *cal, int64_t bytes);
/* The cost model's prediction for the kernel that runs node in a planned
 * graph, to set against the kernel's measured time (seed 003 asks for both):
 * a Conv, alone or the one in a fusion's body (the conv's own cost: the
 * epilogue is not counted), in its output's layout and impl; or a
 * LayoutTransform. False for any other node. what: "Conv",
 * "Conv+epilogue" or "LayoutTransform"; how (g_free it): "NHWC direct",
 * "NCHW>NHWC". Nothing is measured here: a calibration without measuring
 * that uses the cache (pl_calibration_use_cache) predicts what the layout
 * pass predicted. */
bool           pl_calibration_predict_kernel (PlCalibration *cal, const PlNode *node, PlCost *cost,
                                              const char **what, char **how);
/* The machine's ceilings (measured once, cached): memcpy GB/s (read + write), GEMM GFLOP/s. */
void           pl_calibration_ceilings (PlCalibration *cal, double *gbps, double *gflops);
/* The cpu's arithmetic peak in GFLOP/s (f32 fused multiply-adds in
 * registers on every thread: what no kernel can beat; a GEMM ceiling is
 * only what BLAS reaches); measured once, cached. 0 on cuda or when the
 * measurement failed. */
double         pl_calibration_fma_peak (PlCalibration *cal);
/* The tile of a direct conv's cost (cpu: a tuned tile measured faster, else the
 * pebble rule's; cuda: 0s, the kernel chooses). */
void           pl_calibration_conv_tile (PlCalibration *cal, const PlNode *conv, PlLayout layout, int64_t tile[3]);
/* trials > 0 (cpu): before measuring, prepare runs the pebble-pruned tile
 * search (tune.h, that many trials) for each direct conv and layout not
 * searched before, and measures the best tile it finds beside the pebble
 * rule's; the conv's direct cost is then the faster of the two and
 * pl_calibration_conv_tile its tile. 0 (the default): the pebble tile. */
void           pl_calibration_set_tuning (PlCalibration *cal, int trials);
/* Runs g (a planned graph, unfused) on the backend and replaces the cost of
 * each Conv, pool and LayoutTransform in it, as it stands (layouts, impl,
 * tile), by its kernel's median time there: costs in context, where the
 * calibration's are of each kernel alone. For this calibration only (never
 * cached). Returns the entries replaced, -1 on error. */
int            pl_calibration_measure_graph (PlCalibration *cal, const PlGraph *g, GError **error);
/* Entries replaced by pl_calibration_measure_graph so far. */
int            pl_calibration_n_in_context (const PlCalibration *cal);
/* Entries measured (not from the cache) by this calibration. A measurement
 * is the least of three rounds' medians (calibrate-measure.c): how far the
 * rounds lay apart, as the largest round's over the least, the median and
 * the largest of that over the entries measured (false: none); the rounds
 * run again because the hypervisor or other processes of this machine took
 * CPU time during them; and the entries whose every round was so disturbed
 * (kept, and cached as one round, so that the next process's calibration
 * measures them again: this process keeps what it measured). */
int            pl_calibration_n_measured (const PlCalibration *cal);
bool           pl_calibration_round_spread (const PlCalibration *cal, double *median, double *max);
int            pl_calibration_n_disturbed_rounds (const PlCalibration *cal);
int            pl_calibration_n_unsettled (const PlCalibration *cal);
/* remeasure: prepare measures every entry the graph needs, cached or not
 * (direct convs: every tile the cache has for the current kernel), and the
 * new measurements replace the cache's. Table entries still win. */
void           pl_calibration_set_remeasure (PlCalibration *cal, bool remeasure);
/* Forgets the entries this process read or measured, so that later
 * calibrations read the cache as a new process would (and measure its
 * unsettled entries again). */
void           pl_calibration_forget_process_view (void);
/* The last measurement error (a batch that failed and was retried branch by branch), or NULL. */
const char    *pl_calibration_last_error (const PlCalibration *cal);
/* Why a measured entry is unsupported (it ran as a fallback, or failed), or NULL. */
const char    *pl_calibration_unsupported_reason (const PlCalibration *cal, const char *key);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PlCalibration, pl_calibration_free)

G_END_DECLS
