#pragma once
// The Server menu of the main window: "Serve the loaded model" (a toggle), "Server settings…" (host,
// port, API key) and, while serving, a status-bar label with the address. A start that fails (no
// model, a non-loopback host without a key, a port that will not bind) leaves the toggle off and
// says why; the settings edited in the dialog are written only once a start with them succeeded.
#include <QObject>
#include <QString>

#include "serve_controller.h"

class QAction;
class QLabel;
class QMainWindow;
class QMenu;

class ServeMenu : public QObject {
    Q_OBJECT

public:
    ServeMenu(ServeController* serve, QMainWindow* window);

    QMenu* menu() const { return m_menu; }
    QAction* toggleAction() const { return m_toggle; }
    QAction* settingsAction() const { return m_settingsAction; }
    QLabel* statusLabel() const { return m_label; }
    // What the next start uses: the saved settings, or those last accepted in the dialog.
    ServeSettings pending() const { return m_pending; }
    void setPending(const ServeSettings& s) { m_pending = s; }
    // Why the last start failed ("" after one that succeeded).
    QString lastError() const { return m_lastError; }

Q_SIGNALS:
    // A start failed or serving stopped by itself: the window shows it.
    void problem(const QString& message);

public Q_SLOTS:
    // The dialog, window-modal and opened (the event loop keeps running); OK keeps its values as pending.
    void openSettings();

private:
    void toggled(bool on);
    void showState(bool serving, const QString& address);

    ServeController* m_serve;
    QMainWindow* m_window;
    QMenu* m_menu;
    QAction* m_toggle;
    QAction* m_settingsAction;
    QLabel* m_label;
    ServeSettings m_pending;
    QString m_lastError;
};
