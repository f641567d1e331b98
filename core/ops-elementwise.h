/* ops-elementwise.h — what ops-elementwise.c (binary, variadic, Where,
 * PRelu, BatchNormalization and the shared type checks) and ops-unary.c
 * (one-input ops, Clip, Cast, Dropout, Trilu) share; ops-rnn.c borrows the
 * one-input math and the type checks. Private to those files.
 */
#pragma once

#include "ops-util.h"

G_BEGIN_DECLS

/* Sets of element types an op accepts (ONNX type constraints, coarsened). */
enum {
  PL_TY_FLOAT = 1 << 0, /* f16, bf16, f32, f64 */
  PL_TY_SINT  = 1 << 1, /* i8 .. i64 */
  PL_TY_UINT  = 1 << 2, /* u8 .. u64 */
  PL_TY_BOOL  = 1 << 3,
};
#define PL_TY_INT    (PL_TY_SINT | PL_TY_UINT)
#define PL_TY_NUM    (PL_TY_FLOAT | PL_TY_INT)
#define PL_TY_SIGNED (PL_TY_FLOAT | PL_TY_SINT)
#define PL_TY_ANY    (PL_TY_NUM | PL_TY_BOOL)

/* The default-domain opset the node's graph declares (17 when unspecified). */
int  pl_ew_opset       (const PlNode *node);
/* Fails unless input i is present. */
bool pl_ew_require     (const PlNode *node, int i, GError **error);
/* Fails when input i is present with a known dtype outside `types`. */
bool pl_ew_check_dtype (const PlNode *node, int i, unsigned types, GError **error);
/* Fails when inputs i and j are present with different known dtypes. */
bool pl_ew_same_dtype  (const PlNode *node, int i, int j, GError **error);

/* The one-input ops of ops-unary.c; called by pl_ops_register_elementwise. */
void pl_ops_register_unary (void);
/* ops-unary.c: one-input math op `op` (Sigmoid, Tanh, LeakyRelu, ...) on x,
 * alpha and beta standing for its attributes. */
double pl_unary_apply_f64 (PlOp op, double x, double alpha, double beta);

G_END_DECLS
