#pragma once
// The conversations sidebar: every saved conversation, newest first, with its title (the first
// message unless renamed), date and model; a search box that filters by title and text; click (or
// Enter) opens one, F2 or the context menu renames it in place, Delete removes it and Undo (the
// button that appears, or Ctrl+Z) brings it back. The conversation on screen is shown in bold.
#include <QWidget>

class ChatController;
class ConversationStore;
class QListWidget;
class QListWidgetItem;
class QLineEdit;
class QPushButton;

class ConversationList : public QWidget {
    Q_OBJECT

public:
    ConversationList(ChatController* controller, ConversationStore* store, QWidget* parent = nullptr);

    QLineEdit* searchEdit() const { return m_search; }
    QListWidget* listWidget() const { return m_list; }
    QPushButton* newChatButton() const { return m_newButton; }
    QPushButton* undoButton() const { return m_undoButton; }
    // The ids listed, top to bottom.
    QStringList shownIds() const;
    // Selects the row of `id`; false when it is not listed.
    bool select(const QString& id);

public Q_SLOTS:
    void refresh();
    void renameSelected();
    void deleteSelected();
    void undoDelete();

Q_SIGNALS:
    void errorOccurred(const QString& title, const QString& text);

private Q_SLOTS:
    void openById(const QString& id);
    void handleActivated(QListWidgetItem* item);
    void handleEdited(QListWidgetItem* item);
    void handleContextMenu(const QPoint& pos);

private:
    static QString dateText(const QDateTime& when);

    ChatController* m_controller;
    ConversationStore* m_store;
    QLineEdit* m_search;
    QListWidget* m_list;
    QPushButton* m_newButton;
    QPushButton* m_undoButton;
    // A refresh asked for while a title is being typed waits for the editor to close (a refresh
    // replaces the items and with them the open editor and what was typed).
    bool m_refreshPending = false;
};
