/* dtype.c — element types: sizes, names, ONNX codes, half conversions. */
#define G_LOG_DOMAIN "passlab"
#include "dtype.h"

#include <string.h>

G_DEFINE_QUARK (passlab-error-quark, pl_error)

typedef struct {
  const char *name;
  size_t      size;
  int         onnx;  /* TensorProto.DataType */
} DTypeInfo;

static const DTypeInfo dtype_info[] = {
  [PL_DTYPE_UNDEFINED] = { "undefined", 0, 0 },
  [PL_DTYPE_F32]       = { "f32", 4, 1 },
  [PL_DTYPE_F16]       = { "f16", 2, 10 },
  [PL_DTYPE_BF16]      = { "bf16", 2, 16 },
  [PL_DTYPE_F64]       = { "f64", 8, 11 },
  [PL_DTYPE_I64]       = { "i64", 8, 7 },
  [PL_DTYPE_I32]       = { "i32", 4, 6 },
  [PL_DTYPE_I16]       = { "i16", 2, 5 },
  [PL_DTYPE_I8]        = { "i8", 1, 3 },
  [PL_DTYPE_U64]       = { "u64", 8, 13 },
  [PL_DTYPE_U32]       = { "u32", 4, 12 },
  [PL_DTYPE_U16]       = { "u16", 2, 4 },
  [PL_DTYPE_U8]        = { "u8", 1, 2 },
  [PL_DTYPE_BOOL]      = { "bool", 1, 9 },
};
G_STATIC_ASSERT (G_N_ELEMENTS (dtype_info) == PL_DTYPE_COUNT);

static bool
dtype_valid (PlDType d)
{
  return (int) d >= 0 && d < PL_DTYPE_COUNT;
}

size_t
pl_dtype_size (PlDType dtype)
{
  return dtype_valid (dtype) ? dtype_info[dtype].size : 0;
}

const char *
pl_dtype_name (PlDType dtype)
{
  return dtype_valid (dtype) ? dtype_info[dtype].name : "invalid";
}

PlDType
pl_dtype_from_name (const char *name)
{
  for (int d = 1; d < PL_DTYPE_COUNT; d++)
    if (strcmp (dtype_info[d].name, name) == 0)
      return (PlDType) d;
  return PL_DTYPE_UNDEFINED;
}

bool
pl_dtype_is_float (PlDType d)
{
  return d == PL_DTYPE_F32 || d == PL_DTYPE_F16 || d == PL_DTYPE_BF16 || d == PL_DTYPE_F64;
}

bool
pl_dtype_is_int (PlDType d)
{
  return d >= PL_DTYPE_I64 && d <= PL_DTYPE_U8;
}

bool
pl_dtype_is_signed (PlDType d)
{
  return pl_dtype_is_float (d) || (d >= PL_DTYPE_I64 && d <= PL_DTYPE_I8);
}

int
pl_dtype_to_onnx (PlDType dtype)
{
  return dtype_valid (dtype) ? dtype_info[dtype].onnx : 0;
}

PlDType
pl_dtype_from_onnx (int code)
{
  for (int d = 1; d < PL_DTYPE_COUNT; d++)
    if (dtype_info[d].onnx == code)
      return (PlDType) d;
  return PL_DTYPE_UNDEFINED;
}

static uint32_t
f32_bits (float f)
{
  uint32_t u;
  memcpy (&u, &f, 4);
  return u;
}

static float
bits_f32 (uint32_t u)
{
  float f;
  memcpy (&f, &u, 4);
  return f;
}

float
pl_f16_to_f32 (uint16_t h)
{
  uint32_t sign = (uint32_t) (h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;

  if (exp == 0x1f)                       /* inf / nan */
    return bits_f32 (sign | 0x7f800000u | (man << 13));
  if (exp == 0)
    {
      if (man == 0)
        return bits_f32 (sign);
      /* subnormal: value = man * 2^-24 */
      float v = (float) man * (1.0f / 16777216.0f);
      return sign ? -v : v;
    }
  return bits_f32 (sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t
pl_f32_to_f16 (float f)
{
  uint32_t x = f32_bits (f);
  uint16_t sign = (uint16_t) ((x >> 16) & 0x8000);
  uint32_t absx = x & 0x7fffffffu;

  if (absx >= 0x7f800000u)               /* inf or nan */
    return sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0);
  if (absx >= 0x477ff000u)               /* rounds to >= 65520: overflow to inf */
    return sign | 0x7c00;
  if (absx < 0x38800000u)                /* below the smallest normal: subnormal or zero */
    {
      /* Scale so that the f16 subnormal unit (2^-24) becomes 1, then round to
       * nearest even by adding and subtracting 2^23 in float arithmetic. */
      float a = bits_f32 (absx) * 16777216.0f;
      float r = (a + 8388608.0f) - 8388608.0f;
      return sign | (uint16_t) r;
    }
  uint32_t mant_odd = (absx >> 13) & 1;
  absx += 0xc8000fffu + mant_odd;        /* rebias exponent (-112 << 23) and round to nearest even */
  return sign | (uint16_t) (absx >> 13);
}

float
pl_bf16_to_f32 (uint16_t h)
{
  return bits_f32 ((uint32_t) h << 16);
}

uint16_t
pl_f32_to_bf16 (float f)
{
  uint32_t x = f32_bits (f);
  if ((x & 0x7fffffffu) > 0x7f800000u)   /* nan: keep it a quiet nan */
    return (uint16_t) ((x >> 16) | 0x40);
  x += 0x7fffu + ((x >> 16) & 1);        /* round to nearest even */
  return (uint16_t) (x >> 16);
}
