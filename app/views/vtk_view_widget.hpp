#pragma once
// A Qt6 QOpenGLWidget hosting a VTK render window. Debian's QVTKOpenGLNativeWidget
// is built against Qt5, so this is the small adapter Qt6 needs: VTK renders
// into its own framebuffer inside the widget's GL context, and paintGL blits
// that into Qt's framebuffer (the pitfalls are commented where they bite, in
// vtk_view_widget.cpp).
#include <vtkSmartPointer.h>
#include <QOpenGLWidget>

class vtkGenericOpenGLRenderWindow;
class vtkGenericRenderWindowInteractor;
class vtkRenderer;
class vtkObject;

class VtkViewWidget : public QOpenGLWidget {
  Q_OBJECT
 public:
  explicit VtkViewWidget(QWidget* parent = nullptr);
  ~VtkViewWidget() override;

  vtkRenderer* renderer() const;
  vtkGenericOpenGLRenderWindow* renderWindow() const;
  vtkGenericRenderWindowInteractor* interactor() const;
  // Re-renders on the next paint (never renders outside paintGL).
  void requestRender() { update(); }

  // The default surface format VTK needs; call before constructing QApplication.
  static void setDefaultSurfaceFormat();
  // Whether this Qt platform can host the widget (a QOpenGLWidget with an
  // OpenGL 3.2 context). `offscreen` and `minimal` cannot: creating one there
  // crashes in Qt's backing store. When not, `why` gets a one-line reason.
  // Needs the QGuiApplication; the answer is computed once.
  static bool available(QString* why = nullptr);

 protected:
  void initializeGL() override;
  void resizeGL(int w, int h) override;
  void paintGL() override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;

 private slots:
  void releaseGL();

 private:
  void onWindowEvent(vtkObject* caller, unsigned long event, void* data);
  void forwardMouse(QMouseEvent* e, unsigned long vtkEvent);
  void cleanupGL();

  vtkSmartPointer<vtkGenericOpenGLRenderWindow> window_;
  vtkSmartPointer<vtkGenericRenderWindowInteractor> interactor_;
  vtkSmartPointer<vtkRenderer> renderer_;
};
