/* fusion.h — making fusion nodes: a set of nodes becomes one Fusion node
 * whose body is the fused subgraph. Shared by fuse-loops, fuse-library and
 * stitch; the code generators and the GUI read the conventions below.
 *
 * Conventions of a fusion node
 * ----------------------------
 * - op_type "Fusion" in the default domain (PL_OP_Fusion), named "fusion_<n>".
 * - `body`: the fused subgraph as a closed nested graph. Body input i stands
 *   for node input i (same dtype, shape and layout) and body output j is node output
 *   j. The node's outputs are the fused values read outside the set or that
 *   are graph outputs, in topological order of their producers; its inputs
 *   are in operand order: the order a depth-first walk from the outputs
 *   through each node's operands (in slot order) first meets them, so a
 *   library fusion takes its operands as the library call does (A, B, bias).
 * - Inside the body, values and nodes keep the names they had in the outer
 *   graph: a body input is named after the outer value it reads. A constant
 *   of at most 64 elements that the fused nodes read (an initializer or a
 *   Constant node's output: shapes, axes, scalars) is copied into the body
 *   as a constant of the same name, so inference and code generation see
 *   its data; larger constants (weights) stay outside as node inputs. The
 *   node's outputs keep the names of the values they replace, so downstream
 *   nodes and graph outputs read the same names as before. The body holds
 *   the original ops: the reference interpreter runs a fusion node exactly
 *   as it ran the unfused nodes.
 * - attribute `kind` (STRING):
 *     "loop"    elementwise ops with reshape/transpose/broadcast folded in as
 *               index functions: one loop nest; every output has one shape;
 *     "input"   ends in reductions over the same rows, with the computation
 *               producing their input fused in (a reduction over the same
 *               rows may feed a later one: layer norm's mean inside its
 *               variance); outputs are the reductions' results and values of
 *               the reductions' input shape;
 *     "output"  a library op with an epilogue fused into it;
 *     "library" a single library call (a GEMM with transpose flags, a
 *               convolution backward pass);
 *     "stitch"  a whole memory-intensive region (stitch.c, seed 002): any mix
 *               of elementwise ops, views, Transpose, Expand, reductions and
 *               Softmax/LayerNormalization, grouped around its reductions, with
 *               a thread mapping and a data-reuse plan (below).
 * - stitch fusions also carry their plan (stitch.c explains how it is made):
 *     target (STRING "cuda" | "cpu"); rows, row_length (INT: the mapping's
 *     rows × elements per row, reduced axes innermost); block_size (threads
 *     per block; cpu: 1); rows_per_block (rows per block, or per cpu thread);
 *     blocks_per_row (> 1: a row split across blocks); grid (blocks or cpu
 *     threads launched); grid_barrier (INT 0/1: some value crosses blocks
 *     through global memory, the grid is then one wave); shared_bytes (INT:
 *     shared memory per block after buffer reuse);
 *     backbones (STRINGS: each group's first reduction, group order; empty
 *     when the region has none); sub_backbones (STRINGS "sub:backbone");
 *     groups (STRINGS: each group's nodes joined by ','; group 0's mapping is
 *     the kernel's); group_rows, group_row_length, group_rows_per_block,
 *     group_blocks_per_row (INTS, per group);
 *     reuse (STRINGS "value:register|shared|global": where each value read
 *     inside the body lives, also region inputs cached in shared memory and
 *     split reductions' partial results); shared_buffers (STRINGS
 *     "value:offset:bytes", offsets after reuse).
 * - library and output fusions also carry
 *     `library` (STRING): "gemm" | "conv" | "conv_backward_filter" |
 *               "conv_backward_input";
 *     gemm:     transA, transB (INT 0/1: the body transposes the last two
 *               dims of that operand), alpha, beta (FLOAT; beta 0 when there
 *               is no C operand);
 *     conv*:    the (forward) convolution's strides, pads (begins, then
 *               ends), dilations, kernel_shape (INTS) and group (INT);
 *               output_padding when a ConvTranspose had one;
 *     output:   `epilogue` (STRINGS), the ops applied to the library result in
 *               order: "bias", "relu", "sigmoid", "tanh", "gelu", "clip",
 *               "leaky_relu".
 *
 * Making fusions in bulk
 * ----------------------
 * A pass first *plans* groups on a PlFusionPlan (union-find over the nodes
 * with a dynamically maintained topological order of the groups, so each
 * cycle check is a search bounded by two topological indices), then builds
 * all groups at once with pl_fusion_create_many, which removes the originals
 * in one batch: linear in the graph size where one pl_fusion_create per group
 * would be quadratic.
 */
#pragma once

#include "graph.h"

G_BEGIN_DECLS

#define PL_FUSION_KIND_LOOP    "loop"
#define PL_FUSION_KIND_INPUT   "input"
#define PL_FUSION_KIND_OUTPUT  "output"
#define PL_FUSION_KIND_LIBRARY "library"

/* Replaces the n nodes of g (distinct, at least one) by one Fusion node of
 * the given kind: external inputs become body inputs, values read outside the
 * set or that are graph outputs become body outputs; every use is rewired to
 * the fusion node's outputs, control edges into and out of the set move to
 * the fusion node, the originals are removed and the node is inferred.
 * Fails, leaving g unchanged, when fusing would create a cycle, when none of
 * the nodes' results is used, or when the body would infer other types than
 * the originals had (e.g. a Reshape whose shape is computed outside). */
PlNode    *pl_fusion_create      (PlGraph *g, PlNode *const *nodes, int n, const char *kind,
                                  GError **error);
/* Puts fusion f's body back into g, the inverse of pl_fusion_create: the
 * body's nodes and values are added to g under their own names (made unique
 * where taken) and f's readers read them instead; a body constant becomes the
 * outer constant it was copied from when that is still there. f stays,
 * unread, so many can be removed in one batch (pl_graph_remove_nodes).
 * Fails on a body value with no source (a malformed body). */
bool       pl_fusion_inline      (PlGraph *g, PlNode *f, GError **error);
/* True if some path leaves the set and comes back into it through a node
 * outside the set (control edges count): fusing the set would make a cycle.
 * Searches forward from the set and backward into it in lock-step and stops
 * when either side runs out, so the cost is at most twice the smaller of the
 * two cones. */
bool       pl_fusion_would_cycle (const PlGraph *g, PlNode *const *nodes, int n);

/* Fuses many disjoint sets at once. groups: GPtrArray of GPtrArray of
 * PlNode*; kinds[i] is group i's kind. The groups must not make a cycle
 * together (plan them with a PlFusionPlan). Returns the fusion nodes in group
 * order (g_ptr_array_unref it). On error nothing is changed when the error
 * is found while the bodies are built, which is where every error of valid
 * input is found. With left_out, a group whose body would not keep its
 * values' types (a shape that only values outside the group determine, as
 * in a graph with unknown dims) is no error: it stays unfused, its slot in
 * the result is NULL, and left_out gets a line saying why (g_free'd). */
GPtrArray *pl_fusion_create_many (PlGraph *g, GPtrArray *groups, const char *const *kinds,
                                  GPtrArray *left_out, GError **error);

/* --- planning ---------------------------------------------------------------- */

typedef struct _PlFusionPlan PlFusionPlan;

/* Every node of g starts in a group of its own. Fails if g has a cycle.
 * The plan reads g; do not change g while the plan is in use. */
PlFusionPlan *pl_fusion_plan_new        (const PlGraph *g, GError **error);
void          pl_fusion_plan_free       (PlFusionPlan *p);
/* Merges the groups of the n nodes into one, unless that would make a cycle
 * among the groups; returns whether it merged. A check that would have to
 * search more than a fixed budget of groups refuses the merge (a rare,
 * conservative answer that keeps passes linear on huge graphs). */
bool          pl_fusion_plan_merge      (PlFusionPlan *p, PlNode *const *nodes, int n);
/* Whether merging the groups of the n nodes would make a cycle (true too
 * when the check runs over its budget, as pl_fusion_plan_merge refuses then). */
bool          pl_fusion_plan_would_cycle (PlFusionPlan *p, PlNode *const *nodes, int n);
bool          pl_fusion_plan_same_group (PlFusionPlan *p, const PlNode *a, const PlNode *b);
int           pl_fusion_plan_group_size (PlFusionPlan *p, const PlNode *node);
/* The members of node's group in topological order (g_ptr_array_unref it). */
GPtrArray    *pl_fusion_plan_members    (PlFusionPlan *p, const PlNode *node);
/* Every group of at least min_size nodes, each a GPtrArray of its nodes in
 * topological order, the groups ordered by their first node. */
GPtrArray    *pl_fusion_plan_groups     (PlFusionPlan *p, int min_size);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PlFusionPlan, pl_fusion_plan_free)

/* The epilogue step ("bias", "relu", ...) that fuse-library makes of node u
 * reading cur, the result of a GEMM (conv false) or a convolution; NULL
 * when u is no epilogue op. */
const char   *pl_fusion_epilogue_step   (const PlNode *u, const PlValue *cur, bool conv);

G_END_DECLS
