#include "views/frame_table.hpp"

#include <QAbstractTableModel>
#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "driftscan/core/scan_rotation.hpp"
#include "driftscan/registration/drift_uncertainty.hpp"

namespace {
const QColor kAbove(255, 214, 170);   // highlighted row
const QColor kUnused(225, 225, 225);  // left out of the average by the run

// σ of a frame as the engine's max_sigma sees it: the larger of the two
// standard errors; < 0 when the table has none.
double sigma_of(const DriftRow& r) {
  if (r.sigma_dx < 0 && r.sigma_dy < 0) return -1;
  if (!std::isfinite(r.sigma_dx) || !std::isfinite(r.sigma_dy)) return INFINITY;
  return std::max(r.sigma_dx, r.sigma_dy);
}
}  // namespace

// A model rather than one item per cell: a 10,000-frame table stays instant.
class FrameTableModel : public QAbstractTableModel {
 public:
  enum Column { frame, dx, dy, sigma, quality, used, scan, columns };
  explicit FrameTableModel(QObject* parent) : QAbstractTableModel(parent) {}

  void setRows(std::vector<DriftRow> rows) {
    beginResetModel();
    rows_ = std::move(rows);
    above_.assign(rows_.size(), false);
    endResetModel();
  }
  void setAbove(std::vector<bool> above) {
    above_ = std::move(above);
    if (!rows_.empty()) emit dataChanged(index(0, 0), index(int(rows_.size()) - 1, columns - 1));
  }
  void setCalibration(const PixelCalibration& cal) {
    cal_ = cal;
    emit headerDataChanged(Qt::Horizontal, dx, sigma);
    if (!rows_.empty()) emit dataChanged(index(0, dx), index(int(rows_.size()) - 1, sigma));
  }
  const PixelCalibration& calibration() const { return cal_; }
  const std::vector<DriftRow>& rows() const { return rows_; }
  void setScanRotation(std::vector<double> rotation) {
    rotation_ = std::move(rotation);
    if (!rows_.empty()) emit dataChanged(index(0, scan), index(int(rows_.size()) - 1, scan));
  }

  int rowCount(const QModelIndex& parent) const override { return parent.isValid() ? 0 : int(rows_.size()); }
  int columnCount(const QModelIndex& parent) const override { return parent.isValid() ? 0 : columns; }

  QVariant headerData(int section, Qt::Orientation o, int role) const override {
    if (o != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
    const QString unit = " (" + cal_.lengthUnit() + ")";
    switch (section) {
      case frame: return "frame";
      case dx: return "dx" + unit;
      case dy: return "dy" + unit;
      case sigma: return QString::fromUtf8("\u03c3") + unit;
      case quality: return "quality";
      case used: return "in average";
      case scan: return "scan";
      default: return {};
    }
  }

  QVariant data(const QModelIndex& i, int role) const override {
    if (!i.isValid() || i.row() >= int(rows_.size())) return {};
    const DriftRow& r = rows_[std::size_t(i.row())];
    const bool above = above_[std::size_t(i.row())];
    if (role == Qt::BackgroundRole) {
      if (above) return kAbove;
      if (!r.used) return kUnused;
      return {};
    }
    if (role == Qt::ForegroundRole && above && i.column() == sigma) return QColor(170, 0, 0);
    if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ToolTipRole && i.column() == scan)
      return "the frame's scan rotation (job field scan.rotation) and its fast axis in frame 0's orientation";
    if (role == Qt::ToolTipRole && i.column() == sigma) {
      if (r.sigma_dx < 0) return "drift.csv has no sigma columns (a table from before the uncertainty estimate)";
      const QString px =
          QString("sigma_dx %1 px, sigma_dy %2 px").arg(r.sigma_dx, 0, 'g', 4).arg(r.sigma_dy, 0, 'g', 4);
      const QString shown = cal_.shown() ? QString(" (%1 %3, %2 %3)")
                                               .arg(r.sigma_dx * cal_.size, 0, 'g', 4)
                                               .arg(r.sigma_dy * cal_.size, 0, 'g', 4)
                                               .arg(cal_.unit)
                                         : QString();
      return px + shown + (above ? ": above the limit" : "");
    }
    if (role != Qt::DisplayRole) return {};
    switch (i.column()) {
      case frame: return r.frame;
      case dx: return length(r.dx, 3);
      case dy: return length(r.dy, 3);
      case sigma: {
        const double s = sigma_of(r);
        if (s < 0) return QString::fromUtf8("\u2013");
        return std::isfinite(s) ? length(s, 4) : QString("inf");
      }
      case quality: return r.quality >= -1 ? QString::number(r.quality, 'f', 4) : QString::fromUtf8("\u2013");
      case used: return r.used ? "yes" : "no";
      case scan: return scan_text(driftscan::scan_rotation_of(rotation_, std::size_t(r.frame)));
      default: return {};
    }
  }

 private:
  // A length in px as shown: `decimals` places in px; in the unit, as many
  // significant digits as those places give at a pixel's scale (a 0.0092 nm
  // pixel must not round every shift to 0.000).
  QString length(double px, int decimals) const {
    if (!cal_.shown()) return QString::number(px, 'f', decimals);
    const int places = decimals + std::max(0, int(std::ceil(-std::log10(cal_.size))));
    return QString::number(px * cal_.size, 'f', places);
  }

  // "90° ↓": the angle and the arrow nearest the fast axis (x right, y down;
  // eighths of a turn, so 30° shows ↘).
  static QString scan_text(double deg) {
    static const char* arrows[8] = {"\u2192", "\u2198", "\u2193", "\u2199", "\u2190", "\u2196", "\u2191", "\u2197"};
    if (!std::isfinite(deg)) return QString::fromUtf8("%1\u00b0").arg(deg, 0, 'g', 4);
    const int eighth = static_cast<int>(std::fmod(std::fmod(std::round(deg / 45.0), 8.0) + 8.0, 8.0));
    return QString::fromUtf8("%1\u00b0 ").arg(deg, 0, 'g', 4) + QString::fromUtf8(arrows[eighth]);
  }

  std::vector<DriftRow> rows_;
  std::vector<bool> above_;
  std::vector<double> rotation_;
  PixelCalibration cal_;
};

FrameTable::FrameTable(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* bar = new QHBoxLayout;
  limit_ = new QDoubleSpinBox;
  limit_->setRange(0.0, 100.0);
  limit_->setDecimals(3);
  limit_->setSingleStep(0.01);
  limit_->setSuffix(" px");
  limit_->setSpecialValueText("none");
  limit_->setToolTip(
      QString::fromUtf8("Frames whose drift \u03c3 (the larger of sigma_dx, sigma_dy) is above this "
                        "are highlighted; 0: none"));
  exclude_ = new QCheckBox("leave them out of the average (averaging.max_sigma)");
  exclude_->setToolTip(
      "Sets the job field averaging.max_sigma (Settings > Averaging > Max sigma); "
      "it takes effect at the next run");
  bar->addWidget(new QLabel(QString::fromUtf8("Highlight frames with \u03c3 above")));
  bar->addWidget(limit_);
  bar->addWidget(exclude_);
  bar->addStretch(1);
  layout->addLayout(bar);

  model_ = new FrameTableModel(this);
  table_ = new QTableView;
  table_->setModel(model_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  table_->setAlternatingRowColors(false);
  layout->addWidget(table_, 1);
  summary_ = new QLabel("No drift yet: run a registration or open a results folder.");
  layout->addWidget(summary_);

  connect(limit_, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this] {
    applyLimit();
    if (!setting_) emit limitEdited(limit(), excluding());
  });
  connect(exclude_, &QCheckBox::toggled, this, [this] {
    applyLimit();
    if (!setting_) emit limitEdited(limit(), excluding());
  });
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
    if (!setting_ && current.isValid()) emit frameSelected(model_->rows()[std::size_t(current.row())].frame);
  });
}

void FrameTable::setDrift(std::vector<DriftRow> rows) {
  model_->setRows(std::move(rows));
  applyLimit();
}

void FrameTable::setScanRotation(std::vector<double> rotation) { model_->setScanRotation(std::move(rotation)); }

void FrameTable::setPixelSize(double size, const QString& unit) {
  PixelCalibration cal = model_->calibration();
  cal.recalibrate(size, unit);
  model_->setCalibration(cal);
}

void FrameTable::setPhysicalUnits(bool on) {
  PixelCalibration cal = model_->calibration();
  cal.physical = on;
  model_->setCalibration(cal);
}

const PixelCalibration& FrameTable::calibration() const { return model_->calibration(); }

QString FrameTable::headerText(int column) const {
  return model_->headerData(column, Qt::Horizontal, Qt::DisplayRole).toString();
}

QString FrameTable::cellText(int row, int column) const {
  return model_->data(model_->index(row, column), Qt::DisplayRole).toString();
}

void FrameTable::setLimit(double sigma, bool exclude) {
  setting_ = true;
  limit_->setValue(std::max(0.0, sigma));
  exclude_->setChecked(exclude && sigma > 0);
  setting_ = false;
  applyLimit();
}

double FrameTable::limit() const { return limit_->value(); }
bool FrameTable::excluding() const { return exclude_->isChecked() && limit_->value() > 0; }
int FrameTable::rowCount() const { return int(model_->rows().size()); }

bool FrameTable::isHighlighted(int frame) const {
  return std::binary_search(highlighted_.begin(), highlighted_.end(), frame);
}

QString FrameTable::summary() const { return summary_->text(); }

void FrameTable::applyLimit() {
  const auto& rows = model_->rows();
  exclude_->setEnabled(limit_->value() > 0);
  std::vector<double> sigma;
  sigma.reserve(rows.size());
  bool hasSigma = false;
  for (const auto& r : rows) {
    const double s = sigma_of(r);
    hasSigma = hasSigma || s >= 0;
    sigma.push_back(s < 0 ? 0.0 : s);  // no column: nothing to compare, nothing highlighted
  }
  highlighted_.clear();
  std::vector<bool> above(rows.size(), false);
  // The engine's own rule, so what is highlighted is what max_sigma leaves out.
  for (std::size_t k : driftscan::frames_above_sigma(sigma, limit_->value())) {
    above[k] = true;
    highlighted_.push_back(rows[k].frame);
  }
  std::sort(highlighted_.begin(), highlighted_.end());
  model_->setAbove(std::move(above));
  if (rows.empty()) {
    summary_->setText("No drift yet: run a registration or open a results folder.");
    return;
  }
  int unused = 0;
  for (const auto& r : rows) unused += r.used ? 0 : 1;
  QString text = QString("%1 frames, %2 left out of this average").arg(rows.size()).arg(unused);
  if (!hasSigma) {
    text += QString::fromUtf8("; drift.csv has no \u03c3 columns");
  } else if (limit_->value() > 0) {
    text += QString::fromUtf8("; %1 with \u03c3 above %2 px (highlighted)%3")
                .arg(highlighted_.size())
                .arg(limit_->value(), 0, 'g', 4)
                .arg(excluding() ? ", left out of the next average" : "");
  }
  summary_->setText(text);
}

void FrameTable::setCurrentFrame(int frame) {
  const auto& rows = model_->rows();
  auto it = std::find_if(rows.begin(), rows.end(), [&](const DriftRow& r) { return r.frame == frame; });
  if (it == rows.end()) return;
  setting_ = true;
  const QModelIndex i = model_->index(int(it - rows.begin()), 0);
  table_->setCurrentIndex(i);
  table_->scrollTo(i);
  setting_ = false;
}
