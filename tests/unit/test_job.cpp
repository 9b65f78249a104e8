// Job files: JSON <-> Job round trip, strict reading (unknown or mistyped
// fields named with the file), validation, atomic save.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "driftscan/core/error.hpp"
#include "driftscan/job/job.hpp"

using driftscan::Error;
using driftscan::ErrorKind;
using driftscan::Job;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_input);
    return e.what();
  }
  ADD_FAILURE() << "no driftscan::Error thrown";
  return "";
}

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("driftscan-test-job-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}
}  // namespace

TEST(Job, RoundTripKeepsEverySetting) {
  Job j;
  j.command = "register";
  j.input = "series.tif";
  j.output = "results";
  j.registration.model = driftscan::MotionModel::affine;
  j.registration.roi = {3, 4, 50, 60};
  j.registration.mask = "mask.tif";
  j.registration.bandpass_low = 2;
  j.registration.bandpass_high = 40;
  j.registration.max_shift = 6.5;
  j.registration.pyramid_levels = 4;
  j.averaging.method = driftscan::AverageMethod::clipped;
  j.averaging.clip_sigma = 2.5;
  j.averaging.exclude_frames = {3, 9};
  j.spectrum.frame = 7;
  j.spectrum.max_frames = 500;
  j.synth.frames = 33;
  j.synth.lattice = driftscan::Lattice::square;
  j.synth.drift_linear_x = -0.5;
  j.synth.seed = 42;
  j.scan.dwell = 4e-6;
  j.scan.line_flyback = 0.3;
  j.scan.direction = driftscan::ScanDirection::rotated90;
  j.scan.correct_distortion = true;
  j.scan.band_lines = 24;
  j.scan.template_filter_noise_scale = 0.5;
  j.execution.scan_algorithm = "blelloch";
  j.execution.work_stealing = false;
  j.execution.resume = true;
  json a = to_json(j);
  Job back = driftscan::job_from_json(a, "x.json");
  EXPECT_EQ(to_json(back), a);
  EXPECT_EQ(back.registration.roi.w, 50);
  EXPECT_EQ(back.averaging.exclude_frames.size(), 2u);
  EXPECT_EQ(back.synth.lattice, driftscan::Lattice::square);
  EXPECT_EQ(back.spectrum.max_frames, 500u);
  EXPECT_EQ(back.scan.direction, driftscan::ScanDirection::rotated90);
  EXPECT_EQ(a["scan"]["direction"], "rotated90");
  EXPECT_TRUE(back.scan.correct_distortion);
  EXPECT_EQ(back.scan.distortion().template_filter_noise_scale, 0.5);  // reaches the correction
  EXPECT_EQ(a["registration"]["roi"], json::array({3, 4, 50, 60}));
  EXPECT_EQ(a["driftscan_job"], 1);
}

TEST(Job, NullMeansOffAndMissingFieldsKeepDefaults) {
  json j = json::parse(R"({"driftscan_job":1,"command":"register","input":"a.tif","output":"o",
                          "registration":{"roi":null,"bandpass":null,"max_shift":null,"mask":null}})");
  Job job = driftscan::job_from_json(j, "j.json");
  EXPECT_TRUE(job.registration.roi.whole_frame());
  EXPECT_EQ(job.registration.max_shift, 0.0);
  EXPECT_EQ(job.registration.pyramid_levels, Job{}.registration.pyramid_levels);
  EXPECT_EQ(job.execution.frame_cache_mb, Job{}.execution.frame_cache_mb);
  EXPECT_TRUE(to_json(job)["registration"]["roi"].is_null());
}

TEST(Job, UnknownFieldIsNamedWithTheFile) {
  json j = json::parse(R"({"driftscan_job":1,"command":"register","registration":{"pyramid_level":2}})");
  std::string m = message_of([&] { driftscan::job_from_json(j, "run7.json"); });
  EXPECT_NE(m.find("run7.json"), std::string::npos) << m;
  EXPECT_NE(m.find("registration.pyramid_level"), std::string::npos) << m;
  json top = json::parse(R"({"driftscan_job":1,"comand":"register"})");
  m = message_of([&] { driftscan::job_from_json(top, "a.json"); });
  EXPECT_NE(m.find("'comand'"), std::string::npos) << m;
}

TEST(Job, WrongTypesAndValuesAreNamed) {
  auto msg = [](const char* text) {
    return message_of([&] { driftscan::job_from_json(json::parse(text), "f.json"); });
  };
  EXPECT_NE(msg(R"({"driftscan_job":1,"registration":{"pyramid_levels":"3"}})").find("registration.pyramid_levels"),
            std::string::npos);
  EXPECT_NE(msg(R"({"driftscan_job":1,"registration":{"max_iterations":2.5}})").find("integer"), std::string::npos);
  EXPECT_NE(msg(R"({"driftscan_job":1,"registration":{"model":"elastic"}})").find("elastic"), std::string::npos);
  EXPECT_NE(msg(R"({"driftscan_job":1,"registration":{"roi":[1,2,3]}})").find("registration.roi"), std::string::npos);
  EXPECT_NE(msg(R"({"driftscan_job":1,"averaging":{"method":"mode"}})").find("averaging.method"), std::string::npos);
  EXPECT_NE(msg(R"({"command":"register"})").find("driftscan_job"), std::string::npos);
  EXPECT_NE(msg(R"({"driftscan_job":2})").find("version"), std::string::npos);
  EXPECT_NE(msg(R"([1,2])").find("f.json"), std::string::npos);
}

TEST(Job, ValidateRejectsInconsistentSettings) {
  Job j;
  j.input = "in.tif";
  j.output = "out";
  EXPECT_NO_THROW(driftscan::validate(j));
  auto bad = [&](auto mutate, const char* needle) {
    Job k = j;
    mutate(k);
    std::string m = message_of([&] { driftscan::validate(k); });
    EXPECT_NE(m.find(needle), std::string::npos) << m;
  };
  bad([](Job& k) { k.command = "frobnicate"; }, "frobnicate");
  bad([](Job& k) { k.input.clear(); }, "input");
  bad([](Job& k) { k.output.clear(); }, "output");
  bad([](Job& k) { k.registration.pyramid_levels = 0; }, "pyramid_levels");
  bad([](Job& k) { k.registration.tolerance = 0; }, "tolerance");
  bad(
      [](Job& k) {
        k.registration.bandpass_low = 30;
        k.registration.bandpass_high = 3;
      },
      "bandpass");
  bad(
      [](Job& k) {
        k.averaging.interpolation = driftscan::Interpolation::fourier;
        k.registration.model = driftscan::MotionModel::rigid;
      },
      "fourier");
  bad([](Job& k) { k.execution.scan_algorithm = "bubble"; }, "bubble");
  bad([](Job& k) { k.execution.threads = 0; }, "threads");
  Job s;
  s.command = "synth";
  s.output = "o";
  EXPECT_NO_THROW(driftscan::validate(s));  // synth needs no input
  s.synth.frames = 0;
  EXPECT_THROW(driftscan::validate(s), Error);
}

TEST(Job, SaveIsAtomicAndLoadsBack) {
  fs::path d = temp_dir();
  std::string path = (d / "job.json").string();
  Job j;
  j.input = "in.tif";
  j.output = "out";
  j.registration.max_shift = 3;
  driftscan::save_job(j, path);
  for (const auto& e : fs::directory_iterator(d)) EXPECT_EQ(e.path().filename(), "job.json");
  Job back = driftscan::load_job(path);
  EXPECT_EQ(to_json(back), to_json(j));
  // Saving into a folder that does not exist fails cleanly, leaving nothing.
  EXPECT_THROW(driftscan::save_job(j, (d / "no" / "job.json").string()), Error);
  for (const auto& e : fs::directory_iterator(d)) EXPECT_EQ(e.path().filename(), "job.json");
  fs::remove_all(d);
}

TEST(Job, LoadNamesTheFileOnMissingOrBrokenJson) {
  fs::path d = temp_dir();
  std::string missing = (d / "nope.json").string();
  std::string m = message_of([&] { driftscan::load_job(missing); });
  EXPECT_NE(m.find("nope.json"), std::string::npos);
  std::string broken = (d / "broken.json").string();
  std::ofstream(broken) << "{\"driftscan_job\": 1,";
  m = message_of([&] { driftscan::load_job(broken); });
  EXPECT_NE(m.find("broken.json"), std::string::npos);
  EXPECT_NE(m.find("JSON"), std::string::npos);
  // Found by fuzz_job_reader: a number no type holds is nlohmann's
  // out_of_range, not a parse_error; it escaped load_job (exit 3, no file named).
  std::string huge = (d / "huge.json").string();
  std::ofstream(huge) << "{\"registration\": {\"max_shift\": 5555555555555555551e30855555555555555555555555555}}";
  m = message_of([&] { driftscan::load_job(huge); });
  EXPECT_NE(m.find("huge.json"), std::string::npos) << m;
  EXPECT_NE(m.find("number overflow"), std::string::npos) << m;
  fs::remove_all(d);
}
