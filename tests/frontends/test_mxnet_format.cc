// MXNet model files: the .params NDArray list (every dtype, names, empty and 0-d arrays, the
// legacy record layouts, malformed input) and -symbol.json (current and pre-NNVM layouts,
// validation). Byte layouts marked "as MXNet 1.9.1 writes" were produced by mx.nd.save.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/error.hpp"
#include "kiln/mxnet_format.hpp"

namespace kiln::mxnet {
namespace {

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// Little-endian bytes for hand-built records.
struct Bytes {
  std::string data;
  template <class T>
  Bytes& put(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    data.append(b, sizeof(T));
    return *this;
  }
  Bytes& raw(const void* p, size_t n) {
    data.append(static_cast<const char*>(p), n);
    return *this;
  }
};

NamedTensors read(const std::string& bytes) {
  std::istringstream in(bytes);
  return read_params(in, "test.params");
}

std::string write(const NamedTensors& params) {
  std::ostringstream out;
  write_params(out, params, "test.params");
  return out.str();
}

std::string bytes_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.raw_data()), c.nbytes());
}

void expect_same(const NamedTensors& a, const NamedTensors& b) {
  ASSERT_EQ(a.names, b.names);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    ASSERT_EQ(a.tensors[i].defined(), b.tensors[i].defined()) << i;
    if (!a.tensors[i].defined()) continue;
    EXPECT_EQ(a.tensors[i].dtype(), b.tensors[i].dtype()) << i;
    EXPECT_EQ(a.tensors[i].shape(), b.tensors[i].shape()) << i;
    EXPECT_EQ(bytes_of(a.tensors[i]), bytes_of(b.tensors[i])) << i;
  }
}

ErrorCode code_of(const std::string& bytes) {
  try {
    read(bytes);
  } catch (const Error& e) {
    return e.code();
  }
  ADD_FAILURE() << "no error";
  return ErrorCode::kInternal;
}

// A list header for `count` arrays.
Bytes list_header(uint64_t count) {
  return Bytes().put<uint64_t>(0x112).put<uint64_t>(0).put<uint64_t>(count);
}

// mx.nd.save('a.params', {'arg:w': mx.nd.array([[1, 2, 3]], dtype='float16')}), as MXNet 1.9.1 writes it.
const char* kFloat16File =
    "120100000000000000000000000000000100000000000000c9fa93f900000000020000000100000000000000030000000000"
    "0000010000000000000002000000003c00400042010000000000000005000000000000006172673a77";
// mx.npx.save('s.params', {'s': mx.np.array(3.0), 'z': mx.np.zeros((0, 2))}): V3 records.
const char* kNumpyShapeFile =
    "120100000000000000000000000000000200000000000000cafa93f90000000000000000010000000000000000000000000040"
    "40cafa93f9000000000200000000000000000000000200000000000000010000000000000000000000020000000000000001"
    "000000000000007301000000000000007a";

TEST(MxnetParams, ReadsWhatMxnetWrites) {
  const NamedTensors p = read(from_hex(kFloat16File));
  ASSERT_EQ(p.names, std::vector<std::string>{"arg:w"});
  ASSERT_EQ(p.tensors[0].dtype(), DType::kFloat16);
  EXPECT_EQ(p.tensors[0].shape(), Shape({1, 3}));
  EXPECT_EQ(p.tensors[0].cast(DType::kFloat32).to_vector<float>(), (std::vector<float>{1, 2, 3}));
}

TEST(MxnetParams, WritesWhatMxnetWrites) {
  NamedTensors p{{"arg:w"}, {Tensor::from_vector<float>({1, 2, 3}, {1, 3}).cast(DType::kFloat16)}};
  EXPECT_EQ(write(p), from_hex(kFloat16File));
}

TEST(MxnetParams, ZeroDimAndEmptyArraysUseNumpyShapeRecords) {
  NamedTensors p{{"s", "z"}, {Tensor::scalar(3.0, DType::kFloat32), Tensor::zeros({0, 2}, DType::kFloat32)}};
  EXPECT_EQ(write(p), from_hex(kNumpyShapeFile));
  const NamedTensors back = read(from_hex(kNumpyShapeFile));
  expect_same(back, p);
  EXPECT_EQ(back.tensors[0].ndim(), 0);
  EXPECT_EQ(back.tensors[0].item(), 3.0);
}

TEST(MxnetParams, RoundTripsEveryDTypeWithArgAndAuxNames) {
  NamedTensors p;
  for (const DType dtype : kComputeDTypes) {
    p.names.push_back(std::string(dtype == DType::kInt64 ? "aux:" : "arg:") + "t_" + dtype_name(dtype));
    p.tensors.push_back(Tensor::from_vector<double>({0, 1, -2, 3.5, 4, 1e3}, {2, 3}).cast(dtype));
  }
  p.names.push_back("plain_name");
  p.tensors.push_back(Tensor::from_vector<float>({1, 2, 3, 4}, {1, 2, 1, 2}).transpose({0, 3, 2, 1}));
  const std::string bytes = write(p);
  expect_same(read(bytes), p);
  EXPECT_EQ(write(read(bytes)), bytes);
}

TEST(MxnetParams, RoundTripsAListWithoutNames) {
  NamedTensors p{{}, {Tensor::from_vector<int32_t>({7}, {1}), Tensor::from_vector<int8_t>({-1, 2}, {2})}};
  const NamedTensors back = read(write(p));
  EXPECT_TRUE(back.names.empty());
  expect_same(back, p);
}

TEST(MxnetParams, RoundTripsEmptyArraysOfEveryDType) {
  NamedTensors p;
  for (const DType dtype : kComputeDTypes) {
    p.names.push_back(dtype_name(dtype));
    p.tensors.push_back(Tensor::zeros({3, 0}, dtype));
  }
  p.names.push_back("scalar");
  p.tensors.push_back(Tensor::scalar(-2.5, DType::kFloat64));
  expect_same(read(write(p)), p);
}

TEST(MxnetParams, EmptyArraysNeedNoData) {
  // The last record of an unnamed list: only the 8-byte name count follows it.
  Bytes file = list_header(1);
  file.put<uint32_t>(0xF993faca).put<int32_t>(0).put<int32_t>(2).put<int64_t>(0).put<int64_t>(1LL << 40);
  file.put<int32_t>(1).put<int32_t>(0).put<int32_t>(1).put<uint64_t>(0);
  const NamedTensors p = read(file.data);
  EXPECT_EQ(p.tensors[0].shape(), Shape({0, 1LL << 40}));
  EXPECT_EQ(write(p), file.data);
}

TEST(MxnetParams, ReadsLegacyRecords) {
  const float values[] = {1, 2, 3, 4, 5, 6};
  // Before the V1 magic: uint32 ndim, uint32 dims, context, type flag, data.
  Bytes file = list_header(3);
  file.put<uint32_t>(2).put<uint32_t>(2).put<uint32_t>(3).put<int32_t>(1).put<int32_t>(0).put<int32_t>(0);
  file.raw(values, sizeof(values));
  // V1: magic, int32 ndim, int64 dims (no storage type), context (here a GPU), type flag, data.
  file.put<uint32_t>(0xF993fac8)
      .put<int32_t>(1)
      .put<int64_t>(3)
      .put<int32_t>(2)
      .put<int32_t>(1)
      .put<int32_t>(6);
  const int64_t longs[] = {-1, 0, 1LL << 40};
  file.raw(longs, sizeof(longs));
  // A V2 "none" array: ndim 0 ends the record.
  file.put<uint32_t>(0xF993fac9).put<int32_t>(0).put<int32_t>(0);
  file.put<uint64_t>(3);
  for (const std::string name : {"arg:a", "aux:b", "none"})
    file.put<uint64_t>(name.size()).raw(name.data(), name.size());

  const NamedTensors p = read(file.data);
  ASSERT_EQ(p.tensors.size(), 3u);
  EXPECT_EQ(p.tensors[0].shape(), Shape({2, 3}));
  EXPECT_EQ(p.tensors[0].to_vector<float>(), std::vector<float>(values, values + 6));
  EXPECT_EQ(p.tensors[1].to_vector<int64_t>(), std::vector<int64_t>(longs, longs + 3));
  EXPECT_FALSE(p.tensors[2].defined());
  // Written back in the current layout, which reads to the same arrays.
  expect_same(read(write(p)), p);
}

TEST(MxnetParams, BoolBytesReadAsTruthValues) {
  Bytes file = list_header(1);
  file.put<uint32_t>(0xF993fac9)
      .put<int32_t>(0)
      .put<int32_t>(1)
      .put<int64_t>(3)
      .put<int32_t>(1)
      .put<int32_t>(0);
  file.put<int32_t>(7).put<uint8_t>(0).put<uint8_t>(1).put<uint8_t>(200).put<uint64_t>(0);
  EXPECT_EQ(bytes_of(read(file.data).tensors[0]), std::string("\0\1\1", 3));
}

TEST(MxnetParams, SavesAndLoadsFiles) {
  const std::string path = (std::filesystem::temp_directory_path() / "kiln_test_mxnet.params").string();
  NamedTensors p{{"arg:x"}, {Tensor::from_vector<double>({1.5, -2}, {2})}};
  save_params(path, p);
  expect_same(load_params(path), p);
  std::remove(path.c_str());
  EXPECT_THROW(load_params(path), Error);
}

TEST(MxnetParams, EveryTruncationIsAnError) {
  NamedTensors p{{"arg:w", "aux:m"},
                 {Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}), Tensor::from_vector<int64_t>({5}, {1})}};
  const std::string bytes = write(p);
  for (size_t n = 0; n < bytes.size(); ++n) {
    try {
      read(bytes.substr(0, n));
      ADD_FAILURE() << "a file cut to " << n << " of " << bytes.size() << " bytes was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kIo) << n << ": " << e.what();
    }
  }
}

TEST(MxnetParams, RejectsBadMagic) {
  std::string bytes = from_hex(kFloat16File);
  bytes[0] = 0x13;
  try {
    read(bytes);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("test.params: not an MXNet NDArray file"), std::string::npos)
        << e.what();
  }
}

TEST(MxnetParams, RejectsAbsurdSizesBeforeAllocating) {
  EXPECT_EQ(code_of(list_header(1ULL << 60).data), ErrorCode::kIo);
  const auto record = [](int32_t ndim, std::vector<int64_t> dims) {
    Bytes b = list_header(1);
    b.put<uint32_t>(0xF993fac9).put<int32_t>(0).put<int32_t>(ndim);
    for (const int64_t d : dims) b.put<int64_t>(d);
    b.put<int32_t>(1).put<int32_t>(0).put<int32_t>(0).put<float>(1.0f).put<uint64_t>(0);
    return b.data;
  };
  EXPECT_NO_THROW(read(record(2, {1, 1})));  // the well-formed record these variations break
  EXPECT_EQ(code_of(record(1 << 30, {1})), ErrorCode::kIo);
  EXPECT_EQ(code_of(record(-5, {})), ErrorCode::kIo);
  EXPECT_EQ(code_of(record(2, {1LL << 62, 1LL << 62})), ErrorCode::kIo);
  EXPECT_EQ(code_of(record(3, {0, 1LL << 62, 1LL << 62})), ErrorCode::kIo);  // empty, but 2^124 overflows
  EXPECT_EQ(code_of(record(1, {-3})), ErrorCode::kIo);
  // A legacy record whose first word is garbage reads as a huge ndim.
  EXPECT_EQ(code_of(list_header(1).put<uint32_t>(0xdeadbeef).data), ErrorCode::kIo);
  // A name longer than the file.
  Bytes names = list_header(1);
  names.put<uint32_t>(0xF993fac9).put<int32_t>(0).put<int32_t>(0).put<uint64_t>(1).put<uint64_t>(1ULL << 62);
  EXPECT_EQ(code_of(names.data), ErrorCode::kIo);
}

TEST(MxnetParams, RejectsInconsistentNames) {
  Bytes file = list_header(0);
  file.put<uint64_t>(1).put<uint64_t>(1).raw("x", 1);
  EXPECT_EQ(code_of(file.data), ErrorCode::kIo);
  NamedTensors p{{"a", "b"}, {Tensor::scalar(1, DType::kFloat32)}};
  try {
    write(p);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
}

TEST(MxnetParams, SparseAndUnknownTypesAreUnsupported) {
  for (const int32_t stype : {1, 2}) {
    Bytes file = list_header(1);
    file.put<uint32_t>(0xF993fac9).put<int32_t>(stype).put<int32_t>(1).put<int64_t>(4);
    EXPECT_EQ(code_of(file.data), ErrorCode::kUnsupported);
  }
  const auto typed = [](int32_t flag) {
    Bytes b = list_header(1);
    b.put<uint32_t>(0xF993fac9)
        .put<int32_t>(0)
        .put<int32_t>(1)
        .put<int64_t>(1)
        .put<int32_t>(1)
        .put<int32_t>(0);
    return b.put<int32_t>(flag).put<uint64_t>(0).put<uint64_t>(0).data;
  };
  EXPECT_EQ(code_of(typed(13)), ErrorCode::kIo);  // past the last mshadow type code
  EXPECT_EQ(code_of(typed(99)), ErrorCode::kIo);
  EXPECT_EQ(code_of(list_header(1).put<uint32_t>(0xF993fac9).put<int32_t>(-1).data), ErrorCode::kIo);
}

TEST(MxnetParams, UndefinedTensorsCannotSitBesideNumpyShapeRecords) {
  NamedTensors p{{}, {Tensor(), Tensor::scalar(1, DType::kFloat32)}};
  try {
    write(p);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
}

// Symbol JSON.

// mx.sym.Convolution + BatchNorm + FullyConnected, as MXNet 1.9.1's tojson() writes it (shortened).
const char* kSymbol = R"json({
  "nodes": [
    {"op": "null", "name": "data", "inputs": []},
    {"op": "null", "name": "conv1_weight", "attrs": {"kernel": "(3, 3)", "num_filter": "4"}, "inputs": []},
    {"op": "Convolution", "name": "conv1",
     "attrs": {"kernel": "(3, 3)", "no_bias": "True", "num_filter": "4"},
     "inputs": [[0, 0, 0], [1, 0, 0]]},
    {"op": "null", "name": "bn1_gamma", "inputs": []},
    {"op": "null", "name": "bn1_beta", "inputs": []},
    {"op": "null", "name": "bn1_moving_mean", "attrs": {"__init__": "[\"zero\", {}]"}, "inputs": []},
    {"op": "null", "name": "bn1_moving_var", "attrs": {"__init__": "[\"one\", {}]"}, "inputs": []},
    {"op": "BatchNorm", "name": "bn1", "inputs": [[2, 0, 0], [3, 0, 0], [4, 0, 0], [5, 0, 1], [6, 0, 1]]}
  ],
  "arg_nodes": [0, 1, 3, 4, 5, 6],
  "node_row_ptr": [0, 1, 2, 3, 4, 5, 6, 7, 10],
  "heads": [[7, 0, 0], [7, 2, 0]],
  "attrs": {"mxnet_version": ["int", 10901]}
})json";

MxnetSymbol::Entry entry(int node, int index, int version = 0) {
  return {node, index, version};
}

TEST(MxnetSymbolJson, ParsesMxnet19) {
  const MxnetSymbol s = parse_symbol_json(kSymbol, "net-symbol.json");
  ASSERT_EQ(s.nodes.size(), 8u);
  EXPECT_EQ(s.nodes[2].op, "Convolution");
  EXPECT_EQ(s.nodes[2].name, "conv1");
  EXPECT_EQ(s.nodes[2].attrs.at("num_filter"), "4");
  EXPECT_EQ(s.nodes[2].inputs, (std::vector<MxnetSymbol::Entry>{entry(0, 0), entry(1, 0)}));
  EXPECT_EQ(s.nodes[5].attrs.at("__init__"), "[\"zero\", {}]");
  EXPECT_EQ(s.nodes[7].inputs[3], entry(5, 0, 1));
  EXPECT_EQ(s.arg_nodes, (std::vector<int>{0, 1, 3, 4, 5, 6}));
  EXPECT_EQ(s.heads, (std::vector<MxnetSymbol::Entry>{entry(7, 0), entry(7, 2)}));
  EXPECT_EQ(s.attrs.at("mxnet_version"), "10901");
}

TEST(MxnetSymbolJson, WritesWhatItReads) {
  const MxnetSymbol s = parse_symbol_json(kSymbol, "net-symbol.json");
  const std::string text = to_symbol_json(s);
  EXPECT_EQ(parse_symbol_json(text, "written"), s);
  // BatchNorm's third output is used, so it counts three outputs; the rest one each.
  EXPECT_NE(
      text.find(
          "\"node_row_ptr\": [\n    0,\n    1,\n    2,\n    3,\n    4,\n    5,\n    6,\n    7,\n    10\n  ]"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("\"mxnet_version\": [\n      \"int\",\n      10901\n    ]"), std::string::npos) << text;
}

TEST(MxnetSymbolJson, ReadsPreNnvmLayout) {
  const char* old = R"({
    "nodes": [
      {"op": "null", "param": {}, "name": "data", "inputs": [], "backward_source_id": -1},
      {"op": "null", "param": {}, "name": "fc_weight", "inputs": [], "backward_source_id": -1,
       "attr": {"lr_mult": "2"}},
      {"op": "FullyConnected", "param": {"num_hidden": "10", "no_bias": "False"}, "name": "fc",
       "inputs": [[0, 0], [1, 0]], "backward_source_id": -1, "attr": {"no_bias": "True"}}
    ],
    "arg_nodes": [0, 1],
    "heads": [[2, 0]]
  })";
  const MxnetSymbol s = parse_symbol_json(old, "old-symbol.json");
  EXPECT_EQ(s.nodes[1].attrs.at("lr_mult"), "2");
  EXPECT_EQ(s.nodes[2].attrs.at("num_hidden"), "10");
  EXPECT_EQ(s.nodes[2].attrs.at("no_bias"), "True");  // `attr` overrides `param`, as in MXNet
  EXPECT_EQ(s.nodes[2].inputs, (std::vector<MxnetSymbol::Entry>{entry(0, 0), entry(1, 0)}));
  EXPECT_EQ(s.heads, std::vector<MxnetSymbol::Entry>{entry(2, 0)});
  EXPECT_EQ(s.attrs.at("mxnet_version"), "800");  // so MXNet upgrades it the same way when written back
  EXPECT_EQ(parse_symbol_json(to_symbol_json(s), "written"), s);
}

TEST(MxnetSymbolJson, WritesVersion10901ForNewSymbols) {
  MxnetSymbol s;
  s.nodes.push_back({"null", "x", {}, {}});
  s.nodes.push_back({"relu", "r", {}, {entry(0, 0)}});
  s.arg_nodes = {0};
  s.heads = {entry(1, 0)};
  EXPECT_EQ(parse_symbol_json(to_symbol_json(s), "written").attrs.at("mxnet_version"), "10901");
}

void expect_json_error(const std::string& text, ErrorCode code, const std::string& part) {
  try {
    parse_symbol_json(text, "bad-symbol.json");
    ADD_FAILURE() << "accepted: " << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

std::string graph(const std::string& nodes, const std::string& args = "[0]",
                  const std::string& heads = "[[1, 0, 0]]") {
  return R"({"nodes": )" + nodes + R"(, "arg_nodes": )" + args + R"(, "heads": )" + heads + "}";
}

const char* kTwoNodes = R"([{"op": "null", "name": "x", "inputs": []},
                            {"op": "relu", "name": "r", "inputs": [[0, 0, 0]]}])";

TEST(MxnetSymbolJson, RejectsDanglingReferences) {
  expect_json_error(graph(R"([{"op": "null", "name": "x", "inputs": []},
                              {"op": "relu", "name": "r", "inputs": [[5, 0, 0]]}])"),
                    ErrorCode::kIo, "bad-symbol.json: node 1 'r' (relu) input 0 refers to node 5");
  expect_json_error(graph(R"([{"op": "null", "name": "x", "inputs": []},
                              {"op": "relu", "name": "r", "inputs": [[1, 0, 0]]}])"),
                    ErrorCode::kIo, "node 1 'r' (relu) input 0 refers to node 1; expected an earlier node");
  expect_json_error(graph(R"([{"op": "null", "name": "x", "inputs": []},
                              {"op": "relu", "name": "r", "inputs": [[0, -1, 0]]}])"),
                    ErrorCode::kIo, "output index -1");
  expect_json_error(graph(kTwoNodes, "[0]", "[[2, 0, 0]]"), ErrorCode::kIo, "head 0 refers to node 2");
  expect_json_error(graph(kTwoNodes, "[3]"), ErrorCode::kIo, "arg_nodes entry 3 is not a node");
  expect_json_error(graph(kTwoNodes, "[1]"), ErrorCode::kIo,
                    "arg_nodes entry 1 is node 1 'r' (relu), not a variable");
  expect_json_error(graph(R"([{"op": "null", "name": "x", "inputs": [[0, 0, 0]]}])", "[0]", "[[0, 0, 0]]"),
                    ErrorCode::kIo, "is a variable but has 1 inputs");
}

TEST(MxnetSymbolJson, RejectsMalformedJson) {
  expect_json_error("{\"nodes\": [", ErrorCode::kIo, "bad-symbol.json: invalid JSON");
  expect_json_error("[]", ErrorCode::kIo, "the document is array, expected object");
  expect_json_error(R"({"arg_nodes": [], "heads": []})", ErrorCode::kIo, "has no \"nodes\"");
  expect_json_error(graph(R"([{"op": 3, "name": "x", "inputs": []}])", "[]", "[]"), ErrorCode::kIo,
                    "node 0 op is number");
  expect_json_error(graph(R"([{"op": "null", "name": "x", "inputs": [], "attrs": {"a": 1}}])", "[]", "[]"),
                    ErrorCode::kIo, "node 0 'x' (null) attrs \"a\" is number");
  expect_json_error(graph(kTwoNodes, "[0]", "[[1]]"), ErrorCode::kIo, "head 0 has 1 elements");
  expect_json_error(graph(kTwoNodes, "[0]", "[[1, 9999999999, 0]]"), ErrorCode::kIo, "out of range");
  expect_json_error(graph(kTwoNodes, "[0]", "[[18446744073709551615, 0, 0]]"), ErrorCode::kIo,
                    "out of range");
  expect_json_error(
      R"({"nodes": [], "arg_nodes": [], "heads": [], "attrs": {"mxnet_version": ["str", "x"]}})",
      ErrorCode::kUnsupported, "mxnet_version");
}

TEST(MxnetSymbolJson, SubgraphsAreUnsupported) {
  expect_json_error(graph(R"([{"op": "null", "name": "x", "inputs": []},
                              {"op": "_foreach", "name": "loop", "inputs": [[0, 0, 0]],
                               "subgraphs": [{}]}])"),
                    ErrorCode::kUnsupported, "node 1 'loop' (_foreach) has subgraphs");
}

TEST(MxnetSymbolJson, WriterRejectsInvalidSymbols) {
  MxnetSymbol s;
  s.nodes.push_back({"null", "x", {}, {}});
  s.heads = {entry(3, 0)};
  EXPECT_THROW(to_symbol_json(s), Error);
  s.heads = {entry(0, 0)};
  s.attrs["mxnet_version"] = "1.9";
  try {
    to_symbol_json(s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace kiln::mxnet
