/* dtype.h — element types, their sizes, names and ONNX codes, and the
 * half-precision conversions. */
#pragma once

#include "passlab-types.h"

G_BEGIN_DECLS

typedef enum {
  PL_DTYPE_UNDEFINED = 0,
  PL_DTYPE_F32,
  PL_DTYPE_F16,
  PL_DTYPE_BF16,
  PL_DTYPE_F64,
  PL_DTYPE_I64,
  PL_DTYPE_I32,
  PL_DTYPE_I16,
  PL_DTYPE_I8,
  PL_DTYPE_U64,
  PL_DTYPE_U32,
  PL_DTYPE_U16,
  PL_DTYPE_U8,
  PL_DTYPE_BOOL, /* stored as one byte, 0 or 1 */
  PL_DTYPE_COUNT
} PlDType;

size_t      pl_dtype_size      (PlDType dtype);        /* bytes per element; 0 for UNDEFINED */
const char *pl_dtype_name      (PlDType dtype);        /* "f32", "i64", "bool", ... */
PlDType     pl_dtype_from_name (const char *name);     /* UNDEFINED when unknown */
bool        pl_dtype_is_float  (PlDType dtype);        /* f16, bf16, f32, f64 */
bool        pl_dtype_is_int    (PlDType dtype);        /* signed or unsigned integers (not bool) */
bool        pl_dtype_is_signed (PlDType dtype);        /* floats and signed ints */
int         pl_dtype_to_onnx   (PlDType dtype);        /* TensorProto.DataType code */
PlDType     pl_dtype_from_onnx (int onnx_code);        /* UNDEFINED when unsupported */

float    pl_f16_to_f32  (uint16_t h);
uint16_t pl_f32_to_f16  (float f);   /* round to nearest even */
float    pl_bf16_to_f32 (uint16_t h);
uint16_t pl_f32_to_bf16 (float f);   /* round to nearest even */

G_END_DECLS
