#include "project/scan_sweep_table.hpp"

#include <QFile>
#include <QStringList>
#include <QTextStream>
#include <algorithm>
#include <map>
#include <stdexcept>

std::vector<int> ScanSweepTable::elementsPerWorker() const {
  std::vector<int> ks;
  for (const auto& r : rows)
    if (std::find(ks.begin(), ks.end(), r.elementsPerWorker) == ks.end()) ks.push_back(r.elementsPerWorker);
  std::sort(ks.begin(), ks.end());
  return ks;
}

ScanSweepTable read_scan_sweep(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly | QIODevice::Text))
    throw std::runtime_error(path.toStdString() + ": cannot open: " + f.errorString().toStdString());
  QTextStream in(&f);
  const QStringList header = in.readLine().trimmed().split(',');
  const QStringList needed{"workers",
                           "ranks",
                           "threads",
                           "elements_per_worker",
                           "mean_ms",
                           "algorithm",
                           "strategy",
                           "makespan_s",
                           "model_makespan_s",
                           "speedup_vs_static",
                           "model_speedup_vs_static",
                           "efficiency",
                           "model_efficiency",
                           "load_1min"};
  std::map<QString, int> column;
  for (const QString& name : needed) {
    const int i = int(header.indexOf(name));
    if (i < 0) throw std::runtime_error(path.toStdString() + ": line 1: no column '" + name.toStdString() + "'");
    column[name] = i;
  }
  ScanSweepTable table{path, {}};
  for (int line = 2; !in.atEnd(); ++line) {
    const QString text = in.readLine().trimmed();
    if (text.isEmpty()) continue;
    const QStringList fields = text.split(',');
    auto field = [&](const QString& name) -> QString {
      const int i = column[name];
      if (i >= fields.size())
        throw std::runtime_error(path.toStdString() + ": line " + std::to_string(line) + ": too few fields");
      return fields[i];
    };
    auto number = [&](const QString& name) {
      bool ok = false;
      const double v = field(name).toDouble(&ok);
      if (!ok)
        throw std::runtime_error(path.toStdString() + ": line " + std::to_string(line) + ": " + name.toStdString() +
                                 " '" + field(name).toStdString() + "' is not a number");
      return v;
    };
    ScanSweepRow r;
    r.workers = int(number("workers"));
    r.ranks = int(number("ranks"));
    r.threads = int(number("threads"));
    r.elementsPerWorker = int(number("elements_per_worker"));
    r.meanMs = number("mean_ms");
    r.algorithm = field("algorithm");
    r.strategy = field("strategy");
    r.makespan = number("makespan_s");
    r.modelMakespan = number("model_makespan_s");
    r.speedup = number("speedup_vs_static");
    r.modelSpeedup = number("model_speedup_vs_static");
    r.efficiency = number("efficiency");
    r.modelEfficiency = number("model_efficiency");
    r.load = number("load_1min");
    table.rows.push_back(r);
  }
  if (table.rows.empty()) throw std::runtime_error(path.toStdString() + ": no configurations (only a header)");
  return table;
}
