#include "job_editor.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QVBoxLayout>

#include "driftscan/error.hpp"

using driftscan::Job;

QLabel* JobEditor::messageLabel() {
  auto* l = new QLabel;
  l->setWordWrap(true);
  l->setStyleSheet("color: #c0392b;");
  l->hide();
  return l;
}

JobEditor::JobEditor(QWidget* parent) : QWidget(parent) {
  auto* top = new QVBoxLayout(this);
  auto group = [&](const QString& title) {
    auto* g = new QGroupBox(title);
    auto* f = new QFormLayout(g);
    f->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    top->addWidget(g);
    return f;
  };
  auto spin = [](int lo, int hi) {
    auto* s = new QSpinBox;
    s->setRange(lo, hi);
    return s;
  };
  auto dspin = [](double lo, double hi, int decimals, double step) {
    auto* s = new QDoubleSpinBox;
    s->setRange(lo, hi);
    s->setDecimals(decimals);
    s->setSingleStep(step);
    return s;
  };

  auto* files = group("Series and results");
  input_ = new QLineEdit;
  input_->setPlaceholderText("series.tif, a folder or a glob");
  output_ = new QLineEdit;
  output_->setPlaceholderText("results folder");
  files->addRow("Input", input_);
  files->addRow("Output", output_);
  inputMsg_ = messageLabel();
  files->addRow(inputMsg_);

  auto* reg = group("Registration");
  model_ = new QComboBox;
  model_->addItems({"translation", "rigid", "affine"});
  levels_ = spin(1, 12);
  iterations_ = spin(1, 100000);
  tolerance_ = dspin(0.0, 10.0, 5, 0.0005);
  bandpassOn_ = new QCheckBox("band-pass");
  bandLow_ = dspin(0.0, 1e5, 1, 0.5);
  bandHigh_ = dspin(0.0, 1e5, 1, 1.0);
  auto* band = new QHBoxLayout;
  band->addWidget(bandpassOn_);
  band->addWidget(bandLow_);
  band->addWidget(new QLabel("to"));
  band->addWidget(bandHigh_);
  band->addWidget(new QLabel("px"));
  reg->addRow("Model", model_);
  reg->addRow("Pyramid levels", levels_);
  reg->addRow("Max iterations", iterations_);
  reg->addRow("Tolerance (px)", tolerance_);
  reg->addRow("Periods kept", band);
  registrationMsg_ = messageLabel();
  reg->addRow(registrationMsg_);

  roiWhole_ = new QCheckBox("whole frame");
  auto* roiRow = new QHBoxLayout;
  const char* names[4] = {"x", "y", "w", "h"};
  for (int i = 0; i < 4; ++i) {
    roi_[i] = spin(0, 1 << 20);
    roi_[i]->setPrefix(QString(names[i]) + " ");
    roiRow->addWidget(roi_[i]);
  }
  reg->addRow("ROI", roiWhole_);
  reg->addRow("", roiRow);
  roiMsg_ = messageLabel();
  reg->addRow(roiMsg_);

  auto* avg = group("Averaging");
  method_ = new QComboBox;
  method_->addItems({"mean", "median", "clipped"});
  clipSigma_ = dspin(0.0, 100.0, 2, 0.5);
  interpolation_ = new QComboBox;
  interpolation_->addItems({"cubic", "fourier"});
  minQuality_ = dspin(-1.0, 1.0, 3, 0.05);
  avg->addRow("Method", method_);
  avg->addRow("Rejection (sigma)", clipSigma_);
  avg->addRow("Interpolation", interpolation_);
  avg->addRow("Min quality (NCC)", minQuality_);
  averagingMsg_ = messageLabel();
  avg->addRow(averagingMsg_);

  auto* exe = group("Where to run");
  profile_ = new QComboBox;
  profile_->addItem("local");
  ranks_ = spin(1, 100000);
  threads_ = spin(1, 1024);
  exe->addRow("Profile", profile_);
  exe->addRow("MPI ranks", ranks_);
  exe->addRow("Threads per rank", threads_);
  executionMsg_ = messageLabel();
  exe->addRow(executionMsg_);
  jobMsg_ = messageLabel();
  top->addWidget(jobMsg_);
  top->addStretch(1);

  setJob(Job{});
  auto notify = [this] { if (!loading_) { revalidate(); emit changed(); } };
  for (auto* e : {input_, output_}) connect(e, &QLineEdit::textChanged, this, notify);
  for (auto* c : {model_, method_, interpolation_, profile_})
    connect(c, qOverload<int>(&QComboBox::currentIndexChanged), this, notify);
  for (auto* s : {levels_, iterations_, ranks_, threads_})
    connect(s, qOverload<int>(&QSpinBox::valueChanged), this, notify);
  for (auto* s : {tolerance_, bandLow_, bandHigh_, clipSigma_, minQuality_})
    connect(s, qOverload<double>(&QDoubleSpinBox::valueChanged), this, notify);
  connect(bandpassOn_, &QCheckBox::toggled, this, [this, notify](bool on) {
    bandLow_->setEnabled(on);
    bandHigh_->setEnabled(on);
    notify();
  });
  auto roiChanged = [this, notify] {
    const bool whole = roiWhole_->isChecked();
    for (auto* s : roi_) s->setEnabled(!whole);
    if (!loading_) {
      if (whole) emit roiEdited(0, 0, 0, 0);
      else emit roiEdited(roi_[0]->value(), roi_[1]->value(), roi_[2]->value(), roi_[3]->value());
    }
    notify();
  };
  connect(roiWhole_, &QCheckBox::toggled, this, roiChanged);
  for (auto* s : roi_) connect(s, qOverload<int>(&QSpinBox::valueChanged), this, roiChanged);
  connect(method_, qOverload<int>(&QComboBox::currentIndexChanged), this,
          [this](int i) { clipSigma_->setEnabled(i == 2); });
}

void JobEditor::setProfiles(const QStringList& names) {
  const QString current = profile_->currentText();
  loading_ = true;
  profile_->clear();
  profile_->addItems(names.isEmpty() ? QStringList{"local"} : names);
  const int i = profile_->findText(current);
  profile_->setCurrentIndex(i >= 0 ? i : 0);
  loading_ = false;
  revalidate();
}

void JobEditor::setJob(const Job& job) {
  loading_ = true;
  base_ = job;
  input_->setText(QString::fromStdString(job.input));
  output_->setText(QString::fromStdString(job.output));
  model_->setCurrentText(driftscan::to_string(job.registration.model));
  levels_->setValue(job.registration.pyramid_levels);
  iterations_->setValue(job.registration.max_iterations);
  tolerance_->setValue(job.registration.tolerance);
  const auto& r = job.registration.roi;
  roiWhole_->setChecked(r.whole_frame());
  roi_[0]->setValue(r.x);
  roi_[1]->setValue(r.y);
  roi_[2]->setValue(r.w);
  roi_[3]->setValue(r.h);
  for (auto* s : roi_) s->setEnabled(!r.whole_frame());
  const bool band = job.registration.bandpass_low > 0 || job.registration.bandpass_high > 0;
  bandpassOn_->setChecked(band);
  bandLow_->setValue(band ? job.registration.bandpass_low : 2.0);
  bandHigh_->setValue(band ? job.registration.bandpass_high : 64.0);
  bandLow_->setEnabled(band);
  bandHigh_->setEnabled(band);
  const int methods[] = {0, 1, 2};
  method_->setCurrentIndex(methods[int(job.averaging.method)]);
  clipSigma_->setValue(job.averaging.clip_sigma);
  clipSigma_->setEnabled(job.averaging.method == driftscan::AverageMethod::clipped);
  interpolation_->setCurrentIndex(job.averaging.interpolation == driftscan::Interpolation::fourier ? 1 : 0);
  minQuality_->setValue(job.averaging.min_quality);
  const QString prof = QString::fromStdString(job.execution.profile);
  if (profile_->findText(prof) < 0) profile_->addItem(prof);
  profile_->setCurrentText(prof);
  ranks_->setValue(job.execution.ranks);
  threads_->setValue(job.execution.threads);
  loading_ = false;
  revalidate();
}

Job JobEditor::job() const {
  Job j = base_;
  j.input = input_->text().trimmed().toStdString();
  j.output = output_->text().trimmed().toStdString();
  j.registration.model = driftscan::motion_model_from_string(model_->currentText().toStdString());
  j.registration.pyramid_levels = levels_->value();
  j.registration.max_iterations = iterations_->value();
  j.registration.tolerance = tolerance_->value();
  if (roiWhole_->isChecked()) j.registration.roi = driftscan::Roi{};
  else j.registration.roi = driftscan::Roi{roi_[0]->value(), roi_[1]->value(), roi_[2]->value(), roi_[3]->value()};
  j.registration.bandpass_low = bandpassOn_->isChecked() ? bandLow_->value() : 0.0;
  j.registration.bandpass_high = bandpassOn_->isChecked() ? bandHigh_->value() : 0.0;
  j.averaging.method = static_cast<driftscan::AverageMethod>(method_->currentIndex());
  j.averaging.clip_sigma = clipSigma_->value();
  j.averaging.interpolation =
      interpolation_->currentIndex() == 1 ? driftscan::Interpolation::fourier : driftscan::Interpolation::cubic;
  j.averaging.min_quality = minQuality_->value();
  j.execution.profile = profile_->currentText().toStdString();
  j.execution.ranks = ranks_->value();
  j.execution.threads = threads_->value();
  return j;
}

void JobEditor::setFrameSize(int width, int height) {
  frameW_ = width;
  frameH_ = height;
  revalidate();
}

void JobEditor::setInput(const QString& path) { input_->setText(path); }

void JobEditor::setRoi(int x, int y, int w, int h) {
  loading_ = true;
  roiWhole_->setChecked(w <= 0 || h <= 0);
  roi_[0]->setValue(x);
  roi_[1]->setValue(y);
  roi_[2]->setValue(w);
  roi_[3]->setValue(h);
  for (auto* s : roi_) s->setEnabled(w > 0 && h > 0);
  loading_ = false;
  revalidate();
  emit changed();
}

QStringList JobEditor::validationErrors() const {
  QStringList all;
  for (auto* l : {inputMsg_, registrationMsg_, roiMsg_, averagingMsg_, executionMsg_, jobMsg_})
    if (!l->text().isEmpty()) all << l->text();
  return all;
}

void JobEditor::revalidate() {
  QStringList in, reg, roi, avg, exe;
  const Job j = job();
  if (j.input.empty()) in << "Open a series (the input is empty).";
  else if (j.input.find('*') == std::string::npos && !QFileInfo::exists(QString::fromStdString(j.input)))
    in << QString("Input %1 does not exist.").arg(QString::fromStdString(j.input));
  if (j.output.empty()) in << "Choose a results folder.";
  if (tolerance_->value() <= 0) reg << "Tolerance must be positive.";
  if (bandpassOn_->isChecked() && bandLow_->value() >= bandHigh_->value())
    reg << "Band-pass: the shortest period kept must be below the longest.";
  if (bandpassOn_->isChecked() && bandLow_->value() < 2.0)
    reg << "Band-pass: periods below 2 px do not exist (Nyquist).";
  if (!roiWhole_->isChecked()) {
    const auto& r = j.registration.roi;
    if (r.w < 8 || r.h < 8) roi << "ROI must be at least 8 x 8 pixels.";
    if (frameW_ > 0 && (r.x + r.w > frameW_ || r.y + r.h > frameH_))
      roi << QString("ROI %1,%2 %3x%4 exceeds the %5x%6 frame.").arg(r.x).arg(r.y).arg(r.w).arg(r.h).arg(frameW_).arg(frameH_);
  }
  if (j.averaging.interpolation == driftscan::Interpolation::fourier &&
      j.registration.model != driftscan::MotionModel::translation)
    avg << "Fourier interpolation only applies to the translation model.";
  if (j.averaging.method == driftscan::AverageMethod::clipped && j.averaging.clip_sigma <= 0)
    avg << "Rejection threshold must be positive.";
  if (j.execution.profile.empty()) exe << "Choose a launcher profile.";
  QString engineMsg;
  if (in.isEmpty() && reg.isEmpty() && roi.isEmpty() && avg.isEmpty() && exe.isEmpty()) {
    // The engine's own rules, so the GUI never accepts what the engine rejects.
    try {
      driftscan::validate(j);
    } catch (const driftscan::Error& e) {
      engineMsg = QString::fromStdString(e.what());
    }
  }
  auto show = [](QLabel* l, const QStringList& m) {
    l->setText(m.join("\n"));
    l->setVisible(!m.isEmpty());
  };
  show(inputMsg_, in);
  show(registrationMsg_, reg);
  show(roiMsg_, roi);
  show(averagingMsg_, avg);
  show(executionMsg_, exe);
  show(jobMsg_, engineMsg.isEmpty() ? QStringList{} : QStringList{engineMsg});
}
