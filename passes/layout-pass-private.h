/* layout-pass-private.h — what the `layout` pass's files share:
 * layout-pass.c (parameters, the model, the search, the pass),
 * layout-apply.c (a plan into the graph) and layout-report.c (its report).
 * Internal to passes/. */
#pragma once

#include "builtin-passes.h"
#include "calibrate.h"
#include "layout-search.h"

G_BEGIN_DECLS

/* The cost of something impossible (an unsupported choice or transform):
 * finite, so sums stay ordered, and far above any real plan. */
#define PENALTY 1e9
#define MAX_LINES 40

typedef struct {
  PlCostSource source;
  bool         measured_mode;
  PlBackend    backend;
  guint        layouts;       /* bit per PlLayout */
  guint        impls;         /* bit per PlConvImpl */
  int          force;         /* PlLayout, or -1 */
  const char  *table;
  int64_t      max_visits;
  int          tune;          /* trials of the pruned tile search per direct conv and layout; 0: pebble tile */
  int          refine;        /* rounds of running the candidate plans to measure costs in context; 0: none */
  bool         recalibrate;   /* measure every cost again, cached or not (the cache takes the new ones) */
  double       min_gain;      /* a mixed plan must predict at least this share less than the best single layout */
} Params;

typedef enum { PN_SOURCE, PN_NODE, PN_HUB, PN_SINK } PnKind;

/* One problem node; choice c is (layout[c], impl[c]) at cost[c]. */
typedef struct {
  PnKind       kind;
  PlNode      *node;        /* PN_NODE */
  PlValue     *value;       /* PN_SOURCE, PN_HUB: the value; PN_SINK: the output's root */
  bool         conv, pointwise, pool;
  int          n_choices;
  PlLayout     layout[PL_LS_MAX_CHOICES];
  PlConvImpl   impl[PL_LS_MAX_CHOICES];
  PlCost       cost[PL_LS_MAX_CHOICES];
  /* a pointwise op that fuses into its producer fused_into (a conv's
   * epilogue, a pointwise op's loop) when it takes the producer's layout:
   * its own cost (fused_ms) is charged on that edge, and only where the
   * layouts differ; NULL: none */
  const PlNode *fused_into;
  double       fused_ms;
} PNode;

typedef struct {
  GArray     *pnodes;       /* PNode */
  GArray     *edges;        /* PlLsEdge */
  GArray     *edge_value;   /* PlValue*, per edge: the data it carries */
  GHashTable *pnode_of;     /* PlNode* -> index + 1 */
  GHashTable *hub_of;       /* PlValue* (root) -> index + 1 of its hub or producer */
} Model;

/* The parts of a plan's predicted time. */
typedef struct {
  double convs, pointwise, pools, transforms, total;
} Totals;

/* layout-pass.c */
bool pl_lp_static_rank4 (const PlValue *v);
bool pl_lp_slot_follows (const PNode *pn, int k, const PlValue *root);
PlValue *pl_lp_root_of (PlValue *v);
PlNode *pl_lp_fused_producer (const PlNode *node);
double pl_lp_unfused_ms (const PNode *a, const PNode *b);
/* layout-apply.c: value layouts, conv impl/tile, shared transforms; *changed when the graph changed */
bool pl_lp_apply_plan (PlGraph *g, const Model *M, const PlLsSolution *s, PlCalibration *cal, bool *changed, GError **error);
/* layout-report.c */
bool pl_lp_fused_convs (const PlGraph *g);
bool pl_lp_top_level_convs (const PlGraph *g);
double pl_lp_report_transforms (PlPassReport *report, PlGraph *g, PlCalibration *cal, int *count, int counts[3]);
void pl_lp_report_table (PlPassReport *report, const Model *M, const PlLsSolution *s, const Params *p, PlCalibration *cal, bool pools, int counts[3]);
void pl_lp_report_totals (PlPassReport *report, const Totals *plan, const Totals *single_t, const Params *p);

G_END_DECLS
