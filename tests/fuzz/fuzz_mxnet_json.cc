// libFuzzer target for the MXNet -symbol.json reader: any text must give a symbol or a
// kiln::Error; a symbol that parses must also write back and parse to the same symbol.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "kiln/error.hpp"
#include "kiln/mxnet_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  kiln::mxnet::MxnetSymbol symbol;
  try {
    symbol = kiln::mxnet::parse_symbol_json(text, "fuzz input");
  } catch (const kiln::Error&) {
    return 0;
  }
  if (kiln::mxnet::parse_symbol_json(kiln::mxnet::to_symbol_json(symbol), "written") != symbol) std::abort();
  return 0;
}
