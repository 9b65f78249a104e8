#pragma once
// The settings panel: edits a driftscan::Job (the project file is exactly the
// engine's job file). Every change is validated at once and the messages
// appear next to the fields concerned; run() is only enabled for a valid job.
// The fields shown, their labels, ranges and order come from the job-field
// table (driftscan/job_fields.hpp), grouped by block.
#include <QWidget>

#include <map>
#include <string>
#include <vector>

#include "driftscan/job/job.hpp"
#include "driftscan/job/job_fields.hpp"

class QComboBox;
class QSpinBox;
class QDoubleSpinBox;
class QCheckBox;
class QLineEdit;
class QLabel;

class JobEditor : public QWidget {
  Q_OBJECT
 public:
  explicit JobEditor(QWidget* parent = nullptr);
  // The job a new project starts from: the engine's defaults, run here on one
  // rank with a thread per core of this machine.
  static driftscan::Job newJob();
  void setJob(const driftscan::Job& job);  // emits changed()
  driftscan::Job job() const;
  // Frame size of the open series, for checking the ROI and showing the
  // fly-backs in µs (0 = unknown).
  void setFrameSize(int width, int height);
  void setInput(const QString& path);
  void setRoi(int x, int y, int w, int h);  // w == 0: whole frame
  // Empty when the job is valid, else the messages (also shown inline).
  QStringList validationErrors() const;
  bool isValid() const { return validationErrors().isEmpty(); }
  void setProfiles(const QStringList& names);

 signals:
  void changed();
  void roiEdited(int x, int y, int w, int h);

 private:
  // A widget generated from a row of the job-field table (driftscan/job_fields.hpp).
  struct FieldWidget {
    const driftscan::JobField* field;
    QWidget* widget;          // QLineEdit, QSpinBox, QDoubleSpinBox or QComboBox
    QLabel* label = nullptr;  // its row's label
  };
  void revalidate();
  QLabel* messageLabel();
  QWidget* makeWidget(const driftscan::JobField& f);
  void showValue(const FieldWidget& fw, const nlohmann::json& value);
  nlohmann::json valueOf(const FieldWidget& fw) const;
  const FieldWidget* fieldWidget(const std::string& path) const;
  void updateEnabled();
  double flybackMicroseconds(const std::string& path) const;
  void showFlyback();
  void storeFlybackEdits();

  std::vector<FieldWidget> fields_;
  QComboBox* profile_ = nullptr;  // execution.profile: one of the launcher's profiles
  // Compound widgets: the ROI (also drawn on the frame) and the band-pass (on/off + two periods).
  QCheckBox* roiWhole_;
  QSpinBox* roi_[4];
  QCheckBox* bandpassOn_;
  QDoubleSpinBox* bandLow_;
  QDoubleSpinBox* bandHigh_;
  QLabel* inputMsg_;
  QLabel* registrationMsg_;
  QLabel* roiMsg_;
  QLabel* averagingMsg_;
  QLabel* executionMsg_;
  QLabel* jobMsg_;
  std::map<std::string, QLabel*> blockMsg_;  // block -> its message label
  driftscan::Job base_;                      // fields the panel does not show are kept as loaded
  int frameW_ = 0, frameH_ = 0;
  // Line and frame fly-back, path -> fraction of the active time it follows:
  // the job's value and the truth. Shown in µs when the frame size and the
  // dwell are known, so changing either changes the µs, never the fraction.
  std::map<std::string, double> flyback_;
  bool loading_ = false;
};
