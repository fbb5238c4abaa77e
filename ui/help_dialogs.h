#pragma once
// Help > Keyboard shortcuts and Help > About. The shortcut list is read from the window's menus, so
// it always names the keys that work; About gives the version, the commit built, Qt's version, the
// backend in use and the licences of the libraries linked into the program.
#include <QString>

class QMenuBar;
class QWidget;

class HelpDialogs {
public:
    // An HTML table: every menu action that has a shortcut, then the keys of the message box.
    static QString shortcutsHtml(const QMenuBar* menuBar);
    // backend: what the loaded model runs on ("" when no model is loaded).
    static QString aboutHtml(const QString& backend);
    static void showShortcuts(QWidget* parent, const QMenuBar* menuBar);
    static void showAbout(QWidget* parent, const QString& backend);
};
