/* swap-private.h — what the files of the swap pass share (swap.c holds the
 * design and the pass): its parameters, the tensors it plans to move
 * (candidates) and their restorations, what the budget search chose, and
 * one entry per step: swap-plan.c chooses the tensors and plans their
 * restorations, swap-rewrite.c inserts the copies into the graph,
 * swap-peak.c measures a plan's device peak and the schedule's floor,
 * swap-budget.c fits a memory budget, swap-report.c writes the report.
 * Internal to passes/. */
#pragma once

#include "builtin-passes.h"
#include "schedule.h"
#include "timing.h"

G_BEGIN_DECLS

typedef enum { MODE_SWAP, MODE_COMPRESS, MODE_BOTH } Mode;

typedef struct {
  double          th_tts;        /* ms; < 0: per tensor, its round-trip time */
  int64_t         th_s;          /* bytes */
  int             n;             /* most tensors; 0: no limit */
  Mode            mode;
  int             prefetch_distance;
  bool            serialize;
  bool            outputs;
  int64_t         workspace;     /* bytes a convolution needs beside its inputs and outputs */
  PlTimingOptions timing;
} Params;

typedef struct {
  guint32 node_id;
  int     index;
} Use;

/* One restoration: a SwapIn and/or DecompressFp16 read by `uses`. */
typedef struct {
  GArray *uses;        /* Use, the far consumers of this group */
  int     c_step;      /* the first consumer's step */
  int     q_step;      /* the prefetch trigger's step */
} Restore;

typedef struct {
  guint32 value_id;
  char   *name;
  int64_t bytes;
  bool    compress, swap;   /* the reduction: CompressFp16, SwapOut, or both */
  int     anchor_step;      /* reductions go after this step (P), or before it for graph inputs */
  bool    anchor_before;
  int     serialize_step;   /* -1: none */
  GArray *restores;         /* Restore */
  bool    to_output;        /* the graph output is delivered from host memory */
  double  slack;            /* the largest slack among the moved edges */
  double  threshold;        /* the slack threshold it passed */
} Candidate;

typedef struct {
  int     serialize, prefetch, restorations, outputs;
  int64_t swapped, compressed;
} Counts;

/* What the budget search chose (swap-budget.c), or, without a budget, the
 * plan swap.c made; the report describes it. */
typedef struct {
  GPtrArray *cands;   /* the chosen level's candidates (owned) */
  guint      k;       /* how many to apply */
  double     th_tts;
  int64_t    th_s;
  int        prefetch_distance;
  int        n_tight; /* tight steps the restorations were split at */
  int64_t    peak;    /* planned peak with them */
  bool       met;
} Choice;

/* The device bytes of the reduced form, and what one restoration copies. */
static inline int64_t
pl_swap_kept_bytes (const Candidate *c)
{
  return c->swap ? 0 : c->bytes / 2;
}

static inline int64_t
pl_swap_copied_bytes (const Candidate *c)
{
  return c->compress ? c->bytes / 2 : c->bytes;
}

/* swap-plan.c: every tensor that passes the thresholds, planned (its
 * restorations placed, restorations split at the `tight` steps), the
 * largest first; free the array to free them. */
GPtrArray *pl_swap_plan_candidates (const PlTimingAnalysis *t, const Params *p, double th_tts, int64_t th_s,
                                    const GArray *tight);

/* swap-rewrite.c: applies the first k candidates to g (t's graph or a copy
 * of it); counts (may be NULL) gets what was inserted. */
bool pl_swap_apply_plan (PlGraph *g, const PlTimingAnalysis *t, GPtrArray *cands, guint k, Counts *counts,
                         GError **error);

/* swap-peak.c: what a plan leaves live on the device. */
bool    pl_swap_runs_conv      (const PlNode *node);
int64_t pl_swap_planned_peak   (const PlMemoryProfile *mem, int64_t workspace, int *at);
bool    pl_swap_peak_with      (const PlGraph *g, const PlTimingAnalysis *t, const Params *p, GPtrArray *cands,
                                guint k, int64_t *peak, int *at, GError **error);
/* The floor: the most one step of t's schedule reads and writes (with
 * `workspace` where it runs a convolution); *at: that step, -1 if none. */
int64_t pl_swap_schedule_floor (const PlTimingAnalysis *t, int64_t workspace, int *at);

/* swap-budget.c: the fewest candidates whose planned peak fits budget, or
 * the best plan when none does; best->cands is the caller's. */
bool pl_swap_fit_budget (const PlGraph *g, const PlTimingAnalysis *t, const Params *p, int64_t budget,
                         int64_t baseline, Choice *best, GError **error);

/* swap-report.c: the lines before the rewrite (thresholds and how many
 * tensors move), the moved tensors, and the result (what moved, the peaks,
 * the budget and the floor, the predicted time, the control edges, and the
 * report's counts). */
void pl_swap_report_thresholds (PlPassReport *report, const Params *p, const Choice *c);
void pl_swap_report_tensors    (PlPassReport *report, const PlTimingAnalysis *t, const Choice *choice);
void pl_swap_report_result     (PlPassReport *report, const Params *p, const Choice *choice, const Counts *counts,
                                int64_t budget, const PlTimingAnalysis *t, int64_t peak_before,
                                const PlTimingAnalysis *t_after, const PlMemoryProfile *after);

G_END_DECLS
