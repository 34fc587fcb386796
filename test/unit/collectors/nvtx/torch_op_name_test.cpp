#include "collectors/nvtx/torch_op_name.h"

#include <catch2/catch.hpp>

using prof::nvtx::ParseTorchOpName;
using prof::nvtx::TorchOpName;

// Texts as PyTorch 2.15's NVTX profiler pushed them on the simulated stack
// (record_shapes on), one per form getNvtxStr writes.
TEST_CASE("an operator with a sequence number, shapes and input ids is split into its parts") {
  TorchOpName op;
  REQUIRE(ParseTorchOpName("aten::addmm, seq = 1, op_id = 5, sizes = [[64], [16, 64], [64, 64], [], []], "
                           "input_op_ids = [(0,-1), (0,-1), (2,0), (0,-1), (0,-1)]",
                           &op));
  CHECK(op.name == "aten::addmm");
  CHECK(op.seq == 1);
  CHECK(op.op_id == 5);
  CHECK(op.shapes == "[[64], [16, 64], [64, 64], [], []]");
}

TEST_CASE("an operator without a sequence number has seq -1") {
  TorchOpName op;
  REQUIRE(ParseTorchOpName("aten::transpose, op_id = 3, sizes = [[64, 64], [], []], input_op_ids = [(0,-1)]", &op));
  CHECK(op.name == "aten::transpose");
  CHECK(op.seq == -1);
  CHECK(op.op_id == 3);
  CHECK(op.shapes == "[[64, 64], [], []]");
}

TEST_CASE("backward functions and autograd's evaluate_function ranges keep their names") {
  TorchOpName op;
  REQUIRE(ParseTorchOpName("autograd::engine::evaluate_function: SumBackward0, op_id = 20", &op));
  CHECK(op.name == "autograd::engine::evaluate_function: SumBackward0");
  CHECK(op.op_id == 20);
  CHECK(op.shapes.empty());
  REQUIRE(ParseTorchOpName("SumBackward0, seq = 5, op_id = 21, sizes = [[]], input_op_ids = [(16,0)]", &op));
  CHECK(op.name == "SumBackward0");
  CHECK(op.seq == 5);
  CHECK(op.shapes == "[[]]");
}

TEST_CASE("without record_shapes there are no sizes") {
  TorchOpName op;
  REQUIRE(ParseTorchOpName("aten::relu, seq = 2, op_id = 6", &op));
  CHECK(op.name == "aten::relu");
  CHECK(op.seq == 2);
  CHECK(op.shapes.empty());
}

TEST_CASE("other range names are not operators and leave the result alone") {
  TorchOpName op;
  op.op_id = 99;
  CHECK_FALSE(ParseTorchOpName("train_step", &op));
  CHECK_FALSE(ParseTorchOpName("forward, seq = 3", &op));
  CHECK_FALSE(ParseTorchOpName(", op_id = 4", &op));                 // no name
  CHECK_FALSE(ParseTorchOpName("aten::mm, op_id = x", &op));         // no number
  CHECK_FALSE(ParseTorchOpName("aten::mm, op_id = 4 and more", &op));  // not what follows an op_id
  CHECK(op.op_id == 99);
}

TEST_CASE("a seq that is not a number stays part of the name") {
  TorchOpName op;
  REQUIRE(ParseTorchOpName("label, seq = many, op_id = 7", &op));
  CHECK(op.name == "label, seq = many");
  CHECK(op.seq == -1);
}
