/* passlab-types.h — forward declarations of every core type, so headers
 * never include each other in cycles, and the error domain every module uses.
 *
 * Naming: types are `Pl<Thing>`, functions `pl_<thing>_<verb>`, one concept per
 * file pair (`core/<thing>.{c,h}`).
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef struct _PlGraph PlGraph;
typedef struct _PlNode PlNode;
typedef struct _PlValue PlValue;
typedef struct _PlTensor PlTensor;
typedef struct _PlAttr PlAttr;
typedef struct _PlOpInfo PlOpInfo;

/* Every error a user's input can cause is reported through GError in this
 * domain; internal bugs abort (g_assert / g_error) instead. */
#define PL_ERROR (pl_error_quark ())
GQuark pl_error_quark (void);

typedef enum {
  PL_ERROR_FAILED,      /* anything else */
  PL_ERROR_IO,          /* a file could not be read or written */
  PL_ERROR_PARSE,       /* text format syntax; message carries file:line:col */
  PL_ERROR_FORMAT,      /* a malformed ONNX / protobuf file */
  PL_ERROR_SHAPE,       /* shape inference failed: names the node */
  PL_ERROR_UNSUPPORTED, /* an op, dtype or attribute we do not implement */
  PL_ERROR_INVALID,     /* a graph that breaks an IR invariant (verifier) */
  PL_ERROR_OVERFLOW,    /* a tensor size that overflows or is too large */
  PL_ERROR_EXEC,        /* a run-time failure while executing a graph */
} PlErrorCode;

G_END_DECLS
