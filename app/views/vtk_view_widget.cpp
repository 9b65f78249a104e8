#include "views/vtk_view_widget.hpp"

#include <QGuiApplication>
#include <QMouseEvent>
#include <QOpenGLContext>
#include <QOpenGLExtraFunctions>
#include <QSurfaceFormat>
#include <QWheelEvent>

#include <vtkCallbackCommand.h>
#include <vtkCommand.h>
#include <vtkGenericOpenGLRenderWindow.h>
#include <vtkGenericRenderWindowInteractor.h>
#include <vtkInteractorStyleTrackballCamera.h>
#include <vtkOpenGLState.h>
#include <vtkRenderer.h>

void VtkViewWidget::setDefaultSurfaceFormat() {
  QSurfaceFormat fmt;
  fmt.setRenderableType(QSurfaceFormat::OpenGL);
  fmt.setVersion(3, 2);
  fmt.setProfile(QSurfaceFormat::CoreProfile);
  fmt.setSwapBehavior(QSurfaceFormat::DoubleBuffer);
  fmt.setRedBufferSize(8);
  fmt.setGreenBufferSize(8);
  fmt.setBlueBufferSize(8);
  fmt.setDepthBufferSize(8);
  fmt.setAlphaBufferSize(8);
  fmt.setStencilBufferSize(0);
  fmt.setSamples(0);
  QSurfaceFormat::setDefaultFormat(fmt);
}

bool VtkViewWidget::available(QString* why) {
  static const QString reason = [] {
    const QString platform = QGuiApplication::platformName();
    // Platforms without RasterGLSurface: Qt only warns "QOpenGLWidget is not
    // supported on this platform" and then crashes painting the window.
    if (QStringList{"offscreen", "minimal", "vnc", "linuxfb", "vkkhrdisplay"}.contains(platform))
      return QString("the Qt platform '%1' cannot show OpenGL views (use xcb or wayland, e.g. under xvfb-run)")
          .arg(platform);
    QOpenGLContext probe;
    if (!probe.create()) return QString("no OpenGL context on the Qt platform '%1'").arg(platform);
    const QSurfaceFormat f = probe.format();
    if (f.version() < qMakePair(3, 2))
      return QString("OpenGL %1.%2 on the Qt platform '%3'; the 3-D view needs 3.2")
          .arg(f.majorVersion())
          .arg(f.minorVersion())
          .arg(platform);
    return QString();
  }();
  if (why) *why = reason;
  return reason.isEmpty();
}

VtkViewWidget::VtkViewWidget(QWidget* parent) : QOpenGLWidget(parent) {
  setMouseTracking(false);
  setFocusPolicy(Qt::StrongFocus);
  window_ = vtkSmartPointer<vtkGenericOpenGLRenderWindow>::New();
  // VTK must not touch GL before Qt has a context for it.
  window_->SetReadyForRendering(false);
  window_->SetFrameBlitModeToNoBlit();
  window_->SetOwnContext(0);
  window_->SetForceMaximumHardwareLineWidth(1);
  window_->SetMultiSamples(0);
  renderer_ = vtkSmartPointer<vtkRenderer>::New();
  window_->AddRenderer(renderer_);

  interactor_ = vtkSmartPointer<vtkGenericRenderWindowInteractor>::New();
  interactor_->SetRenderWindow(window_);
  auto style = vtkSmartPointer<vtkInteractorStyleTrackballCamera>::New();
  interactor_->SetInteractorStyle(style);
  // The interactor asks for renders; Qt decides when to paint.
  interactor_->EnableRenderOff();

  auto observe = [this](vtkObject* o, unsigned long ev) { o->AddObserver(ev, this, &VtkViewWidget::onWindowEvent); };
  observe(window_, vtkCommand::WindowMakeCurrentEvent);
  observe(window_, vtkCommand::WindowIsCurrentEvent);
  observe(window_, vtkCommand::WindowFrameEvent);
  observe(interactor_, vtkCommand::RenderEvent);
}

VtkViewWidget::~VtkViewWidget() {
  makeCurrent();
  cleanupGL();
  doneCurrent();
  window_->RemoveAllObservers();
  interactor_->RemoveAllObservers();
}

void VtkViewWidget::releaseGL() {
  makeCurrent();
  cleanupGL();
  doneCurrent();
}

void VtkViewWidget::cleanupGL() {
  if (window_ && window_->GetReadyForRendering()) {
    window_->Finalize();
    window_->SetReadyForRendering(false);
  }
}

vtkRenderer* VtkViewWidget::renderer() const { return renderer_; }
vtkGenericOpenGLRenderWindow* VtkViewWidget::renderWindow() const { return window_; }
vtkGenericRenderWindowInteractor* VtkViewWidget::interactor() const { return interactor_; }

void VtkViewWidget::onWindowEvent(vtkObject*, unsigned long event, void* data) {
  QOpenGLContext* ctx = context();
  switch (event) {
    case vtkCommand::WindowMakeCurrentEvent:
      // Only if needed: QOpenGLWidget::makeCurrent() would rebind Qt's FBO behind
      // VTK's state cache and VTK then draws nothing.
      if (ctx && QOpenGLContext::currentContext() != ctx) ctx->makeCurrent(ctx->surface());
      break;
    case vtkCommand::WindowIsCurrentEvent:
      *static_cast<bool*>(data) = ctx && QOpenGLContext::currentContext() == ctx;
      break;
    case vtkCommand::WindowFrameEvent: break;
    case vtkCommand::RenderEvent: update(); break;
    default: break;
  }
}

void VtkViewWidget::initializeGL() {
  // Release VTK's GL resources while the context still exists.
  connect(context(), &QOpenGLContext::aboutToBeDestroyed, this, &VtkViewWidget::releaseGL, Qt::UniqueConnection);
  window_->SetReadyForRendering(true);
  window_->OpenGLInitContext();
  const qreal dpr = devicePixelRatioF();
  window_->SetSize(int(width() * dpr), int(height() * dpr));
  interactor_->Initialize();
}

void VtkViewWidget::resizeGL(int w, int h) {
  const qreal dpr = devicePixelRatioF();
  const int pw = int(w * dpr), ph = int(h * dpr);
  window_->SetSize(pw, ph);
  interactor_->UpdateSize(pw, ph);
}

void VtkViewWidget::paintGL() {
  if (!window_->GetReadyForRendering()) return;
  const qreal dpr = devicePixelRatioF();
  const int w = int(width() * dpr), h = int(height() * dpr);
  window_->SetSize(w, h);
  vtkOpenGLState* state = window_->GetState();
  state->Reset();
  state->Push();
  state->vtkglDepthFunc(GL_LEQUAL);  // Qt leaves GL_LESS; VTK expects LEQUAL
  window_->Render();

  state->vtkglViewport(0, 0, w, h);
  state->vtkglScissor(0, 0, w, h);
  state->vtkglBindFramebuffer(GL_DRAW_FRAMEBUFFER, defaultFramebufferObject());
  state->vtkglDrawBuffer(GL_COLOR_ATTACHMENT0);
  window_->BlitDisplayFramebuffer(0, 0, 0, w, h, 0, 0, w, h, GL_COLOR_BUFFER_BIT, GL_NEAREST);

  // VTK's background alpha is 0: make the result opaque or grabs come out black.
  QOpenGLExtraFunctions* f = context()->extraFunctions();
  GLboolean mask[4];
  f->glGetBooleanv(GL_COLOR_WRITEMASK, mask);
  GLfloat clear[4];
  f->glGetFloatv(GL_COLOR_CLEAR_VALUE, clear);
  f->glColorMask(GL_FALSE, GL_FALSE, GL_FALSE, GL_TRUE);
  f->glClearColor(0.f, 0.f, 0.f, 1.f);
  f->glClear(GL_COLOR_BUFFER_BIT);
  f->glColorMask(mask[0], mask[1], mask[2], mask[3]);
  f->glClearColor(clear[0], clear[1], clear[2], clear[3]);
  state->Pop();
}

void VtkViewWidget::forwardMouse(QMouseEvent* e, unsigned long vtkEvent) {
  const qreal dpr = devicePixelRatioF();
  const QPointF p = e->position() * dpr;
  interactor_->SetEventInformationFlipY(int(p.x()), int(p.y()), (e->modifiers() & Qt::ControlModifier) ? 1 : 0,
                                        (e->modifiers() & Qt::ShiftModifier) ? 1 : 0);
  interactor_->InvokeEvent(vtkEvent, e);
}

void VtkViewWidget::mousePressEvent(QMouseEvent* e) {
  switch (e->button()) {
    case Qt::LeftButton: forwardMouse(e, vtkCommand::LeftButtonPressEvent); break;
    case Qt::MiddleButton: forwardMouse(e, vtkCommand::MiddleButtonPressEvent); break;
    case Qt::RightButton: forwardMouse(e, vtkCommand::RightButtonPressEvent); break;
    default: break;
  }
}

void VtkViewWidget::mouseReleaseEvent(QMouseEvent* e) {
  switch (e->button()) {
    case Qt::LeftButton: forwardMouse(e, vtkCommand::LeftButtonReleaseEvent); break;
    case Qt::MiddleButton: forwardMouse(e, vtkCommand::MiddleButtonReleaseEvent); break;
    case Qt::RightButton: forwardMouse(e, vtkCommand::RightButtonReleaseEvent); break;
    default: break;
  }
}

void VtkViewWidget::mouseMoveEvent(QMouseEvent* e) { forwardMouse(e, vtkCommand::MouseMoveEvent); }

void VtkViewWidget::wheelEvent(QWheelEvent* e) {
  const qreal dpr = devicePixelRatioF();
  const QPointF p = e->position() * dpr;
  interactor_->SetEventInformationFlipY(int(p.x()), int(p.y()));
  interactor_->InvokeEvent(
      e->angleDelta().y() > 0 ? vtkCommand::MouseWheelForwardEvent : vtkCommand::MouseWheelBackwardEvent, e);
}
