#include <QApplication>

#include "vtk_view_widget.hpp"

int main(int argc, char** argv) {
  VtkViewWidget::setDefaultSurfaceFormat();
  QApplication app(argc, argv);
  VtkViewWidget w;
  w.resize(640, 480);
  w.show();
  return app.exec();
}
