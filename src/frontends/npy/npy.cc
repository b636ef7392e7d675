#include "kiln/npy.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include "core/bool_bytes.h"
#include "kiln/error.hpp"

namespace kiln::npy {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

// numpy's text arrays ('<U<n>'): each element n UTF-32 code points, zero-padded. Kiln's string
// tensors hold UTF-8; these convert between the two.
int64_t text_width(const std::string& descr) {
  if (descr.size() < 3 || (descr[0] != '<' && descr[0] != '|' && descr[0] != '=') || descr[1] != 'U')
    return -1;
  try {
    return std::stoll(descr.substr(2));
  } catch (const std::exception&) {
    return -1;
  }
}

void append_utf8(std::string& out, uint32_t c, const std::string& path) {
  KILN_CHECK(c <= 0x10FFFF && (c < 0xD800 || c > 0xDFFF), ErrorCode::kIo, path, ": code point ", c,
             " is not a character");
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

// The code points of a UTF-8 string (a malformed byte is an error naming `where`).
std::vector<uint32_t> code_points(const std::string& s, const std::string& where) {
  std::vector<uint32_t> points;
  for (size_t i = 0; i < s.size();) {
    const auto lead = static_cast<unsigned char>(s[i]);
    const int extra = lead < 0x80           ? 0
                      : (lead >> 5) == 0x6  ? 1
                      : (lead >> 4) == 0xE  ? 2
                      : (lead >> 3) == 0x1E ? 3
                                            : -1;
    KILN_CHECK(extra >= 0 && i + static_cast<size_t>(extra) < s.size(), ErrorCode::kInvalidArgument, where,
               ": a string is not valid UTF-8");
    uint32_t c = extra == 0 ? lead : lead & (0x3F >> extra);
    for (int k = 1; k <= extra; ++k) {
      const auto next = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      KILN_CHECK((next & 0xC0) == 0x80, ErrorCode::kInvalidArgument, where, ": a string is not valid UTF-8");
      c = (c << 6) | (next & 0x3F);
    }
    points.push_back(c);
    i += static_cast<size_t>(extra) + 1;
  }
  return points;
}

DType dtype_from_descr(const std::string& descr, const std::string& path) {
  // '|' (not applicable) and '<' (little-endian) are accepted; '>' would need byte swapping.
  KILN_CHECK(descr.size() >= 3, ErrorCode::kUnsupported, path, ": unsupported dtype descriptor '", descr,
             "'");
  const char order = descr[0];
  KILN_CHECK(order == '<' || order == '|' || order == '=', ErrorCode::kUnsupported, path,
             ": big-endian data ('", descr, "') is not supported");
  const std::string code = descr.substr(1);
  if (code == "f4") return DType::kFloat32;
  if (code == "f8") return DType::kFloat64;
  if (code == "f2") return DType::kFloat16;
  if (code == "i1") return DType::kInt8;
  if (code == "u1") return DType::kUInt8;
  if (code == "i4") return DType::kInt32;
  if (code == "i8") return DType::kInt64;
  if (code == "b1") return DType::kBool;
  if (code == "i2") return DType::kInt16;
  if (code == "u2") return DType::kUInt16;
  if (code == "u4") return DType::kUInt32;
  if (code == "u8") return DType::kUInt64;
  if (code == "c8") return DType::kComplex64;
  if (code == "c16") return DType::kComplex128;
  if (code == "V2") return DType::kBFloat16;  // numpy's own bytes for ml_dtypes' bfloat16
  raise(ErrorCode::kUnsupported, path, ": unsupported dtype descriptor '", descr, "'");
}

const char* descr_for(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "<f4";
    case DType::kFloat64:
      return "<f8";
    case DType::kFloat16:
      return "<f2";
    case DType::kBFloat16:
      return "<V2";
    case DType::kInt8:
      return "|i1";
    case DType::kUInt8:
      return "|u1";
    case DType::kInt32:
      return "<i4";
    case DType::kInt64:
      return "<i8";
    case DType::kBool:
      return "|b1";
    case DType::kInt16:
      return "<i2";
    case DType::kUInt16:
      return "<u2";
    case DType::kUInt32:
      return "<u4";
    case DType::kUInt64:
      return "<u8";
    case DType::kComplex64:
      return "<c8";
    case DType::kComplex128:
      return "<c16";
    default:
      break;
  }
  // numpy writes ml_dtypes' 8- and 4-bit types as raw bytes ('|V1') that do not say which.
  raise(ErrorCode::kUnsupported, "npy: ", dtype_name(dtype),
        " has no numpy type of its own to write; cast it to a wider type first");
}

// The value of `key` in the header's Python dict literal: the text between `open` and `close`
// after "'key':" (with open = 0: from the first non-space character up to `close` or the '}').
std::string header_field(const std::string& header, const std::string& key, char open, char close,
                         const std::string& path) {
  size_t at = header.find("'" + key + "'");
  KILN_CHECK(at != std::string::npos, ErrorCode::kIo, path, ": header has no '", key, "'");
  at = header.find(':', at + key.size() + 2);
  KILN_CHECK(at != std::string::npos, ErrorCode::kIo, path, ": header entry '", key, "' has no value");
  at = header.find_first_not_of(" \t", at + 1);
  KILN_CHECK(at != std::string::npos, ErrorCode::kIo, path, ": header entry '", key, "' has no value");
  if (open) {
    KILN_CHECK(header[at] == open, ErrorCode::kIo, path, ": header entry '", key, "' should start with '",
               open, "'");
    ++at;
  }
  size_t end = header.find(close, at);
  if (!open && end == std::string::npos) end = header.find('}', at);
  KILN_CHECK(end != std::string::npos, ErrorCode::kIo, path, ": header entry '", key, "' is not closed");
  std::string value = header.substr(at, end - at);
  if (!open) value.erase(value.find_last_not_of(" \t") + 1);
  return value;
}

}  // namespace

Tensor load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in.good(), ErrorCode::kIo, path, ": cannot open file");
  return read(in, path);
}

Tensor read(std::istream& in, const std::string& path) {
  const std::streampos start = in.tellg();
  in.seekg(0, std::ios::end);
  const std::streamoff total = in.tellg() - start;
  in.seekg(start);
  char magic[6];
  in.read(magic, 6);
  KILN_CHECK(in.gcount() == 6 && std::memcmp(magic, kMagic, 6) == 0, ErrorCode::kIo, path,
             ": not a .npy file (bad magic)");
  unsigned char version[2];
  in.read(reinterpret_cast<char*>(version), 2);
  KILN_CHECK(in.good() && version[0] >= 1 && version[0] <= 3, ErrorCode::kUnsupported, path,
             ": unsupported .npy version ", int(version[0]), ".", int(version[1]));
  uint32_t header_len = 0;
  if (version[0] == 1) {
    unsigned char b[2];
    in.read(reinterpret_cast<char*>(b), 2);
    header_len = b[0] | (b[1] << 8);
  } else {
    unsigned char b[4];
    in.read(reinterpret_cast<char*>(b), 4);
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  }
  KILN_CHECK(in.good() && header_len <= (1u << 16), ErrorCode::kIo, path, ": truncated or oversized header");
  std::string header(header_len, '\0');
  in.read(header.data(), header_len);
  KILN_CHECK(static_cast<uint32_t>(in.gcount()) == header_len, ErrorCode::kIo, path, ": truncated header");

  const std::string descr = header_field(header, "descr", '\'', '\'', path);
  const int64_t width = text_width(descr);
  const DType dtype = width >= 0 ? DType::kString : dtype_from_descr(descr, path);
  // Bytes per element in the file: a text element's code points are 4 bytes each. The width is
  // bounded here against overflow, and below (with any element) by the file's size.
  KILN_CHECK(width <= std::numeric_limits<int64_t>::max() / 4, ErrorCode::kIo, path, ": text width ", width,
             " in '", descr, "' is too large");
  const int64_t item_bytes = width >= 0 ? 4 * width : static_cast<int64_t>(dtype_size(dtype));
  const std::string order = header_field(header, "fortran_order", 0, ',', path);
  KILN_CHECK(order == "True" || order == "False", ErrorCode::kIo, path, ": 'fortran_order' is '", order,
             "', expected True or False");
  const bool fortran = order == "True";
  const std::string shape_text = header_field(header, "shape", '(', ')', path);
  std::vector<int64_t> dims;
  int64_t count = 1;
  std::stringstream dims_text(shape_text);
  std::string item;
  while (std::getline(dims_text, item, ',')) {
    if (item.find_first_not_of(" \t") == std::string::npos) continue;
    try {
      dims.push_back(std::stoll(item));
    } catch (const std::exception&) {
      raise(ErrorCode::kIo, path, ": bad dimension '", item, "' in shape");
    }
    KILN_CHECK(dims.back() >= 0, ErrorCode::kIo, path, ": negative dimension in shape");
    // The file must hold every element, which also bounds the product against overflow.
    KILN_CHECK(dims.back() == 0 || count <= total / dims.back(), ErrorCode::kIo, path, ": shape (",
               shape_text, ") needs more data than the ", total, "-byte file holds");
    count *= dims.back();
  }
  const std::streamoff data_bytes = static_cast<std::streamoff>(in.tellg() - start);
  KILN_CHECK(item_bytes == 0 || count <= (total - data_bytes) / item_bytes, ErrorCode::kIo, path,
             ": expected ", count, " elements of ", item_bytes, " bytes, the file has ", total - data_bytes,
             " bytes of data");
  const Shape shape(dims);
  // Fortran order is column-major: read it as the reversed shape, then transpose back.
  const Shape stored = fortran ? Shape(std::vector<int64_t>(dims.rbegin(), dims.rend())) : shape;
  Tensor t = Tensor::empty(stored, dtype);
  if (width >= 0) {
    // Without elements the width, which nothing then bounds, is not allocated.
    std::vector<uint32_t> points(count > 0 ? static_cast<size_t>(width) : 0);
    for (int64_t i = 0; i < count; ++i) {
      in.read(reinterpret_cast<char*>(points.data()), static_cast<std::streamsize>(4 * width));
      KILN_CHECK(in.gcount() == 4 * width, ErrorCode::kIo, path, ": truncated text data");
      std::string& s = t.data<std::string>()[i];
      for (uint32_t c : points) {
        if (c == 0) break;
        append_utf8(s, c, path);
      }
    }
  } else {
    in.read(static_cast<char*>(t.raw_data()), static_cast<std::streamsize>(t.nbytes()));
    KILN_CHECK(static_cast<size_t>(in.gcount()) == t.nbytes(), ErrorCode::kIo, path, ": expected ",
               t.nbytes(), " bytes of data for shape ", shape, " ", dtype_name(dtype), ", found ",
               in.gcount());
  }
  if (dtype == DType::kBool) canonicalize_bool_bytes(t.raw_data(), t.nbytes());
  if (!fortran || shape.ndim() < 2) return t;
  std::vector<int64_t> perm;
  for (int i = shape.ndim() - 1; i >= 0; --i) perm.push_back(i);
  return t.transpose(perm).contiguous();
}

Tensor load_as(const std::string& path, DType dtype) {
  Tensor t = load(path);
  KILN_CHECK(dtype_size(dtype) == t.itemsize(), ErrorCode::kTypeMismatch, path, ": cannot read ",
             dtype_name(t.dtype()), " data as ", dtype_name(dtype));
  return Tensor(t.storage(), t.shape(), dtype, t.strides(), t.offset());
}

void save(const std::string& path, const Tensor& tensor) {
  const Tensor t = tensor.contiguous();
  // Text is written as numpy's '<U<n>', n the longest string's code points.
  std::vector<std::vector<uint32_t>> text;
  size_t width = 1;
  if (is_string(t.dtype())) {
    for (int64_t i = 0; i < t.numel(); ++i) {
      text.push_back(code_points(t.data<std::string>()[i], path));
      width = std::max(width, text.back().size());
    }
  }
  std::ostringstream header;
  header << "{'descr': '"
         << (is_string(t.dtype()) ? "<U" + std::to_string(width) : std::string(descr_for(t.dtype())))
         << "', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < t.ndim(); ++i)
    header << t.shape()[i] << (t.ndim() == 1 || i + 1 < t.ndim() ? ", " : "");
  header << "), }";
  std::string h = header.str();
  // The data starts on a 64-byte boundary; the header ends with a newline.
  const size_t total = 10 + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');
  h.push_back('\n');
  std::ofstream out(path, std::ios::binary);
  KILN_CHECK(out.good(), ErrorCode::kIo, path, ": cannot open for writing");
  out.write(kMagic, 6);
  const char version[2] = {1, 0};
  out.write(version, 2);
  const uint16_t len = static_cast<uint16_t>(h.size());
  const char len_bytes[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(len_bytes, 2);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  for (std::vector<uint32_t>& points : text) {
    points.resize(width, 0);
    out.write(reinterpret_cast<const char*>(points.data()), static_cast<std::streamsize>(4 * width));
  }
  if (!is_string(t.dtype()) && t.nbytes())
    out.write(static_cast<const char*>(t.raw_data()), static_cast<std::streamsize>(t.nbytes()));
  KILN_CHECK(out.good(), ErrorCode::kIo, path, ": write failed");
}

}  // namespace kiln::npy
