#pragma once
// The settings panel: edits a driftscan::Job (the project file is exactly the
// engine's job file). Every change is validated at once and the messages
// appear next to the fields concerned; run() is only enabled for a valid job.
#include <QWidget>

#include "driftscan/job.hpp"

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
  void setJob(const driftscan::Job& job);
  driftscan::Job job() const;
  // Frame size of the open series, for checking the ROI (0 = unknown).
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
  void revalidate();
  QLabel* messageLabel();

  QLineEdit* input_;
  QLineEdit* output_;
  QComboBox* model_;
  QSpinBox* levels_;
  QSpinBox* iterations_;
  QDoubleSpinBox* tolerance_;
  QCheckBox* roiWhole_;
  QSpinBox* roi_[4];
  QCheckBox* bandpassOn_;
  QDoubleSpinBox* bandLow_;
  QDoubleSpinBox* bandHigh_;
  QComboBox* method_;
  QDoubleSpinBox* clipSigma_;
  QComboBox* interpolation_;
  QDoubleSpinBox* minQuality_;
  QComboBox* profile_;
  QSpinBox* ranks_;
  QSpinBox* threads_;
  QLabel* inputMsg_;
  QLabel* registrationMsg_;
  QLabel* roiMsg_;
  QLabel* averagingMsg_;
  QLabel* executionMsg_;
  QLabel* jobMsg_;
  driftscan::Job base_;  // fields the panel does not show are kept as loaded
  int frameW_ = 0, frameH_ = 0;
  bool loading_ = false;
};
