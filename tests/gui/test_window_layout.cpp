// The main window's layout, theme and keyboard without a model: it fits a 1280x720 screen with every
// panel present and nothing overlapping, also with each panel in turn as the shown tab of its group
// (whole, beside the chat, given the room it asks for); it opens at a size that fits the screen;
// Reset layout brings the default back; the layout is kept per screen geometry; the theme changes the
// palette and the colours the panels draw with; every control has an accessible name; Ctrl+1..9 and
// Ctrl+0 move the focus between panels; a message typed and not sent survives a restart; Help lists the shortcuts (the sidebar's keys too) and names
// the version, commit and licences.
#include <QAccessible>
#include <QActionGroup>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QCheckBox>
#include <QDockWidget>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTextBlock>
#include <QTextBrowser>
#include <QtTest>

#include <qcustomplot.h>

#include "app_settings.h"
#include "attention_panel.h"
#include "candidate_plot.h"
#include "chat_controller.h"
#include "chat_panel.h"
#include "gui_test_support.h"
#include "help_dialogs.h"
#include "kv_cache_panel.h"
#include "main_window.h"
#include "message_edit.h"
#include "sampling_panel.h"
#include "theme.h"
#include "wb_version.h"

namespace {

const QStringList kDocks = {"samplingDock", "attentionDock", "tokenInspectorDock", "kvCacheDock", "modelInfoDock", "conversationsDock",
                            "promptDock", "logitLensDock", "headStatsDock", "timingsDock"};

QRect rectIn(const QWidget* w, const QWidget* window) {
    return QRect(w->mapTo(window, QPoint(0, 0)), w->size());
}

// Every dock is in the window (shown, or a tab of a shown group), none floats.
void verifyAllPanelsPresent(const MainWindow& w) {
    for (const QString& name : kDocks) {
        QDockWidget* d = w.dock(name);
        QVERIFY2(d, qPrintable(name));
        QVERIFY2(!d->isHidden(), qPrintable(name));
        QVERIFY2(!d->isFloating(), qPrintable(name));
    }
}

Conversation twoMessages() {
    Conversation c;
    c.messages.append({"user", "Hello there", {}, {}});
    c.messages.append({"assistant", "Hi! ```x = 1```", {}, {}});
    return c;
}

QColor firstCharForeground(const QTextDocument* doc, const QString& text) {
    for (QTextBlock b = doc->begin(); b.isValid(); b = b.next())
        if (b.text() == text) return QTextCursor(b).charFormat().foreground().color();
    return {};
}

// The drafts saved, whichever window owns each.
QStringList draftsWritten() {
    QStringList texts;
    for (const QString& owner : AppSettings::draftOwners()) texts << AppSettings::messageDraft(owner);
    return texts;
}

}  // namespace

class TestWindowLayout : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { wb_gui_test::isolateSettings("test_window_layout"); }
    void init() {
        QSettings().clear();
        Theme::apply(ThemeMode::System);
    }

    void fitsA1280x720ScreenWithEveryPanel() {
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        verifyAllPanelsPresent(w);
        const QSize min = w.minimumSizeHint().expandedTo(w.minimumSize());
        QVERIFY2(min.width() <= 1280 && min.height() <= 720, qPrintable(QString("minimum %1x%2").arg(min.width()).arg(min.height())));

        w.resize(1280, 720);
        QTRY_COMPARE(w.size(), QSize(1280, 720));
        QApplication::processEvents();
        const QRect inside = w.rect();
        QList<QPair<QString, QRect>> shown;
        shown.append({"chat", rectIn(w.centralWidget(), &w)});
        // The shown docks (a tab group's other tabs are kept out of sight, not hidden).
        for (QDockWidget* d : w.docks())
            if (d->isVisible() && !d->visibleRegion().isEmpty()) shown.append({d->objectName(), rectIn(d, &w)});
        // The chat, Sampling, the inspector group's raised tab and the conversations.
        QCOMPARE(shown.size(), 4);
        for (const QWidget* c : std::initializer_list<const QWidget*>{w.chatPanel()->input(), w.chatPanel()->sendButton(), w.statusBar()})
            shown.append({c->objectName().isEmpty() ? c->metaObject()->className() : c->objectName(), rectIn(c, &w)});
        for (const auto& [name, r] : shown) {
            QVERIFY2(inside.contains(r), qPrintable(QString("%1 at %2,%3 %4x%5 is outside the window").arg(name).arg(r.x()).arg(r.y()).arg(r.width()).arg(r.height())));
            QVERIFY2(!r.isEmpty(), qPrintable(name));
        }
        // Chat and the visible docks side by side, never on top of each other.
        for (int i = 0; i < 4; ++i)
            for (int j = i + 1; j < 4; ++j)
                QVERIFY2(!shown[i].second.intersects(shown[j].second), qPrintable(shown[i].first + " overlaps " + shown[j].first));
        // The inspector panels are one tab group.
        QCOMPARE(w.tabifiedDockWidgets(w.dock("attentionDock")).size(), 7);
    }

    // Each panel in turn as the raised tab of its group: raising a panel that needs more room than the
    // others must not push the window past 1280x720 or squeeze the panel below its own minimum.
    void everyPanelFitsWhenItIsTheShownTab() {
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        w.resize(1280, 720);
        QTRY_COMPARE(w.size(), QSize(1280, 720));
        for (QDockWidget* d : w.docks()) {
            const QString name = d->objectName();
            d->raise();
            QApplication::processEvents();
            QCOMPARE(w.size(), QSize(1280, 720));
            QVERIFY2(d->isVisible() && !d->visibleRegion().isEmpty(), qPrintable(name + " is not shown"));
            const QRect r = rectIn(d, &w), chat = rectIn(w.centralWidget(), &w);
            QVERIFY2(w.rect().contains(r), qPrintable(QString("%1 at %2,%3 %4x%5").arg(name).arg(r.x()).arg(r.y()).arg(r.width()).arg(r.height())));
            QVERIFY2(!r.intersects(chat), qPrintable(name + " overlaps the chat"));
            const QWidget* panel = d->widget();
            const QSize need = panel->minimumSizeHint().expandedTo(panel->minimumSize());
            QVERIFY2(panel->width() >= need.width() && panel->height() >= need.height(),
                     qPrintable(QString("%1 is %2x%3, it needs %4x%5").arg(name).arg(panel->width()).arg(panel->height()).arg(need.width()).arg(need.height())));
            for (const QWidget* c : std::initializer_list<const QWidget*>{w.chatPanel()->input(), w.chatPanel()->sendButton(), w.statusBar()})
                QVERIFY2(w.rect().contains(rectIn(c, &w)) && c->isVisible(), qPrintable(QString("with %1 shown, %2 is off the window").arg(name, c->metaObject()->className())));
        }
    }

    void opensAtASizeThatFitsTheScreen_data() {
        QTest::addColumn<QRect>("screen");
        QTest::newRow("1280x720") << QRect(0, 0, 1280, 720);
        QTest::newRow("1366x768") << QRect(0, 0, 1366, 768);
        QTest::newRow("1920x1080 minus a panel") << QRect(0, 32, 1920, 1048);
        QTest::newRow("2560x1440") << QRect(0, 0, 2560, 1440);
    }

    void opensAtASizeThatFitsTheScreen() {
        QFETCH(QRect, screen);
        MainWindow w;
        const QSize size = MainWindow::defaultSize(screen);
        QVERIFY(size.width() <= screen.width() && size.height() <= screen.height());
        QVERIFY(size.width() <= 1600 && size.height() <= 1000);
        // Not so small that the panels would not fit.
        const QSize min = w.minimumSizeHint();
        QVERIFY2(size.width() >= min.width() && size.height() >= min.height(),
                 qPrintable(QString("default %1x%2 below the minimum %3x%4").arg(size.width()).arg(size.height()).arg(min.width()).arg(min.height())));
    }

    void resetLayoutRestoresTheDefault() {
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QMap<QString, Qt::DockWidgetArea> areas;
        for (QDockWidget* d : w.docks()) areas[d->objectName()] = w.dockWidgetArea(d);
        QCOMPARE(areas["samplingDock"], Qt::RightDockWidgetArea);
        QCOMPARE(areas["attentionDock"], Qt::LeftDockWidgetArea);

        w.dock("samplingDock")->hide();
        w.dock("attentionDock")->setFloating(true);
        w.addDockWidget(Qt::RightDockWidgetArea, w.dock("kvCacheDock"));
        w.dock("modelInfoDock")->close();
        QVERIFY(w.dockWidgetArea(w.dock("kvCacheDock")) == Qt::RightDockWidgetArea);

        w.resetLayoutAction()->trigger();
        QApplication::processEvents();
        verifyAllPanelsPresent(w);
        for (QDockWidget* d : w.docks()) QCOMPARE(w.dockWidgetArea(d), areas[d->objectName()]);
        QCOMPARE(w.tabifiedDockWidgets(w.dock("attentionDock")).size(), 7);
        QVERIFY(w.dock("attentionDock")->isVisible());  // the group shows the Attention tab
    }

    void layoutIsKeptPerScreenGeometry() {
        QVERIFY(AppSettings::layoutKey(QRect(0, 0, 1366, 768)) != AppSettings::layoutKey(QRect(0, 0, 1920, 1080)));
        QString key;
        {
            MainWindow w;
            w.show();
            QVERIFY(QTest::qWaitForWindowExposed(&w));
            w.dock("modelInfoDock")->close();
            key = w.layoutKey();
            w.close();
        }
        QVERIFY(!AppSettings::windowState(key).isEmpty());
        {
            MainWindow again;  // same screen: the same layout
            again.show();
            QVERIFY(again.dock("modelInfoDock")->isHidden());
        }
        // The layout moves to another screen's entry: this screen opens with the default layout.
        const QString other = AppSettings::layoutKey(QRect(0, 0, 123, 456));
        AppSettings::setWindowLayout(other, AppSettings::windowGeometry(key), AppSettings::windowState(key));
        QSettings().remove(key);
        MainWindow fresh;
        fresh.show();
        verifyAllPanelsPresent(fresh);
    }

    void themeChangesThePaletteAndTheColoursPanelsUse() {
        QTemporaryDir dir;
        QVERIFY(twoMessages().save(dir.filePath("c.json"), nullptr));
        MainWindow w;
        w.show();
        QString error;
        QVERIFY2(w.controller()->loadConversation(dir.filePath("c.json"), &error), qPrintable(error));
        CandidatePlot* plot = w.samplingPanel()->plot();
        const QTextDocument* doc = w.chatPanel()->view()->document();

        w.setTheme(ThemeMode::Light);
        QVERIFY(!Theme::isDark());
        const QColor lightUser = firstCharForeground(doc, "You");
        QCOMPARE(lightUser, Theme::color(Theme::Role::UserName));
        const QColor lightBars = w.kvCachePanel()->usedBars()->brush().color();
        const QColor lightBackground = plot->toPixmap(200, 150).toImage().pixelColor(1, 1);

        w.setTheme(ThemeMode::Dark);
        QCOMPARE(AppSettings::theme(), QString("dark"));
        QVERIFY(Theme::isDark());
        QVERIFY(QApplication::palette().color(QPalette::Window).lightnessF() < 0.3);
        QCOMPARE(w.themeGroup()->checkedAction()->data().toString(), QString("dark"));
        // Every drawn colour follows: chat roles, plot series, plot text and background.
        const QColor darkUser = firstCharForeground(doc, "You");
        QCOMPARE(darkUser, Theme::color(Theme::Role::UserName));
        QVERIFY(darkUser != lightUser);
        QVERIFY(darkUser.lightnessF() > 0.5);  // readable on the dark base
        QVERIFY(w.kvCachePanel()->usedBars()->brush().color() != lightBars);
        QCOMPARE(plot->rawBars()->brush().color(), Theme::color(Theme::Role::RawSeries));
        QCOMPARE(plot->xAxis->tickLabelColor(), QApplication::palette().color(QPalette::WindowText));
        QCOMPARE(plot->yAxis->labelColor(), QApplication::palette().color(QPalette::WindowText));
        QVERIFY(plot->toPixmap(200, 150).toImage().pixelColor(1, 1) != lightBackground);
        QCOMPARE(plot->toPixmap(200, 150).toImage().pixelColor(1, 1), QApplication::palette().color(QPalette::Base));
        QCOMPARE(w.attentionPanel()->plot()->xAxis->tickLabelColor(), QApplication::palette().color(QPalette::WindowText));
        QVERIFY(Theme::probabilityColor(0.5f).lightnessF() < 0.5);  // light token text stays readable

        // System goes back to the platform's palette (light on the offscreen platform).
        w.setTheme(ThemeMode::System);
        QCOMPARE(AppSettings::theme(), QString("system"));
        QVERIFY(!Theme::isDark());
        QCOMPARE(firstCharForeground(doc, "You"), lightUser);
        w.setTheme(ThemeMode::Dark);
        w.setTheme(ThemeMode::Light);
        QVERIFY(!Theme::isDark());
        QCOMPARE(firstCharForeground(doc, "You"), lightUser);
        QCOMPARE(w.kvCachePanel()->usedBars()->brush().color(), lightBars);
        QCOMPARE(plot->xAxis->tickLabelColor(), QApplication::palette().color(QPalette::WindowText));
    }

    // What a screen reader says for each control that takes the keyboard is not empty.
    void everyControlHasAnAccessibleName() {
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QStringList unnamed;
        for (QWidget* c : w.findChildren<QWidget*>()) {
            if (!(c->focusPolicy() & Qt::TabFocus) || !c->isVisibleTo(&w)) continue;
            // A spin box's line edit is part of the spin box, which is what a screen reader names.
            if (qobject_cast<QAbstractSpinBox*>(c->parentWidget())) continue;
            QAccessibleInterface* a = QAccessible::queryAccessibleInterface(c);
            if (!a || a->text(QAccessible::Name).trimmed().isEmpty())
                unnamed << QString("%1 '%2' in %3").arg(c->metaObject()->className(), c->objectName(),
                                                        c->parentWidget() ? c->parentWidget()->metaObject()->className() : "");
        }
        QVERIFY2(unnamed.isEmpty(), qPrintable(unnamed.join("\n")));
    }

    void ctrlDigitsMoveTheFocusBetweenPanels() {
        MainWindow w;
        w.show();
        w.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&w));
        const QList<QPair<Qt::Key, QString>> keys = {
            {Qt::Key_2, "samplingDock"}, {Qt::Key_3, "attentionDock"}, {Qt::Key_4, "tokenInspectorDock"},
            {Qt::Key_5, "kvCacheDock"},  {Qt::Key_6, "modelInfoDock"}, {Qt::Key_7, "conversationsDock"},
            {Qt::Key_8, "promptDock"},   {Qt::Key_9, "logitLensDock"}, {Qt::Key_0, "headStatsDock"},
        };
        for (const auto& [key, dockName] : keys) {
            QTest::keyClick(&w, key, Qt::ControlModifier);
            QWidget* f = QApplication::focusWidget();
            QVERIFY2(f && w.dock(dockName)->isAncestorOf(f), qPrintable(dockName));
            QVERIFY(w.dock(dockName)->isVisible());
        }
        QTest::keyClick(&w, Qt::Key_1, Qt::ControlModifier);
        QCOMPARE(QApplication::focusWidget(), static_cast<QWidget*>(w.chatPanel()->input()));
    }

    // Nothing the user wrote is lost: a message typed and not sent is in the box after a restart, also
    // when the program ended without closing the window (written a moment after typing stops).
    void anUnsentMessageSurvivesARestart() {
        {
            MainWindow w;
            w.show();
            QVERIFY(QTest::qWaitForWindowExposed(&w));
            QTest::keyClicks(w.chatPanel()->input(), "half a thought");
            QTRY_COMPARE(draftsWritten(), QStringList{"half a thought"});
        }
        {
            MainWindow again;
            QCOMPARE(again.chatPanel()->input()->toPlainText(), QString("half a thought"));
            again.show();
            again.chatPanel()->input()->setPlainText("two\nlines");
            again.close();  // at once, not after the pause
        }
        MainWindow third;
        QCOMPARE(third.chatPanel()->input()->toPlainText(), QString("two\nlines"));
        // Sending empties the box and the saved draft at once (a crash right after must not bring it back).
        third.chatPanel()->input()->clear();
        QCOMPARE(draftsWritten(), QStringList{});
    }

    // The one draft an older version kept under a single key is taken over, not lost on the upgrade.
    void anOlderVersionsDraftIsTakenOver() {
        QSettings().setValue("chat/draft", "from the old version");
        MainWindow w;
        QCOMPARE(w.chatPanel()->input()->toPlainText(), QString("from the old version"));
        QVERIFY(!QSettings().contains("chat/draft"));
        QCOMPARE(draftsWritten(), QStringList{"from the old version"});
        w.chatPanel()->input()->clear();
        QCOMPARE(draftsWritten(), QStringList{});
    }

    // Two windows open at once keep a draft each: the second does not start with the first one's, and
    // whichever closes last does not overwrite the other's (one shared key lost the first window's text).
    void twoWindowsKeepTheirOwnDrafts() {
        {
            auto a = std::make_unique<MainWindow>();
            QTest::keyClicks(a->chatPanel()->input(), "from A");
            QTRY_COMPARE(draftsWritten(), QStringList{"from A"});
            auto b = std::make_unique<MainWindow>();
            QCOMPARE(b->chatPanel()->input()->toPlainText(), QString());
            QTest::keyClicks(b->chatPanel()->input(), "from B");
            QTRY_COMPARE(draftsWritten().size(), 2);
            a->close();
            a.reset();
            b->close();
        }
        MainWindow next;
        const QString text = next.chatPanel()->input()->toPlainText();
        QVERIFY2(text.contains("from A") && text.contains("from B"), qPrintable(text));
        QCOMPARE(draftsWritten(), QStringList{text});  // taken over: one draft, this window's
        next.chatPanel()->input()->clear();
    }

    void helpListsShortcutsAndNamesVersionAndLicences() {
        MainWindow w;
        const QString shortcuts = HelpDialogs::shortcutsHtml(w.menuBar());
        for (const QString& s : {QString("Ctrl+R"), QString("Regenerate"), QString("Ctrl+2"), QString("Sampling"), QString("Ctrl+1"),
                                 QString("Message box"), QString("Esc"), QString("Shift+Enter"), QString("F2"),
                                 QString("Conversations › Rename"), QString("Del"), QString("Conversations › Delete"),
                                 QString("Ctrl+Z"), QString("Undo delete"), QString("Continue with this token")})
            QVERIFY2(shortcuts.contains(s), qPrintable(s));
        const QString about = HelpDialogs::aboutHtml("CPU (2 threads)");
        for (const QString& s : {QString(WB_VERSION), QString(WB_GIT_COMMIT), QString(qVersion()), QString("CPU (2 threads)"),
                                 QString("Qt 6"), QString("LGPL-3.0"), QString("QCustomPlot: GPL-3.0"), QString("SentencePiece: Apache-2.0")})
            QVERIFY2(about.contains(s), qPrintable(s));
        QVERIFY(!about.contains("cuBLAS"));
        QVERIFY(HelpDialogs::aboutHtml("CUDA (NVIDIA H100)").contains("cuBLAS"));
        w.show();
        w.showAbout();
        QTRY_VERIFY(w.findChild<QMessageBox*>("aboutDialog"));
        w.showShortcuts();
        QTRY_VERIFY(w.findChild<QDialog*>("shortcutsDialog"));
    }
};

QTEST_MAIN(TestWindowLayout)
#include "test_window_layout.moc"
