// The main window on a scaled screen (issue #15 item 1, HiDPI): ctest runs this with QT_SCALE_FACTOR
// WB_SCALE (1.5 and 1.25, the scalings a 1920x1080 monitor is often set to) on an offscreen screen of
// WB_SCREEN pixels (tests/gui/screens/*.json): 1280x720 and 1536x864 logical. The window's minimum
// size fits the screen's logical size, the window opens inside the screen, and the chat, the message
// box, Send, the status bar and every panel's dock are inside it and visible, with each panel in turn
// as the shown tab of its group. (Below the 1280x720 floor, a 1366x768 screen at 125 % or 150 %,
// 1093x614 or 911x512 logical, does not fit: the minimum is 1230x597; it would need a layout with one
// dock column.)
#include <QApplication>
#include <QDockWidget>
#include <QPushButton>
#include <QScreen>
#include <QStatusBar>
#include <QTextBrowser>
#include <QtTest>

#include "chat_panel.h"
#include "gui_test_support.h"
#include "main_window.h"
#include "message_edit.h"

namespace {

QRect rectOnScreen(const QWidget* w) {
    return QRect(w->mapToGlobal(QPoint(0, 0)), w->size());
}

QString describe(const QRect& r) {
    return QString("%1,%2 %3x%4").arg(r.x()).arg(r.y()).arg(r.width()).arg(r.height());
}

}  // namespace

class TestWindowScaling : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { wb_gui_test::isolateSettings("test_window_scaling"); }

    void fitsTheScaledScreen() {
        const QStringList screen = qEnvironmentVariable("WB_SCREEN").split('x');
        QVERIFY2(screen.size() == 2, "WB_SCREEN (e.g. 1366x768) is not set: run this test through ctest");
        bool scaleOk = false;
        const double scale = qEnvironmentVariable("WB_SCALE").toDouble(&scaleOk);
        QVERIFY2(scaleOk && scale >= 1.0, "WB_SCALE (e.g. 1.5) is not set: run this test through ctest");
        const QSize pixels(screen[0].toInt(), screen[1].toInt());
        const QScreen* s = QGuiApplication::primaryScreen();
        // The environment took: a screen of that many pixels at that scaling.
        QCOMPARE(s->devicePixelRatio(), scale);
        const QSize logical = s->geometry().size();
        QVERIFY2(qAbs(logical.width() * scale - pixels.width()) <= 1 && qAbs(logical.height() * scale - pixels.height()) <= 1,
                 qPrintable(QString("logical screen %1x%2").arg(logical.width()).arg(logical.height())));
        const QRect available = s->availableGeometry();
        qInfo("screen %dx%d pixels at %.0f %%: %s logical", pixels.width(), pixels.height(), scale * 100, qPrintable(describe(available)));

        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        const QSize min = w.minimumSizeHint().expandedTo(w.minimumSize());
        QVERIFY2(min.width() <= available.width() && min.height() <= available.height(),
                 qPrintable(QString("minimum %1x%2 on %3").arg(min.width()).arg(min.height()).arg(describe(available))));
        QVERIFY2(available.contains(w.frameGeometry()), qPrintable(QString("window at %1").arg(describe(w.frameGeometry()))));

        verifyChatInside(w, available);
        // Every panel is in the window (shown, or a tab of a shown group), none floats.
        for (QDockWidget* d : w.docks()) {
            QVERIFY2(!d->isHidden() && !d->isFloating(), qPrintable(d->objectName()));
            if (!d->visibleRegion().isEmpty())
                QVERIFY2(available.contains(rectOnScreen(d)), qPrintable(QString("%1 at %2").arg(d->objectName(), describe(rectOnScreen(d)))));
        }
        // Each panel in turn as the shown tab: inside the screen and the window, the chat still whole.
        const QSize opened = w.size();
        for (QDockWidget* d : w.docks()) {
            d->raise();
            QApplication::processEvents();
            const QRect r = rectOnScreen(d);
            QVERIFY2(d->isVisible() && !d->visibleRegion().isEmpty(), qPrintable(d->objectName() + " is not shown"));
            QVERIFY2(available.contains(r) && rectOnScreen(&w).contains(r), qPrintable(QString("%1 at %2").arg(d->objectName(), describe(r))));
            QCOMPARE(w.size(), opened);
            verifyChatInside(w, available);
        }
    }

private:
    static void verifyChatInside(const MainWindow& w, const QRect& available) {
        const QStringList names = {"chat view", "message box", "Send", "status bar"};
        const QList<const QWidget*> widgets = {w.chatPanel()->view(), w.chatPanel()->input(), w.chatPanel()->sendButton(), w.statusBar()};
        for (int i = 0; i < names.size(); ++i) {
            const QString& name = names[i];
            const QWidget* widget = widgets[i];
            const QRect r = rectOnScreen(widget);
            QVERIFY2(widget->isVisible() && !widget->visibleRegion().isEmpty(), qPrintable(name + " is not visible"));
            QVERIFY2(available.contains(r) && rectOnScreen(&w).contains(r), qPrintable(QString("%1 at %2").arg(name, describe(r))));
            QVERIFY2(r.width() >= 40 && r.height() >= 16, qPrintable(QString("%1 is %2").arg(name, describe(r))));
        }
    }
};

QTEST_MAIN(TestWindowScaling)
#include "test_window_scaling.moc"
