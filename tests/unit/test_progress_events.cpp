// Progress events tell the truth: done never exceeds total (a phase whose work
// outgrows its estimate raises its total), the ETA stays finite, and events
// past the total are still rate-limited.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "driftscan/core/progress.hpp"

using namespace driftscan;

TEST(ProgressEvents, DoneNeverExceedsTotalAndTheRateLimitHolds) {
  std::ostringstream out;
  auto progress = make_json_progress(out);
  progress->phase("scan", 10);
  for (std::size_t k = 1; k <= 5000; ++k) progress->advance(k);  // 500x the estimate, as fast as it goes
  progress->result(nlohmann::json::object());
  std::istringstream lines(out.str());
  std::string line;
  int events = 0;
  std::size_t last_done = 0;
  while (std::getline(lines, line)) {
    const auto e = nlohmann::json::parse(line);
    if (e.value("event", "") != "progress") continue;
    ++events;
    const auto done = e.at("done").get<std::size_t>(), total = e.at("total").get<std::size_t>();
    EXPECT_LE(done, total) << line;
    EXPECT_GE(done, last_done) << line;
    last_done = done;
    if (e.contains("eta_s") && e["eta_s"].is_number()) {
      EXPECT_LT(e["eta_s"].get<double>(), 1e6) << line;
    }
  }
  // The phase's first event, reaching 10 once, and the rate limit (5/s) for the rest of a run of milliseconds.
  EXPECT_GE(events, 2);
  EXPECT_LE(events, 6) << out.str().substr(0, 2000);
}

// A warning is said once per run (plain text and JSON alike): the pipelines
// say a warning when it happens and the end-of-run summary repeats the ones
// kept for report.json; it used to appear twice. Other warnings still appear.
TEST(ProgressEvents, EachWarningIsSaidOnce) {
  std::ostringstream text, json;
  auto plain = make_plain_progress(text);
  auto events = make_json_progress(json);
  for (auto* p : {plain.get(), events.get()}) {
    p->log(LogLevel::warning, "frame 3 excluded");
    p->log(LogLevel::warning, "frame 3 excluded");
    p->log(LogLevel::warning, "frame 4 excluded");
    p->log(LogLevel::info, "same info");
    p->log(LogLevel::info, "same info");
  }
  auto count = [](const std::string& s, const std::string& needle) {
    int n = 0;
    for (auto pos = s.find(needle); pos != std::string::npos; pos = s.find(needle, pos + 1)) ++n;
    return n;
  };
  for (const std::string& s : {text.str(), json.str()}) {
    EXPECT_EQ(count(s, "frame 3 excluded"), 1) << s;
    EXPECT_EQ(count(s, "frame 4 excluded"), 1) << s;
    EXPECT_EQ(count(s, "same info"), 2) << s;  // info lines are not merged
  }
}
