// The bytes collectives and point-to-point calls move (README
// "Collectives", "Data"). Ranks are processes: each rank copies what it
// contributes into a shared-memory object of its own when its kernel has
// started (the work before it on its stream has moved its bytes by then),
// publishes its start after that, and once every rank it waits for has
// published, reads their objects and writes its result into its receive
// buffer before its kernel's end is placed, so the work queued behind the
// kernel sees the result. The last reader of an object removes it.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "internal.h"

namespace simnccl {
namespace {

// An object's first bytes; the payload follows at kPayload.
struct Header {
  std::atomic<uint32_t> reads;  // readers done with it
  uint32_t readers;             // how many will read it
  uint32_t valid;               // 0: the writer's buffer was not memory the sim knows
  uint32_t pad;
  uint64_t bytes;
};
constexpr size_t kPayload = 64;
static_assert(sizeof(Header) <= kPayload, "header fits before the payload");

size_t TypeBytes(int datatype) {
  switch (datatype) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;  // Int64, Uint64, Float64
  }
}

bool Holds(const void* p, size_t bytes) { return bytes == 0 || GetHub().memory_holds(p, bytes) != 0; }

// Creates the object `name` with `readers` readers and the payload copied
// from `data` (nullptr: marked invalid). False if the system refused.
bool WriteObject(const std::string& name, uint32_t readers, const void* data, size_t bytes) {
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return false;
  const size_t total = kPayload + (data ? bytes : 0);
  void* mem = ftruncate(fd, static_cast<off_t>(total)) == 0
                  ? mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0)
                  : MAP_FAILED;
  close(fd);
  if (mem == MAP_FAILED) {
    shm_unlink(name.c_str());
    return false;
  }
  auto* h = new (mem) Header();
  h->readers = readers;
  h->valid = data ? 1 : 0;
  h->bytes = data ? bytes : 0;
  if (data && bytes) memcpy(static_cast<char*>(mem) + kPayload, data, bytes);
  munmap(mem, total);
  return true;
}

// A peer's object, mapped for reading; Done() counts this reader and the
// last one removes the name.
class Object {
 public:
  explicit Object(std::string name) : name_(std::move(name)) {
    const int fd = shm_open(name_.c_str(), O_RDWR, 0600);
    if (fd < 0) return;
    struct stat st {};
    if (fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= kPayload) {
      size_ = static_cast<size_t>(st.st_size);
      void* mem = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
      if (mem != MAP_FAILED) mem_ = static_cast<char*>(mem);
    }
    close(fd);
  }
  ~Object() { Done(); }
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;
  Object(Object&& o) noexcept : name_(std::move(o.name_)), mem_(o.mem_), size_(o.size_) { o.mem_ = nullptr; }

  // The payload, or nullptr when missing or marked invalid.
  const char* data() const {
    if (!mem_) return nullptr;
    const Header* h = reinterpret_cast<const Header*>(mem_);
    return h->valid && kPayload + h->bytes <= size_ ? mem_ + kPayload : nullptr;
  }
  size_t bytes() const { return data() ? reinterpret_cast<const Header*>(mem_)->bytes : 0; }
  void Done() {
    if (!mem_) return;
    Header* h = reinterpret_cast<Header*>(mem_);
    const bool last = h->reads.fetch_add(1, std::memory_order_acq_rel) + 1 >= h->readers;
    munmap(mem_, size_);
    mem_ = nullptr;
    if (last) shm_unlink(name_.c_str());
  }

 private:
  std::string name_;
  char* mem_ = nullptr;
  size_t size_ = 0;
};

std::string CollName(ncclComm_t comm, uint64_t op, int rank) {
  return comm->name + ".d" + std::to_string(op) + "." + std::to_string(rank);
}
std::string P2pName(ncclComm_t comm, int src, int dst, uint64_t n) {
  return comm->name + ".p" + std::to_string(src) + "." + std::to_string(dst) + "." + std::to_string(n);
}

// ---- element types and reductions

// Small floating-point formats (IEEE-style: sign, `ebits` exponent bits,
// `mbits` mantissa bits). e4m3 has no infinity and one NaN per sign
// (S.1111.111); FP8 conversions saturate to the largest finite value, as
// CUDA's __NV_SATFINITE conversions NCCL's FP8 kernels use.
struct MiniFloat {
  int ebits, mbits;
  bool has_inf;
  bool satfinite;
  double max_finite;
  uint32_t nan;
};
constexpr MiniFloat kHalf{5, 10, true, false, 65504.0, 0x7e00};
constexpr MiniFloat kBf16{8, 7, true, false, 3.3895313892515355e38, 0x7fc0};
constexpr MiniFloat kE4m3{4, 3, false, true, 448.0, 0x7f};
constexpr MiniFloat kE5m2{5, 2, true, true, 57344.0, 0x7f};

double Decode(uint32_t bits, const MiniFloat& f) {
  const uint32_t sign = bits >> (f.ebits + f.mbits) & 1;
  const uint32_t exp = bits >> f.mbits & ((1u << f.ebits) - 1);
  const uint32_t mant = bits & ((1u << f.mbits) - 1);
  const int bias = (1 << (f.ebits - 1)) - 1;
  const uint32_t top = (1u << f.ebits) - 1;
  double v;
  if (f.has_inf && exp == top) {
    v = mant ? NAN : INFINITY;
  } else if (!f.has_inf && exp == top && mant == (1u << f.mbits) - 1) {
    v = NAN;
  } else if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), 1 - bias - f.mbits);
  } else {
    v = std::ldexp(static_cast<double>(mant | (1u << f.mbits)), static_cast<int>(exp) - bias - f.mbits);
  }
  return sign ? -v : v;
}

// Round to nearest, ties to even.
uint32_t Encode(double v, const MiniFloat& f) {
  const uint32_t sign = std::signbit(v) ? 1u << (f.ebits + f.mbits) : 0;
  if (std::isnan(v)) return f.nan;
  const double a = std::fabs(v);
  const int bias = (1 << (f.ebits - 1)) - 1;
  const uint32_t inf_bits = ((1u << f.ebits) - 1) << f.mbits;
  const uint32_t max_bits = f.has_inf ? inf_bits - 1 : inf_bits | ((1u << f.mbits) - 2);
  if (std::isinf(a)) return sign | (f.satfinite || !f.has_inf ? max_bits : inf_bits);
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);
  e -= 1;  // a = 1.x * 2^e
  const bool subnormal = e < 1 - bias;
  int scale = (subnormal ? 1 - bias : e) - f.mbits;          // the exponent of one unit in the last place
  uint64_t q = static_cast<uint64_t>(std::nearbyint(std::ldexp(a, -scale)));  // FE_TONEAREST: ties to even
  if (!subnormal && q == (2ull << f.mbits)) {  // rounded up to the next binade
    q >>= 1;
    ++scale;
  }
  if (std::ldexp(static_cast<double>(q), scale) > f.max_finite) {
    return sign | (f.satfinite || !f.has_inf ? max_bits : inf_bits);
  }
  // A subnormal's significand is its bits (one that rounded up to 2^mbits
  // is the smallest normal: exponent field 1, mantissa 0).
  if (subnormal) return sign | static_cast<uint32_t>(q);
  const uint32_t field = static_cast<uint32_t>(scale + f.mbits + bias);
  return sign | field << f.mbits | static_cast<uint32_t>(q - (1ull << f.mbits));
}

const MiniFloat* MiniOf(int datatype) {
  switch (datatype) {
    case ncclFloat16: return &kHalf;
    case ncclBfloat16: return &kBf16;
    case ncclFloat8e4m3: return &kE4m3;
    case ncclFloat8e5m2: return &kE5m2;
    default: return nullptr;
  }
}

// acc[i] = f(acc[i], x[i]); elements copied in and out (the buffers need
// not be aligned for T), one loop per operation so that it vectorizes.
template <typename T, typename F>
void ReduceWith(char* acc, const char* x, size_t count, F f) {
  for (size_t i = 0; i < count; ++i) {
    T a, b;
    memcpy(&a, acc + i * sizeof(T), sizeof(T));
    memcpy(&b, x + i * sizeof(T), sizeof(T));
    a = f(a, b);
    memcpy(acc + i * sizeof(T), &a, sizeof(T));
  }
}

// The operation on values of T: integers wrap as the GPU's do (unsigned
// arithmetic, no undefined behaviour); Avg sums here, divided at the end.
template <typename T>
void ReduceNative(char* acc, const char* x, size_t count, int redop) {
  using U = typename std::conditional<std::is_integral<T>::value, std::make_unsigned<T>,
                                      std::common_type<T>>::type::type;
  switch (redop) {
    case ncclProd:
      return ReduceWith<T>(acc, x, count, [](T a, T b) { return static_cast<T>(static_cast<U>(a) * static_cast<U>(b)); });
    case ncclMax: return ReduceWith<T>(acc, x, count, [](T a, T b) { return a > b ? a : b; });
    case ncclMin: return ReduceWith<T>(acc, x, count, [](T a, T b) { return a < b ? a : b; });
    default:
      return ReduceWith<T>(acc, x, count, [](T a, T b) { return static_cast<T>(static_cast<U>(a) + static_cast<U>(b)); });
  }
}

template <typename T>
void DivideNative(char* acc, size_t count, int n) {
  for (size_t i = 0; i < count; ++i) {
    T a;
    memcpy(&a, acc + i * sizeof(T), sizeof(T));
    a = static_cast<T>(a / static_cast<T>(n));  // integers: toward zero
    memcpy(acc + i * sizeof(T), &a, sizeof(T));
  }
}

double ApplyDouble(double a, double b, int redop) {
  switch (redop) {
    case ncclProd: return a * b;
    case ncclMax: return a > b ? a : b;
    case ncclMin: return a < b ? a : b;
    default: return a + b;
  }
}

template <typename Bits>
void ReduceMini(char* acc, const char* x, size_t count, int redop, const MiniFloat& f) {
  for (size_t i = 0; i < count; ++i) {
    Bits a, b;
    memcpy(&a, acc + i * sizeof(Bits), sizeof(Bits));
    memcpy(&b, x + i * sizeof(Bits), sizeof(Bits));
    a = static_cast<Bits>(Encode(ApplyDouble(Decode(a, f), Decode(b, f), redop), f));
    memcpy(acc + i * sizeof(Bits), &a, sizeof(Bits));
  }
}
template <typename Bits>
void DivideMini(char* acc, size_t count, int n, const MiniFloat& f) {
  for (size_t i = 0; i < count; ++i) {
    Bits a;
    memcpy(&a, acc + i * sizeof(Bits), sizeof(Bits));
    a = static_cast<Bits>(Encode(Decode(a, f) / n, f));
    memcpy(acc + i * sizeof(Bits), &a, sizeof(Bits));
  }
}

// acc = acc (op) x, element by element, each step rounded to the type.
void Reduce(char* acc, const char* x, size_t count, int datatype, int redop) {
  switch (datatype) {
    case ncclInt8: return ReduceNative<int8_t>(acc, x, count, redop);
    case ncclUint8: return ReduceNative<uint8_t>(acc, x, count, redop);
    case ncclInt32: return ReduceNative<int32_t>(acc, x, count, redop);
    case ncclUint32: return ReduceNative<uint32_t>(acc, x, count, redop);
    case ncclInt64: return ReduceNative<int64_t>(acc, x, count, redop);
    case ncclUint64: return ReduceNative<uint64_t>(acc, x, count, redop);
    case ncclFloat32: return ReduceNative<float>(acc, x, count, redop);
    case ncclFloat64: return ReduceNative<double>(acc, x, count, redop);
    case ncclFloat16: case ncclBfloat16: return ReduceMini<uint16_t>(acc, x, count, redop, *MiniOf(datatype));
    default: return ReduceMini<uint8_t>(acc, x, count, redop, *MiniOf(datatype));
  }
}

// ncclAvg: the sum divided by the number of ranks.
void Divide(char* acc, size_t count, int datatype, int n) {
  switch (datatype) {
    case ncclInt8: return DivideNative<int8_t>(acc, count, n);
    case ncclUint8: return DivideNative<uint8_t>(acc, count, n);
    case ncclInt32: return DivideNative<int32_t>(acc, count, n);
    case ncclUint32: return DivideNative<uint32_t>(acc, count, n);
    case ncclInt64: return DivideNative<int64_t>(acc, count, n);
    case ncclUint64: return DivideNative<uint64_t>(acc, count, n);
    case ncclFloat32: return DivideNative<float>(acc, count, n);
    case ncclFloat64: return DivideNative<double>(acc, count, n);
    case ncclFloat16: case ncclBfloat16: return DivideMini<uint16_t>(acc, count, n, *MiniOf(datatype));
    default: return DivideMini<uint8_t>(acc, count, n, *MiniOf(datatype));
  }
}

// ---- what each collective contributes and receives

// Bytes rank contributes (its send buffer), 0 for none.
size_t ContributionBytes(const CollBytes& b, int rank, int n) {
  const size_t size = b.count * TypeBytes(b.datatype);
  switch (b.func) {
    case CollFunc::kBroadcast: return rank == b.root ? size : 0;
    case CollFunc::kReduceScatter:
    case CollFunc::kAlltoAll: return size * static_cast<size_t>(n);
    default: return size;  // AllReduce, Reduce, AllGather
  }
}

// ContributionBytes' shape for what a rank receives: other collectives in each case.
// Bytes rank receives into its receive buffer, 0 for none.
size_t ResultBytes(const CollBytes& b, int rank, int n) {
  const size_t size = b.count * TypeBytes(b.datatype);
  switch (b.func) {
    case CollFunc::kReduce: return rank == b.root ? size : 0;
    case CollFunc::kAllGather:
    case CollFunc::kAlltoAll: return size * static_cast<size_t>(n);
    default: return size;  // AllReduce, Broadcast, ReduceScatter
  }
}

// Ranks that read each contribution: the root of a Reduce, else every rank.
uint32_t Readers(const CollBytes& b, int n) { return b.func == CollFunc::kReduce ? 1 : static_cast<uint32_t>(n); }

}  // namespace

bool PublishCollData(ncclComm_t comm, uint64_t op, const CollBytes& b) {
  const size_t bytes = ContributionBytes(b, comm->rank, comm->nranks);
  if (b.count == 0 || bytes == 0) return true;
  const bool valid = Holds(b.send, bytes);
  return WriteObject(CollName(comm, op, comm->rank), Readers(b, comm->nranks), valid ? b.send : nullptr, bytes) &&
         valid;
}

bool ReceiveCollData(ncclComm_t comm, uint64_t op, const CollBytes& b) {
  const int n = comm->nranks, me = comm->rank;
  if (b.count == 0) return true;
  const size_t result = ResultBytes(b, me, n);
  if (result == 0) return true;  // a Reduce's non-root: nothing to read or write
  std::vector<Object> peers;
  for (int r = 0; r < n; ++r) {
    if (ContributionBytes(b, r, n) > 0) peers.emplace_back(CollName(comm, op, r));
  }
  bool ok = Holds(b.recv, result);
  for (const Object& o : peers) ok = ok && o.data() != nullptr;
  if (!ok) return false;
  const size_t size = b.count * TypeBytes(b.datatype);
  char* out = static_cast<char*>(b.recv);
  switch (b.func) {
    case CollFunc::kBroadcast:
      memcpy(out, peers[0].data(), std::min(size, peers[0].bytes()));
      break;
    case CollFunc::kAllGather:
    case CollFunc::kAlltoAll:
      for (int r = 0; r < n; ++r) {
        // AllGather: rank r's buffer; AlltoAll: its slice for me.
        const size_t from = b.func == CollFunc::kAlltoAll ? static_cast<size_t>(me) * size : 0;
        if (peers[r].bytes() >= from + size) memcpy(out + static_cast<size_t>(r) * size, peers[r].data() + from, size);
      }
      break;
    default: {  // reductions, in rank order
      // Straight into the receive buffer: every operand is a peer's copy.
      const size_t from = b.func == CollFunc::kReduceScatter ? static_cast<size_t>(me) * size : 0;
      memcpy(out, peers[0].data() + from, size);
      for (int r = 1; r < n; ++r) Reduce(out, peers[r].data() + from, b.count, b.datatype, b.redop);
      if (b.redop == ncclAvg) Divide(out, b.count, b.datatype, n);
    }
  }
  return true;
}

bool PublishSendData(ncclComm_t comm, int peer, uint64_t n, const void* buff, size_t bytes) {
  if (bytes == 0) return true;
  const bool valid = Holds(buff, bytes);
  return WriteObject(P2pName(comm, comm->rank, peer, n), 1, valid ? buff : nullptr, bytes) && valid;
}

bool ReceiveRecvData(ncclComm_t comm, int peer, uint64_t n, void* buff, size_t bytes) {
  if (bytes == 0) return true;
  Object o(P2pName(comm, peer, comm->rank, n));
  if (!o.data() || !Holds(buff, bytes)) return false;
  memcpy(buff, o.data(), std::min(bytes, o.bytes()));
  return true;
}

}  // namespace simnccl
