#include "result_set.hpp"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTextStream>
#include <algorithm>
#include <fstream>
#include <map>

#include "driftscan/error.hpp"

std::vector<DriftRow> read_drift_csv(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly | QIODevice::Text))
    throw driftscan::bad_input(path.toStdString() + ": cannot open");
  QTextStream in(&f);
  const QStringList header = in.readLine().trimmed().split(',');
  auto col = [&](const QString& name) { return header.indexOf(name); };
  const int cf = col("frame"), cx = col("dx"), cy = col("dy"), ca = col("angle_deg"), cq = col("quality"),
            cu = col("used");
  if (cf < 0 || cx < 0 || cy < 0)
    throw driftscan::bad_input(path.toStdString() + ": header lacks frame,dx,dy");
  std::vector<DriftRow> rows;
  int lineNo = 1;
  while (!in.atEnd()) {
    const QString line = in.readLine().trimmed();
    ++lineNo;
    if (line.isEmpty()) continue;
    const QStringList c = line.split(',');
    bool ok1, ok2, ok3;
    DriftRow r;
    if (c.size() < header.size())
      throw driftscan::bad_input(path.toStdString() + ": line " + std::to_string(lineNo) + " is short");
    r.frame = c[cf].toInt(&ok1);
    r.dx = c[cx].toDouble(&ok2);
    r.dy = c[cy].toDouble(&ok3);
    if (!ok1 || !ok2 || !ok3)
      throw driftscan::bad_input(path.toStdString() + ": line " + std::to_string(lineNo) + " is not numeric");
    if (ca >= 0) r.angle_deg = c[ca].toDouble();
    if (cq >= 0) r.quality = c[cq].toDouble();
    if (cu >= 0) r.used = c[cu].trimmed() != "0" && c[cu].trimmed().toLower() != "false";
    rows.push_back(r);
  }
  return rows;
}

ScanTraceData read_scan_trace(const nlohmann::json& report) {
  ScanTraceData t;
  const nlohmann::json* s = nullptr;
  for (const char* key : {"scan_trace", "trace", "scan"}) {
    auto it = report.find(key);
    if (it != report.end() && it->is_object()) { s = &*it; break; }
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
      rec.stolen = st != r.end() && ((st->is_boolean() && st->get<bool>()) || (st->is_number() && st->get<double>() != 0));
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
  return QFileInfo(folder).isDir() &&
         (d.exists("drift.csv") || d.exists("report.json") || d.exists("average.tif") || d.exists("spectrum.tif") ||
          d.exists("spectrum3d.tif"));
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
    r.warnings << folder + ": no report.json";
  }
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
        if (!name.isEmpty() && QFileInfo::exists(cand)) { r.input = QFileInfo(cand).absoluteFilePath(); break; }
    }
  }
  if (auto it = r.report.find("job"); r.input.isEmpty() && it != r.report.end() && it->is_object())
    r.input = QString::fromStdString(it->value("input", std::string()));
  if (!r.driftPath.isEmpty()) r.drift = read_drift_csv(r.driftPath);
  else r.warnings << folder + ": no drift.csv";
  r.trace = read_scan_trace(r.report);
  return r;
}
