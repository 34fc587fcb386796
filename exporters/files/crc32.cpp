#include "exporters/files/crc32.h"

#include <zlib.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace prof {
namespace {

#if defined(__x86_64__)
// Folding (Intel, "Fast CRC Computation for Generic Polynomials Using
// PCLMULQDQ"): four 128-bit lanes are multiplied forward by x^512 (mod the
// CRC polynomial, bit-reflected) and XORed into the next 64 bytes, then
// folded into one lane by x^128 steps. What is left (16 bytes, plus the
// tail under 16) has the same CRC as everything before it, so zlib's tables
// finish it: no Barrett reduction to get wrong.
#define PCLMUL_TARGET __attribute__((target("pclmul,sse4.1")))

PCLMUL_TARGET inline __m128i Load(const unsigned char* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// x * k (low halves and high halves multiplied separately) + next.
PCLMUL_TARGET inline __m128i Fold(__m128i x, __m128i k, __m128i next) {
  return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), next);
}

PCLMUL_TARGET uint32_t Crc32Clmul(uint32_t crc, const unsigned char* p, size_t n) {
  // x^(512+32), x^(512-32) and x^(128+32), x^(128-32) mod P, reflected.
  const __m128i k512 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);
  const __m128i k128 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);
  // The running CRC (pre-inverted, as zlib keeps it) enters as the first
  // four bytes' XOR.
  __m128i x0 = _mm_xor_si128(Load(p), _mm_cvtsi32_si128(static_cast<int>(~crc)));
  __m128i x1 = Load(p + 16), x2 = Load(p + 32), x3 = Load(p + 48);
  p += 64;
  n -= 64;
  for (; n >= 64; p += 64, n -= 64) {
    x0 = Fold(x0, k512, Load(p));
    x1 = Fold(x1, k512, Load(p + 16));
    x2 = Fold(x2, k512, Load(p + 32));
    x3 = Fold(x3, k512, Load(p + 48));
  }
  x0 = Fold(x0, k128, x1);
  x0 = Fold(x0, k128, x2);
  x0 = Fold(x0, k128, x3);
  for (; n >= 16; p += 16, n -= 16) x0 = Fold(x0, k128, Load(p));
  alignas(16) unsigned char rest[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(rest), x0);
  // The initial value is already folded in: start the tables from zero
  // (crc32_z's argument is inverted on entry).
  uint32_t c = static_cast<uint32_t>(crc32_z(0xFFFFFFFFu, rest, sizeof(rest)));
  return static_cast<uint32_t>(crc32_z(c, p, n));
}

bool HasClmul() {
  static const bool has = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  return has;
}
#endif

}  // namespace

uint32_t Crc32(uint32_t crc, const unsigned char* data, size_t size) {
#if defined(__x86_64__)
  if (size >= 64 && HasClmul()) return Crc32Clmul(crc, data, size);
#endif
  return static_cast<uint32_t>(crc32_z(crc, data, size));
}

}  // namespace prof
