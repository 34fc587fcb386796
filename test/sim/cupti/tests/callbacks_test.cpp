// Callback API semantics: what a subscriber sees at API enter/exit and on
// context creation, and detaching from inside a callback.
#include <catch2/catch.hpp>
#include <cupti.h>

#include <string>
#include <vector>

#include "fake_hub.h"
#include "test_client.h"

namespace {

struct Seen {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  CUpti_ApiCallbackSite site;
  std::string function;
  std::string symbol;
  uint32_t correlation_id;
  uint64_t* correlation_data;
  uint64_t correlation_value;  // *correlation_data when called
  int return_value;            // at exit
  CUcontext context;
  CUpti_GraphData graph;  // graph resource callbacks
};
std::vector<Seen> g_seen;
bool g_finalize_at_exit = false;

void CUPTIAPI Record(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  Seen seen{};
  seen.domain = domain;
  seen.cbid = cbid;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    const auto* info = static_cast<const CUpti_CallbackData*>(data);
    seen.site = info->callbackSite;
    seen.function = info->functionName;
    seen.symbol = info->symbolName ? info->symbolName : "";
    seen.correlation_id = info->correlationId;
    seen.correlation_data = info->correlationData;
    seen.correlation_value = *info->correlationData;
    seen.context = info->context;
    if (info->callbackSite == CUPTI_API_ENTER) {
      *info->correlationData = 1000 + info->correlationId;  // what a client stashes for the exit
    } else {
      seen.return_value = *static_cast<const int*>(info->functionReturnValue);
      if (g_finalize_at_exit) cuptiFinalize();  // NVIDIA's recommended detach point
    }
  } else if (domain == CUPTI_CB_DOMAIN_RESOURCE && (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED ||
                                                     cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED ||
                                                     cbid == CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED)) {
    seen.graph = *static_cast<const CUpti_GraphData*>(static_cast<const CUpti_ResourceData*>(data)->resourceDescriptor);
  } else if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    seen.context = static_cast<const CUpti_ResourceData*>(data)->context;
  }
  g_seen.push_back(seen);
}

struct Subscribed : testclient::Fresh {
  CUpti_SubscriberHandle handle = nullptr;
  Subscribed() {
    g_seen.clear();
    g_finalize_at_exit = false;
    REQUIRE(cuptiSubscribe(&handle, Record, nullptr) == CUPTI_SUCCESS);
  }
};

const fakehub::Call kLaunch{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                            "cudaLaunchKernel", "_Z4axpyPf", nullptr, /*result=*/0};
const fakehub::Call kDriverLaunch{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                  "cuLaunchKernel", "_Z4axpyPf", nullptr, /*result=*/0};

}  // namespace

TEST_CASE("enter and exit of one call share correlationData while nested calls get their own", "[callbacks]") {
  Subscribed s;
  REQUIRE(cuptiEnableDomain(1, s.handle, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS);
  REQUIRE(cuptiEnableDomain(1, s.handle, CUPTI_CB_DOMAIN_DRIVER_API) == CUPTI_SUCCESS);
  uint32_t inner = 0;
  fakehub::Call launch = kLaunch;
  launch.result = 3;  // the exit callback sees the call's return value
  const uint32_t outer = fakehub::MakeCall(launch, [&](uint32_t) { inner = fakehub::MakeCall(kDriverLaunch); });

  REQUIRE(g_seen.size() == 4);
  const Seen& r_enter = g_seen[0];
  const Seen& d_enter = g_seen[1];
  const Seen& d_exit = g_seen[2];
  const Seen& r_exit = g_seen[3];
  CHECK(r_enter.site == CUPTI_API_ENTER);
  CHECK(r_enter.domain == CUPTI_CB_DOMAIN_RUNTIME_API);
  CHECK(r_enter.function == "cudaLaunchKernel");
  CHECK(r_enter.symbol == "_Z4axpyPf");
  CHECK(r_enter.correlation_id == outer);
  CHECK(r_enter.correlation_value == 0);  // fresh storage per call
  CHECK(r_enter.context == fakehub::Context());
  CHECK(d_enter.domain == CUPTI_CB_DOMAIN_DRIVER_API);
  CHECK(d_enter.correlation_id == inner);
  CHECK(d_enter.correlation_data != r_enter.correlation_data);
  CHECK(d_exit.site == CUPTI_API_EXIT);
  CHECK(d_exit.correlation_data == d_enter.correlation_data);
  CHECK(d_exit.correlation_value == 1000 + inner);
  CHECK(r_exit.site == CUPTI_API_EXIT);
  CHECK(r_exit.correlation_data == r_enter.correlation_data);
  CHECK(r_exit.correlation_value == 1000 + outer);
  CHECK(r_exit.return_value == 3);
  CHECK(inner != outer);
}

TEST_CASE("only enabled callbacks fire", "[callbacks]") {
  Subscribed s;
  REQUIRE(cuptiEnableCallback(1, s.handle, CUPTI_CB_DOMAIN_RUNTIME_API,
                              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) == CUPTI_SUCCESS);
  fakehub::MakeCall({CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc"});
  fakehub::MakeCall(kDriverLaunch);
  CHECK(g_seen.empty());
  fakehub::MakeCall(kLaunch);
  CHECK(g_seen.size() == 2);
  REQUIRE(cuptiEnableAllDomains(0, s.handle) == CUPTI_SUCCESS);
  fakehub::MakeCall(kLaunch);
  CHECK(g_seen.size() == 2);
}

TEST_CASE("resource callbacks report context creation and destruction", "[callbacks]") {
  Subscribed s;
  REQUIRE(cuptiEnableDomain(1, s.handle, CUPTI_CB_DOMAIN_RESOURCE) == CUPTI_SUCCESS);
  int context_storage = 0;
  fakehub::ContextEvent(/*destroy=*/false, &context_storage, 7);
  uint32_t uid = 0;
  CHECK(cuptiGetContextId(reinterpret_cast<CUcontext>(&context_storage), &uid) == CUPTI_SUCCESS);
  CHECK(uid == 7);
  fakehub::ContextEvent(/*destroy=*/true, &context_storage, 7);
  REQUIRE(g_seen.size() == 2);
  CHECK(g_seen[0].cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
  CHECK(g_seen[0].context == reinterpret_cast<CUcontext>(&context_storage));
  CHECK(g_seen[1].cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
}

TEST_CASE("graph node creation and cloning and executable graph creation reach enabled resource callbacks with CUpti_GraphData",
          "[callbacks][graphs]") {
  Subscribed s;
  REQUIRE(cuptiEnableCallback(1, s.handle, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) ==
          CUPTI_SUCCESS);
  int graph = 0, node = 0, exec = 0;
  SimGraphEvent created{SIM_GRAPH_NODE_CREATED, &graph, &node, CU_GRAPH_NODE_TYPE_KERNEL, nullptr, 3, 9};
  fakehub::GraphEvent(created);
  SimGraphEvent instantiated{SIM_GRAPH_EXEC_CREATED, &graph, nullptr, 0, &exec, 4, 0};
  fakehub::GraphEvent(instantiated);  // not enabled: not seen
  REQUIRE(g_seen.size() == 1);
  CHECK(g_seen[0].cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED);
  CHECK(g_seen[0].graph.graph == reinterpret_cast<CUgraph>(&graph));
  CHECK(g_seen[0].graph.node == reinterpret_cast<CUgraphNode>(&node));
  CHECK(g_seen[0].graph.nodeType == CU_GRAPH_NODE_TYPE_KERNEL);

  REQUIRE(cuptiEnableCallback(1, s.handle, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED) ==
          CUPTI_SUCCESS);
  fakehub::GraphEvent(instantiated);
  REQUIRE(g_seen.size() == 2);
  CHECK(g_seen[1].cbid == CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED);
  CHECK(g_seen[1].graph.graphExec == reinterpret_cast<CUgraphExec>(&exec));

  // Instantiation's clones: the new node and the one it was cloned from.
  REQUIRE(cuptiEnableCallback(1, s.handle, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) ==
          CUPTI_SUCCESS);
  int clone = 0;
  SimGraphEvent cloned{SIM_GRAPH_NODE_CLONED, &graph, &clone, CU_GRAPH_NODE_TYPE_KERNEL, &exec, 4, 10, &node, 9};
  fakehub::GraphEvent(cloned);
  REQUIRE(g_seen.size() == 3);
  CHECK(g_seen[2].cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED);
  CHECK(g_seen[2].graph.node == reinterpret_cast<CUgraphNode>(&clone));
  CHECK(g_seen[2].graph.originalNode == reinterpret_cast<CUgraphNode>(&node));
}

TEST_CASE("cuptiFinalize from an exit callback detaches so that call is not recorded and nothing fires after",
          "[callbacks][finalize]") {
  Subscribed s;
  testclient::Install();
  REQUIRE(cuptiEnableDomain(1, s.handle, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS);
  fakehub::MakeCall(kLaunch);  // recorded
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  REQUIRE(testclient::RecordsOf<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME).size() == 1);

  g_finalize_at_exit = true;
  fakehub::MakeCall(kLaunch);
  g_finalize_at_exit = false;
  const size_t seen = g_seen.size();
  fakehub::MakeCall(kLaunch);
  CHECK(g_seen.size() == seen);
  CHECK(testclient::RecordsOf<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME).size() == 1);

  // The truth log says when CUPTI was attached and detached.
  bool finalize_logged = false;
  for (const std::string& line : fakehub::TruthLines()) {
    if (line.find("\"call\":\"cuptiFinalize\"") != std::string::npos) finalize_logged = true;
  }
  CHECK(finalize_logged);

  // After a detach CUPTI can be attached again.
  CUpti_SubscriberHandle again = nullptr;
  CHECK(cuptiSubscribe(&again, Record, nullptr) == CUPTI_SUCCESS);
}
