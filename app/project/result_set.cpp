#include "project/result_set.hpp"

#include <QDir>
#include <QFileInfo>
#include <algorithm>
#include <fstream>
#include <map>

#include "driftscan/registration/drift_table.hpp"

std::vector<DriftRow> drift_rows(const driftscan::DriftRecords& table) {
  std::vector<DriftRow> rows;
  rows.reserve(table.frames.size());
  for (std::size_t k = 0; k < table.frames.size(); ++k) {
    const driftscan::DriftRecord& f = table.frames[k];
    DriftRow r;
    r.frame = static_cast<int>(k);
    r.dx = f.dx;
    r.dy = f.dy;
    r.angle_deg = f.angle_deg;
    if (table.has_quality) r.quality = f.quality;
    r.used = f.used;
    if (table.has_sigma) {
      r.sigma_dx = f.sigma_dx;
      r.sigma_dy = f.sigma_dy;
    }
    rows.push_back(r);
  }
  return rows;
}

ScanTraceData read_scan_trace(const nlohmann::json& report) {
  ScanTraceData t;
  const nlohmann::json* s = nullptr;
  for (const char* key : {"scan_trace", "trace", "scan"}) {
    auto it = report.find(key);
    if (it != report.end() && it->is_object()) {
      s = &*it;
      break;
    }
  }
  if (!s) return t;
  t.ranks = s->value("ranks", 0);
  t.threads = s->value("threads", 0);
  t.makespan_s = s->value("makespan_s", 0.0);
  t.imbalance = s->value("imbalance", 1.0);
  if (auto it = s->find("records"); it != s->end() && it->is_array())
    for (const auto& r : *it) {
      TraceRecord rec;
      rec.rank = r.value("rank", 0);
      rec.thread = r.value("thread", 0);
      rec.first = r.value("first", 0LL);
      rec.last = r.value("last", 0LL);
      rec.phase = QString::fromStdString(r.value("phase", std::string("?")));
      rec.start_s = r.value("start_s", 0.0);
      rec.end_s = r.value("end_s", 0.0);
      auto st = r.find("stolen");
      rec.stolen =
          st != r.end() && ((st->is_boolean() && st->get<bool>()) || (st->is_number() && st->get<double>() != 0));
      t.records.push_back(rec);
    }
  if (auto it = s->find("workers"); it != s->end() && it->is_array())
    for (const auto& w : *it) {
      WorkerRow row;
      row.rank = w.value("rank", 0);
      row.thread = w.value("thread", 0);
      row.busy_s = w.value("busy_s", 0.0);
      row.idle_s = w.value("idle_s", 0.0);
      row.applications = w.value("applications", 0);
      row.stolen = w.value("stolen", 0);
      t.workers.push_back(row);
    }
  // Older or partial reports: derive the workers from ranks x threads and the records.
  if (t.workers.empty()) {
    std::map<std::pair<int, int>, WorkerRow> m;
    for (int r = 0; r < t.ranks; ++r)
      for (int th = 0; th < std::max(1, t.threads); ++th) m[{r, th}] = WorkerRow{r, th, 0, 0, 0, 0};
    double end = 0;
    for (const auto& rec : t.records) {
      auto& w = m[{rec.rank, rec.thread}];
      w.rank = rec.rank;
      w.thread = rec.thread;
      w.busy_s += rec.end_s - rec.start_s;
      ++w.applications;
      w.stolen += rec.stolen;
      end = std::max(end, rec.end_s);
    }
    if (t.makespan_s <= 0) t.makespan_s = end;
    for (auto& [k, w] : m) {
      w.idle_s = std::max(0.0, t.makespan_s - w.busy_s);
      t.workers.push_back(w);
    }
  }
  if (t.makespan_s <= 0)
    for (const auto& rec : t.records) t.makespan_s = std::max(t.makespan_s, rec.end_s);
  return t;
}

bool ResultSet::looksLikeResults(const QString& folder) {
  QDir d(folder);
  return QFileInfo(folder).isDir() && (d.exists("drift.csv") || d.exists("report.json") || d.exists("average.tif") ||
                                       d.exists("spectrum.tif") || d.exists("spectrum3d.tif"));
}

ResultSet ResultSet::load(const QString& folder) {
  ResultSet r;
  r.folder = folder;
  QDir d(folder);
  auto path = [&](const char* name) { return d.exists(name) ? d.filePath(name) : QString(); };
  r.reportPath = path("report.json");
  if (!r.reportPath.isEmpty()) {
    std::ifstream in(r.reportPath.toStdString());
    r.report = nlohmann::json::parse(in, nullptr, false);
    if (r.report.is_discarded()) {
      r.warnings << r.reportPath + ": not valid JSON";
      r.report = nlohmann::json::object();
    }
  } else {
    // The engine writes report.json last (docs/protocol.md): without it the
    // run did not finish, and what is there may be partial or another run's.
    r.warnings << folder +
                      ": no report.json: the run that wrote this folder did not complete; its files may be "
                      "partial or from different runs";
  }
  if (r.report.is_object() && r.report.value("status", std::string()) == "registration_failed")
    r.warnings << folder +
                      ": registration failed (most frames share no structure with frame 0): no average; drift.csv "
                      "flags each frame";
  // The files of the run: the report's list first, then the usual names.
  auto fromReport = [&](const char* key) -> QString {
    for (const char* block : {"files", "outputs"}) {
      auto it = r.report.find(block);
      if (it != r.report.end() && it->is_object() && it->contains(key) && (*it)[key].is_string()) {
        QString p = QString::fromStdString((*it)[key].get<std::string>());
        if (QFileInfo(p).isRelative()) p = d.filePath(p);
        if (QFileInfo::exists(p)) return p;
      }
    }
    return {};
  };
  r.averagePath = fromReport("average");
  if (r.averagePath.isEmpty()) r.averagePath = path("average.tif");
  r.coveragePath = fromReport("coverage");
  if (r.coveragePath.isEmpty()) r.coveragePath = path("coverage.tif");
  r.sigmaPath = fromReport("sigma");
  if (r.sigmaPath.isEmpty()) r.sigmaPath = path("sigma.tif");
  r.driftPath = fromReport("drift");
  if (r.driftPath.isEmpty()) r.driftPath = path("drift.csv");
  // The volume view's file: the spectrum command writes spectrum3d.tif beside
  // the 2-D spectrum.tif; older folders had only spectrum.tif.
  r.spectrumPath = fromReport("spectrum3d");
  if (r.spectrumPath.isEmpty()) r.spectrumPath = path("spectrum3d.tif");
  if (r.spectrumPath.isEmpty()) r.spectrumPath = fromReport("spectrum");
  if (r.spectrumPath.isEmpty()) r.spectrumPath = path("spectrum.tif");
  if (auto it = r.report.find("input"); it != r.report.end()) {
    if (it->is_string()) r.input = QString::fromStdString(it->get<std::string>());
    else if (it->is_object() && it->contains("path") && (*it)["path"].is_string())
      r.input = QString::fromStdString((*it)["path"].get<std::string>());
    else if (it->is_object() && it->contains("description") && (*it)["description"].is_string()) {
      // "series.tif: 40 x 256x256 float32": the series' name, looked for beside the results.
      const QString d = QString::fromStdString((*it)["description"].get<std::string>());
      const QString name = d.left(d.lastIndexOf(": "));
      for (const QString& cand : {name, QDir(folder).filePath(name), QDir(folder).filePath("../" + name)})
        if (!name.isEmpty() && QFileInfo::exists(cand)) {
          r.input = QFileInfo(cand).absoluteFilePath();
          break;
        }
    }
  }
  // The series' calibration as the engine read it (report.json's input block).
  if (auto it = r.report.find("input"); it != r.report.end() && it->is_object()) {
    const auto size = it->find("pixel_size");
    const auto unit = it->find("unit");
    if (size != it->end() && size->is_number() && unit != it->end() && unit->is_string()) {
      r.pixelSize = size->get<double>();
      r.pixelUnit = QString::fromStdString(unit->get<std::string>());
    }
  }
  if (auto it = r.report.find("job"); r.input.isEmpty() && it != r.report.end() && it->is_object())
    r.input = QString::fromStdString(it->value("input", std::string()));
  if (!r.driftPath.isEmpty()) r.drift = drift_rows(driftscan::read_drift_records(r.driftPath.toStdString()));
  else r.warnings << folder + ": no drift.csv";
  r.trace = read_scan_trace(r.report);
  if (auto it = r.report.find("job"); it != r.report.end() && it->is_object())
    if (auto scan = it->find("scan"); scan != it->end() && scan->is_object())
      if (auto rot = scan->find("rotation"); rot != scan->end() && rot->is_array())
        for (const auto& v : *rot)
          if (v.is_number()) r.scanRotation.push_back(v.get<double>());
  r.averageRigidPath = fromReport("average_rigid");
  if (r.averageRigidPath.isEmpty()) r.averageRigidPath = path("average_rigid.tif");
  r.linesPath = fromReport("lines");
  if (r.linesPath.isEmpty()) r.linesPath = path("lines.csv");
  if (auto it = r.report.find("scan_distortion"); it != r.report.end() && it->is_object()) {
    const auto o = it->find("average_origin");
    if (o != it->end() && o->is_array() && o->size() == 2 && (*o)[0].is_number() && (*o)[1].is_number()) {
      r.specimenOrigin = QPointF((*o)[0].get<double>(), (*o)[1].get<double>());
      r.specimenCoordinates = true;
    }
  }
  if (!r.linesPath.isEmpty()) {
    try {
      r.lines = LineDriftSeries::read(r.linesPath);
    } catch (const std::exception& e) {
      r.warnings << QString::fromStdString(e.what());
    }
  }
  r.lineFieldPath = fromReport("line_field");
  if (r.lineFieldPath.isEmpty()) r.lineFieldPath = path("line_field.csv");
  if (!r.lineFieldPath.isEmpty()) {
    try {
      r.lineField = driftscan::read_line_field_csv(r.lineFieldPath.toStdString(), 0, 0);
    } catch (const std::exception& e) {
      r.warnings << QString::fromStdString(e.what());
    }
  }
  return r;
}
