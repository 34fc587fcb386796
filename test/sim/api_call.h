// Brackets one simulated API call (driver or runtime) with
// simhub_api_enter/exit, so CUPTI sees the enter, then the exit with the
// params struct and the result the call returns.
#pragma once

#include <stdint.h>

#include <utility>

#include "hub.h"

namespace sim {

// on_result(result) runs after the body and before the exit callback (the
// runtime records its sticky last error there).
template <typename Result, typename Body, typename OnResult>
Result BracketApiCall(int domain, uint32_t cbid, const char* name, const void* params, const char* symbol_name,
                      Body&& body, OnResult&& on_result) {
  Result result{};  // cudaSuccess / CUDA_SUCCESS
  SimApiSite site{};
  site.domain = domain;
  site.cbid = cbid;
  site.function_name = name;
  site.symbol_name = symbol_name;
  site.params = params;
  site.return_value = &result;
  simhub_api_enter(&site);
  result = body();
  on_result(result);
  simhub_api_exit(&site);
  return result;
}

}  // namespace sim
