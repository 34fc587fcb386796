// Graph node -> the Python stack that created it, through clones.
#include "collectors/cupti/graph_sites.h"

#include <catch2/catch.hpp>

using prof::cupti::GraphSites;

TEST_CASE("a node keeps the stack of the call that created it, and clones take their original's", "[graph_sites]") {
  GraphSites sites;
  sites.Created(7, 42);
  sites.Created(8, 43);
  CHECK(sites.StackOf(7) == 42);
  CHECK(sites.StackOf(8) == 43);
  CHECK(sites.StackOf(9) == 0);
  sites.Cloned(107, 7);
  sites.Cloned(108, 8);
  CHECK(sites.StackOf(107) == 42);
  CHECK(sites.StackOf(108) == 43);
  // A clone of a node nothing is known of stays unknown; so do ids of 0.
  sites.Cloned(109, 9);
  CHECK(sites.StackOf(109) == 0);
  sites.Created(0, 5);
  CHECK(sites.StackOf(0) == 0);
  // A node with no stack (not a Python thread, stacks off) is not kept.
  sites.Created(10, 0);
  CHECK(sites.StackOf(10) == 0);
}

TEST_CASE("instantiation's clones win over the instantiating call's stack, in either order", "[graph_sites]") {
  // CUPTI may report an instantiation's nodes as created (inside the
  // instantiate call) as well as cloned.
  GraphSites sites;
  sites.Created(1, 11);   // captured on the capturing line
  sites.Created(101, 99); // created by the instantiate call, then cloned
  sites.Cloned(101, 1);
  CHECK(sites.StackOf(101) == 11);
  sites.Cloned(102, 1);   // cloned first, then created
  sites.Created(102, 99);
  CHECK(sites.StackOf(102) == 11);
}

TEST_CASE("the table is bounded: nodes past the cap go unnamed and are counted", "[graph_sites]") {
  GraphSites sites;
  bool all_kept = true;
  for (uint64_t id = 1; id <= GraphSites::kMaxNodes; ++id) all_kept = sites.Created(id, 3) && all_kept;
  CHECK(all_kept);
  CHECK(sites.dropped() == 0);
  CHECK_FALSE(sites.Created(GraphSites::kMaxNodes + 1, 3));
  CHECK_FALSE(sites.Cloned(GraphSites::kMaxNodes + 2, 1));
  CHECK(sites.StackOf(GraphSites::kMaxNodes + 1) == 0);
  CHECK(sites.StackOf(GraphSites::kMaxNodes + 2) == 0);
  CHECK(sites.dropped() == 2);
  CHECK(sites.Cloned(5, 1));  // an entry already held may change
  CHECK(sites.StackOf(5) == 3);
}
