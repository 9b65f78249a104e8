#include "driftscan/formats/raw_pixels.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace driftscan {

std::size_t raw_type_bytes(RawType type) {
  switch (type) {
    case RawType::uint8:
    case RawType::int8: return 1;
    case RawType::uint16:
    case RawType::int16:
    case RawType::float16: return 2;
    case RawType::uint32:
    case RawType::int32:
    case RawType::float32:
    case RawType::bgra8: return 4;
    case RawType::uint64:
    case RawType::int64:
    case RawType::float64: return 8;
  }
  return 1;
}

const char* to_string(RawType type) {
  switch (type) {
    case RawType::uint8: return "uint8";
    case RawType::int8: return "int8";
    case RawType::uint16: return "uint16";
    case RawType::int16: return "int16";
    case RawType::uint32: return "uint32";
    case RawType::int32: return "int32";
    case RawType::uint64: return "uint64";
    case RawType::int64: return "int64";
    case RawType::float16: return "float16";
    case RawType::float32: return "float32";
    case RawType::float64: return "float64";
    case RawType::bgra8: return "rgb";
  }
  return "?";
}

float half_to_float(unsigned short h) {
  const int sign = (h >> 15) & 1, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float v = 0;
  if (exponent == 0) v = std::ldexp(static_cast<float>(mantissa), -24);
  else if (exponent == 31) v = mantissa ? NAN : INFINITY;
  else v = std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
  return sign ? -v : v;
}

void convert_raw_pixels(const unsigned char* in, RawType type, ByteOrder order, std::size_t n, float* out) {
  const std::size_t b = raw_type_bytes(type);
  for (std::size_t i = 0; i < n; ++i, in += b) {
    if (type == RawType::bgra8) {
      out[i] = 0.299f * in[2] + 0.587f * in[1] + 0.114f * in[0];
      continue;
    }
    const std::uint64_t u = load_unsigned(in, b, order);
    switch (type) {
      case RawType::uint8: out[i] = static_cast<float>(static_cast<std::uint8_t>(u)); break;
      case RawType::int8: out[i] = static_cast<float>(static_cast<std::int8_t>(u)); break;
      case RawType::uint16: out[i] = static_cast<float>(static_cast<std::uint16_t>(u)); break;
      case RawType::int16: out[i] = static_cast<float>(static_cast<std::int16_t>(u)); break;
      case RawType::uint32: out[i] = static_cast<float>(static_cast<std::uint32_t>(u)); break;
      case RawType::int32: out[i] = static_cast<float>(static_cast<std::int32_t>(u)); break;
      case RawType::uint64: out[i] = static_cast<float>(u); break;
      case RawType::int64: out[i] = static_cast<float>(static_cast<std::int64_t>(u)); break;
      case RawType::float16: out[i] = half_to_float(static_cast<unsigned short>(u)); break;
      case RawType::float32: {
        const auto u32 = static_cast<std::uint32_t>(u);
        float f = 0;
        std::memcpy(&f, &u32, sizeof f);
        out[i] = f;
        break;
      }
      case RawType::float64: {
        double d = 0;
        std::memcpy(&d, &u, sizeof d);
        out[i] = static_cast<float>(d);
        break;
      }
      case RawType::bgra8: break;
    }
  }
}

}  // namespace driftscan
