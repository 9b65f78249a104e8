#include "run/job_editor.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QThread>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "driftscan/core/error.hpp"
#include "driftscan/core/scan_timing.hpp"
#include "driftscan/job/job_fields.hpp"

using driftscan::Job;

namespace {

// A list of numbers as typed ("0, 90"; spaces or commas between them): the
// JSON array a number_list field takes, and the entries that are no number.
struct TypedNumberList {
  nlohmann::json value = nlohmann::json::array();
  QStringList rejected;
};

TypedNumberList numberList(const QString& text) {
  TypedNumberList out;
  for (const QString& part : text.split(QRegularExpression("[,\\s]+"), Qt::SkipEmptyParts)) {
    bool ok = false;
    const double v = part.toDouble(&ok);
    if (ok && std::isfinite(v)) out.value.push_back(v);
    else out.rejected << part;
  }
  return out;
}

QString numberListText(const nlohmann::json& values) {
  QStringList parts;
  for (const auto& v : values)
    if (v.is_number()) parts << QString::number(v.get<double>(), 'g', 10);
  return parts.join(",");
}

}  // namespace

QLabel* JobEditor::messageLabel() {
  auto* l = new QLabel;
  l->setWordWrap(true);
  l->setStyleSheet("color: #c0392b;");
  l->hide();
  return l;
}

JobEditor::JobEditor(QWidget* parent) : QWidget(parent) {
  auto* top = new QVBoxLayout(this);
  static const std::map<std::string, QString> titles{{"", "Series and results"},
                                                     {"registration", "Registration"},
                                                     {"averaging", "Averaging"},
                                                     {"scan", "Scan timing and distortion"},
                                                     {"follow", "Follow an acquisition (File > Follow acquisition...)"},
                                                     {"execution", "Where to run"}};
  std::vector<std::string> blocks{""};
  for (const auto& b : driftscan::job_blocks()) blocks.push_back(b);
  for (const auto& block : blocks) {
    std::vector<const driftscan::JobField*> shown;
    for (const auto& f : driftscan::job_fields())
      if (f.block == block && f.editor.label) shown.push_back(&f);
    if (shown.empty()) continue;
    auto* g = new QGroupBox(titles.count(block) ? titles.at(block) : QString::fromStdString(block));
    auto* form = new QFormLayout(g);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    top->addWidget(g);
    const driftscan::JobField* roiField = nullptr;
    for (const auto* f : shown) {
      QString label = f->editor.label;
      if (f->editor.unit) label += QString(" (%1)").arg(f->editor.unit);
      if (f->type == driftscan::FieldType::rectangle) {
        roiField = f;  // after the block's messages, with its own
      } else if (f->type == driftscan::FieldType::number_pair) {
        // On/off and two periods: "[x] band-pass  2.0 to 64.0 px".
        auto dspin = [f](double step) {
          auto* s = new QDoubleSpinBox;
          s->setRange(f->editor.lo, f->editor.hi);
          s->setDecimals(f->editor.decimals);
          s->setSingleStep(step);
          return s;
        };
        bandpassOn_ = new QCheckBox("band-pass");
        bandLow_ = dspin(f->editor.step);
        bandHigh_ = dspin(2 * f->editor.step);
        auto* band = new QHBoxLayout;
        band->addWidget(bandpassOn_);
        band->addWidget(bandLow_);
        band->addWidget(new QLabel("to"));
        band->addWidget(bandHigh_);
        band->addWidget(new QLabel(f->editor.unit));
        form->addRow(f->editor.label, band);  // the unit is at the end of the row
      } else {
        QWidget* w = makeWidget(*f);
        form->addRow(label, w);
        fields_.push_back({f, w, qobject_cast<QLabel*>(form->labelForField(w))});
        if (f->path() == "scan.line_flyback" || f->path() == "scan.frame_flyback") flyback_[f->path()] = 0.0;
      }
    }
    QLabel* msg = messageLabel();
    form->addRow(msg);
    blockMsg_[block] = msg;
    if (roiField) {
      roiWhole_ = new QCheckBox("whole frame");
      auto* roiRow = new QHBoxLayout;
      const char* names[4] = {"x", "y", "w", "h"};
      for (int i = 0; i < 4; ++i) {
        roi_[i] = new QSpinBox;
        roi_[i]->setRange(0, 1 << 20);
        roi_[i]->setPrefix(QString(names[i]) + " ");
        roiRow->addWidget(roi_[i]);
      }
      form->addRow(roiField->editor.label, roiWhole_);
      form->addRow("", roiRow);
      roiMsg_ = messageLabel();
      form->addRow(roiMsg_);
    }
  }
  inputMsg_ = blockMsg_.at("");
  registrationMsg_ = blockMsg_.at("registration");
  averagingMsg_ = blockMsg_.at("averaging");
  executionMsg_ = blockMsg_.at("execution");
  jobMsg_ = messageLabel();
  top->addWidget(jobMsg_);
  top->addStretch(1);

  setJob(newJob());
  storeFlybackEdits();  // first: notify reads what it stores
  auto notify = [this] {
    updateEnabled();
    if (!loading_) {
      showFlyback();  // the dwell, direction or line fly-back may have changed their µs
      revalidate();
      emit changed();
    }
  };
  for (const auto& fw : fields_) {
    if (auto* e = qobject_cast<QLineEdit*>(fw.widget)) connect(e, &QLineEdit::textChanged, this, notify);
    else if (auto* c = qobject_cast<QComboBox*>(fw.widget))
      connect(c, qOverload<int>(&QComboBox::currentIndexChanged), this, notify);
    else if (auto* s = qobject_cast<QSpinBox*>(fw.widget))
      connect(s, qOverload<int>(&QSpinBox::valueChanged), this, notify);
    else if (auto* d = qobject_cast<QDoubleSpinBox*>(fw.widget))
      connect(d, qOverload<double>(&QDoubleSpinBox::valueChanged), this, notify);
    else if (auto* b = qobject_cast<QCheckBox*>(fw.widget)) connect(b, &QCheckBox::toggled, this, notify);
  }
  for (auto* s : {bandLow_, bandHigh_}) connect(s, qOverload<double>(&QDoubleSpinBox::valueChanged), this, notify);
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
}

Job JobEditor::newJob() {
  Job job;
  job.execution.ranks = 1;
  job.execution.threads = std::max(1, QThread::idealThreadCount());
  return job;
}

QWidget* JobEditor::makeWidget(const driftscan::JobField& f) {
  using driftscan::FieldType;
  switch (f.type) {
    case FieldType::integer:
    case FieldType::count:
    case FieldType::seed: {
      auto* s = new QSpinBox;
      s->setRange(int(f.editor.lo), int(f.editor.hi));
      return s;
    }
    case FieldType::number:
    case FieldType::optional_number: {
      auto* s = new QDoubleSpinBox;
      s->setRange(f.editor.lo, f.editor.hi);
      s->setDecimals(f.editor.decimals);
      s->setSingleStep(f.editor.step);
      return s;
    }
    case FieldType::choice: {
      auto* c = new QComboBox;
      for (const auto& name : f.choices) c->addItem(QString::fromStdString(name));
      return c;
    }
    case FieldType::boolean: return new QCheckBox;
    default: break;
  }
  if (f.editor.listed) {
    profile_ = new QComboBox;
    profile_->addItem("local");
    return profile_;
  }
  auto* e = new QLineEdit;
  if (f.editor.placeholder) e->setPlaceholderText(f.editor.placeholder);
  return e;
}

void JobEditor::showValue(const FieldWidget& fw, const nlohmann::json& v) {
  if (auto it = flyback_.find(fw.field->path()); it != flyback_.end()) {
    it->second = v.is_number() ? v.get<double>() : 0.0;  // shown by showFlyback: the µs need the dwell too
    return;
  }
  if (auto* e = qobject_cast<QLineEdit*>(fw.widget)) {
    e->setText(v.is_array()    ? numberListText(v)
               : v.is_string() ? QString::fromStdString(v.get<std::string>())
                               : QString());
  } else if (auto* c = qobject_cast<QComboBox*>(fw.widget)) {
    const QString name = v.is_string() ? QString::fromStdString(v.get<std::string>()) : QString();
    if (c->findText(name) < 0 && fw.field->editor.listed) c->addItem(name);  // a profile this machine lacks
    c->setCurrentIndex(c->findText(name));
  } else if (auto* s = qobject_cast<QSpinBox*>(fw.widget)) {
    s->setValue(v.is_number() ? v.get<int>() : 0);
  } else if (auto* d = qobject_cast<QDoubleSpinBox*>(fw.widget)) {
    d->setValue(v.is_number() ? v.get<double>() * fw.field->editor.display_scale : 0.0);  // in the shown unit
  } else if (auto* b = qobject_cast<QCheckBox*>(fw.widget)) {
    b->setChecked(v.is_boolean() && v.get<bool>());
  }
}

nlohmann::json JobEditor::valueOf(const FieldWidget& fw) const {
  if (auto it = flyback_.find(fw.field->path()); it != flyback_.end()) return it->second;
  if (auto* e = qobject_cast<QLineEdit*>(fw.widget)) {
    if (fw.field->type == driftscan::FieldType::number_list) return numberList(e->text()).value;
    return e->text().trimmed().toStdString();
  }
  if (auto* c = qobject_cast<QComboBox*>(fw.widget)) return c->currentText().toStdString();
  if (auto* s = qobject_cast<QSpinBox*>(fw.widget)) return s->value();
  if (auto* d = qobject_cast<QDoubleSpinBox*>(fw.widget)) return d->value() / fw.field->editor.display_scale;
  if (auto* b = qobject_cast<QCheckBox*>(fw.widget)) return b->isChecked();
  return nullptr;
}

const JobEditor::FieldWidget* JobEditor::fieldWidget(const std::string& path) const {
  for (const auto& fw : fields_)
    if (fw.field->path() == path) return &fw;
  return nullptr;
}

// A field that only matters while another has a given value (the clipped
// mean's sigma) is disabled otherwise.
void JobEditor::updateEnabled() {
  for (const auto& fw : fields_) {
    const auto& hints = fw.field->editor;
    if (!hints.enabled_by) continue;
    const FieldWidget* by = fieldWidget(hints.enabled_by);
    if (!by) continue;
    // A choice compares as its name, a switch as "true" / "false".
    const nlohmann::json v = valueOf(*by);
    fw.widget->setEnabled((v.is_string() ? v.get<std::string>() : v.dump()) == hints.enabled_value);
  }
}

// A fly-back the user edits is stored as a fraction, converted from µs when
// it is shown in µs.
void JobEditor::storeFlybackEdits() {
  for (const auto& fw : fields_) {
    const std::string path = fw.field->path();
    if (!flyback_.count(path)) continue;
    connect(static_cast<QDoubleSpinBox*>(fw.widget), qOverload<double>(&QDoubleSpinBox::valueChanged), this,
            [this, path](double v) {
              if (loading_) return;
              const double us = flybackMicroseconds(path);
              flyback_[path] = us > 0 ? v / us : v;
            });
  }
}

// µs per unit of a fly-back fraction, i.e. the active time it is a fraction of
// (driftscan/core/scan_timing.hpp); 0 while the frame size or the dwell is unknown.
double JobEditor::flybackMicroseconds(const std::string& path) const {
  const FieldWidget* dwellField = fieldWidget("scan.dwell");
  const FieldWidget* directionField = fieldWidget("scan.direction");
  const double dwell = dwellField ? valueOf(*dwellField).get<double>() : 0.0;
  if (frameW_ <= 0 || frameH_ <= 0 || dwell <= 0) return 0.0;
  // rotated90 scans columns: its fast axis is y.
  const bool columns =
      directionField && valueOf(*directionField) == driftscan::to_string(driftscan::ScanDirection::rotated90);
  const double samples = columns ? frameH_ : frameW_, lines = columns ? frameW_ : frameH_;
  const double line = samples * dwell * 1e6;  // a line's active time
  if (path == "scan.line_flyback") return line;
  return lines * line * (1.0 + flyback_.at("scan.line_flyback"));  // lines * line time
}

// Shows the fly-back fractions in their spin boxes: in µs when the active time
// is known, else as the fraction itself.
void JobEditor::showFlyback() {
  for (const auto& fw : fields_) {
    const auto it = flyback_.find(fw.field->path());
    if (it == flyback_.end()) continue;
    auto* spin = static_cast<QDoubleSpinBox*>(fw.widget);
    const auto& hints = fw.field->editor;
    const double us = flybackMicroseconds(it->first);
    const double scale = us > 0 ? us : 1.0;
    const QSignalBlocker quiet(spin);  // showing, not editing: the fraction stays
    if (fw.label)
      fw.label->setText(QString("%1 (%2)").arg(QString(hints.label), us > 0 ? QString("µs") : QString(hints.unit)));
    spin->setRange(hints.lo * scale, hints.hi * scale);
    spin->setSingleStep(us > 0 ? 1.0 : hints.step);
    // Left alone when it already shows the value: setValue would reformat what the user is typing.
    const double shown = it->second * scale;
    if (std::abs(spin->value() - shown) >= 0.5 * std::pow(10.0, -spin->decimals())) spin->setValue(shown);
  }
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
  for (const auto& fw : fields_) showValue(fw, fw.field->get(job));
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
  showFlyback();
  updateEnabled();
  loading_ = false;
  revalidate();
  emit changed();  // views bound to job fields (the frame table's sigma limit) follow
}

Job JobEditor::job() const {
  Job j = base_;
  for (const auto& fw : fields_) fw.field->set(j, valueOf(fw));
  if (roiWhole_->isChecked()) j.registration.roi = driftscan::Roi{};
  else j.registration.roi = driftscan::Roi{roi_[0]->value(), roi_[1]->value(), roi_[2]->value(), roi_[3]->value()};
  j.registration.bandpass_low = bandpassOn_->isChecked() ? bandLow_->value() : 0.0;
  j.registration.bandpass_high = bandpassOn_->isChecked() ? bandHigh_->value() : 0.0;
  return j;
}

void JobEditor::setFrameSize(int width, int height) {
  frameW_ = width;
  frameH_ = height;
  showFlyback();
  revalidate();
}

void JobEditor::setInput(const QString& path) { qobject_cast<QLineEdit*>(fieldWidget("input")->widget)->setText(path); }

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
  for (const auto& [block, l] : blockMsg_)  // input, registration, averaging, scan, execution, ...
    if (!l->text().isEmpty()) all << l->text();
  for (auto* l : {roiMsg_, jobMsg_})
    if (!l->text().isEmpty()) all << l->text();
  return all;
}

void JobEditor::revalidate() {
  QStringList in, reg, roi, avg, exe;
  const Job j = job();
  if (j.input.empty()) in << "Open a series (the input is empty).";
  else if (j.input.find('*') == std::string::npos && !QFileInfo::exists(QString::fromStdString(j.input)) &&
           // A followed TIFF not yet created is waited for; its folder must exist.
           !(j.follow.enabled && QFileInfo(QString::fromStdString(j.input)).absoluteDir().exists()))
    in << QString("Input %1 does not exist.").arg(QString::fromStdString(j.input));
  if (j.output.empty()) in << "Choose a results folder.";
  // The ranges of the job-field table, for the fields shown and in use.
  std::map<std::string, QStringList> ranges;
  for (const auto& fw : fields_) {
    const auto& f = *fw.field;
    const nlohmann::json v = valueOf(fw);
    if (!f.has_range() || !v.is_number() || !fw.widget->isEnabledTo(this)) continue;
    if (!f.in_range(v.get<double>()))
      ranges[f.block] << QString("%1 must be %2.").arg(f.editor.label).arg(QString::fromStdString(f.range_text()));
  }
  for (const auto& fw : fields_) {  // lists typed with an entry that is no number
    const auto* e = qobject_cast<QLineEdit*>(fw.widget);
    if (!e || fw.field->type != driftscan::FieldType::number_list) continue;
    const QStringList bad = numberList(e->text()).rejected;
    if (!bad.isEmpty())
      ranges[fw.field->block] << QString("%1: '%2' is not a number.").arg(fw.field->editor.label, bad.front());
  }
  in << ranges[""];
  reg << ranges["registration"];
  if (bandpassOn_->isChecked() && bandLow_->value() >= bandHigh_->value())
    reg << "Band-pass: the shortest period kept must be below the longest.";
  if (bandpassOn_->isChecked() && bandLow_->value() < 2.0)
    reg << "Band-pass: periods below 2 px do not exist (Nyquist).";
  if (!roiWhole_->isChecked()) {
    const auto& r = j.registration.roi;
    if (r.w < 8 || r.h < 8) roi << "ROI must be at least 8 x 8 pixels.";
    if (frameW_ > 0 && (r.x + r.w > frameW_ || r.y + r.h > frameH_))
      roi << QString("ROI %1,%2 %3x%4 exceeds the %5x%6 frame.")
                 .arg(r.x)
                 .arg(r.y)
                 .arg(r.w)
                 .arg(r.h)
                 .arg(frameW_)
                 .arg(frameH_);
  }
  if (j.averaging.interpolation == driftscan::Interpolation::fourier &&
      j.registration.model != driftscan::MotionModel::translation)
    avg << "Fourier interpolation only applies to the translation model.";
  avg << ranges["averaging"];
  if (j.execution.profile.empty()) exe << "Choose a launcher profile.";
  exe << ranges["execution"];
  QString engineMsg;
  // The other blocks' (scan, synth, ...) messages are their ranges and lists.
  bool othersValid = true;
  for (const auto& [block, messages] : ranges)
    if (!messages.isEmpty() && block != "" && block != "registration" && block != "averaging" && block != "execution")
      othersValid = false;
  if (in.isEmpty() && reg.isEmpty() && roi.isEmpty() && avg.isEmpty() && exe.isEmpty() && othersValid) {
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
  for (const auto& [block, label] : blockMsg_)
    if (block != "" && block != "registration" && block != "averaging" && block != "execution")
      show(label, ranges[block]);
}
