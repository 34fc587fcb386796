// The kernel registry keeps PROF_STEP=kernel:'s verdict beside each kernel's
// name, so a launch reads both in one lookup: the verdict belongs to the name
// it was given for (a re-registration forgets it, a stale one is refused),
// and a new runtime starts with none.
#include "base/kernel_registry.h"

#include <catch2/catch.hpp>
#include <memory>

namespace prof {
namespace {

using Verdict = KernelRegistry::Verdict;

TEST_CASE("a kernel's step verdict is kept beside its name and read with it", "[kernel_registry]") {
  auto registry = std::make_unique<KernelRegistry>();
  static char stub, other;
  registry->Insert(&stub, 42);
  CHECK(registry->Lookup(&stub).name_id == 42);
  CHECK(registry->Lookup(&stub).verdict == Verdict::kUnknown);
  CHECK(registry->Lookup(&other).name_id == 0);  // never registered

  registry->SetVerdict(&stub, 42, Verdict::kNoMatch);
  CHECK(registry->Lookup(&stub).name_id == 42);
  CHECK(registry->Lookup(&stub).verdict == Verdict::kNoMatch);
  CHECK(registry->Find(&stub) == 42);

  registry->SetVerdict(&other, 42, Verdict::kMatch);  // no slot: nothing to keep
  CHECK(registry->Lookup(&other).verdict == Verdict::kUnknown);
}

TEST_CASE("a verdict never outlives the name it was given for", "[kernel_registry]") {
  auto registry = std::make_unique<KernelRegistry>();
  static char stub;
  registry->Insert(&stub, 7);
  registry->SetVerdict(&stub, 7, Verdict::kMatch);
  registry->Insert(&stub, 9);  // the module was reloaded: another kernel at this stub
  CHECK(registry->Lookup(&stub).name_id == 9);
  CHECK(registry->Lookup(&stub).verdict == Verdict::kUnknown);
  registry->SetVerdict(&stub, 7, Verdict::kNoMatch);  // decided on the old name: refused
  CHECK(registry->Lookup(&stub).verdict == Verdict::kUnknown);
  registry->SetVerdict(&stub, 9, Verdict::kNoMatch);
  registry->SetVerdict(&stub, 9, Verdict::kMatch);  // the first answer stays
  CHECK(registry->Lookup(&stub).verdict == Verdict::kNoMatch);

  registry->ForgetVerdicts();  // another runtime, maybe another PROF_STEP
  CHECK(registry->Lookup(&stub).name_id == 9);
  CHECK(registry->Lookup(&stub).verdict == Verdict::kUnknown);
}

}  // namespace
}  // namespace prof
