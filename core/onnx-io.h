/* onnx-io.h — ONNX import and export through protobuf-c code generated at
 * build time from the onnx.proto that Debian's libonnx-dev ships. */
#pragma once

#include "graph.h"

G_BEGIN_DECLS

/* Loads a ModelProto. Opsets 7 to 17 of the default domain; initializers
 * from typed fields and raw_data; symbolic dims kept by name. Unknown ops
 * load as opaque nodes; nested graphs (If/Loop/Scan) are kept as attributes
 * but are not executable. Shapes are inferred; a node whose shape cannot be
 * inferred is an error naming the node. Truncated or corrupt files give
 * PL_ERROR_FORMAT. */
PlGraph  *pl_onnx_load          (const char *path, GError **error);
PlGraph  *pl_onnx_load_from_data (const guint8 *data, gsize len, const char *what, GError **error);

/* Writes g as a ModelProto (opset g->opset or 17). Fusion nodes are written
 * as ops of the custom domain "passlab" (without their bodies), opaque ops of
 * other domains as they were loaded; control edges are dropped. */
bool      pl_onnx_save          (const PlGraph *g, const char *path, GError **error);

/* Reads a serialized TensorProto (the conformance suite's input_N.pb /
 * output_N.pb). *name receives its name (g_free), if name is not NULL. */
PlTensor *pl_onnx_load_tensor   (const char *path, char **name, GError **error);
bool      pl_onnx_save_tensor   (const PlTensor *t, const char *name, const char *path, GError **error);

/* Loads .onnx or .graph by extension (anything else: tries ONNX, then text). */
PlGraph  *pl_graph_load         (const char *path, GError **error);

G_END_DECLS
