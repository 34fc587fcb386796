#include "collectors/python/line_table.h"

namespace prof::python {

int LineForOffsetPep626(const uint8_t* table, size_t size, int first_line, int byte_offset) {
  if (byte_offset < 0) return first_line;  // f_lasti -1: the frame has not started
  int line = first_line;
  int end = 0;
  for (size_t i = 0; i + 1 < size; i += 2) {
    int start = end;
    end += table[i];
    auto line_delta = static_cast<int8_t>(table[i + 1]);
    int range_line = -1;
    if (line_delta != -128) {
      line += line_delta;
      range_line = line;
    }
    if (start <= byte_offset && byte_offset < end) return range_line;
  }
  return -1;
}

namespace {

// Reads an unsigned varint at table[*i], advancing *i; false past the end.
bool ReadVarint(const uint8_t* table, size_t size, size_t* i, uint32_t* out) {
  uint32_t value = 0;
  int shift = 0;
  while (*i < size && shift < 32) {
    uint8_t b = table[(*i)++];
    value |= static_cast<uint32_t>(b & 63) << shift;
    shift += 6;
    if ((b & 64) == 0) {
      *out = value;
      return true;
    }
  }
  return false;
}

}  // namespace

int LineForOffsetLocation(const uint8_t* table, size_t size, int first_line, int byte_offset) {
  int line = first_line;
  int end = 0;
  size_t i = 0;
  while (i < size) {
    uint8_t head = table[i];
    if ((head & 0x80) == 0) return -1;  // not an entry start: corrupt
    int code = (head >> 3) & 15;
    int start = end;
    end += ((head & 7) + 1) * 2;  // code units of 2 bytes
    size_t next = i + 1;
    int range_line;
    if (code == 15) {
      range_line = -1;
    } else {
      int delta = 0;
      if (code == 13 || code == 14) {
        uint32_t u = 0;
        size_t j = i + 1;
        if (!ReadVarint(table, size, &j, &u)) return -1;
        delta = (u & 1) ? -static_cast<int>(u >> 1) : static_cast<int>(u >> 1);
      } else if (code >= 10) {
        delta = code - 10;
      }
      line += delta;
      range_line = line;
    }
    if (start <= byte_offset && byte_offset < end) return range_line;
    while (next < size && (table[next] & 0x80) == 0) ++next;  // columns and the rest of the entry
    i = next;
  }
  return -1;
}

}  // namespace prof::python
