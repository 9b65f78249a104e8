#include "driftscan/registration/registration_settings.hpp"

#include "driftscan/core/enum_names.hpp"
#include "driftscan/core/error.hpp"

namespace driftscan {

const char* to_string(MotionModel model) { return enum_name(model); }

MotionModel motion_model_from_string(const std::string& name) {
  MotionModel model = MotionModel::translation;
  if (!enum_from_name(name, model))
    throw bad_input("unknown motion model '" + name + "' (expected " + one_of(enum_names<MotionModel>()) + ")");
  return model;
}

}  // namespace driftscan
