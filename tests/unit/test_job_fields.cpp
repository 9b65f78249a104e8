// The job-field table (driftscan/job_fields.hpp) and the enum names
// (driftscan/enum_names.hpp): the table covers the job file exactly, each
// row reads and writes its own field, flag names are unique.
#include <gtest/gtest.h>

#include <set>

#include "driftscan/core/enum_names.hpp"
#include "driftscan/core/error.hpp"
#include "driftscan/job/job_fields.hpp"

using driftscan::Job;
using driftscan::JobField;
using nlohmann::json;

TEST(JobFields, CoverEveryKeyOfTheJobFileOnce) {
  const json j = to_json(Job{});
  std::set<std::string> in_file, in_table;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "driftscan_job") continue;
    if (it->is_object())
      for (auto f = it->begin(); f != it->end(); ++f) in_file.insert(it.key() + "." + f.key());
    else in_file.insert(it.key());
  }
  for (const auto& f : driftscan::job_fields()) EXPECT_TRUE(in_table.insert(f.path()).second) << f.path();
  EXPECT_EQ(in_file, in_table);
}

TEST(JobFields, EachRowReadsAndWritesItsOwnField) {
  // Set one field to a non-default value through its row: only that key of the file changes.
  for (const auto& f : driftscan::job_fields()) {
    json v;
    switch (f.type) {
      case driftscan::FieldType::text: v = f.choices.empty() ? "x" : f.choices.back(); break;
      case driftscan::FieldType::optional_text: v = "x"; break;
      case driftscan::FieldType::boolean: v = !f.default_value().get<bool>(); break;
      case driftscan::FieldType::integer:
      case driftscan::FieldType::count:
      case driftscan::FieldType::seed: v = f.default_value().get<int>() + 1; break;
      case driftscan::FieldType::number:
      case driftscan::FieldType::optional_number:
        v = 2.5 + (f.default_value().is_number() ? f.default_value().get<double>() : 0.0);
        break;
      case driftscan::FieldType::choice: v = f.choices.back(); break;
      case driftscan::FieldType::rectangle: v = json::array({1, 2, 30, 40}); break;
      case driftscan::FieldType::number_pair: v = json::array({3.5, 7.0}); break;
      case driftscan::FieldType::frame_list: v = json::array({4, 8}); break;
      case driftscan::FieldType::number_list: v = json::array({0.0, 90.0}); break;
    }
    Job job;
    f.set(job, v);
    EXPECT_EQ(f.get(job), v) << f.path();
    json a = to_json(Job{}), b = to_json(job);
    json& slot = *f.block ? a[f.block][f.key] : a[f.key];
    EXPECT_NE(slot, v) << f.path();
    slot = v;
    EXPECT_EQ(a, b) << f.path();
  }
}

TEST(JobFields, FlagNamesAreUnique) {
  std::set<std::string> names;
  for (const auto& f : driftscan::job_fields()) {
    if (!f.flags) continue;
    EXPECT_NE(f.flag_commands, 0u) << f.path();
    std::string all = f.flags;
    for (std::size_t start = 0; start <= all.size();) {
      auto end = all.find(',', start);
      if (end == std::string::npos) end = all.size();
      EXPECT_TRUE(names.insert(all.substr(start, end - start)).second) << all;
      start = end + 1;
    }
  }
}

TEST(JobFields, RangesReadAsValidateSaysThem) {
  EXPECT_EQ(driftscan::job_field("registration.pyramid_levels").range_text(), "1..12");
  EXPECT_EQ(driftscan::job_field("registration.tolerance").range_text(), "positive");
  EXPECT_EQ(driftscan::job_field("synth.vacancy_fraction").range_text(), "in [0, 1)");
  EXPECT_EQ(driftscan::job_field("execution.threads").range_text(), "at least 1");
  EXPECT_TRUE(driftscan::job_field("synth.vacancy_fraction").in_range(0));
  EXPECT_FALSE(driftscan::job_field("synth.vacancy_fraction").in_range(1));
  EXPECT_THROW(driftscan::job_field("registration.nope"), std::logic_error);
  Job s;
  s.command = "synth";
  s.output = "o";
  s.synth.width = 4;
  try {
    driftscan::validate(s);
    ADD_FAILURE() << "synth.width 4 accepted";
  } catch (const driftscan::Error& e) {
    EXPECT_NE(std::string(e.what()).find("synth.width"), std::string::npos) << e.what();
  }
}

TEST(EnumNames, RoundTripAndListsSpellTheSame) {
  for (auto m : {driftscan::AverageMethod::mean, driftscan::AverageMethod::median, driftscan::AverageMethod::clipped}) {
    driftscan::AverageMethod back = driftscan::AverageMethod::mean;
    ASSERT_TRUE(driftscan::enum_from_name(driftscan::enum_name(m), back));
    EXPECT_EQ(back, m);
  }
  driftscan::Lattice l = driftscan::Lattice::hex;
  EXPECT_FALSE(driftscan::enum_from_name("tri", l));
  EXPECT_EQ(l, driftscan::Lattice::hex);
  EXPECT_EQ(driftscan::one_of(driftscan::enum_names<driftscan::Interpolation>()), "cubic or fourier");
  EXPECT_EQ(driftscan::one_of(driftscan::enum_names<driftscan::MotionModel>()), "translation, rigid or affine");
  EXPECT_EQ(driftscan::motion_model_from_string("rigid"), driftscan::MotionModel::rigid);
  EXPECT_EQ(std::string(driftscan::to_string(driftscan::MotionModel::affine)), "affine");
  EXPECT_THROW(driftscan::motion_model_from_string("elastic"), driftscan::Error);
}
