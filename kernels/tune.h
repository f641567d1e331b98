/* tune.h — the autotuner for the generated direct convolution's tile
 * (seed 003): the full space of tiles against the space pruned by the
 * red-blue pebble rule (conv-direct.h), best time so far against trials. */
#pragma once

#include "graph.h"
#include "layout.h"

G_BEGIN_DECLS

typedef struct {
  int64_t tile[3];     /* x (width), y (height), z (output channels) */
  double  ms;          /* fastest of the timed repeats */
  double  best_ms;     /* best time over the trials so far, this one included */
} PlTuneTrial;

typedef struct {
  int      max_trials;   /* per search; 0: the whole space */
  int      repeat;       /* timed runs per trial (the fastest counts); 0: 3 */
  guint32  seed;         /* order of the full search's random walk */
  int      rounds;       /* head-to-head rounds of the two best tiles; 0: 7 */
  bool     pruned_only;  /* only the pruned search (no full search, no head to head) */
  const char *cache_dir; /* compiled kernels; NULL: the default */
} PlTuneOptions;

typedef struct {
  char    *conv;           /* node name */
  PlLayout layout;
  char    *shape;          /* "N,C,H,W -> K,OH,OW k3x3 s1" */
  int64_t  pebble_tile[3]; /* the rule's tile */
  int      full_space, pruned_space;   /* sizes of the two spaces */
  GArray  *full;           /* PlTuneTrial, in the order tried */
  GArray  *pruned;
  int64_t  best_full_tile[3], best_pruned_tile[3];
  double   best_full_ms, best_pruned_ms;
  /* The two best tiles timed again side by side: the median over `rounds`
   * rounds of each tile's fastest of `repeat` runs, the two alternating
   * within a round. A search's best is the minimum of many noisy trials, so
   * the search with more trials looks faster by noise alone; this is the
   * fair comparison (one tile when the searches agree: equal). 0 when a
   * search made no trial. */
  double   head_full_ms, head_pruned_ms;
  int      rounds;
  double   gflop;          /* the conv's work in GFLOP (2 per multiply-add) */
  double   fast_mem_s, reuse_r;   /* the pebble rule's S (elements per unit) and R */
  char    *verified;       /* how the output was checked ("4096 sampled outputs") */
} PlTuneResult;

typedef struct {
  int64_t tile[3];     /* x, y, z */
} PlTuneTile;

/* The two spaces of the Conv node in layout (GArrays of PlTuneTile, sorted
 * by x, y, z; free with g_array_unref) and the pebble rule's tile, for
 * this machine's fast memory and cores. The pruned space is a subset of
 * the full one and holds the pebble tile. */
bool          pl_tune_spaces     (const PlNode *conv, PlLayout layout, GArray **full, GArray **pruned,
                                  int64_t pebble_tile[3], GError **error);
/* Tunes the Conv node `conv` (static shapes) in layout, on the CPU. */
PlTuneResult *pl_tune_conv       (const PlNode *conv, PlLayout layout, const PlTuneOptions *opts, GError **error);
void          pl_tune_result_free (PlTuneResult *r);
/* The result as JSON (for --json and the workbench). */
char         *pl_tune_result_json (const PlTuneResult *r);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PlTuneResult, pl_tune_result_free)

G_END_DECLS
