/* fusion-private.h — what the fusion builder's files share: a group on its
 * way to becoming a fusion node, prepared in fusion-body.c and committed to
 * the graph in fusion.c. Not installed; only passes/fusion*.c include it. */
#pragma once

#include "fusion.h"

G_BEGIN_DECLS

/* One group on its way to becoming a fusion node. */
typedef struct {
  GPtrArray  *nodes;      /* members in topological order */
  GHashTable *members;    /* PlNode* set */
  GPtrArray  *inputs;     /* outer values the body reads as inputs, in order */
  GPtrArray  *outputs;    /* outer values the body produces for outside readers, in order */
  GPtrArray  *copied;     /* outer small constants copied into the body */
  PlGraph    *body;
  const char *kind;
  PlNode     *fusion;     /* set by the commit */
} PlFusionGroup;

/* Builds gr's body from the n nodes (of g) without touching g, and checks it
 * infers the types the originals had. graph_outputs: the set of g's outputs.
 * gr must be zeroed (but for kind); on failure it holds what was made so far. */
bool pl_fusion_group_prepare (PlFusionGroup *gr, PlGraph *g, PlNode *const *nodes, int n,
                              GHashTable *graph_outputs, GError **error);
/* Frees what gr holds (not gr itself). */
void pl_fusion_group_clear   (PlFusionGroup *gr);

G_END_DECLS
