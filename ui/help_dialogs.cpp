#include "help_dialogs.h"

#include <QAction>
#include <QDialog>
#include <QDialogButtonBox>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "wb_version.h"

namespace {

void collect(const QMenu* menu, const QString& path, QList<QPair<QString, QString>>* rows) {
    for (const QAction* a : menu->actions()) {
        const QString text = a->text().remove(QLatin1Char('&'));
        if (a->menu()) {
            collect(a->menu(), path + QStringLiteral(" › ") + text, rows);
        } else if (!a->shortcut().isEmpty()) {
            rows->append({a->shortcut().toString(QKeySequence::NativeText), path + QStringLiteral(" › ") + text});
        }
    }
}

QString row(const QString& key, const QString& what) {
    return QStringLiteral("<tr><td><b>%1</b></td><td>&nbsp;&nbsp;%2</td></tr>").arg(key.toHtmlEscaped(), what.toHtmlEscaped());
}

}  // namespace

QString HelpDialogs::shortcutsHtml(const QMenuBar* menuBar) {
    QList<QPair<QString, QString>> rows;
    for (const QAction* a : menuBar->actions())
        if (a->menu()) collect(a->menu(), a->text().remove(QLatin1Char('&')), &rows);
    QString html = QStringLiteral("<table>");
    for (const auto& [key, what] : rows) html += row(key, what);
    // Keys that belong to a panel, not to a menu (the conversations sidebar's, conversation_list.cpp).
    html += row(QKeySequence(Qt::Key_F2).toString(QKeySequence::NativeText), QObject::tr("Conversations › Rename"));
    html += row(QKeySequence(QKeySequence::Delete).toString(QKeySequence::NativeText), QObject::tr("Conversations › Delete"));
    html += row(QKeySequence(QKeySequence::Undo).toString(QKeySequence::NativeText), QObject::tr("Conversations › Undo delete"));
    html += row(QObject::tr("Double-click"), QObject::tr("Token inspector › a candidate: Continue with this token"));
    html += row(QObject::tr("Enter"), QObject::tr("Message box › Send"));
    html += row(QObject::tr("Shift+Enter"), QObject::tr("Message box › New line"));
    html += row(QObject::tr("Tab / Shift+Tab"), QObject::tr("Next / previous control"));
    html += row(QObject::tr("Ctrl+Tab"), QObject::tr("Next tab of a tabbed panel"));
    html += QStringLiteral("</table>");
    return html;
}

QString HelpDialogs::aboutHtml(const QString& backend) {
    QString html = QObject::tr("<h3>WhiteBox %1</h3><p>Chat with a local LLM and see inside it.</p>").arg(QStringLiteral(WB_VERSION));
    html += QObject::tr("<p>Commit %1 · Qt %2 (built with %3)<br>Backend: %4</p>")
                .arg(QStringLiteral(WB_GIT_COMMIT), QString::fromLatin1(qVersion()), QStringLiteral(QT_VERSION_STR),
                     backend.isEmpty() ? QObject::tr("no model loaded") : backend.toHtmlEscaped());
    // The libraries linked into the program (the CUDA plugin's only when it is in use).
    html += QObject::tr("<p>Libraries and their licences:</p><ul>"
                        "<li>Qt 6 (Widgets, Network, PrintSupport): LGPL-3.0</li>"
                        "<li>QCustomPlot: GPL-3.0</li>"
                        "<li>SentencePiece: Apache-2.0</li>");
    if (backend.contains(QLatin1String("CUDA"), Qt::CaseInsensitive))
        html += QObject::tr("<li>CUDA runtime and cuBLAS (in the CUDA plugin): NVIDIA CUDA Toolkit EULA</li>");
    html += QStringLiteral("</ul>");
    return html;
}

void HelpDialogs::showShortcuts(QWidget* parent, const QMenuBar* menuBar) {
    auto* dialog = new QDialog(parent);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setObjectName(QStringLiteral("shortcutsDialog"));
    dialog->setWindowTitle(QObject::tr("Keyboard shortcuts"));
    auto* text = new QTextBrowser(dialog);
    text->setHtml(shortcutsHtml(menuBar));
    text->setAccessibleName(QObject::tr("Keyboard shortcuts"));
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, dialog);
    QObject::connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::reject);
    auto* layout = new QVBoxLayout(dialog);
    layout->addWidget(text);
    layout->addWidget(buttons);
    const QFontMetrics fm = dialog->fontMetrics();
    dialog->resize(fm.averageCharWidth() * 70, fm.height() * 30);
    dialog->open();
}

void HelpDialogs::showAbout(QWidget* parent, const QString& backend) {
    auto* box = new QMessageBox(QMessageBox::NoIcon, QObject::tr("About WhiteBox"), aboutHtml(backend), QMessageBox::Close, parent);
    box->setObjectName(QStringLiteral("aboutDialog"));
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setTextFormat(Qt::RichText);
    box->setIconPixmap(QIcon(QStringLiteral(":/whitebox.png")).pixmap(64, 64));
    box->open();
}
