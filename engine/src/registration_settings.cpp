#include "driftscan/registration_settings.hpp"

#include "driftscan/error.hpp"

namespace driftscan {

const char* to_string(MotionModel model) {
  switch (model) {
    case MotionModel::translation: return "translation";
    case MotionModel::rigid: return "rigid";
    case MotionModel::affine: return "affine";
  }
  return "translation";
}

MotionModel motion_model_from_string(const std::string& name) {
  if (name == "translation") return MotionModel::translation;
  if (name == "rigid") return MotionModel::rigid;
  if (name == "affine") return MotionModel::affine;
  throw bad_input("unknown motion model '" + name + "' (expected translation, rigid or affine)");
}

}  // namespace driftscan
