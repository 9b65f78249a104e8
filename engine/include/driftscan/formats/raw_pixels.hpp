#pragma once
// Pixel types of the binary microscope formats (DM, MRC, SER) and their
// conversion to the engine's float32: each reader maps its own type codes
// to a RawType and converts a frame's bytes with convert_raw_pixels.
#include <cstddef>

#include "driftscan/formats/binary_file.hpp"

namespace driftscan {

enum class RawType { uint8, int8, uint16, int16, uint32, int32, uint64, int64, float16, float32, float64, bgra8 };

std::size_t raw_type_bytes(RawType type);
const char* to_string(RawType type);

// n pixels of `type` stored in `order` at `in` -> float32 at `out`.
// bgra8: 4 bytes B, G, R, A per pixel (DM's RGB types), converted to
// luminance with the BT.601 weights, as the TIFF reader does.
void convert_raw_pixels(const unsigned char* in, RawType type, ByteOrder order, std::size_t n, float* out);

// IEEE 754 half precision -> float (MRC mode 12).
float half_to_float(unsigned short h);

}  // namespace driftscan
