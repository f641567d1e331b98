/* calibrate-private.h — what calibrate.c (keys, the cache, the costs) and
 * calibrate-measure.c (the ceilings, the calibration graph, tuned tiles)
 * share. Internal to kernels/. */
#pragma once

#include "calibrate.h"
#include "pool.h"

G_BEGIN_DECLS

#define CEILING_COPY_BYTES ((int64_t) 256 << 20)
#define CEILING_GEMM_N 1024
#define KEY_COPY "ceiling memcpy 256MiB"
#define KEY_GEMM "ceiling sgemm 1024^3"
/* The cpu's arithmetic peak: fused multiply-adds in registers, every
 * thread, the widest vectors the compiler emits (CEILING_FMA_FLOPS of them). */
#define CEILING_FMA_FLOPS ((double) ((int64_t) 1 << 33))
#define KEY_FMA "ceiling fma f32 2^33"

/* Rounds of the calibration graph a measurement takes the least median of
 * (calibrate-measure.c). The cache keeps each entry's count; an entry of
 * fewer rounds (a cache from before rounds) is measured again. */
#define PL_CAL_ROUNDS 3

typedef struct {
  double       ms;
  int          rounds;       /* measured: the rounds it was measured in (cache lines without a count: 1) */
  PlCostSource source;
  bool         in_context;   /* measured inside a whole planned graph: this process only, never cached */
  bool         this_process; /* measured by this process, which does not measure it again (see calibrate.c) */
} Entry;

/* Whether a measured entry is still to be measured: in fewer rounds than
 * PL_CAL_ROUNDS by another process, or in remeasure mode. */
#define PL_CAL_ENTRY_UNSETTLED(cal, e) \
  ((e)->source == PL_COST_MEASURED && ((cal)->remeasure || ((e)->rounds < PL_CAL_ROUNDS && !(e)->this_process)))

struct _PlCalibration {
  PlBackend   backend;
  bool        measure;
  bool          use_cache;   /* analytic mode, but what the cache measured counts (pl_calibration_use_cache) */
  char       *machine;
  char       *dir;
  char       *path;
  GHashTable *entries;     /* key -> Entry*: this machine and backend (cache, measurements, table) */
  GHashTable *unsupported; /* key -> (char*) why: measured as not generated, this process only */
  guint       layouts;     /* bit per PlLayout measured by prepare */
  guint       impls;       /* bit per PlConvImpl */
  bool        have_ceilings;
  double      copy_ms, gemm_ms;   /* the ceilings: 256 MiB memcpy, 1024^3 sgemm */
  double      fma_ms;      /* CEILING_FMA_FLOPS at the cpu's peak; 0: not measured (cuda, or failed) */
  int64_t     llc_bytes;
  int         n_measured;
  GArray     *spreads;     /* double, per entry measured: its rounds' largest median over the least */
  int         n_disturbed_rounds; /* calibration rounds run again: the hypervisor or other processes took CPU time */
  int         n_unsettled;  /* entries measured in rounds that were all disturbed (cached as 1 round) */
  bool        remeasure;   /* prepare measures what the cache has too (pl_calibration_set_remeasure) */
  char       *last_error;
  int         tune_trials; /* > 0: direct convs get a tile from the pruned tile search (cpu) */
  int         n_in_context; /* entries replaced by pl_calibration_measure_graph */
};

/* calibrate.c */
bool pl_cal_direct_supported (const PlConvDesc *c, PlLayout layout);
void pl_cal_set_measured (PlCalibration *cal, const char *key, double ms);
/* The same, measured in `rounds` undisturbed rounds (fewer than
 * PL_CAL_ROUNDS: measured again by the next process). */
void pl_cal_set_measured_rounds (PlCalibration *cal, const char *key, double ms, int rounds);
bool pl_cal_save_cache (PlCalibration *cal, GError **error);
bool pl_cal_conv_desc (const PlNode *conv, PlConvDesc *c);
char *pl_cal_pool_key (const PlPoolDesc *d, PlLayout layout);
bool pl_cal_pool_desc (const PlNode *pool, PlPoolDesc *d);
char *pl_cal_conv_key (const PlConvDesc *c, PlLayout layout, PlConvImpl impl);
/* A direct conv's measured entry on the cpu names its tile and its kernel
 * (c in layout): "<key> tile XxYxZ src HHHHHHHH" (pl_conv_direct_source_hash). */
char *pl_cal_tile_key (const char *key, const PlConvDesc *c, PlLayout layout, const int64_t tile[3]);
bool pl_cal_value_dims4 (const PlValue *v, int64_t *d);
char *pl_cal_transform_key_dims (const int64_t *d, PlDType dtype, PlLayout from, PlLayout to);

/* The measured tiles of a direct conv (c in layout) on the cpu: its entries
 * "<key> tile XxYxZ src H" whose H is the kernel the generator writes now.
 * key points into cal->entries. */
typedef struct {
  const char *key;
  int64_t     tile[3];
} PlCalTile;
GArray *pl_cal_direct_tiles (const PlCalibration *cal, const char *key, const PlConvDesc *c, PlLayout layout);

/* calibrate-measure.c */
double pl_cal_bandwidth (PlCalibration *cal);
double pl_cal_gemm_rate (PlCalibration *cal);

G_END_DECLS
