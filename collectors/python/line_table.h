// co_linetable decoding: the line a code offset belongs to, from the bytes
// alone (the interpreter is never called). Two formats:
//
//   PEP 626 (3.10): byte pairs (bytecode delta: unsigned, line delta:
//     signed). Each pair ends a range of `delta` bytes that starts where the
//     previous one ended; the running line moves by the line delta, and a
//     line delta of -128 marks a range without a line. Ranges of 0 bytes
//     only carry line deltas too large for one byte.
//   PEP 657 location table (3.11+): entries whose first byte has bit 7 set;
//     bits 3-6 are the code and bits 0-2 the length in code units minus 1.
//     Code 15: no location; 14 (long form) and 13 (no columns): a signed
//     varint line delta follows; 10-12: line delta code - 10; 0-9: same
//     line. Varints are 6-bit groups, low first, bit 6 meaning "more";
//     signed ones keep the sign in bit 0.
#pragma once

#include <cstddef>
#include <cstdint>

namespace prof::python {

// The line of the instruction at byte offset `byte_offset`, or -1 when the
// table gives none (or ends before it).
int LineForOffsetPep626(const uint8_t* table, size_t size, int first_line, int byte_offset);
int LineForOffsetLocation(const uint8_t* table, size_t size, int first_line, int byte_offset);

}  // namespace prof::python
